/*
 * allreduce ring (Gloo allreduce_ring): the whole buffer goes round the ring.
 *
 *   steps: P-1          bytes sent per rank: (P-1)*S     messages: P-1
 *
 * Step 0: send this rank's input to r+1. Step k = 1..P-2: forward the buffer
 * received in step k-1 (the input of rank r-k) to r+1. Every received
 * buffer is reduced into rbuf. The receive of step k+1 is posted and the
 * forward is in flight while step k's buffer is reduced (two receive
 * buffers in scratch).
 *
 * Every rank reduces the P inputs in its own order, so the result has the
 * same bits on every rank only when a->exact says the op does not depend on
 * the evaluation order. Otherwise (floating-point sum, user ops) this runs
 * the ring reduce-scatter + allgather of allreduce_ring_chunked instead,
 * where each element is reduced once and copied.
 *
 * Non-commutative ops: exact ones keep the rank order with two
 * accumulators: rank r receives x_{r-1}, x_{r-2}, ..., x_0 (folded in on
 * the left of rbuf = x_0..x_r) and then x_{P-1}, ..., x_{r+1} (folded into
 * a right accumulator), and finally rbuf = left op right. Non-commutative
 * ops that are not exact return BRAID_ERR_UNSUPPORTED (P > 1).
 */
#include "braid_blocks.h"
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

enum { STEP_RING = 0 };   /* + step k, k < P */

int braid_allreduce_ring(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    if (P == 1) {
        braid_copy_input(a, a->count * a->esize);
        return BRAID_OK;
    }
    if (!a->exact) {
        if (!a->op.commutative) return BRAID_ERR_UNSUPPORTED;
        return braid_allreduce_ring_chunked(c, a);
    }
    if (0 == a->count) return BRAID_OK;

    size_t n = a->count, bytes = n * a->esize;
    bool in_place = NULL == a->sbuf || a->sbuf == a->rbuf;
    int right = (r + 1) % P, left = (r - 1 + P) % P;
    char *acc = a->rbuf;
    char *rbufs = braid_scratch_get(a->scratch, BRAID_SLOT_BLOCK, 2 * bytes);
    if (NULL == rbufs) return BRAID_ERR_NOMEM;
    char *R[2] = { rbufs, rbufs + bytes };
    char *racc = NULL;           /* right accumulator (non-commutative) */
    bool racc_used = false;
    if (!a->op.commutative) {
        racc = braid_scratch_get(a->scratch, BRAID_SLOT_WORK, bytes);
        if (NULL == racc) return BRAID_ERR_NOMEM;
    }

    braid_req_t req[2] = { NULL, NULL };
    int rc = braid_irecv(c, left, STEP_RING, R[0], bytes, &req[0]);
    if (BRAID_OK == rc)
        rc = braid_isend(c, right, STEP_RING, in_place ? (const void *)acc : a->sbuf, bytes, &req[1]);
    if (BRAID_OK == rc && !in_place) braid_copy(acc, a->sbuf, bytes);
    int wrc = braid_waitall(c, 2, req);
    if (BRAID_OK == rc) rc = wrc;

    for (int k = 0; BRAID_OK == rc && k < P - 1; k++) {
        char *got = R[k % 2];   /* the input of rank r-1-k (mod P) */
        if (k + 1 < P - 1) {
            rc = braid_irecv(c, left, (braid_step_t)(STEP_RING + k + 1), R[(k + 1) % 2], bytes, &req[0]);
            if (BRAID_OK == rc)
                rc = braid_isend(c, right, (braid_step_t)(STEP_RING + k + 1), got, bytes, &req[1]);
        }
        if (BRAID_OK == rc) {
            if (a->op.commutative || r - 1 - k >= 0) {
                a->op.fn(got, acc, n, a->op.arg);          /* lower rank on the left */
            } else if (!racc_used) {
                braid_copy(racc, got, bytes);                   /* x_{P-1} */
                racc_used = true;
            } else {
                a->op.fn(got, racc, n, a->op.arg);
            }
        }
        wrc = braid_waitall(c, 2, req);
        if (BRAID_OK == rc) rc = wrc;
    }
    if (BRAID_OK == rc && racc_used) {
        a->op.fn(acc, racc, n, a->op.arg);
        braid_copy(acc, racc, bytes);
    }
    return rc;
}

/* not considered by the model: never faster than ring_chunked in this model: (P-1)(alpha + S(beta+gamma)) */
double braid_cost_allreduce_ring(int P, double S)
{
    (void)P;
    (void)S;
    return BRAID_COST_NONE;
}
