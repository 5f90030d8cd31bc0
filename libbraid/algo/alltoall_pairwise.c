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
 * In place (sbuf NULL): the input is rbuf, and a block received must not
 * land on one still to be sent. Round k = 0..P-1 pairs r with (k - r) mod
 * P both ways (the pairing is symmetric; r's own round, 2r = k, is idle):
 * the block for the partner goes to one block of scratch (slot 0) and the
 * partner's block arrives in its place: each rank's P - 1 exchanges spread
 * over P rounds, the same messages and bytes, one block of scratch.
 */
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

static int in_place(braid_comm_t *c, char *rbuf, size_t bytes, braid_scratch_t *scratch)
{
    int P = c->size, r = c->rank;
    char *out = braid_scratch_get(scratch, 0, bytes);
    if (NULL == out) return BRAID_ERR_NOMEM;
    for (int k = 0; k < P; k++) {
        int q = (k - r + P) % P;
        if (q == r) continue;
        char *block = rbuf + (size_t)q * bytes;
        braid_copy(out, block, bytes);
        int rc = braid_sendrecv(c, q, (braid_step_t)k, out, bytes, q, (braid_step_t)k, block, bytes);
        if (BRAID_OK != rc) return rc;
    }
    return BRAID_OK;
}

int braid_alltoall_pairwise(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t bytes = a->count * a->esize;
    char *rbuf = a->rbuf;
    const char *in = a->sbuf;
    if (0 == bytes) return BRAID_OK;
    if (NULL == in) return in_place(c, rbuf, bytes, a->scratch);
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
