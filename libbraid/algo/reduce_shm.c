/*
 * reduce shm: every rank publishes its vector, the root reduces them
 *
 *   steps: 1   bytes: each rank copies S in; the root reads P S
 *   reductions: (P - 1) S at the root
 *
 * Only the root waits. The others leave once their slot is published and
 * may run up to ncells calls ahead (braid_shm_claim stops them from
 * overwriting a slot the root has not read), which is what makes a loop of
 * reduces cheap for them. The root folds in rank order (braid_shm_fold).
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

int braid_reduce_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    braid_shm_t *s = braid_shm_of(c, bytes);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    const void *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, bytes);
    if (c->rank == a->root) {
        braid_shm_wait_all(s, seq);
        braid_shm_fold(s, seq, 0, a->count, a->esize, &a->op, a->rbuf);
    }
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_reduce_shm)
