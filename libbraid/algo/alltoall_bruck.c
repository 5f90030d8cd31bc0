/*
 * alltoall Bruck's algorithm (Bruck, Ho, Kipnis, Upfal, Weathersby, 1997),
 * any P.
 *
 *   steps: ceil(lg P)      messages per rank: one sent, one received per step
 *   bytes sent per rank: sum over steps k of (blocks i < P with bit k set)
 *                        * count * esize, about (P/2) lg P blocks
 *   local copies: 2 P blocks (the rotations), plus packing each step
 *
 * 1. Rotate: tmp[i] = the block for rank r+i (mod P).
 * 2. For k = 0.. while 2^k < P: send to r+2^k the blocks tmp[i] whose index
 *    has bit k set, packed, and receive the same positions from r-2^k. A
 *    block moves by 2^k for each bit of i, so after the last step tmp[i]
 *    holds the block rank r-i sent to r.
 * 3. Unrotate: rbuf[r-i] = tmp[i].
 * lg P messages instead of pairwise's P-1, each block sent about lg(P)/2
 * times: the choice for small blocks at P > 2.
 *
 * In place (sbuf NULL): the input is rbuf, read once by the rotation.
 * Scratch: slot 0 the rotated blocks, slot 1 and 2 a step's packed send
 * and receive (ceil(P/2) blocks each).
 */
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

enum { STEP_BRUCK = 0 };   /* + step k */

/* copy the blocks of tmp whose index has `bit` set to or from packed */
static size_t pack(char *tmp, char *packed, int P, int bit, size_t bytes, bool out)
{
    size_t n = 0;
    for (int i = 0; i < P; i++) {
        if (!(i & bit)) continue;
        if (out) braid_copy(packed + n * bytes, tmp + (size_t)i * bytes, bytes);
        else braid_copy(tmp + (size_t)i * bytes, packed + n * bytes, bytes);
        n++;
    }
    return n;
}

int braid_alltoall_bruck(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t bytes = a->count * a->esize, half = (size_t)(P + 1) / 2;
    char *rbuf = a->rbuf;
    const char *in = NULL != a->sbuf ? a->sbuf : rbuf;
    if (0 == bytes) return BRAID_OK;
    char *tmp = braid_scratch_get(a->scratch, 0, (size_t)P * bytes);
    char *sp = braid_scratch_get(a->scratch, 1, half * bytes);
    char *rp = braid_scratch_get(a->scratch, 2, half * bytes);
    if (NULL == tmp || NULL == sp || NULL == rp) return BRAID_ERR_NOMEM;
    for (int i = 0; i < P; i++)
        braid_copy(tmp + (size_t)i * bytes, in + (size_t)((r + i) % P) * bytes, bytes);
    for (int k = 0, bit = 1; bit < P; k++, bit <<= 1) {
        size_t n = pack(tmp, sp, P, bit, bytes, true);
        int rc = braid_sendrecv(c, (r + bit) % P, (braid_step_t)(STEP_BRUCK + k), sp, n * bytes,
                                (r - bit + P) % P, (braid_step_t)(STEP_BRUCK + k), rp, n * bytes);
        if (BRAID_OK != rc) return rc;
        pack(tmp, rp, P, bit, bytes, false);
    }
    for (int i = 0; i < P; i++)
        braid_copy(rbuf + (size_t)((r - i + P) % P) * bytes, tmp + (size_t)i * bytes, bytes);
    return BRAID_OK;
}

/* ceil(lg P) alpha + (P/2) ceil(lg P) S beta, plus the copies: about
 * (2 P + P lg P) S at memory speed (gamma) */
double braid_cost_alltoall_bruck(int P, double S)
{
    double L = braid_cost_L(P);
    return L * BRAID_COST_ALPHA + L * (P / 2.0) * S * BRAID_COST_BETA +
           (2.0 * P + P * L) * S * BRAID_COST_GAMMA;
}
