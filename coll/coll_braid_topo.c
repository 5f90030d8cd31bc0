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
 *  - the node and leader views of the hierarchical allreduce.
 * In a job on one node every communicator is one group in rank order: the
 * grouping is then built only if the hierarchical allreduce asks for it,
 * so creating a communicator does not pay for it.
 * A grouping only changes which messages cross nodes, never a result, and
 * every rank builds it from the same exchanged table, so every rank of a
 * communicator runs the same schedule.
 */
#include "coll_braid.h"

#include <stdlib.h>
#include <string.h>

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

/* m->topo from the exchanged node keys of m's processes */
static int topo_build(mca_coll_braid_module_t *m)
{
    mca_coll_braid_component_t *c = cmp();
    if (m->topo_ready) return OMPI_SUCCESS;
    int P = m->bcomm.size;
    const int *proc_index = braid_ucx_comm_procs(m->tcomm);
    uint64_t *keys = malloc((size_t)P * sizeof(uint64_t));
    if (NULL == keys) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < P; i++) keys[i] = c->node_key ? c->node_key[proc_index[i]] : 0;
    int rc = braid_topo_init(&m->topo, P, keys);
    free(keys);
    if (BRAID_OK != rc) return OMPI_ERR_OUT_OF_RESOURCE;
    m->topo_ready = true;
    return OMPI_SUCCESS;
}

int mca_coll_braid_topo_setup(mca_coll_braid_module_t *m)
{
    mca_coll_braid_component_t *c = cmp();
    int P = m->bcomm.size;
    m->topo_ordered = false;
    if (!c->multi_node) {
        /* one node: one group, rank order (what topo_build would find);
         * size and nnodes are right already, the arrays come with
         * topo_build */
        m->topo.size = P;
        m->topo.nnodes = 1;
        if (0 == m->bcomm.rank)
            opal_output_verbose(10, c->output, "braid: %s: %d ranks on 1 node(s); algorithms run "
                                "in rank order", m->comm->c_name, P);
        return OMPI_SUCCESS;
    }
    int rc = topo_build(m);
    if (OMPI_SUCCESS != rc) return rc;
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
    m->topo_ready = false;
    free(m->topo_counts);
    m->topo_counts = NULL;
    m->topo_ordered = false;
    m->hier_ready = false;
    m->hier_cache.valid = false;
}

/* Node order keeps every result when the op may be applied in any order:
 * barrier, bcast, allgather, and reductions with commutative ops. Allgather
 * and reduce-scatter tie block i to rank i: the dispatch lays the blocks
 * out in node order around the run (braid_view_allgather,
 * braid_view_reduce_scatter). The hierarchical allreduce makes its
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

int mca_coll_braid_hier_views(mca_coll_braid_module_t *m)
{
    if (m->hier_ready) return OMPI_SUCCESS;
    if (OMPI_SUCCESS != topo_build(m)) return OMPI_ERR_OUT_OF_RESOURCE;
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
