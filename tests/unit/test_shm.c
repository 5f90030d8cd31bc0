/*
 * test_shm.c - the shared-memory tier's flag protocol (libbraid/shm) with
 * ranks as threads on one heap segment, beyond the per-collective tests
 * (which run each shm algorithm once or a few times on a fresh segment):
 *
 *  - long mixed sequences: 300 calls on one segment, the collective, root
 *    and size rotating, 2 or 3 cells, random pauses on random ranks, so
 *    that cells are reused by different collectives while slow readers
 *    still read them (a bcast root and reduce's non-roots run ahead); every
 *    value checked after every call;
 *  - refusal: a message larger than a slot is BRAID_ERR_UNSUPPORTED on
 *    every rank, before any flag moves (the next call still works);
 *  - selection (braid_select_on): shm is chosen only where the segment can
 *    carry the call; a forced or rules-file shm falls through otherwise;
 *  - the line probe (braid_shm_line_probe): both ranks of a pair return
 *    rank 0's figure and verdict, a verdict that follows the threshold
 *    (never far where rank 0 yields or rounds exceed the time slice,
 *    which ends the probe after three rounds, unless far_ns says always
 *    far), the segment numbers the same
 *    calls on both and carries the next call; other sizes are never far;
 *  - the fold's own operand (braid_shm_fold_prefix): read in place of the
 *    rank's slot where it lies apart from out, or is out itself on the
 *    rank folded first; the slot otherwise (out in place on a lower rank,
 *    a partial overlap), with a non-commutative op;
 *  - the block collectives' way (braid_shm_cells): two ranks with a reader
 *    and a single-copy threshold below the call, a slot that holds it:
 *    far apart the call reads single copy, near it goes through the cells
 *    (allgather, allgatherv, gather, gatherv, scatter, scatterv,
 *    alltoall, alltoallv), values checked either way.
 */
#include "unit_coll.h"
#include "braid_select.h"

#include <stdatomic.h>
#include <time.h>

enum { ROUNDS = 300, SLOT = 256 };

typedef struct seq_ctx {
    void *seg;
    braid_shm_t shm[UNIT_MAX_P];
    int P;
    atomic_int bad;
    atomic_int unsupported_wrong;
} seq_ctx_t;

static void sum_u32(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    const uint32_t *x = in;
    uint32_t *y = inout;
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* an affine map x -> a x + b per element pair, composed in rank order:
 * associative, not commutative */
static void compose(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    const uint32_t *f = in;
    uint32_t *g = inout;
    for (size_t i = 0; i < n; i += 2) {
        /* f (the lower rank) first, then g: (g o f)(x) = g0 f0 x + g0 f1 + g1 */
        uint32_t a = g[i] * f[i], b = g[i] * f[i + 1] + g[i + 1];
        g[i] = a;
        g[i + 1] = b;
    }
}

static uint32_t val(int r, size_t i, int k) { return (uint32_t)(r * 7919 + (int)i * 31 + k * 17 + 1); }

static void jitter(unsigned *seed)
{
    if (rand_r(seed) % 8 == 0) {
        struct timespec ts = { 0, (long)(rand_r(seed) % 50) * 1000 };
        nanosleep(&ts, NULL);
    }
}

static int seq_rank(braid_comm_t *c, void *p)
{
    seq_ctx_t *x = p;
    int r = c->rank, P = c->size;
    if (BRAID_OK != braid_shm_attach(&x->shm[r], x->seg, r, P, true)) return BRAID_ERR_ARG;
    c->shm = &x->shm[r];
    unsigned seed = (unsigned)(r * 977 + P);
    uint32_t in[SLOT], out[SLOT * UNIT_MAX_P];
    for (int k = 0; k < ROUNDS; k++) {
        int coll = k % 6, root = (k / 6) % P;
        size_t n = 1 + (size_t)(k * 13) % (SLOT / 4);
        if (coll == 2 || coll == 3) n &= ~(size_t)1;   /* pairs for compose */
        if (0 == n) n = 2;
        for (size_t i = 0; i < n; i++) in[i] = val(r, i, k);
        braid_coll_args_t a;
        memset(&a, 0, sizeof a);
        a.count = n;
        a.esize = 4;
        a.root = root;
        a.op.fn = coll == 3 ? compose : sum_u32;
        a.op.commutative = coll != 3;
        a.sbuf = in;
        a.rbuf = out;
        jitter(&seed);
        int rc;
        switch (coll) {
        case 0: /* bcast */
            a.sbuf = NULL;
            a.esize = 1;
            a.count = n * 4;
            if (r == root) memcpy(out, in, n * 4);
            rc = braid_bcast_shm(c, &a);
            for (size_t i = 0; i < n && BRAID_OK == rc; i++) x->bad += out[i] != val(root, i, k);
            break;
        case 1: /* allreduce, sum */
        case 2: /* allreduce, in place */
            if (coll == 2) {
                memcpy(out, in, n * 4);
                a.sbuf = NULL;
            }
            rc = braid_allreduce_shm(c, &a);
            for (size_t i = 0; i < n && BRAID_OK == rc; i++) {
                uint32_t want = 0;
                for (int q = 0; q < P; q++) want += val(q, i, k);
                x->bad += out[i] != want;
            }
            break;
        case 3: { /* reduce, non-commutative, root rotating */
            for (size_t i = 0; i < n; i++) out[i] = 0xdeadbeef;
            rc = braid_reduce_shm(c, &a);
            if (r == root && BRAID_OK == rc)
                for (size_t i = 0; i < n; i += 2) {
                    uint32_t A = val(P - 1, i, k), B = val(P - 1, i + 1, k);
                    for (int q = P - 2; q >= 0; q--) {
                        uint32_t fa = val(q, i, k), fb = val(q, i + 1, k);
                        uint32_t na = A * fa, nb = A * fb + B;
                        A = na;
                        B = nb;
                    }
                    x->bad += out[i] != A || out[i + 1] != B;
                }
            break;
        }
        case 4: /* allgather */
            rc = braid_allgather_shm(c, &a);
            for (int q = 0; q < P && BRAID_OK == rc; q++)
                for (size_t i = 0; i < n; i++) x->bad += out[(size_t)q * n + i] != val(q, i, k);
            break;
        default: /* barrier, and a message too large for a slot */
            rc = braid_barrier_shm(c, NULL);
            if (BRAID_OK == rc) {
                a.count = SLOT / 4 + 1;
                x->unsupported_wrong += BRAID_ERR_UNSUPPORTED != braid_allreduce_shm(c, &a);
            }
            break;
        }
        if (BRAID_OK != rc) return rc;
    }
    return BRAID_OK;
}

START_TEST(mixed_sequences)
{
    static const int Ps[] = { 1, 2, 3, 5, 8, 13 };
    int P = Ps[_i / 2], cells = 2 + _i % 2;
    seq_ctx_t x;
    memset(&x, 0, sizeof x);
    x.P = P;
    x.seg = unit_shm_segment(P, cells, SLOT);
    inproc_result_t res = inproc_run(P, seq_rank, NULL, &x);
    ck_assert_msg(BRAID_OK == res.rc, "P=%d cells=%d: rc %d", P, cells, res.rc);
    ck_assert_msg(0 == x.bad, "P=%d cells=%d: %d wrong values", P, cells, (int)x.bad);
    ck_assert_msg(0 == x.unsupported_wrong, "P=%d: %d oversized calls not refused", P,
                  (int)x.unsupported_wrong);
    for (int r = 0; r < P; r++) {
        ck_assert_uint_eq(res.stats[r].msgs_sent, 0);   /* no message: all through the segment */
        /* one call number per call, the same on every rank; a one-rank
         * bcast returns before numbering (there is nothing to move) */
        ck_assert_uint_eq(x.shm[r].seq, (uint64_t)ROUNDS - (P == 1 ? (ROUNDS + 5) / 6 : 0));
    }
    free(res.stats);
    free(x.seg);
}
END_TEST

typedef struct probe_ctx {
    void *seg;
    braid_shm_t shm[3];
    uint64_t far_ns, slice_ns, ns[3];
    bool rank0_yields, far[3];
    atomic_int bad;
} probe_ctx_t;

static int probe_rank(braid_comm_t *c, void *p)
{
    probe_ctx_t *x = p;
    int r = c->rank;
    if (BRAID_OK != braid_shm_attach(&x->shm[r], x->seg, r, c->size, true)) return BRAID_ERR_ARG;
    /* rank 0 spins unless the case says otherwise; rank 1 yields (threads
     * on few cores) - the verdict is rank 0's */
    if (0 == r) x->shm[0].yield = x->rank0_yields;
    c->shm = &x->shm[r];
    x->ns[r] = braid_shm_line_probe(&x->shm[r], 16, x->far_ns, x->slice_ns);
    x->far[r] = x->shm[r].far;
    /* the segment goes on: a reduce of one element */
    uint32_t in = (uint32_t)r + 1, out = 0;
    braid_coll_args_t a;
    memset(&a, 0, sizeof a);
    a.count = 1;
    a.esize = 4;
    a.op.fn = sum_u32;
    a.op.commutative = true;
    a.sbuf = &in;
    a.rbuf = &out;
    int rc = braid_reduce_shm(c, &a);
    if (0 == r && BRAID_OK == rc) x->bad += out != (uint32_t)(c->size * (c->size + 1) / 2);
    return rc;
}

/* braid_shm_span: one cell while n parts fit a slot, then even pieces over
 * up to ncells cells, 0 beyond */
START_TEST(span_pieces)
{
    braid_shm_t s = { .ncells = 4, .slot_bytes = 8192 };
    struct {
        int n;
        size_t bytes, slot;
        int k;
        size_t piece;
    } cases[] = {
        { 16, 0, 8192, 1, 0 },      { 16, 256, 8192, 1, 256 },  { 16, 512, 8192, 1, 512 },
        { 16, 513, 8192, 2, 257 },  { 16, 1024, 8192, 2, 512 }, { 16, 1500, 8192, 3, 500 },
        { 16, 2048, 8192, 4, 512 }, { 16, 2049, 8192, 0, 0 },   { 3, 3, 10, 1, 3 },
        { 3, 4, 10, 2, 2 },         { 3, 12, 10, 4, 3 },        { 3, 13, 10, 0, 0 },
        { 3, 0, 2, 1, 0 },          { 3, 1, 2, 0, 0 },          { 1, 32768, 8192, 4, 8192 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t piece = 99;
        s.slot_bytes = cases[i].slot;
        int k = braid_shm_span(&s, cases[i].n, cases[i].bytes, &piece);
        ck_assert_msg(k == cases[i].k, "case %zu: %d cells, not %d", i, k, cases[i].k);
        if (k) ck_assert_msg(piece == cases[i].piece, "case %zu: piece %zu, not %zu", i, piece, cases[i].piece);
        /* the pieces cover the part and fit the slot */
        if (k) ck_assert(piece * (size_t)k >= cases[i].bytes && piece * (size_t)cases[i].n <= s.slot_bytes);
    }
}
END_TEST

START_TEST(line_probe)
{
    int P = 1 + _i % 3;
    probe_ctx_t x;
    memset(&x, 0, sizeof x);
    /* every round exceeds 2 ns, none 2^62; cases 18..: BRAID_SHM_FAR_ALWAYS,
     * far though rank 0 yields and the slices cut the probe short */
    bool always = _i >= 18;
    x.far_ns = always ? BRAID_SHM_FAR_ALWAYS : _i / 3 % 2 ? 2 : UINT64_MAX >> 2;
    x.rank0_yields = _i / 6 % 2;
    /* cases 12..: every round exceeds the slice, the third ends the probe */
    bool sliced = _i >= 12;
    x.slice_ns = sliced ? 1 : UINT64_MAX;
    x.seg = unit_shm_segment(P, 2, 64);
    inproc_result_t res = inproc_run(P, probe_rank, NULL, &x);
    ck_assert_int_eq(res.rc, BRAID_OK);
    ck_assert_int_eq(x.bad, 0);
    bool want_far = 2 == P && (always || (2 == x.far_ns && !x.rank0_yields && !sliced));
    for (int r = 0; r < P; r++) {
        ck_assert_msg(x.far[r] == want_far, "P=%d far_ns=%llu rank %d: far %d", P,
                      (unsigned long long)x.far_ns, r, (int)x.far[r]);
        ck_assert_uint_eq(x.ns[r], x.ns[0]);
        /* warm-up 2 x 2 cells + 16 timed (cut short: 3) + the verdict,
         * then the reduce */
        ck_assert_uint_eq(x.shm[r].seq, 2 != P ? 1 : sliced ? 3 + 1 + 1 : 2 * 2 + 16 + 1 + 1);
    }
    if (2 == P) ck_assert_uint_gt(x.ns[0], 0);
    else ck_assert_uint_eq(x.ns[0], 0);
    free(res.stats);
    free(x.seg);
}
END_TEST

/* The fold of ranks 0..n-1's maps (compose, E pairs) over a 4-rank
 * segment, folded as rank me with its own operand where `where` says:
 * 0 none, 1 a buffer apart (its slot then holds garbage: only own can give
 * the right result), 2 out itself (in place), 3 out two elements on (a
 * partial overlap). */
enum { FOLD_P = 4, FOLD_E = 8 };

static void fold_case(int me, int n, int where)
{
    void *seg = unit_shm_segment(FOLD_P, 2, 256);
    braid_shm_t s;
    ck_assert_int_eq(braid_shm_attach(&s, seg, me, FOLD_P, false), BRAID_OK);
    uint32_t want[FOLD_E], apart[FOLD_E], buf[FOLD_E + 2];
    for (int r = 0; r < FOLD_P; r++)
        for (size_t i = 0; i < FOLD_E; i++) ((uint32_t *)braid_shm_slot(&s, 1, r))[i] = val(r, i, 3);
    for (size_t i = 0; i < FOLD_E; i++) {
        want[i] = val(n - 1, i, 3);
        apart[i] = val(me, i, 3);
        buf[i + 2] = buf[i] = val(me, i, 3);
    }
    for (int r = n - 2; r >= 0; r--) {
        uint32_t f[FOLD_E];
        for (size_t i = 0; i < FOLD_E; i++) f[i] = val(r, i, 3);
        compose(f, want, FOLD_E / 2 * 2, NULL);
    }
    if (1 == where && me < n) memset(braid_shm_slot(&s, 1, me), 0x5a, FOLD_E * 4);
    const void *own = 0 == where ? NULL : 1 == where ? (const void *)apart : 2 == where ? (const void *)buf
                                                                                  : (const void *)(buf + 2);
    braid_op_t op = { compose, NULL, false };
    braid_shm_fold_prefix(&s, 1, 0, FOLD_E, 4, &op, n, own, buf);
    for (size_t i = 0; i < FOLD_E; i++)
        ck_assert_msg(buf[i] == want[i], "me=%d n=%d own %d: element %zu is %u, not %u", me, n, where, i,
                      buf[i], want[i]);
    free(seg);
}

START_TEST(fold_own_operand)
{
    for (int me = 0; me < FOLD_P; me++)
        for (int n = 1; n <= FOLD_P; n++)
            for (int where = 0; where < 4; where++) fold_case(me, n, where);
}
END_TEST

START_TEST(attach_checks_header)
{
    void *seg = unit_shm_segment(4, 2, 64);
    braid_shm_t s;
    ck_assert_int_eq(braid_shm_attach(&s, seg, 1, 4, false), BRAID_OK);
    ck_assert_uint_eq(s.slot_bytes, 64);
    ck_assert_uint_eq(s.stride, 128);                      /* stamp + data in whole lines */
    ck_assert_int_eq(braid_shm_attach(&s, seg, 1, 5, false), BRAID_ERR_ARG);   /* wrong size */
    ck_assert_int_eq(braid_shm_attach(&s, seg, 4, 4, false), BRAID_ERR_ARG);   /* rank out of range */
    memset(seg, 0, 8);                                                          /* no magic */
    ck_assert_int_eq(braid_shm_attach(&s, seg, 1, 4, false), BRAID_ERR_ARG);
    free(seg);
    braid_comm_t c = { 0 };
    ck_assert_ptr_null(braid_shm_of(&c, 0));               /* no segment: every shm algorithm refuses */
    ck_assert_int_eq(braid_barrier_shm(&c, NULL), BRAID_ERR_UNSUPPORTED);
}
END_TEST

START_TEST(selection_needs_segment)
{
    for (int coll = 0; coll < BRAID_COLL_N; coll++)
        for (int P = 1; P <= 16; P++)
            for (size_t S = 0; S <= (64u << 10); S = S ? S * 2 : 1) {
                int off = braid_select_on((braid_coll_t)coll, P, S, 0, NULL, false).alg;
                ck_assert_msg(!unit_alg_has((braid_coll_t)coll, off, BRAID_OPT_SHM),
                              "%s P=%d S=%zu: shm chosen without a segment", braid_coll_name((braid_coll_t)coll), P, S);
                ck_assert_int_eq(off, braid_select((braid_coll_t)coll, P, S, 0, NULL).alg);
            }
    /* with a segment: the built-in shm rows for small messages */
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLREDUCE, 2, 8, 0, NULL, true).alg, BRAID_ALLREDUCE_SHM);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_BARRIER, 8, 0, 0, NULL, true).alg, BRAID_BARRIER_SHM);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLTOALL, 2, 1 << 16, 0, NULL, true).alg, BRAID_ALLTOALL_SHM);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLTOALL, 3, 8, 0, NULL, true).alg, BRAID_ALLTOALL_SHM);
    /* P = 5: shm at every size (the cells, spanning cells, single copy) */
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLTOALL, 5, 816, 0, NULL, true).alg, BRAID_ALLTOALL_SHM);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLTOALL, 5, 2048, 0, NULL, true).alg, BRAID_ALLTOALL_SHM);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLTOALL, 5, 8192, 0, NULL, true).alg, BRAID_ALLTOALL_SHM);
    /* P = 16 (measured on a 16-core node): alltoall's cells (spanning up to
     * the 4 cells) to 2 KiB blocks, single copy above; allgather at every
     * size; allreduce from 512 KiB, the message rows below */
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLTOALL, 16, 256, 0, NULL, true).alg, BRAID_ALLTOALL_SHM);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLTOALL, 16, 1024, 0, NULL, true).alg, BRAID_ALLTOALL_SHM);
    ck_assert_int_ne(braid_select_on(BRAID_COLL_ALLTOALL, 15, 1024, 0, NULL, true).alg, BRAID_ALLTOALL_SHM);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLTOALL, 16, 4096, 0, NULL, true).alg, BRAID_ALLTOALL_SHM);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLGATHER, 16, 1 << 20, 0, NULL, true).alg, BRAID_ALLGATHER_SHM);
    ck_assert_int_ne(braid_select_on(BRAID_COLL_ALLGATHER, 15, 1 << 20, 0, NULL, true).alg, BRAID_ALLGATHER_SHM);
    ck_assert_int_ne(braid_select_on(BRAID_COLL_ALLREDUCE, 16, 1 << 16, 0, NULL, true).alg, BRAID_ALLREDUCE_SHM);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLREDUCE, 16, 1 << 20, 0, NULL, true).alg, BRAID_ALLREDUCE_SHM);
    ck_assert_int_ne(braid_select_on(BRAID_COLL_ALLREDUCE, 2, 1 << 20, 0, NULL, true).alg, BRAID_ALLREDUCE_SHM);
    /* forced shm without a segment: the table's message algorithm */
    ck_assert_int_eq(braid_select_on(BRAID_COLL_BCAST, 4, 64, BRAID_BCAST_SHM, NULL, false).alg,
                     braid_select(BRAID_COLL_BCAST, 4, 64, 0, NULL).alg);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_BCAST, 4, 64, BRAID_BCAST_SHM, NULL, true).alg, BRAID_BCAST_SHM);
    /* a rules file: its message algorithm beats the built-in shm rows; its
     * shm row falls through without a segment */
    braid_table_t t;
    char err[256];
    ck_assert_int_eq(braid_rules_parse_string("allreduce 2 * ring\nreduce * * shm\n", "r", &t, err, sizeof err), 0);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_ALLREDUCE, 2, 8, 0, &t, true).alg, BRAID_ALLREDUCE_RING);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_REDUCE, 3, 8, 0, &t, true).alg, BRAID_REDUCE_SHM);
    ck_assert_int_eq(braid_select_on(BRAID_COLL_REDUCE, 3, 8, 0, &t, false).alg,
                     braid_select(BRAID_COLL_REDUCE, 3, 8, 0, NULL).alg);
    braid_table_free(&t);
}
END_TEST

START_TEST(block_way_by_distance)
{
    static const braid_coll_t colls[] = {
        BRAID_COLL_ALLGATHER, BRAID_COLL_ALLGATHERV, BRAID_COLL_GATHER, BRAID_COLL_GATHERV,
        BRAID_COLL_SCATTER, BRAID_COLL_SCATTERV, BRAID_COLL_ALLTOALL, BRAID_COLL_ALLTOALLV,
    };
    static const int shm_alg[] = {
        BRAID_ALLGATHER_SHM, BRAID_ALLGATHERV_SHM, BRAID_GATHER_SHM, BRAID_GATHERV_SHM,
        BRAID_SCATTER_SHM, BRAID_SCATTERV_SHM, BRAID_ALLTOALL_SHM, BRAID_ALLTOALLV_SHM,
    };
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++)
        for (int far = 0; far < 2; far++) {
            /* the harness reads the case's count: % 4 == 1 a reader with
             * threshold 0, bit 32 far apart, % 8 != 5 readable buffers;
             * a slot of the case's bytes holds it */
            unit_case_t k = { .count = far ? 33 : 65, .esize = 8 };
            unit_run_t *R = unit_run_new(colls[i], shm_alg[i], 2, &k);
            ck_assert_int_eq(unit_run_exec(R), BRAID_OK);
            ck_assert(R->shm_far == (bool)far && R->shm_direct && 0 == R->shm_direct_above);
            unit_check_values(R);
            unsigned long copies = atomic_load(&R->shm_copies);
            ck_assert_msg(far ? copies > 0 : 0 == copies, "%s, ranks %s: %lu single-copy reads and writes",
                          braid_coll_name(colls[i]), far ? "far apart" : "near", copies);
            unit_run_free(R);
        }
}
END_TEST

/* Single copy by writers: gather's and gatherv's blocks are written into
 * the root's rbuf by their owners (at P = 2 the root reads a part of the
 * block too), and at P = 2 bcast and scatter(v) share the reader's copy
 * with the root, which writes a part: one write per block, and a read too
 * where the destination takes a part. Where the destination's buffer is
 * memory the writer refuses, it reads everything. */
static void check_copies(braid_coll_t coll, int alg, int P, const unit_case_t *k, unsigned long blocks,
                         unsigned long reads, unsigned long writes)
{
    unit_run_t *R = unit_run_new(coll, alg, P, k);
    ck_assert_int_eq(unit_run_exec(R), BRAID_OK);
    unit_check_values(R);
    unsigned long copies = atomic_load(&R->shm_copies), w = atomic_load(&R->shm_writes);
    ck_assert_msg(blocks > 0 && copies - w == reads && w == writes,
                  "%s P=%d: %lu single-copy reads and %lu writes, want %lu and %lu (%lu blocks above a slot)",
                  braid_coll_name(coll), P, copies - w, w, reads, writes, blocks);
    unit_run_free(R);
}

START_TEST(single_copy_writers)
{
    /* blocks of up to 48 KiB against a slot of 16 KiB (UNIT_SHM_SLOT_MAX):
     * those above it single copy */
    unit_case_t k = { .count = 4096, .esize = 8, .root = 0 };
    for (int P = 2; P <= 6; P++) {
        unsigned long above = 0, filled = 0;
        for (int q = 1; q < P; q++) {
            size_t n = (size_t)(3 - (q + 3) % 4) * k.count / 2 * k.esize; /* the v forms' block q */
            above += n > UNIT_SHM_SLOT_MAX;
            filled += n > 0;
        }
        unsigned long others = (unsigned long)(P - 1);
        check_copies(BRAID_COLL_GATHER, BRAID_GATHER_SHM, P, &k, others, 2 == P ? 1 : 0, others);
        check_copies(BRAID_COLL_GATHERV, BRAID_GATHERV_SHM, P, &k, above, 2 == P ? above : 0, above);
        check_copies(BRAID_COLL_SCATTER, BRAID_SCATTER_SHM, P, &k, others, others, 2 == P ? 1 : 0);
        /* scatterv: single copy for the whole call (its blocks exceed the slot) */
        check_copies(BRAID_COLL_SCATTERV, BRAID_SCATTERV_SHM, P, &k, filled, filled, 2 == P ? 1 : 0);
        unit_case_t b = { .count = 32768, .esize = 1, .root = 0 };
        check_copies(BRAID_COLL_BCAST, BRAID_BCAST_SHM, P, &b, others, others, 2 == P ? 1 : 0);
    }
    /* count 37: far apart (bit 32), threshold 0, buffers the writer refuses */
    unit_case_t f = { .count = 37, .esize = 8, .root = 0 };
    check_copies(BRAID_COLL_GATHER, BRAID_GATHER_SHM, 2, &f, 1, 1, 0);
    check_copies(BRAID_COLL_GATHERV, BRAID_GATHERV_SHM, 2, &f, 1, 1, 0);
    check_copies(BRAID_COLL_SCATTER, BRAID_SCATTER_SHM, 2, &f, 1, 1, 0);
    check_copies(BRAID_COLL_SCATTERV, BRAID_SCATTERV_SHM, 2, &f, 1, 1, 0);
    unit_case_t fb = { .count = 37, .esize = 1, .root = 1 };
    check_copies(BRAID_COLL_BCAST, BRAID_BCAST_SHM, 2, &fb, 1, 1, 0);
}
END_TEST

/* A writer's failure reaches both ends: where the single copy is shared
 * (the destination reads a part, the source writes the rest) and every
 * write fails, the writer returns the failure and the rank written to
 * learns it from the writer's status word - every rank returns
 * BRAID_ERR_TRANSPORT, none waits for ever (the case's timeout), none
 * returns BRAID_OK over a block it did not get. */
static void check_write_failure(braid_coll_t coll, int alg, int P, const unit_case_t *k)
{
    unit_run_t *R = unit_run_new(coll, alg, P, k);
    R->shm_write_fails = true;
    ck_assert_int_eq(unit_run_exec(R), BRAID_ERR_TRANSPORT);
    unsigned long w = atomic_load(&R->shm_writes);
    ck_assert_msg(w > 0, "%s P=%d: no single-copy write tried", braid_coll_name(coll), P);
    for (int r = 0; r < P; r++)
        ck_assert_msg(BRAID_ERR_TRANSPORT == R->rc[r], "%s P=%d: rank %d returned %d after a failed write",
                      braid_coll_name(coll), P, r, R->rc[r]);
    unit_run_free(R);
}

START_TEST(single_copy_write_failure)
{
    unit_case_t k = { .count = 4096, .esize = 8, .root = 0 };
    for (int P = 2; P <= 3; P++) {
        check_write_failure(BRAID_COLL_GATHER, BRAID_GATHER_SHM, P, &k);
        check_write_failure(BRAID_COLL_GATHERV, BRAID_GATHERV_SHM, P, &k);
    }
    check_write_failure(BRAID_COLL_SCATTER, BRAID_SCATTER_SHM, 2, &k);
    check_write_failure(BRAID_COLL_SCATTERV, BRAID_SCATTERV_SHM, 2, &k);
    unit_case_t b = { .count = 32768, .esize = 1, .root = 0 };
    check_write_failure(BRAID_COLL_BCAST, BRAID_BCAST_SHM, 2, &b);
    check_write_failure(BRAID_COLL_REDUCE, BRAID_REDUCE_SHM, 2, &k);
    check_write_failure(BRAID_COLL_SCAN, BRAID_SCAN_SHM, 2, &k);
    check_write_failure(BRAID_COLL_EXSCAN, BRAID_EXSCAN_SHM, 2, &k);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("shm");
    tcase_add_loop_test(unit_tcase(s, "protocol", 120), mixed_sequences, 0, 12);
    TCase *tc = unit_tcase(s, "checks", 60);
    tcase_add_test(tc, attach_checks_header);
    tcase_add_test(tc, selection_needs_segment);
    tcase_add_test(tc, span_pieces);
    tcase_add_test(tc, block_way_by_distance);
    tcase_add_test(tc, single_copy_writers);
    tcase_add_test(tc, single_copy_write_failure);
    tcase_add_test(tc, fold_own_operand);
    tcase_add_loop_test(tc, line_probe, 0, 21);
    return unit_run_suite(s);
}
