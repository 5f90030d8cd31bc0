/*
 * scan shm (MPI_Scan) through the node's shared-memory segment:
 * rbuf = in[0] op ... op in[r]
 *
 *   up to a slot (cells):  steps: 1   bytes: each rank copies S in and
 *                          reads at most P S
 *   above (single copy):   steps: 1   bytes: rank r reads r S straight
 *                          from the lower ranks' buffers
 *   reductions: about r S on rank r (the highest rank folds (P - 1) S)
 *
 * Every rank publishes its input in its slot and folds the slots of the
 * ranks below it in rank order (libbraid/blocks/prefix.c), waiting for
 * those alone: rank 0 never waits. One cache-line hand-over per lower
 * rank, overlapped, beats lg P message steps at the sizes the cells carry.
 * Above them, where the node has a reader (process_vm_readv), each rank
 * reads the lower ranks' inputs from their memory: one copy, where a
 * message costs the transport's two; the highest rank reads (P - 1) S, so
 * the table keeps it to small P. Without a reader the call is refused on
 * every rank above a slot and the table's message rows take it.
 */
#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"

int braid_scan_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    return braid_prefix_shm(c, a, false);
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_scan_shm)
