/*
 * reduce_scatter shm: every rank publishes its whole input and reduces its
 * own block of all of them
 *
 *   steps: 1   bytes: each rank copies S in (S = the whole input) and reads
 *              P x its block; reductions: (P - 1) x its block
 *
 * Each block is folded by its owner alone, in rank order (braid_shm_fold
 * from the block's offset), so nothing is reduced twice and a
 * non-commutative op keeps its order. Only rbuf's first block is written;
 * in place, the input was published before the result overwrites its
 * start, and the rest of rbuf keeps its values.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

int braid_reduce_scatter_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size;
    size_t off = 0, mine = a->count, total = a->count * (size_t)P;
    if (NULL != a->rcounts) {
        total = 0;
        for (int r = 0; r < P; r++) {
            if (r == c->rank) off = total;
            total += a->rcounts[r];
        }
        mine = a->rcounts[c->rank];
    } else {
        off = a->count * (size_t)c->rank;
    }
    braid_shm_t *s = braid_shm_of(c, total * a->esize);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == total) return BRAID_OK;
    const void *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, total * a->esize);
    braid_shm_wait_all(s, seq);
    if (mine > 0) braid_shm_fold(s, seq, off * a->esize, mine, a->esize, &a->op, in, a->rbuf);
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_reduce_scatter_shm)
