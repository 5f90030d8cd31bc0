/*
 * allreduce shm: every rank publishes its vector and reduces all of them
 *
 *   steps: 1   bytes: each rank copies S in and reads P S
 *   reductions: (P - 1) S per rank (every rank computes the whole result)
 *
 * At the sizes it is for (a few KiB) the latency is one cache-line
 * hand-over per peer, overlapped, and the reduction of P short vectors
 * costs less than a second synchronisation step would: a reduce-then-
 * broadcast through the segment halves the reads but waits twice. Every
 * rank folds the slots in rank order (braid_shm_fold), so the result keeps
 * a non-commutative op's order and is the same bits on every rank.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

int braid_allreduce_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    braid_shm_t *s = braid_shm_of(c, bytes);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    const void *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, bytes);
    braid_shm_wait_all(s, seq);
    braid_shm_fold(s, seq, 0, a->count, a->esize, &a->op, a->rbuf);
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_allreduce_shm)
