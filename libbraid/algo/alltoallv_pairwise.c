/*
 * alltoallv pairwise exchange, any P: block i of sbuf (scounts[i]
 * elements at sdispls[i]) to rank i, rank i's block (rcounts[i] at
 * displs[i]) into rbuf
 *
 *   steps: P-1      messages per rank: one to each other rank whose block
 *                   is not empty
 *   bytes sent per rank: its blocks for the others, sum(scounts) - scounts[r]
 *
 * In step k = 1..P-1 rank r sends its block for r+k and receives the
 * block of r-k (mod P), each straight from and into its place: one
 * partner to send to and one to receive from per step, as alltoall's
 * pairwise. Both ends of a pair know the block's size, so an empty block
 * is neither sent nor received. In place (sbuf NULL) the input is rbuf
 * in the receive layout, copied first to scratch (slot 0): a block
 * received in step k lands where a block not yet sent may lie.
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_registry.h"

int braid_alltoallv_pairwise(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t es = a->esize;
    char *out = a->rbuf;
    const char *in = a->sbuf;
    const size_t *sc = a->scounts, *sd = a->sdispls;
    if (NULL == in) {
        /* the input in the receive layout: copy the span it covers */
        size_t span = 0;
        for (int q = 0; q < P; q++)
            if (a->rcounts[q] && a->displs[q] + a->rcounts[q] > span) span = a->displs[q] + a->rcounts[q];
        char *copy = braid_scratch_get(a->scratch, 0, span * es);
        if (NULL == copy && span) return BRAID_ERR_NOMEM;
        if (span) memcpy(copy, out, span * es);
        in = copy;
        sc = a->rcounts;
        sd = a->displs;
    }
    if (sc[r]) memmove(out + a->displs[r] * es, in + sd[r] * es, sc[r] * es);
    for (int k = 1; k < P; k++) {
        int to = (r + k) % P, from = (r - k + P) % P;
        braid_req_t reqs[2] = { NULL, NULL };
        int rc = BRAID_OK;
        if (a->rcounts[from])
            rc = braid_irecv(c, from, (braid_step_t)k, out + a->displs[from] * es,
                             a->rcounts[from] * es, &reqs[0]);
        if (sc[to] && BRAID_OK == rc)
            rc = braid_isend(c, to, (braid_step_t)k, in + sd[to] * es, sc[to] * es, &reqs[1]);
        int wrc = braid_waitall(c, 2, reqs);
        if (BRAID_OK != rc || BRAID_OK != wrc) return BRAID_OK != rc ? rc : wrc;
    }
    return BRAID_OK;
}

/* (P-1) (alpha + S beta), S the mean block */
double braid_cost_alltoallv_pairwise(int P, double S)
{
    return (P - 1) * (BRAID_COST_ALPHA + S * BRAID_COST_BETA);
}
