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
 * this rank's window. A window goes down only to a rank that still sends
 * its own in a later step (up, or down to a rank that does): the lower
 * rank needs the upper window for nothing else. At P = 2 that is one
 * message, rank 0 to rank 1. The window is sent from the input until it
 * changes, and exscan's first window from below is received into the
 * result where nothing else needs it, so at P = 2 nothing is copied. Scratch: the
 * window (slot 0) and the received window (slot 1), S bytes each.
 *
 * Shared memory: every rank publishes its input in its slot and folds the
 * slots of the ranks below it (and its own for scan) in rank order; it
 * waits only for those ranks, never for the ones above. Single copy
 * (above a slot, with a reader; below it the cells, whatever the
 * segment's single-copy threshold): every rank publishes its input's address
 * and reads the lower ranks' inputs from their memory, folding as it
 * reads; it returns when every rank is done reading (the ranks above read
 * its input). In place it publishes a copy: its input is the result it
 * writes while they read. Scratch: the copy (slot 0), one read input
 * (slot 1). Two ranks, where the node also has a writer
 * (process_vm_writev): the pair way of the single-copy reduce
 * (braid_shm_reduce.c) with rank 1 as its root, rank 0 writing half of
 * its input into rank 1's result while rank 1 reads and folds the rest.
 */
#include <stdbool.h>
#include <string.h>

#include "braid_blocks.h"
#include "braid_shm.h"

bool braid_prefix_sends_later(int r, int mask, int P)
{
    for (int m = mask << 1; m > 0 && m < P; m <<= 1) {
        int peer = r ^ m;
        if (peer < P && (peer > r || braid_prefix_sends_later(peer, m, P))) return true;
    }
    return false;
}

/* the fold of a window from below into the result: the first one is a copy
 * for an exclusive prefix, whose result has no own input to start from */
static void fold_lower(const braid_coll_args_t *a, const void *lower, bool *have, size_t bytes)
{
    if (*have) a->op.fn(lower, a->rbuf, a->count, a->op.arg);
    else braid_copy(a->rbuf, lower, bytes);
    *have = true;
}

/* This rank's step with peer: send the window (up always, down when the
 * lower rank sends later), receive the peer's (the same rule), fold. */
typedef struct prefix_state {
    const char *window;   /* this rank's window: the input until it changes */
    char *buf[2];         /* scratch: buf[spare] takes the next receive */
    int spare;
    bool have;            /* the result holds something */
} prefix_state_t;

static int prefix_step(braid_comm_t *c, const braid_coll_args_t *a, prefix_state_t *st, int mask,
                       braid_step_t step, bool exclusive)
{
    int P = c->size, r = c->rank, peer = r ^ mask;
    size_t bytes = a->count * a->esize;
    bool lower = peer < r;                                  /* the peer's window is lower */
    bool down = braid_prefix_sends_later(lower ? peer : r, mask, P);
    bool keep = braid_prefix_sends_later(r, mask, P);      /* the window is read later */
    bool sends = !lower || down, recvs = lower || down;
    char *into = st->buf[st->spare];
    /* exscan's first window from below is the result as it is */
    if (exclusive && lower && !st->have && !keep && !sends) into = a->rbuf;
    int rc = sends && recvs ? braid_sendrecv(c, peer, step, st->window, bytes, peer, step, into, bytes)
             : sends        ? braid_send(c, peer, step, st->window, bytes)
                            : braid_recv(c, peer, step, into, bytes);
    if (BRAID_OK != rc || !recvs) return rc;
    if (!lower) {
        /* window = window op theirs: the received buffer becomes the window */
        a->op.fn(st->window, into, a->count, a->op.arg);
        st->window = into;
        st->spare = 1 - st->spare;
        return BRAID_OK;
    }
    if (keep) {
        /* window = theirs op window, in a buffer of its own (before an in-place
         * result, which may be the input, changes) */
        char *own = st->buf[1 - st->spare];
        if (st->window != own) braid_copy(own, st->window, bytes);
        a->op.fn(into, own, a->count, a->op.arg);
        st->window = own;
    }
    if (into == a->rbuf) st->have = true;
    else fold_lower(a, into, &st->have, bytes);
    return BRAID_OK;
}

int braid_prefix_doubling(braid_comm_t *c, const braid_coll_args_t *a, bool exclusive)
{
    int P = c->size;
    size_t bytes = a->count * a->esize;
    if (!exclusive) braid_copy_input(a, bytes);
    if (0 == bytes || P < 2) return BRAID_OK;
    prefix_state_t st = { NULL != a->sbuf ? a->sbuf : a->rbuf,
                          { braid_scratch_get(a->scratch, 0, bytes),
                            braid_scratch_get(a->scratch, 1, bytes) },
                          0, !exclusive };
    if (NULL == st.buf[0] || NULL == st.buf[1]) return BRAID_ERR_NOMEM;
    braid_step_t step = 0;
    for (int mask = 1; mask < P; mask <<= 1, step++) {
        if ((c->rank ^ mask) >= P) continue;
        int rc = prefix_step(c, a, &st, mask, step, exclusive);
        if (BRAID_OK != rc) return rc;
    }
    return BRAID_OK;
}

/* Single copy: the ranks below are read straight from their buffers,
 * highest first, into the result (the fold runs right to left, as the
 * cells' does). */
static int prefix_direct(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s,
                         bool exclusive)
{
    /* two ranks: rank 0 writes part of its input into rank 1's result
     * while rank 1 reads the rest, two cores on the one copy */
    if (braid_shm_pairs(s)) return braid_shm_prefix_pair(s, a, exclusive);
    int r = c->rank, first = exclusive ? r - 1 : r;   /* the highest rank folded in */
    size_t bytes = a->count * a->esize;
    const unsigned char *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    if (NULL == a->sbuf && r + 1 < c->size) {
        /* in place: the ranks above read the input this rank overwrites */
        unsigned char *copy = braid_scratch_get(a->scratch, 0, bytes);
        if (NULL != copy) braid_copy(copy, in, bytes);
        in = copy;   /* NULL: published anyway, the readers fail */
    }
    unsigned char *tmp = braid_scratch_get(a->scratch, 1, bytes);
    uint64_t seq = braid_shm_begin(s);
    const void *pub = NULL == in ? NULL : braid_shm_expose(s, in, bytes, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    int rc = NULL == pub || NULL == tmp ? BRAID_ERR_NOMEM : BRAID_OK;
    if (first >= 0 && BRAID_OK == rc) {
        if (first < r) {
            braid_shm_wait_one(s, seq, first);
            rc = s->read(s->read_arg, first, a->rbuf, braid_shm_addr(s, seq, first), bytes);
        } else if (NULL != a->sbuf) {
            braid_copy(a->rbuf, a->sbuf, bytes);
        }
    }
    for (int q = first - 1; q >= 0 && BRAID_OK == rc; q--) {
        braid_shm_wait_one(s, seq, q);
        rc = s->read(s->read_arg, q, tmp, braid_shm_addr(s, seq, q), bytes);
        if (BRAID_OK == rc) a->op.fn(tmp, a->rbuf, a->count, a->op.arg);
    }
    braid_shm_done(s, seq);
    braid_shm_wait_all_done(s, seq);
    return rc;
}

int braid_prefix_shm(braid_comm_t *c, const braid_coll_args_t *a, bool exclusive)
{
    size_t bytes = a->count * a->esize;
    /* the cells wherever a slot holds the input: the highest rank reads
     * P - 1 slots at cache speed where single copy costs a system call per
     * rank read */
    braid_shm_t *s = braid_shm_of(c, bytes);
    if (NULL == s) s = braid_shm_direct(c, bytes);
    if (NULL != s && NULL == braid_shm_of(c, bytes)) return prefix_direct(c, a, s, exclusive);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    int r = c->rank, upto = exclusive ? r : r + 1;
    const void *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, bytes);
    for (int q = 0; q < upto; q++) braid_shm_wait_one(s, seq, q);
    if (upto > 0) braid_shm_fold_prefix(s, seq, 0, a->count, a->esize, &a->op, upto, in, a->rbuf);
    braid_shm_done(s, seq);
    return BRAID_OK;
}
