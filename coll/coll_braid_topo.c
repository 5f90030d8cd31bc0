/*
 * coll_braid_topo.c - where ranks run, as braid uses it:
 *  - every process's node key (a hash of Open MPI's node name, exchanged
 *    with the worker addresses at bootstrap, coll_braid_module.c;
 *    coll_braid_test_nodes=N instead puts process r on node r % N, like
 *    mpirun --map-by node over N hosts, so tests can exercise the grouping
 *    on one machine);
 *  - each communicator's grouping of its ranks by node, and the view the
 *    algorithms run on: in node order when coll_braid_topo_aware=1 (rings
 *    then cross between nodes once per node), the ranks' own order otherwise
 *    (and for non-commutative ops); allgather and reduce-scatter blocks are
 *    laid out in node order around the run;
 *  - the node and leader views of the hierarchical allreduce.
 * The grouping and the views live in the dispatch's site (braid_dispatch.h).
 * In a job on one node every communicator is one group in rank order: the
 * grouping is then built only if the hierarchical allreduce asks for it,
 * so creating a communicator does not pay for it.
 * A grouping only changes which messages cross nodes, never a result, and
 * every rank builds it from the same exchanged table, so every rank of a
 * communicator runs the same schedule.
 */
#include "coll_braid_module.h"

#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"

static inline mca_coll_braid_component_t *cmp(void) { return &mca_coll_braid_component; }

int mca_coll_braid_topo_setup(mca_coll_braid_module_t *m)
{
    mca_coll_braid_component_t *c = cmp();
    braid_site_t *s = &m->site;
    int P = m->bcomm.size;
    if (!c->multi_node) {
        /* one node: one group, rank order; the grouping itself is made if
         * the hierarchical allreduce asks for it (braid_site_hier_views) */
        if (0 == m->bcomm.rank)
            opal_output_verbose(10, c->output, "braid: %s: %d ranks on 1 node(s); algorithms run "
                                "in rank order", m->comm->c_name, P);
        return OMPI_SUCCESS;
    }
    const int *proc_index = braid_ucx_comm_procs(m->tcomm);
    uint64_t *keys = malloc((size_t)P * sizeof(uint64_t));
    if (NULL == keys) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < P; i++) keys[i] = c->node_key ? c->node_key[proc_index[i]] : 0;
    int rc = braid_site_topo(s, keys, 0 != c->topo_aware);
    free(keys);
    if (BRAID_OK != rc) return OMPI_ERR_OUT_OF_RESOURCE;
    if (0 == m->bcomm.rank)
        opal_output_verbose(10, c->output, "braid: %s: %d ranks on %d node(s); algorithms run in %s",
                            m->comm->c_name, P, s->topo.nnodes,
                            s->topo_ordered ? "node order (coll_braid_topo_aware)" : "rank order");
    return OMPI_SUCCESS;
}
