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
 *  - the block collectives' way: two ranks with a reader and a
 *    single-copy threshold below the call, a slot that holds it: the call
 *    goes through the cells, near or far apart (allgather, allgatherv,
 *    gather, gatherv, scatter, scatterv, alltoall, alltoallv), values
 *    checked;
 *  - a rank left behind (rank_left_behind): every way with a single-copy
 *    path, one big call and then more than ncells small calls in which
 *    the others never wait for the rank, scheduled so that the others run
 *    as far ahead as the protocol lets them whenever it waits - no rank
 *    reads a word of a peer's slot that a later call may have overwritten
 *    (docs/SHM.md, "What a rank reads of a peer's slot, and until when").
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
    /* rooted calls: the root's P - 1 blocks within the cells; a gather's
     * block up to a slot in one cell at any P (each rank its own slot) */
    struct {
        int P;
        size_t bytes;
        bool own;
        int k;
        size_t piece;
    } rooted[] = {
        { 2, 8192, true, 1, 8192 },  { 2, 8193, true, 2, 4097 },  { 2, 32768, true, 4, 8192 },
        { 2, 32769, true, 0, 0 },    { 16, 8192, true, 1, 8192 }, { 16, 8193, true, 0, 0 },
        { 3, 16384, true, 4, 4096 }, { 3, 16385, true, 0, 0 },    { 2, 8192, false, 1, 8192 },
        { 2, 20000, false, 3, 6667 }, { 3, 4096, false, 1, 4096 }, { 3, 4097, false, 2, 2049 },
        { 16, 512, false, 1, 512 },  { 16, 2185, false, 0, 0 },   { 1, 65536, false, 1, 65536 },
    };
    s.slot_bytes = 8192;
    for (size_t i = 0; i < sizeof rooted / sizeof *rooted; i++) {
        size_t piece = 99;
        int k = braid_shm_rooted_span(&s, rooted[i].P, rooted[i].bytes, rooted[i].own, &piece);
        ck_assert_msg(k == rooted[i].k, "rooted case %zu: %d cells, not %d", i, k, rooted[i].k);
        if (k) ck_assert_msg(piece == rooted[i].piece, "rooted case %zu: piece %zu, not %zu", i, piece,
                             rooted[i].piece);
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

START_TEST(block_way_cells_while_a_slot_holds)
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
            ck_assert_msg(0 == copies, "%s, ranks %s: %lu single-copy reads and writes",
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
     * those above it single copy; gather's and scatter's of 64 KiB, beyond
     * what the 3 cells carry (braid_shm_rooted_span) */
    unit_case_t k = { .count = 4096, .esize = 8, .root = 0 };
    unit_case_t k2 = { .count = 8192, .esize = 8, .root = 0 };
    for (int P = 2; P <= 6; P++) {
        unsigned long above = 0, filled = 0;
        for (int q = 1; q < P; q++) {
            size_t n = (size_t)(3 - (q + 3) % 4) * k.count / 2 * k.esize; /* the v forms' block q */
            above += n > UNIT_SHM_SLOT_MAX;
            filled += n > 0;
        }
        unsigned long others = (unsigned long)(P - 1);
        check_copies(BRAID_COLL_GATHER, BRAID_GATHER_SHM, P, &k2, others, 2 == P ? 1 : 0, others);
        check_copies(BRAID_COLL_GATHERV, BRAID_GATHERV_SHM, P, &k, above, 2 == P ? above : 0, above);
        check_copies(BRAID_COLL_SCATTER, BRAID_SCATTER_SHM, P, &k2, others, others, 2 == P ? 1 : 0);
        /* scatterv: single copy for the whole call (its blocks exceed the slot) */
        check_copies(BRAID_COLL_SCATTERV, BRAID_SCATTERV_SHM, P, &k, filled, filled, 2 == P ? 1 : 0);
        unit_case_t b = { .count = 32768, .esize = 1, .root = 0 };
        check_copies(BRAID_COLL_BCAST, BRAID_BCAST_SHM, P, &b, others, others, 2 == P ? 1 : 0);
    }
    /* count 2085: buffers the writer refuses (count % 8 == 5), blocks
     * above the slot (gather's and scatter's above the cells: 6149) */
    unit_case_t f = { .count = 2085, .esize = 8, .root = 0 };
    unit_case_t f2 = { .count = 6149, .esize = 8, .root = 0 };
    check_copies(BRAID_COLL_GATHER, BRAID_GATHER_SHM, 2, &f2, 1, 1, 0);
    check_copies(BRAID_COLL_GATHERV, BRAID_GATHERV_SHM, 2, &f, 1, 1, 0);
    check_copies(BRAID_COLL_SCATTER, BRAID_SCATTER_SHM, 2, &f2, 1, 1, 0);
    check_copies(BRAID_COLL_SCATTERV, BRAID_SCATTERV_SHM, 2, &f, 1, 1, 0);
    /* bcast: single copy above the threshold (0), a refused buffer */
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
    unit_case_t k2 = { .count = 8192, .esize = 8, .root = 0 };   /* above the cells */
    for (int P = 2; P <= 3; P++) {
        check_write_failure(BRAID_COLL_GATHER, BRAID_GATHER_SHM, P, &k2);
        check_write_failure(BRAID_COLL_GATHERV, BRAID_GATHERV_SHM, P, &k);
    }
    check_write_failure(BRAID_COLL_SCATTER, BRAID_SCATTER_SHM, 2, &k2);
    check_write_failure(BRAID_COLL_SCATTERV, BRAID_SCATTERV_SHM, 2, &k);
    unit_case_t b = { .count = 32768, .esize = 1, .root = 0 };
    check_write_failure(BRAID_COLL_BCAST, BRAID_BCAST_SHM, 2, &b);
    check_write_failure(BRAID_COLL_REDUCE, BRAID_REDUCE_SHM, 2, &k);
    check_write_failure(BRAID_COLL_SCAN, BRAID_SCAN_SHM, 2, &k);
    check_write_failure(BRAID_COLL_EXSCAN, BRAID_EXSCAN_SHM, 2, &k);
}
END_TEST

/* ------------------------------------------------------------------ */
/* a rank left behind: what it reads of a call its peers have moved past */
/* ------------------------------------------------------------------ */

/* Every shm way with a single-copy path, run so that one rank S falls
 * behind inside a big call (above the slot: single copy) while the others
 * run on through UNIT_SHM_CELLS + 2 small calls in which they never wait
 * for S (bcasts through the cells from a root other than S), each rank
 * of the case in turn as S, at every root. S's idle hook (wait_turn calls
 * it every 256 turns) blocks, while S is inside the big call, until every
 * other rank has finished its small calls or waits for S (it called its
 * own idle hook twice since, or its single copy waits for S's next
 * stall): whenever S waits, the others get as far as the protocol lets
 * them - ncells calls past the last one S said done for, overwriting
 * their slots of the big call's cell as soon as S has said done for it.
 * The others' single-copy reads and writes come a millisecond late and
 * only once S waits (adv_late), so that S reaches its waits first. A word
 * S reads of another rank's slot after its own done mark (an address, a
 * status word, a table) is then a small call's data, whose bytes are
 * never 0 (no status word reads BRAID_OK): the big call's values and
 * every return code are checked, and the small calls'. Assumes the
 * harness's segment: UNIT_SHM_CELLS cells (the small calls reach the big
 * call's cell again) of slots of at most UNIT_SHM_SLOT_MAX bytes (the big
 * calls exceed it; a small call fits the slot). */
enum { ADV_SMALL = 64, ADV_FOLLOW = UNIT_SHM_CELLS + 2 };

typedef struct adv_case {
    const char *way;
    braid_coll_t coll;
    int alg, P;
    size_t count, esize;   /* esize: the block collectives' (0: the op's or bcast's byte) */
    bool in_place, far, split, rooted;
} adv_case_t;

static const adv_case_t adv_cases[] = {
    /* reductions: 4096 x 8 bytes = 32 KiB per rank */
    { "reduce pair", BRAID_COLL_REDUCE, BRAID_REDUCE_SHM, 2, 4096, 0, false, false, false, true },
    { "reduce copy (far apart)", BRAID_COLL_REDUCE, BRAID_REDUCE_SHM, 2, 4096, 0, false, true, false, true },
    { "reduce flat", BRAID_COLL_REDUCE, BRAID_REDUCE_SHM, 3, 4096, 0, false, false, false, true },
    { "reduce split", BRAID_COLL_REDUCE, BRAID_REDUCE_SHM, 3, 4096, 0, false, false, true, true },
    { "allreduce split", BRAID_COLL_ALLREDUCE, BRAID_ALLREDUCE_SHM, 2, 4096, 0, false, false, true, false },
    { "allreduce split", BRAID_COLL_ALLREDUCE, BRAID_ALLREDUCE_SHM, 3, 4096, 0, false, false, true, false },
    { "scan pair", BRAID_COLL_SCAN, BRAID_SCAN_SHM, 2, 4096, 0, false, false, false, false },
    { "scan", BRAID_COLL_SCAN, BRAID_SCAN_SHM, 3, 4096, 0, false, false, false, false },
    { "scan in place", BRAID_COLL_SCAN, BRAID_SCAN_SHM, 3, 4096, 0, true, false, false, false },
    { "exscan pair", BRAID_COLL_EXSCAN, BRAID_EXSCAN_SHM, 2, 4096, 0, false, false, false, false },
    { "exscan", BRAID_COLL_EXSCAN, BRAID_EXSCAN_SHM, 3, 4096, 0, false, false, false, false },
    /* bcast: 32 KiB */
    { "bcast pair", BRAID_COLL_BCAST, BRAID_BCAST_SHM, 2, 32768, 0, false, false, false, true },
    { "bcast", BRAID_COLL_BCAST, BRAID_BCAST_SHM, 3, 32768, 0, false, false, false, true },
    /* blocks of 4096 x 8 bytes (the v forms: 0 to 1.5 times that; gather
     * and scatter at P = 2 twice that, beyond the cells) */
    { "scatter pair", BRAID_COLL_SCATTER, BRAID_SCATTER_SHM, 2, 8192, 8, false, false, false, true },
    { "scatter", BRAID_COLL_SCATTER, BRAID_SCATTER_SHM, 3, 4096, 8, false, false, false, true },
    { "scatterv pair", BRAID_COLL_SCATTERV, BRAID_SCATTERV_SHM, 2, 4096, 8, false, false, false, true },
    { "scatterv", BRAID_COLL_SCATTERV, BRAID_SCATTERV_SHM, 3, 4096, 8, false, false, false, true },
    { "gather pair", BRAID_COLL_GATHER, BRAID_GATHER_SHM, 2, 8192, 8, false, false, false, true },
    { "gather", BRAID_COLL_GATHER, BRAID_GATHER_SHM, 3, 4096, 8, false, false, false, true },
    { "gatherv pair", BRAID_COLL_GATHERV, BRAID_GATHERV_SHM, 2, 4096, 8, false, false, false, true },
    { "gatherv", BRAID_COLL_GATHERV, BRAID_GATHERV_SHM, 3, 4096, 8, false, false, false, true },
    { "alltoall", BRAID_COLL_ALLTOALL, BRAID_ALLTOALL_SHM, 2, 4096, 8, false, false, false, false },
    { "alltoall", BRAID_COLL_ALLTOALL, BRAID_ALLTOALL_SHM, 3, 4096, 8, false, false, false, false },
    /* in place: the pairwise rounds of braid_shm_swap */
    { "alltoall in place", BRAID_COLL_ALLTOALL, BRAID_ALLTOALL_SHM, 2, 4096, 8, true, false, false, false },
    { "alltoall in place", BRAID_COLL_ALLTOALL, BRAID_ALLTOALL_SHM, 3, 4096, 8, true, false, false, false },
    /* alltoallv: every owner sends the others more than the 3 cells hold */
    { "alltoallv", BRAID_COLL_ALLTOALLV, BRAID_ALLTOALLV_SHM, 2, 8192, 8, false, false, false, false },
    { "alltoallv", BRAID_COLL_ALLTOALLV, BRAID_ALLTOALLV_SHM, 3, 8192, 8, false, false, false, false },
    { "alltoallv in place", BRAID_COLL_ALLTOALLV, BRAID_ALLTOALLV_SHM, 2, 16384, 8, true, false, false, false },
    { "alltoallv in place", BRAID_COLL_ALLTOALLV, BRAID_ALLTOALLV_SHM, 3, 16384, 8, true, false, false, false },
    { "allgather", BRAID_COLL_ALLGATHER, BRAID_ALLGATHER_SHM, 2, 4096, 8, false, false, false, false },
    { "allgather", BRAID_COLL_ALLGATHER, BRAID_ALLGATHER_SHM, 3, 4096, 8, false, false, false, false },
    { "allgatherv", BRAID_COLL_ALLGATHERV, BRAID_ALLGATHERV_SHM, 2, 4096, 8, false, false, false, false },
    { "allgatherv", BRAID_COLL_ALLGATHERV, BRAID_ALLGATHERV_SHM, 3, 4096, 8, false, false, false, false },
};
#define ADV_CASES ((int)(sizeof adv_cases / sizeof adv_cases[0]))

typedef struct adv_ctx adv_ctx_t;
typedef struct adv_rank {
    adv_ctx_t *x;
    int rank;
} adv_rank_t;

struct adv_ctx {
    const adv_case_t *k;
    int S;                           /* the rank left behind */
    atomic_bool in_big;              /* S is inside the big call */
    unit_run_t *R;
    atomic_bool finished[UNIT_MAX_P];
    atomic_uint late[UNIT_MAX_P];    /* an other's copy waits for S's stall number late (0: none) */
    atomic_uint idles[UNIT_MAX_P];   /* idle hook calls of the others */
    atomic_int small_bad;            /* small calls that failed or delivered wrong bytes */
    atomic_uint stalls;              /* S's stalls begun */
    adv_rank_t at[UNIT_MAX_P];
};

static void adv_nap(long ns)
{
    struct timespec ts = { 0, ns };
    nanosleep(&ts, NULL);
}

static double adv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The others' single copies: a millisecond late, and then not before S
 * waits - a stall of S (its idle hook) that begins after the copy was
 * asked for - or has left the big call; meanwhile the rank counts as
 * waiting for S. So S reaches a wait for the copy first, however long
 * its 256 turns take on a busy machine. */
static void adv_late(adv_rank_t *me)
{
    adv_ctx_t *x = me->x;
    adv_nap(1000000);
    unsigned before = atomic_load(&x->stalls);
    atomic_store(&x->late[me->rank], before + 1);
    /* bounded: S may never wait again in the call */
    double until = adv_now() + 0.5;
    while (atomic_load(&x->in_big) && atomic_load(&x->stalls) == before && adv_now() < until) adv_nap(20000);
    atomic_store(&x->late[me->rank], 0);
}

static int adv_slow_read(void *arg, int r, void *dst, uint64_t src, size_t bytes)
{
    adv_late(arg);
    return unit_shm_read(((adv_rank_t *)arg)->x->R, r, dst, src, bytes);
}

static int adv_slow_write(void *arg, int r, uint64_t dst, const void *src, size_t bytes)
{
    adv_late(arg);
    return unit_shm_write(((adv_rank_t *)arg)->x->R, r, dst, src, bytes);
}

static void adv_other_idle(void *p)
{
    const adv_rank_t *me = p;
    atomic_fetch_add(&me->x->idles[me->rank], 1);
}

/* S waits inside the big call: let every other rank run until it has
 * finished or waits itself (two idle calls: it spun 512 turns) */
static void adv_stall_idle(void *p)
{
    adv_ctx_t *x = ((adv_rank_t *)p)->x;
    if (!atomic_load(&x->in_big)) return;
    int P = x->k->P;
    unsigned seen[UNIT_MAX_P];
    for (int q = 0; q < P; q++) seen[q] = atomic_load(&x->idles[q]);
    /* stall n: a rank whose copy waits for stall n + 1 waits for S (one
     * that waits for stall n goes on now: S waits for it) */
    unsigned n = atomic_fetch_add(&x->stalls, 1) + 1;
    /* a bound, so that a schedule the design did not foresee (a rank
     * waiting where it calls no idle hook) slows the test, not hangs it */
    double until = adv_now() + 2.0;
    for (;;) {
        bool all = true;
        for (int q = 0; q < P && all; q++)
            if (q != x->S && !atomic_load(&x->finished[q]) && atomic_load(&x->late[q]) != n + 1 &&
                atomic_load(&x->idles[q]) < seen[q] + 2)
                all = false;
        if (all || adv_now() > until) break;
        adv_nap(20000);
    }
}

static unsigned char adv_byte(int i, size_t j) { return (unsigned char)(1 + (j * 37 + (size_t)i * 11) % 255); }

static int adv_rank_fn(unit_run_t *R, braid_comm_t *c, braid_coll_args_t *a)
{
    adv_ctx_t *x = R->ctx;
    const adv_case_t *k = x->k;
    int r = c->rank, P = c->size, S = x->S;
    braid_shm_t *s = c->shm;
    /* the same on every rank: the big call's way, the small ones through the cells */
    s->direct_above = SIZE_MAX;
    s->far = k->far;
    s->split_from = k->split ? 0 : SIZE_MAX;
    /* spin between idle calls (the harness's ranks yield the core): 256
     * turns are then microseconds, where on a loaded machine a yield can
     * cost a time slice each - and the waits here are short, the
     * stalls sleep */
    s->yield = false;
    x->at[r] = (adv_rank_t){ x, r };
    s->idle_arg = &x->at[r];
    if (r == S) {
        s->idle = adv_stall_idle;
        atomic_store(&x->in_big, true);
    } else {
        s->idle = adv_other_idle;
        s->read = adv_slow_read;
        s->write = adv_slow_write;
        s->read_arg = &x->at[r];   /* the writer's too */
    }
    int rc = strict_run_counted(c, R->fn, a, 0, &R->violations[r], &R->scratch[r]);
    if (r == S) atomic_store(&x->in_big, false);
    /* the small calls: bcasts from a root other than S, through the cells */
    int root = (S + 1) % P;
    /* a slot's first bytes at least (address, status word, a table's
     * start), and never more than the slot (the v forms' may be small) */
    size_t n = s->slot_bytes < ADV_SMALL ? s->slot_bytes : ADV_SMALL;
    for (int i = 0; i < ADV_FOLLOW; i++) {
        unsigned char buf[ADV_SMALL];
        /* no zero byte: a status word read from these bytes is never BRAID_OK */
        for (size_t j = 0; j < n; j++) buf[j] = r == root ? adv_byte(i, j) : 0;
        braid_coll_args_t b;
        memset(&b, 0, sizeof b);
        b.rbuf = buf;
        b.count = n;
        b.esize = 1;
        b.root = root;
        int v = 0, rs = strict_run(c, braid_bcast_shm, &b, 0, &v);
        int bad = BRAID_OK != rs || 0 != v;
        for (size_t j = 0; j < n; j++) bad += buf[j] != adv_byte(i, j);
        if (bad) atomic_fetch_add(&x->small_bad, 1);
    }
    atomic_store(&x->finished[r], true);
    return rc;
}

START_TEST(rank_left_behind)
{
    const adv_case_t *k = &adv_cases[_i];
    int P = k->P;
    unsigned long copies = 0, writes = 0;
    for (int root = 0; root < (k->rooted ? P : 1); root++)
        for (int S = 0; S < P; S++) {
            unit_case_t uc = { .kind = UNIT_OP_SUM_I64, .count = k->count, .esize = k->esize,
                               .in_place = k->in_place, .root = root };
            unit_run_t *R = unit_run_new(k->coll, k->alg, P, &uc);
            adv_ctx_t x;
            memset(&x, 0, sizeof x);
            x.k = k;
            x.S = S;
            x.R = R;
            R->ctx = &x;
            R->rank_fn = adv_rank_fn;
            int rc = unit_run_exec(R);
            /* the case must be what it says: above the slot, single copy
             * (the v forms: some blocks, not at every root) */
            ck_assert_msg(R->shm_direct && (unit_case_bytes(R) > R->shm_slot || unit_per_block(k->coll)),
                          "%s: not above the slot", R->what);
            int wrong = 0;
            for (int r = 0; r < P; r++) wrong += BRAID_OK != R->rc[r];
            ck_assert_msg(BRAID_OK == rc && 0 == wrong,
                          "%s (%s), rank %d left behind: %d ranks failed (rank %d returned %d)",
                          R->what, k->way, S, wrong, S, R->rc[S]);
            unit_check_shm_numbers(R);
            unit_check_values(R);
            ck_assert_msg(0 == x.small_bad, "%s (%s), rank %d left behind: %d small calls failed", R->what,
                          k->way, S, (int)x.small_bad);
            copies += atomic_load(&R->shm_copies);
            writes += atomic_load(&R->shm_writes);
            unit_run_free(R);
        }
    ck_assert_msg(copies > 0, "%s P=%d: no single copy", k->way, P);
    /* the pair ways share the copy: the source writes its part */
    if (strstr(k->way, "pair")) ck_assert_msg(writes > 0, "%s: no single-copy write", k->way);
    if (k->far) ck_assert_msg(0 == writes, "%s: writes", k->way);
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
    tcase_add_test(tc, block_way_cells_while_a_slot_holds);
    tcase_add_test(tc, single_copy_writers);
    tcase_add_test(tc, single_copy_write_failure);
    tcase_add_test(tc, fold_own_operand);
    tcase_add_loop_test(tc, line_probe, 0, 21);
    tcase_add_loop_test(unit_tcase(s, "left behind", 60), rank_left_behind, 0, ADV_CASES);
    return unit_run_suite(s);
}
