/*
 * allreduce shm: through the node's shared-memory segment
 *
 *   up to a slot (cells):  steps: 1   bytes: each rank copies S in and
 *                          reads P S; reductions: (P - 1) S per rank
 *   above (single copy, braid_shm_reduce.c, split):
 *                          steps: 2   bytes: each rank reads (P - 1) S / P
 *                          of the others' inputs for its share, then the
 *                          other P - 1 shares, (P - 1) S / P;
 *                          reductions: (P - 1) S / P per rank
 *
 * Cells: at the sizes they are for (a few KiB) the latency is one
 * cache-line hand-over per peer, overlapped, and the reduction of P short
 * vectors costs less than a second synchronisation step would: a reduce-
 * then-broadcast through the segment halves the reads but waits twice.
 * Every rank folds the slots in rank order (braid_shm_fold), so the result
 * keeps a non-commutative op's order and is the same bits on every rank.
 *
 * Single copy: a reduce-scatter and an allgather in the others' memory -
 * every rank folds one share of the vector reading it from each peer's
 * buffer, then reads the others' folded shares. Each element is read once
 * per rank and reduced once, by one rank (same bits everywhere), where a
 * message ring copies it twice more through the transport's bounce
 * buffers.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

int braid_allreduce_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    braid_shm_t *s = braid_shm_direct(c, bytes);
    if (NULL != s) return braid_shm_reduce_direct(s, a, -1, BRAID_SHM_SPLIT);
    s = braid_shm_of(c, bytes);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    const void *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, bytes);
    braid_shm_wait_all(s, seq);
    braid_shm_fold(s, seq, 0, a->count, a->esize, &a->op, in, a->rbuf);
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_allreduce_shm)
