/*
 * allreduce hierarchical: reduce inside each node, allreduce among the node
 * leaders, broadcast inside each node (the two-level scheme of MPICH's and
 * Open MPI's han/ucc hierarchical collectives; NCCL keeps a chain inside
 * each node for the same reason). Only the leaders' phase crosses nodes.
 *
 *   N nodes, n ranks on this node, S bytes:
 *   phase 1  node_reduce to node rank 0      (its contract on n ranks)
 *   phase 2  leaders_allreduce, in place     (its contract on N ranks; the
 *            only inter-node messages: e.g. ring 2(N-1) steps, 2S(N-1)/N
 *            bytes per leader, halving_doubling 2 lg N steps)
 *   phase 3  node_bcast from node rank 0     (its contract on n ranks)
 *   A rank that is alone on its node skips phases 1 and 3; with one node
 *   phase 2 is skipped.
 *
 * The phases run one after the other on views of one communicator
 * (braid_topo.h): they share its tag space, and messages between one pair
 * are matched in posting order, so a phase-3 message can never be taken by a
 * phase-1 receive. Commutative ops only: node partial results combine in
 * node order, not rank order. Every rank gets the leaders' bits through
 * the broadcast, and the leaders' algorithms give them identical bits, so
 * the result is identical on every rank for any op.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"

/* fn on view v for the call that runs on c: v's copy with c's number and
 * yield (the views are the site's, shared by every call) */
static int on_view(braid_algo_fn_t fn, braid_comm_t *v, const braid_comm_t *c,
                   const braid_coll_args_t *a)
{
    braid_comm_t vc = braid_comm_for(v, c->seq, c->yield);
    int rc = fn(&vc, a);
    braid_comm_count(v, &vc);
    return rc;
}

static int node_reduce(const braid_hier_t *h, const braid_comm_t *c, const braid_coll_args_t *a)
{
    braid_coll_args_t r = *a;
    r.root = 0;
    r.params = h->node_reduce_params;
    r.hier = NULL;
    return on_view(h->node_reduce, h->node, c, &r);
}

static int leaders_allreduce(const braid_hier_t *h, const braid_comm_t *c,
                             const braid_coll_args_t *a)
{
    braid_coll_args_t r = *a;
    r.sbuf = NULL;   /* in place: phase 1 left the node's partial in rbuf */
    r.params = h->leaders_params;
    r.hier = NULL;
    return on_view(h->leaders_allreduce, h->leaders, c, &r);
}

static int node_bcast(const braid_hier_t *h, const braid_comm_t *c, const braid_coll_args_t *a,
                      size_t bytes)
{
    braid_coll_args_t b = { 0 };
    b.rbuf = a->rbuf;
    b.count = bytes;
    b.esize = 1;
    b.root = 0;
    b.scratch = a->scratch;
    b.params = h->node_bcast_params;
    return on_view(h->node_bcast, h->node, c, &b);
}

int braid_allreduce_hierarchical(braid_comm_t *c, const braid_coll_args_t *a)
{
    const braid_hier_t *h = a->hier;
    size_t bytes = a->count * a->esize;
    if (NULL == h || NULL == h->node) return BRAID_ERR_ARG;
    if (!a->op.commutative) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    bool leads = 0 == h->node->rank;
    int rc = BRAID_OK;
    if (h->node->size > 1)
        rc = node_reduce(h, c, a);
    else
        braid_copy_input(a, bytes);
    if (BRAID_OK == rc && leads && NULL != h->leaders && h->leaders->size > 1)
        rc = leaders_allreduce(h, c, a);
    if (BRAID_OK == rc && h->node->size > 1)
        rc = node_bcast(h, c, a, bytes);
    return rc;
}

/* not considered by the model: a composition of other rows (its phases are costed there) */
double braid_cost_allreduce_hierarchical(int P, double S)
{
    (void)P;
    (void)S;
    return BRAID_COST_NONE;
}
