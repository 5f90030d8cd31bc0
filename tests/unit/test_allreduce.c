/*
 * test_allreduce.c - allreduce ring, ring_chunked and halving_doubling over
 * the in-process transport for P = 1..64: results against a rank-ordered
 * reference (int64 sum and the non-commutative matrix product exactly,
 * double sum bit-identical on every rank and within 1e-9 of the reference),
 * in place and not, default and tiny chunks, and the messages and bytes each
 * rank sends against the contracts in DESIGN.md.
 */
#include "unit_common.h"
#include "unit_ops.h"
#include "braid_engines.h"
#include "strict_transport.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_P 64

typedef enum { ALG_RING, ALG_RING_CHUNKED, ALG_HD, ALG_RD } alg_t;

static const braid_algo_fn_t alg_fn[] = { braid_allreduce_ring, braid_allreduce_ring_chunked,
                                          braid_allreduce_halving_doubling,
                                          braid_allreduce_recursive_doubling };
static const char *alg_name[] = { "ring", "ring_chunked", "halving_doubling", "recursive_doubling" };

typedef struct run {
    alg_t alg;
    unit_op_kind_t kind;
    bool exact, in_place;
    size_t count, chunk_bytes;
    int fail_alloc;
    unsigned char *sbuf[MAX_P], *rbuf[MAX_P];
    int rc[MAX_P];
    int violations[MAX_P];   /* strict_transport.h */
} run_t;

static int body(braid_comm_t *c, void *p)
{
    run_t *R = p;
    braid_coll_args_t a;
    memset(&a, 0, sizeof a);
    a.sbuf = R->in_place ? NULL : R->sbuf[c->rank];
    a.rbuf = R->rbuf[c->rank];
    a.count = R->count;
    a.esize = unit_op_esize(R->kind);
    a.op = unit_op(R->kind);
    a.exact = R->exact;
    a.params.chunk_bytes = R->chunk_bytes;
    int rc = strict_run(c, alg_fn[R->alg], &a, R->fail_alloc, &R->violations[c->rank]);
    R->rc[c->rank] = rc;
    /* report UNSUPPORTED through R->rc only, so the run is not an error */
    return BRAID_ERR_UNSUPPORTED == rc ? BRAID_OK : rc;
}

/* ---------------- expected traffic ---------------- */

typedef struct traffic {
    uint64_t msgs, bytes;
} traffic_t;

static size_t nch(size_t n, size_t ce) { return n / ce + (n % ce != 0); }

static size_t chunk_elems(size_t chunk_bytes, size_t es)
{
    size_t b = chunk_bytes ? chunk_bytes : ((size_t)1 << 20), ce = b / es;
    return ce ? ce : 1;
}

/* ring: the whole buffer P-1 times */
static traffic_t expect_ring(int P, int r, size_t count, size_t es, size_t ce)
{
    (void)r; (void)ce;
    traffic_t t = { 0, 0 };
    if (P > 1 && count > 0) {
        t.msgs = (uint64_t)(P - 1);
        t.bytes = (uint64_t)(P - 1) * count * es;
    }
    return t;
}

/* ring_chunked: reduce-scatter sends every block but r, allgather every
 * block but r+1; one message per chunk */
static traffic_t expect_ring_chunked(int P, int r, size_t count, size_t es, size_t ce)
{
    traffic_t t = { 0, 0 };
    if (P == 1) return t;
    for (int b = 0; b < P; b++) {
        size_t n = braid_block_count(count, P, b);
        if (b != r) { t.bytes += n * es; t.msgs += nch(n, ce); }
        if (b != (r + 1) % P) { t.bytes += n * es; t.msgs += nch(n, ce); }
    }
    return t;
}

/* halving_doubling, binary blocks (largest first): intra-block halving
 * sends the other half of the current range; a non-largest block sends its
 * piece up (one chunked message per sub-piece of the next larger block); a
 * non-smallest block sends its final piece down (one message); the
 * allgather sends the own range at levels lg..1. Ranges are in M0 groups of
 * braid_block_start(count, M0, g) elements. */
static traffic_t expect_hd(int P, int r, size_t count, size_t es, size_t ce)
{
    traffic_t t = { 0, 0 };
    if (P == 1 || count == 0) return t;
    int nb = 0, base[32], lg[32], me = 0;
    for (int bit = 30, b0 = 0; bit >= 0; bit--)
        if (P & (1 << bit)) {
            base[nb] = b0;
            lg[nb] = bit;
            if (r >= b0 && r < b0 + (1 << bit)) me = nb;
            b0 += 1 << bit;
            nb++;
        }
    int M0 = 1 << lg[0], q = r - base[me], k = lg[me];
#define E(g) braid_block_start(count, M0, (g))
    int g0 = 0, g1 = M0, seg0[32], seg1[32];
    for (int i = 0; i < k; i++) {
        int mid = (g0 + g1) / 2;
        size_t lo = E(mid) - E(g0), hi = E(g1) - E(mid);
        if ((q >> i) & 1) { t.bytes += lo * es; t.msgs += nch(lo, ce); g0 = mid; }
        else { t.bytes += hi * es; t.msgs += nch(hi, ce); g1 = mid; }
        seg0[i + 1] = g0;
        seg1[i + 1] = g1;
    }
    if (me > 0) {
        int w = M0 >> lg[me - 1];
        for (int L = g0 / w; L < g1 / w; L++) {
            size_t n = E((L + 1) * w) - E(L * w);
            t.bytes += n * es;
            t.msgs += nch(n, ce);
        }
    }
    if (me + 1 < nb && E(g1) > E(g0)) { t.bytes += (E(g1) - E(g0)) * es; t.msgs++; }
    for (int i = k; i >= 1; i--) {
        size_t n = E(seg1[i]) - E(seg0[i]);
        t.bytes += n * es;
        t.msgs += n > 0;
    }
#undef E
    return t;
}

typedef traffic_t (*expect_fn)(int P, int r, size_t count, size_t es, size_t ce);

/* recursive doubling: lg P' whole-vector exchanges; in the fold the even
 * rank sends once, the odd rank also hands the result back */
static traffic_t expect_rd(int P, int r, size_t count, size_t es, size_t ce)
{
    (void)ce;
    traffic_t t = { 0, 0 };
    uint64_t S = (uint64_t)count * es;
    if (P < 2 || 0 == S) return t;
    int pof2 = 1 << braid_floor_log2(P), rem = P - pof2, lgp = braid_floor_log2(P);
    if (r < 2 * rem && r % 2 == 0) t.msgs = 1;
    else if (r < 2 * rem) t.msgs = (uint64_t)lgp + 1;
    else t.msgs = (uint64_t)lgp;
    t.bytes = t.msgs * S;
    return t;
}

/* ---------------- one run ---------------- */

/* outcome a correct algorithm must have for this op */
static bool expect_supported(alg_t alg, unit_op_kind_t kind, bool exact, int P)
{
    if (kind != UNIT_OP_MATMUL || P == 1) return true;
    if (alg == ALG_RING) return exact;          /* order-kept plain ring */
    if (alg == ALG_RING_CHUNKED) return false;
    return true;                                /* halving_doubling keeps order */
}

static void check_run(alg_t alg, int P, unit_op_kind_t kind, bool exact, size_t count,
                      bool in_place, size_t chunk_bytes)
{
    run_t *R = calloc(1, sizeof *R);
    R->alg = alg;
    R->kind = kind;
    R->exact = exact;
    R->in_place = in_place;
    R->count = count;
    R->chunk_bytes = chunk_bytes;
    size_t es = unit_op_esize(kind), bytes = count * es;
    for (int r = 0; r < P; r++) {
        R->sbuf[r] = malloc(bytes + 1);
        R->rbuf[r] = malloc(bytes + 1);
        unit_fill(kind, r, in_place ? R->rbuf[r] : R->sbuf[r], count);
        if (!in_place) memset(R->rbuf[r], 0xa5, bytes);
    }
    inproc_result_t res = inproc_run(P, body, NULL, R);
    char what[160];
    snprintf(what, sizeof what, "%s P=%d kind=%d exact=%d count=%zu in_place=%d chunk=%zu",
             alg_name[alg], P, (int)kind, (int)exact, count, (int)in_place, chunk_bytes);
    ck_assert_msg(res.rc == BRAID_OK, "%s: rc %d", what, res.rc);
    ck_assert_msg(res.leftover_msgs == 0, "%s: %d messages left", what, res.leftover_msgs);

    int bad_rc = 0, violations = 0;
    for (int r = 0; r < P; r++) bad_rc += R->rc[r] != R->rc[0];
    for (int r = 0; r < P; r++) violations += R->violations[r];
    ck_assert_msg(violations == 0, "%s: %d send-buffer violations", what, violations);
    ck_assert_msg(bad_rc == 0, "%s: ranks disagree on the return code", what);
    bool supported = expect_supported(alg, kind, exact, P);
    ck_assert_msg(R->rc[0] == (supported ? BRAID_OK : BRAID_ERR_UNSUPPORTED),
                  "%s: rc %d", what, R->rc[0]);

    if (supported) {
        unsigned char *ref = malloc(bytes + 1);
        unit_reference(kind, P, 0, count, ref);
        size_t bad = 0, not_identical = 0;
        for (int r = 0; r < P; r++) {
            if (kind == UNIT_OP_SUM_F64) {
                if (memcmp(R->rbuf[r], R->rbuf[0], bytes)) not_identical++;
                const double *x = (const double *)R->rbuf[r], *y = (const double *)ref;
                for (size_t i = 0; i < count; i++)
                    if (!(fabs(x[i] - y[i]) <= 1e-9 * fabs(y[i]))) bad++;
            } else if (memcmp(R->rbuf[r], ref, bytes)) {
                bad++;
            }
        }
        ck_assert_msg(not_identical == 0, "%s: %zu ranks differ from rank 0", what, not_identical);
        ck_assert_msg(bad == 0, "%s: %zu wrong results", what, bad);
        free(ref);

        expect_fn ex = alg == ALG_HD ? expect_hd : alg == ALG_RD ? expect_rd
                     : alg == ALG_RING_CHUNKED || !exact ? expect_ring_chunked : expect_ring;
        size_t ce = chunk_elems(chunk_bytes, es);
        int wrong = 0, first = -1;
        for (int r = 0; r < P; r++) {
            traffic_t t = ex(P, r, count, es, ce);
            if (t.bytes != res.stats[r].bytes_sent || t.msgs != res.stats[r].msgs_sent) {
                if (first < 0) first = r;
                wrong++;
            }
        }
        if (wrong) {
            traffic_t t = ex(P, first, count, es, ce);
            ck_abort_msg("%s: rank %d sent %llu msgs / %llu bytes, expected %llu / %llu", what, first,
                         (unsigned long long)res.stats[first].msgs_sent,
                         (unsigned long long)res.stats[first].bytes_sent,
                         (unsigned long long)t.msgs, (unsigned long long)t.bytes);
        }
        /* the bandwidth contract: ring_chunked never sends more than 2S per
         * rank; halving_doubling neither when the count splits evenly into
         * the M0 groups (otherwise a tiny count is sent at every level) */
        uint64_t S = bytes, over = 0;
        size_t M0 = (size_t)1 << braid_floor_log2(P);
        bool bounded = alg == ALG_RD ? false
                     : alg == ALG_HD ? count % M0 == 0 : (alg == ALG_RING_CHUNKED || !exact);
        for (int r = 0; r < P && bounded; r++) over += res.stats[r].bytes_sent > 2 * S;
        ck_assert_msg(over == 0, "%s: %llu ranks sent more than 2S", what, (unsigned long long)over);
    }
    for (int r = 0; r < P; r++) {
        free(R->sbuf[r]);
        free(R->rbuf[r]);
    }
    free(res.stats);
    free(R);
}

/* Up to P = 9: counts {0, 1, P-1, P, P+1, 1001, 2^16+3}, every op, in place
 * and not, default and tiny chunks. Beyond: counts {1, P+1, 1001} and 8*M0
 * (even groups), each with one op / in-place combination that rotates with
 * P, so that every combination still runs at many P. */
static void sweep(alg_t alg, int P)
{
    size_t M0 = (size_t)1 << braid_floor_log2(P);
    size_t counts[] = { 0, 1, (size_t)P - 1, (size_t)P, (size_t)P + 1, 1001, 65539, 8 * M0 };
    int ncounts = 8;
    for (int ci = 0; ci < ncounts; ci++) {
        size_t n = counts[ci];
        if (P > 9 && !(ci == 1 || ci == 4 || ci == 5 || ci == 7)) continue;
        if (P <= 9 && ci == 7) continue;
        for (int k = 0; k < 4; k++) {
            if (P > 9 && k != (P + ci) % 4) continue;
            /* int64 exact, double inexact, matmul as a user op (inexact),
             * matmul declared exact (integer arithmetic mod p) */
            unit_op_kind_t kind = k == 0 ? UNIT_OP_SUM_I64 : k == 1 ? UNIT_OP_SUM_F64 : UNIT_OP_MATMUL;
            bool exact = k == 0 || k == 3;
            for (int ip = 0; ip < 2; ip++) {
                if (P > 9 && ip != (P / 4 + ci) % 2) continue;
                /* a tiny chunk (not a multiple of the element size) forces
                 * many chunks; the big count uses a few KiB */
                size_t small = n > 10000 ? 8200 : 200;
                if (P > 9 || n > 10000) {
                    check_run(alg, P, kind, exact, n, ip, (ci + k + ip) % 2 ? small : 0);
                } else {
                    check_run(alg, P, kind, exact, n, ip, 0);
                    check_run(alg, P, kind, exact, n, ip, small);
                }
            }
        }
    }
}

START_TEST(test_ring) { sweep(ALG_RING, _i); }
END_TEST
START_TEST(test_ring_chunked) { sweep(ALG_RING_CHUNKED, _i); }
END_TEST
START_TEST(test_halving_doubling) { sweep(ALG_HD, _i); }
END_TEST
START_TEST(test_recursive_doubling) { sweep(ALG_RD, _i); }
END_TEST

/* P = 2 moves exactly S/2 each way per phase (even count) */
START_TEST(test_p2_half_each_way)
{
    for (int alg = ALG_RING_CHUNKED; alg <= ALG_HD; alg++) {
        size_t count = 1 << 16;
        traffic_t t = (alg == ALG_HD ? expect_hd : expect_ring_chunked)(2, 0, count, 8, count);
        ck_assert_uint_eq(t.bytes, count * 8);   /* S/2 + S/2 */
        check_run((alg_t)alg, 2, UNIT_OP_SUM_F64, false, count, false, 0);
    }
}
END_TEST

/* contract formulas at power-of-two P: 2(S - S/P) for an even split */
START_TEST(test_pow2_formulas)
{
    for (int P = 2; P <= 64; P *= 2) {
        size_t count = (size_t)P * 1000;
        for (int r = 0; r < P; r++) {
            traffic_t h = expect_hd(P, r, count, 8, count), g = expect_ring_chunked(P, r, count, 8, count);
            ck_assert_uint_eq(h.bytes, 2 * (count - count / (size_t)P) * 8);
            ck_assert_uint_eq(g.bytes, 2 * (count - count / (size_t)P) * 8);
            ck_assert_uint_eq(h.msgs, 2 * (uint64_t)braid_floor_log2(P));
        }
    }
}
END_TEST

/* scratch failure is reported (before any message is sent) */
START_TEST(test_nomem)
{
    alg_t algs[] = { ALG_RING, ALG_RING_CHUNKED, ALG_HD };
    for (int j = 0; j < 3; j++) {
        run_t *R = calloc(1, sizeof *R);
        R->alg = algs[j];
        R->kind = UNIT_OP_SUM_I64;
        R->exact = true;
        R->in_place = true;
        R->count = 100;
        R->fail_alloc = 1;
        for (int r = 0; r < 4; r++) {
            R->rbuf[r] = malloc(800);
            unit_fill(R->kind, r, R->rbuf[r], 100);
        }
        inproc_result_t res = inproc_run(4, body, NULL, R);
        ck_assert_int_eq(res.rc, BRAID_ERR_NOMEM);
        ck_assert_int_eq(res.leftover_msgs, 0);
        for (int r = 0; r < 4; r++) free(R->rbuf[r]);
        free(res.stats);
        free(R);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("allreduce");
    TCase *tc = tcase_create("allreduce");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_ring, 1, MAX_P + 1);
    tcase_add_loop_test(tc, test_ring_chunked, 1, MAX_P + 1);
    tcase_add_loop_test(tc, test_halving_doubling, 1, MAX_P + 1);
    tcase_add_loop_test(tc, test_recursive_doubling, 1, MAX_P + 1);
    tcase_add_test(tc, test_p2_half_each_way);
    tcase_add_test(tc, test_pow2_formulas);
    tcase_add_test(tc, test_nomem);
    suite_add_tcase(s, tc);
    return unit_run_suite(s);
}
