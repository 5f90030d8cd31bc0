/*
 * coll_braid_topo.c - where ranks run, as braid uses it:
 *  - every process's node key (a hash of Open MPI's node name, exchanged
 *    with the worker addresses at bootstrap; coll_braid_test_nodes=N
 *    instead puts process r on node r % N, like mpirun --map-by node over N
 *    hosts, so tests can exercise the grouping on one machine);
 *  - each communicator's grouping of its ranks by node, and the view the
 *    algorithms run on: in node order when coll_braid_topo_aware=1 (rings
 *    then cross between nodes once per node), the ranks' own order otherwise
 *    (and for non-commutative ops); allgather and reduce-scatter blocks are
 *    laid out in node order around the run;
 *  - the node and leader views of the hierarchical allreduce;
 *  - MPI_T performance variables that count braid's sends by whether the
 *    peer is on this node.
 * A grouping only changes which messages cross nodes, never a result, and
 * every rank builds it from the same exchanged table, so every rank of a
 * communicator runs the same schedule.
 */
#include "coll_braid.h"

#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/output.h"

static inline mca_coll_braid_component_t *cmp(void) { return &mca_coll_braid_component; }

uint64_t mca_coll_braid_node_key(const char *nodename, int world_rank)
{
    int n = cmp()->test_nodes;
    if (n > 0) return (uint64_t)(world_rank % n);
    /* FNV-1a: equal names give equal keys; a collision only merges two
     * nodes in braid's grouping (slower, never wrong) */
    uint64_t h = 14695981039346656037ULL;
    for (const char *p = nodename ? nodename : ""; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    return h;
}

int mca_coll_braid_topo_setup(mca_coll_braid_module_t *m, const int *proc_index)
{
    mca_coll_braid_component_t *c = cmp();
    int P = m->bcomm.size;
    uint64_t *keys = malloc((size_t)P * sizeof(uint64_t));
    if (NULL == keys) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < P; i++) keys[i] = c->node_key ? c->node_key[proc_index[i]] : 0;
    int rc = braid_topo_init(&m->topo, P, keys);
    free(keys);
    if (BRAID_OK != rc) return OMPI_ERR_OUT_OF_RESOURCE;
    m->topo_ordered = c->topo_aware && m->topo.nnodes > 1 && !braid_topo_is_grouped(&m->topo);
    if (m->topo_ordered) {
        /* reduce-scatter's block starts (P + 1) and counts in view order (P) */
        m->topo_counts = malloc((2 * (size_t)P + 1) * sizeof(size_t));
        if (NULL == m->topo_counts ||
            BRAID_OK != braid_subcomm_init(&m->topo_view, &m->bcomm, P, m->topo.order))
            return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (0 == m->bcomm.rank)
        opal_output_verbose(10, c->output, "braid: %s: %d ranks on %d node(s); algorithms run in %s",
                            m->comm->c_name, P, m->topo.nnodes,
                            m->topo_ordered ? "node order (coll_braid_topo_aware)" : "rank order");
    return OMPI_SUCCESS;
}

void mca_coll_braid_topo_release(mca_coll_braid_module_t *m)
{
    braid_subcomm_fini(&m->topo_view);
    braid_subcomm_fini(&m->node_view);
    braid_subcomm_fini(&m->leader_view);
    braid_topo_fini(&m->topo);
    free(m->topo_counts);
    m->topo_counts = NULL;
    m->topo_ordered = false;
    m->hier_ready = false;
    m->hier_cache.valid = false;
}

/* Node order keeps every result when the op may be applied in any order:
 * barrier, bcast, allgather, and reductions with commutative ops. Allgather
 * and reduce-scatter tie block i to rank i: their glue lays the blocks out
 * in node order around the run (below). The hierarchical allreduce makes its
 * own views. */
bool mca_coll_braid_node_ordered(const mca_coll_braid_module_t *m, braid_coll_t coll,
                                 const braid_coll_args_t *a)
{
    if (!m->topo_ordered) return false;
    switch (coll) {
    case BRAID_COLL_BARRIER:
    case BRAID_COLL_BCAST:
    case BRAID_COLL_ALLGATHER:
        return true;
    case BRAID_COLL_ALLREDUCE:
    case BRAID_COLL_REDUCE:
    case BRAID_COLL_REDUCE_SCATTER:
        return a->op.commutative && NULL == a->hier;
    default:
        return false;
    }
}

braid_comm_t *mca_coll_braid_view_for(mca_coll_braid_module_t *m, braid_coll_t coll,
                                      const braid_coll_args_t *a, int *root)
{
    *root = a ? a->root : 0;
    if (!mca_coll_braid_node_ordered(m, coll, a)) return &m->bcomm;
    *root = braid_subcomm_rank_of(&m->topo_view, *root);
    return &m->topo_view.comm;
}

/* Allgather in node order: the algorithm gathers into scratch with view
 * rank v's block at v, then every block moves to its rank's place in the
 * result (one extra copy of the result). a->rbuf holds this rank's block at
 * its place. */
int mca_coll_braid_allgather_node_order(mca_coll_braid_module_t *m, int alg, braid_algo_fn_t fn,
                                        const braid_coll_args_t *a, size_t block)
{
    int P = m->bcomm.size, me = m->bcomm.rank, vme = m->topo_view.comm.rank;
    char *out = a->rbuf;
    char *v = braid_scratch_get(&m->scratch, BRAID_SCRATCH_GLUE_IN, (size_t)P * block);
    if (NULL == v) return BRAID_ERR_NOMEM;
    memcpy(v + (size_t)vme * block, out + (size_t)me * block, block);
    braid_coll_args_t va = *a;
    va.sbuf = NULL;
    va.rbuf = v;
    int rc = mca_coll_braid_run(m, BRAID_COLL_ALLGATHER, alg, fn, &va, block);
    if (BRAID_OK != rc) return rc;
    for (int i = 0; i < P; i++)
        if (i != vme) memcpy(out + (size_t)m->topo.order[i] * block, v + (size_t)i * block, block);
    return BRAID_OK;
}

/* Reduce-scatter in node order: the input's blocks are copied into scratch
 * in view order (one extra copy of the input) and the algorithm runs on the
 * view with the counts in that order; view rank v's block is rank order[v]'s,
 * so this rank's result is its own block. */
int mca_coll_braid_reduce_scatter_node_order(mca_coll_braid_module_t *m, int alg,
                                             braid_algo_fn_t fn, const braid_coll_args_t *a,
                                             size_t total, size_t bytes)
{
    int P = m->bcomm.size;
    size_t es = a->esize;
    const char *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    char *v = braid_scratch_get(&m->scratch, BRAID_SCRATCH_GLUE_OUT, total * es);
    if (NULL == v) return BRAID_ERR_NOMEM;
    size_t *start = m->topo_counts, *vcounts = m->topo_counts + P + 1;
    start[0] = 0;
    for (int b = 0; b < P; b++) start[b + 1] = start[b] + (a->rcounts ? a->rcounts[b] : a->count);
    size_t pos = 0;
    for (int i = 0; i < P; i++) {
        int b = m->topo.order[i];
        size_t n = start[b + 1] - start[b];
        memcpy(v + pos * es, in + start[b] * es, n * es);
        vcounts[i] = n;
        pos += n;
    }
    braid_coll_args_t va = *a;
    va.sbuf = v;
    if (NULL != a->rcounts) va.rcounts = vcounts;
    return mca_coll_braid_run(m, BRAID_COLL_REDUCE_SCATTER, alg, fn, &va, bytes);
}

int mca_coll_braid_hier_views(mca_coll_braid_module_t *m)
{
    if (m->hier_ready) return OMPI_SUCCESS;
    const braid_topo_t *t = &m->topo;
    int node = t->node_of[m->bcomm.rank];
    int *leaders = malloc((size_t)t->nnodes * sizeof(int));
    if (NULL == leaders) return OMPI_ERR_OUT_OF_RESOURCE;
    braid_topo_leaders(t, leaders);
    int rc = braid_subcomm_init(&m->node_view, &m->bcomm, braid_topo_node_size(t, node),
                                braid_topo_node_ranks(t, node));
    if (BRAID_OK == rc) rc = braid_subcomm_init(&m->leader_view, &m->bcomm, t->nnodes, leaders);
    free(leaders);
    if (BRAID_OK != rc) return OMPI_ERR_OUT_OF_RESOURCE;
    m->hier_ready = true;
    return OMPI_SUCCESS;
}

void mca_coll_braid_register_pvars(const mca_base_component_t *v)
{
    braid_ucx_counters_t *k = braid_ucx_counters();
    const struct { const char *name, *desc; unsigned long long *value; } pvars[] = {
        { "intra_node_msgs", "Messages braid sent to processes on this node", &k->intra_node_msgs },
        { "intra_node_bytes", "Bytes braid sent to processes on this node", &k->intra_node_bytes },
        { "inter_node_msgs", "Messages braid sent to processes on other nodes", &k->inter_node_msgs },
        { "inter_node_bytes", "Bytes braid sent to processes on other nodes", &k->inter_node_bytes },
    };
    for (size_t i = 0; i < sizeof(pvars) / sizeof(pvars[0]); i++)
        (void)mca_base_component_pvar_register(
            v, pvars[i].name, pvars[i].desc, OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL,
            pvars[i].value);
}
