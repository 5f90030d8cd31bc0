/*
 * allgather recursive doubling, any P.
 *
 *   steps: ceil(lg P)      bytes sent per rank: (P-1)*count*esize
 *   messages: P a power of two: lg P; otherwise 1 or 2 per step
 *
 * P a power of two (classic recursive doubling): in step k rank r exchanges
 * with r ^ 2^k the 2^k blocks of its aligned group
 * [r & ~(2^k-1), +2^k), one message each way, straight in rbuf.
 *
 * Other P (Bruck's dissemination pattern, without Bruck's final rotation):
 * after step k rank r holds blocks r, r+1, ..., r+2^(k+1)-1 (mod P). In step
 * k it sends its first n_k = min(2^k, P-2^k) blocks, [r, r+n_k) mod P, to
 * r-2^k and receives [r+2^k, r+2^k+n_k) mod P from r+2^k. A range that
 * wraps past block P-1 is sent as two messages (both sides split it at the
 * same place), so the blocks land at their final offsets in rbuf and no
 * scratch or rotation is needed. Sum of n_k = P-1.
 *
 * Not in place, step 0 sends the own block straight from sbuf.
 */
#include "braid_blocks.h"
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

enum { STEP_RD = 0 };   /* + step k */

static int exchange_pow2(braid_comm_t *c, const braid_coll_args_t *a, size_t bytes)
{
    int P = c->size, r = c->rank;
    char *rbuf = a->rbuf;
    for (int k = 0, dist = 1; dist < P; k++, dist <<= 1) {
        int peer = r ^ dist;
        int mine = r & ~(dist - 1), theirs = peer & ~(dist - 1);
        const char *src = rbuf + (size_t)mine * bytes;
        if (0 == k && NULL != a->sbuf) src = a->sbuf;
        int rc = braid_sendrecv(c, peer, (braid_step_t)(STEP_RD + k), src, (size_t)dist * bytes,
                                peer, (braid_step_t)(STEP_RD + k),
                                rbuf + (size_t)theirs * bytes, (size_t)dist * bytes);
        if (BRAID_OK != rc) return rc;
    }
    return BRAID_OK;
}

/* post the blocks [first, first+n) mod P as at most two messages */
static int post_range(braid_comm_t *c, bool send, int peer, braid_step_t step, char *base,
                      size_t bytes, int first, int n, int P, braid_req_t *req)
{
    int n1 = first + n > P ? P - first : n;
    int rc = BRAID_OK;
    if (send) {
        rc = braid_isend(c, peer, step, base + (size_t)first * bytes, (size_t)n1 * bytes, &req[0]);
        if (BRAID_OK == rc && n > n1)
            rc = braid_isend(c, peer, step, base, (size_t)(n - n1) * bytes, &req[1]);
    } else {
        rc = braid_irecv(c, peer, step, base + (size_t)first * bytes, (size_t)n1 * bytes, &req[0]);
        if (BRAID_OK == rc && n > n1)
            rc = braid_irecv(c, peer, step, base, (size_t)(n - n1) * bytes, &req[1]);
    }
    return rc;
}

static int exchange_bruck(braid_comm_t *c, const braid_coll_args_t *a, size_t bytes)
{
    int P = c->size, r = c->rank;
    char *rbuf = a->rbuf;
    for (int k = 0, dist = 1; dist < P; k++, dist <<= 1) {
        int n = dist < P - dist ? dist : P - dist;
        int to = (r - dist + P) % P, from = (r + dist) % P;
        braid_step_t step = (braid_step_t)(STEP_RD + k);
        braid_req_t req[4] = { NULL, NULL, NULL, NULL };
        int rc = post_range(c, false, from, step, rbuf, bytes, (r + dist) % P, n, P, &req[0]);
        if (BRAID_OK == rc) {
            if (0 == k && NULL != a->sbuf)
                rc = braid_isend(c, to, step, a->sbuf, bytes, &req[2]);
            else
                rc = post_range(c, true, to, step, rbuf, bytes, r, n, P, &req[2]);
        }
        int wrc = braid_waitall(c, 4, req);
        if (BRAID_OK != rc) return rc;
        if (BRAID_OK != wrc) return wrc;
    }
    return BRAID_OK;
}

int braid_allgather_recursive_doubling(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t bytes = a->count * a->esize;
    char *own = (char *)a->rbuf + (size_t)r * bytes;
    braid_coll_args_t b = *a;
    if (NULL != b.sbuf && b.sbuf == own) b.sbuf = NULL;   /* in place */
    if (0 == bytes) return BRAID_OK;
    if (NULL != b.sbuf) braid_copy(own, b.sbuf, bytes);       /* read again from step 1 on */
    if (P == 1) return BRAID_OK;
    return (P & (P - 1)) == 0 ? exchange_pow2(c, &b, bytes) : exchange_bruck(c, &b, bytes);
}

/* lg(p) alpha + (P-1) S beta, plus 2 alpha + P S beta when P != p */
double braid_cost_allgather_recursive_doubling(int P, double S)
{
    int p = braid_cost_p(P);
    double t = braid_floor_log2(p) * BRAID_COST_ALPHA + (P - 1) * S * BRAID_COST_BETA;
    if (p != P) t += 2 * BRAID_COST_ALPHA + P * S * BRAID_COST_BETA;
    return t;
}
