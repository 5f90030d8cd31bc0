/*
 * alltoall pairwise exchange, any P.
 *
 *   steps: P-1      messages per rank: P-1 sent and P-1 received
 *   bytes sent per rank: (P-1) * count * esize
 *
 * In step k = 1..P-1 rank r sends its block for r+k and receives the block
 * of r-k (mod P): every rank has one partner to send to and one to receive
 * from per step, so no link carries two messages at once and the whole
 * exchange takes P-1 message times; the own block is a local copy. Best
 * for large blocks, where Bruck's lg P steps would move each byte lg(P)/2
 * times.
 *
 * In place (sbuf NULL): the input is rbuf. The receive of step k lands on
 * the block for rank r-k, which this rank sends only in step P-k, so the
 * input is first copied to scratch (slot 0) and sent from there.
 */
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

int braid_alltoall_pairwise(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t bytes = a->count * a->esize;
    char *rbuf = a->rbuf;
    const char *in = a->sbuf;
    if (0 == bytes) return BRAID_OK;
    if (NULL == in) {
        char *copy = braid_scratch_get(a->scratch, 0, (size_t)P * bytes);
        if (NULL == copy) return BRAID_ERR_NOMEM;
        memcpy(copy, rbuf, (size_t)P * bytes);
        in = copy;
    }
    memmove(rbuf + (size_t)r * bytes, in + (size_t)r * bytes, bytes);
    for (int k = 1; k < P; k++) {
        int to = (r + k) % P, from = (r - k + P) % P;
        int rc = braid_sendrecv(c, to, (braid_step_t)k, in + (size_t)to * bytes, bytes, from,
                                (braid_step_t)k, rbuf + (size_t)from * bytes, bytes);
        if (BRAID_OK != rc) return rc;
    }
    return BRAID_OK;
}

/* (P-1) (alpha + S beta) */
double braid_cost_alltoall_pairwise(int P, double S)
{
    return (P - 1) * (BRAID_COST_ALPHA + S * BRAID_COST_BETA);
}
