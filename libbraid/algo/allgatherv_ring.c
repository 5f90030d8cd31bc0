/*
 * allgatherv ring: block i (rcounts[i] elements at displs[i]) from rank i
 * to every rank
 *
 *   steps: P-1     messages per rank: at most P-1 (none for empty blocks)
 *   bytes sent per rank: the whole result but the block received last,
 *   sum(rcounts) - rcounts[rank + 1 mod P] elements
 *
 * In step k rank r passes block r-k to r+1 and receives block r-k-1 from
 * r-1 (mod P), each straight from and into its place in rbuf: every link
 * carries one message per step, neighbours only, whatever the block
 * sizes. Both ends know every block's size, so an empty block is neither
 * sent nor received. Unequal blocks make the slowest step the largest
 * block's, which a ring cannot avoid and a tree would pay lg P times.
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_registry.h"

int braid_allgatherv_ring(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t es = a->esize;
    char *out = a->rbuf;
    if (NULL != a->sbuf)
        braid_copy(out + a->displs[r] * es, a->sbuf, a->rcounts[r] * es);
    int to = (r + 1) % P, from = (r - 1 + P) % P;
    for (int k = 0; k < P - 1; k++) {
        int sb = (r - k + P) % P, rb = (r - k - 1 + P) % P;
        size_t sn = a->rcounts[sb] * es, rn = a->rcounts[rb] * es;
        braid_req_t reqs[2] = { NULL, NULL };
        int rc = BRAID_OK;
        if (rn) rc = braid_irecv(c, from, (braid_step_t)k, out + a->displs[rb] * es, rn, &reqs[0]);
        if (sn && BRAID_OK == rc) rc = braid_isend(c, to, (braid_step_t)k, out + a->displs[sb] * es, sn, &reqs[1]);
        int wrc = braid_waitall(c, 2, reqs);
        if (BRAID_OK != rc || BRAID_OK != wrc) return BRAID_OK != rc ? rc : wrc;
    }
    return BRAID_OK;
}

/* (P-1) (alpha + S beta), S the mean block */
double braid_cost_allgatherv_ring(int P, double S)
{
    return (P - 1) * (BRAID_COST_ALPHA + S * BRAID_COST_BETA);
}
