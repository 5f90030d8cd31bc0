/*
 * prefix.c - the two ways braid computes prefix reductions (MPI_Scan and
 * MPI_Exscan), shared by scan_<name>.c and exscan_<name>.c, which differ
 * only in whether a rank's own input enters its result.
 *
 * Recursive doubling: in step k (mask = 2^k) rank r exchanges with
 * r XOR mask the reduction of its current window (the 2^k ranks that
 * share r's bits above k, as far as they exist). A window from below is
 * folded into the result and, as the lower operand, into the window; a
 * window from above only into the window, as the upper operand. Each
 * rank's result is thus built from ever farther, lower windows, each
 * folded in on the left: ranks stay in order, so non-commutative ops get
 * MPI's order. A partner beyond P (P not a power of two) is skipped: the
 * ranks it would stand for are all above every rank that could later need
 * this rank's window. Scratch: the window (slot 0) and the received window
 * (slot 1), S bytes each.
 *
 * Shared memory: every rank publishes its input in its slot and folds the
 * slots of the ranks below it (and its own for scan) in rank order; it
 * waits only for those ranks, never for the ones above.
 */
#include <stdbool.h>
#include <string.h>

#include "braid_engines.h"
#include "braid_shm.h"

/* the fold of a window from below into the result: the first one is a copy
 * for an exclusive prefix, whose result has no own input to start from */
static void fold_lower(const braid_coll_args_t *a, const void *lower, bool *have, size_t bytes)
{
    if (*have) a->op.fn(lower, a->rbuf, a->count, a->op.arg);
    else memcpy(a->rbuf, lower, bytes);
    *have = true;
}

int braid_prefix_doubling(braid_comm_t *c, const braid_coll_args_t *a, bool exclusive)
{
    int P = c->size, r = c->rank;
    size_t bytes = a->count * a->esize;
    const void *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    if (!exclusive) braid_copy_input(a, bytes);
    if (0 == bytes || P < 2) return BRAID_OK;
    char *window = braid_scratch_get(a->scratch, 0, bytes);
    char *recvd = braid_scratch_get(a->scratch, 1, bytes);
    if (NULL == window || NULL == recvd) return BRAID_ERR_NOMEM;
    memcpy(window, in, bytes);
    bool have = !exclusive;
    braid_step_t step = 0;
    for (int mask = 1; mask < P; mask <<= 1, step++) {
        int peer = r ^ mask;
        if (peer >= P) continue;
        int rc = braid_sendrecv(c, peer, step, window, bytes, peer, step, recvd, bytes);
        if (BRAID_OK != rc) return rc;
        if (peer < r) {
            fold_lower(a, recvd, &have, bytes);
            a->op.fn(recvd, window, a->count, a->op.arg);
        } else {
            a->op.fn(window, recvd, a->count, a->op.arg);
            char *t = window;
            window = recvd;
            recvd = t;
        }
    }
    return BRAID_OK;
}

int braid_prefix_shm(braid_comm_t *c, const braid_coll_args_t *a, bool exclusive)
{
    size_t bytes = a->count * a->esize;
    braid_shm_t *s = braid_shm_of(c, bytes);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    int r = c->rank, upto = exclusive ? r : r + 1;
    const void *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, bytes);
    for (int q = 0; q < upto; q++) braid_shm_wait_one(s, seq, q);
    if (upto > 0) braid_shm_fold_prefix(s, seq, 0, a->count, a->esize, &a->op, upto, a->rbuf);
    braid_shm_done(s, seq);
    return BRAID_OK;
}
