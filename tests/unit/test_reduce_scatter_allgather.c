/*
 * test_reduce_scatter_allgather.c - reduce_scatter ring / halving_doubling
 * and allgather ring / recursive_doubling over the in-process transport for
 * P = 1..64: even (block variant) and uneven rcounts with zeros, int64 and
 * double sums and the non-commutative matrix product, in place and not,
 * default and tiny chunks; results against rank-ordered references, and the
 * messages and bytes each rank sends against the contracts.
 *
 * reduce_scatter writes nothing but the result block rbuf[0, mine): every
 * other byte of rbuf (in place: the rest of the input; not in place: what
 * lies beyond the block) and a guard past the end keep their values, and
 * sbuf is never written. test_rs_in_place sweeps P = 1..9 in place with
 * uneven counts (zeros, fewer elements than ranks) for that contract.
 */
#include "unit_common.h"
#include "unit_ops.h"
#include "braid_engines.h"
#include "strict_transport.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_P 64
/* bytes checked past the end of every receive buffer */
#define GUARD 64

static size_t nch(size_t n, size_t ce) { return n / ce + (n % ce != 0); }

static size_t chunk_elems(size_t chunk_bytes, size_t es)
{
    size_t b = chunk_bytes ? chunk_bytes : ((size_t)1 << 20), ce = b / es;
    return ce ? ce : 1;
}

static int bitrev(int v, int bits)
{
    int r = 0;
    for (int i = 0; i < bits; i++) r |= ((v >> i) & 1) << (bits - 1 - i);
    return r;
}

typedef struct traffic {
    uint64_t msgs, bytes;
} traffic_t;

/* ================= reduce_scatter ================= */

typedef struct rs_run {
    braid_algo_fn_t fn;
    unit_op_kind_t kind;
    bool in_place;
    const size_t *rcounts;   /* NULL: block variant */
    size_t count;
    size_t chunk_bytes;
    unsigned char *sbuf[MAX_P], *rbuf[MAX_P];
    int rc[MAX_P];
    int violations[MAX_P];   /* strict_transport.h */
} rs_run_t;

static int rs_body(braid_comm_t *c, void *p)
{
    rs_run_t *R = p;
    braid_coll_args_t a;
    memset(&a, 0, sizeof a);
    a.sbuf = R->in_place ? NULL : R->sbuf[c->rank];
    a.rbuf = R->rbuf[c->rank];
    a.count = R->count;
    a.rcounts = R->rcounts;
    a.esize = unit_op_esize(R->kind);
    a.op = unit_op(R->kind);
    a.params.chunk_bytes = R->chunk_bytes;
    int rc = strict_run(c, R->fn, &a, 0, &R->violations[c->rank]);
    R->rc[c->rank] = rc;
    return BRAID_ERR_UNSUPPORTED == rc ? BRAID_OK : rc;
}

/* ring: every block but the own one, chunked */
static traffic_t rs_expect_ring(int P, int r, const size_t *off, size_t es, size_t ce)
{
    traffic_t t = { 0, 0 };
    if (P == 1) return t;
    for (int b = 0; b < P; b++)
        if (b != r) {
            size_t n = off[b + 1] - off[b];
            t.bytes += n * es;
            t.msgs += nch(n, ce);
        }
    return t;
}

/* halving_doubling: binary blocks over M0 groups of blocks; intra-block
 * halving, pieces up the chain, then block 0 sends every block of its group
 * but its own to the owner (one message each) */
static traffic_t rs_expect_hd(int P, int r, const size_t *off, size_t es, size_t ce)
{
    traffic_t t = { 0, 0 };
    if (P == 1 || off[P] == 0) return t;
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
#define E(g) off[braid_block_start((size_t)P, M0, (g))]
    int g0 = 0, g1 = M0;
    for (int i = 0; i < k; i++) {
        int mid = (g0 + g1) / 2;
        size_t lo = E(mid) - E(g0), hi = E(g1) - E(mid);
        if ((q >> i) & 1) { t.bytes += lo * es; t.msgs += nch(lo, ce); g0 = mid; }
        else { t.bytes += hi * es; t.msgs += nch(hi, ce); g1 = mid; }
    }
    if (me > 0) {
        int w = M0 >> lg[me - 1];
        for (int L = g0 / w; L < g1 / w; L++) {
            size_t n = E((L + 1) * w) - E(L * w);
            t.bytes += n * es;
            t.msgs += nch(n, ce);
        }
    } else {
        int g = bitrev(q, k);
        for (int b = (int)braid_block_start((size_t)P, M0, g); b < (int)braid_block_start((size_t)P, M0, g + 1); b++) {
            size_t n = off[b + 1] - off[b];
            if (b != r && n > 0) { t.bytes += n * es; t.msgs++; }
        }
    }
#undef E
    return t;
}

typedef traffic_t (*rs_expect_fn)(int P, int r, const size_t *off, size_t es, size_t ce);

static void check_rs(braid_algo_fn_t fn, rs_expect_fn ex, bool keeps_order, int P,
                     unit_op_kind_t kind, const size_t *rcounts, size_t count, bool in_place,
                     size_t chunk_bytes, const char *name)
{
    rs_run_t *R = calloc(1, sizeof *R);
    R->fn = fn;
    R->kind = kind;
    R->in_place = in_place;
    R->rcounts = rcounts;
    R->count = count;
    R->chunk_bytes = chunk_bytes;
    size_t es = unit_op_esize(kind), off[MAX_P + 1];
    off[0] = 0;
    for (int b = 0; b < P; b++) off[b + 1] = off[b] + (rcounts ? rcounts[b] : count);
    size_t N = off[P];
    /* what rbuf and sbuf held before the call: rbuf is the input (in place)
     * or a sentinel pattern, with a sentinel guard past the end either way */
    unsigned char *rbuf0[MAX_P], *sbuf0[MAX_P];
    for (int r = 0; r < P; r++) {
        R->sbuf[r] = malloc(N * es + 1);
        R->rbuf[r] = malloc(N * es + GUARD);
        for (size_t i = 0; i < N * es + GUARD; i++) R->rbuf[r][i] = unit_byte(r + 100, i);
        unit_fill(kind, r, in_place ? R->rbuf[r] : R->sbuf[r], N);
        rbuf0[r] = malloc(N * es + GUARD);
        memcpy(rbuf0[r], R->rbuf[r], N * es + GUARD);
        sbuf0[r] = malloc(N * es + 1);
        memcpy(sbuf0[r], R->sbuf[r], N * es);
    }
    inproc_result_t res = inproc_run(P, rs_body, NULL, R);
    char what[160];
    snprintf(what, sizeof what, "reduce_scatter %s P=%d kind=%d N=%zu %s in_place=%d chunk=%zu",
             name, P, (int)kind, N, rcounts ? "uneven" : "block", (int)in_place, chunk_bytes);
    ck_assert_msg(res.rc == BRAID_OK, "%s: rc %d", what, res.rc);
    ck_assert_msg(res.leftover_msgs == 0, "%s: %d messages left", what, res.leftover_msgs);
    int bad_rc = 0, violations = 0;
    for (int r = 0; r < P; r++) bad_rc += R->rc[r] != R->rc[0];
    for (int r = 0; r < P; r++) violations += R->violations[r];
    ck_assert_msg(violations == 0, "%s: %d send-buffer violations", what, violations);
    ck_assert_msg(bad_rc == 0, "%s: ranks disagree on the return code", what);
    bool supported = P == 1 || kind != UNIT_OP_MATMUL || keeps_order;
    ck_assert_msg(R->rc[0] == (supported ? BRAID_OK : BRAID_ERR_UNSUPPORTED), "%s: rc %d", what, R->rc[0]);
    /* only the result block is written (nothing at all when unsupported:
     * the caller falls back with the same buffers) */
    for (int r = 0; r < P; r++) {
        size_t keep = supported ? (off[r + 1] - off[r]) * es : 0, at = keep;
        while (at < N * es + GUARD && R->rbuf[r][at] == rbuf0[r][at]) at++;
        ck_assert_msg(at == N * es + GUARD,
                      "%s: rank %d wrote rbuf byte %zu beyond its %zu-byte result (input %zu bytes)",
                      what, r, at, keep, N * es);
        ck_assert_msg(in_place || 0 == memcmp(R->sbuf[r], sbuf0[r], N * es), "%s: rank %d wrote sbuf",
                      what, r);
        free(rbuf0[r]);
        free(sbuf0[r]);
    }
    if (supported) {
        size_t bad = 0, wrong_traffic = 0, over = 0;
        int first = -1;
        size_t ce = chunk_elems(chunk_bytes, es);
        for (int r = 0; r < P; r++) {
            size_t n = off[r + 1] - off[r];
            unsigned char *ref = malloc(n * es + 1);
            unit_reference(kind, P, off[r], n, ref);
            if (kind == UNIT_OP_SUM_F64) {
                const double *x = (const double *)R->rbuf[r], *y = (const double *)ref;
                for (size_t i = 0; i < n; i++)
                    if (!(fabs(x[i] - y[i]) <= 1e-9 * fabs(y[i]))) bad++;
            } else if (memcmp(R->rbuf[r], ref, n * es)) {
                bad++;
            }
            free(ref);
            traffic_t t = ex(P, r, off, es, ce);
            if (t.bytes != res.stats[r].bytes_sent || t.msgs != res.stats[r].msgs_sent) {
                if (first < 0) first = r;
                wrong_traffic++;
            }
            over += res.stats[r].bytes_sent > N * es;   /* S per rank at most */
        }
        ck_assert_msg(bad == 0, "%s: %zu wrong results", what, bad);
        if (wrong_traffic) {
            traffic_t t = ex(P, first, off, es, ce);
            ck_abort_msg("%s: rank %d sent %llu msgs / %llu bytes, expected %llu / %llu", what, first,
                         (unsigned long long)res.stats[first].msgs_sent,
                         (unsigned long long)res.stats[first].bytes_sent,
                         (unsigned long long)t.msgs, (unsigned long long)t.bytes);
        }
        ck_assert_msg(over == 0, "%s: %zu ranks sent more than S", what, over);
    }
    for (int r = 0; r < P; r++) {
        free(R->sbuf[r]);
        free(R->rbuf[r]);
    }
    free(res.stats);
    free(R);
}

static void rs_sweep(braid_algo_fn_t fn, rs_expect_fn ex, bool keeps_order, int P, const char *name)
{
    size_t uneven[MAX_P], single[MAX_P], big[MAX_P];
    for (int b = 0; b < P; b++) {
        uneven[b] = (size_t)((b * 37 + 11) % 7);          /* includes zeros */
        single[b] = b == P / 2 ? 501 : 0;                 /* one rank gets all */
        big[b] = 7000 + (size_t)b * 13;
    }
    /* (rcounts, count) cases: block variant 0, 1, 3, 1001; uneven; single;
     * big (P <= 9) */
    struct { const size_t *rc; size_t count; } cases[] = {
        { NULL, 0 }, { NULL, 1 }, { NULL, 3 }, { NULL, P > 9 ? 101 : 1001 }, { uneven, 0 }, { single, 0 },
        { big, 0 }
    };
    for (int ci = 0; ci < 7; ci++) {
        if (P > 9 && (ci == 0 || ci == 2 || ci == 6)) continue;
        for (int k = 0; k < 3; k++) {
            if (P > 9 && k != (P + ci) % 3) continue;
            for (int ip = 0; ip < 2; ip++) {
                if (P > 9 && ip != (P / 3 + ci) % 2) continue;
                size_t small = ci == 6 ? 4104 : 200;
                check_rs(fn, ex, keeps_order, P, (unit_op_kind_t)k, cases[ci].rc, cases[ci].count, ip,
                         (ci + k + ip) % 2 ? small : 0, name);
            }
        }
    }
}

/* In place, P = 1..9: uneven counts with zeros, fewer elements than ranks,
 * empty first and last blocks, default and one-element chunks (so the
 * pipelines run many chunks per block), every op kind; check_rs asserts
 * that nothing but rbuf[0, mine) changes. */
static void rs_in_place_sweep(braid_algo_fn_t fn, rs_expect_fn ex, bool keeps_order, int P,
                              const char *name)
{
    size_t sparse[MAX_P], last[MAX_P], first[MAX_P], ramp[MAX_P];
    for (int b = 0; b < P; b++) {
        sparse[b] = b % 3 == 1 ? 1 : 0;          /* fewer elements than ranks */
        last[b] = b == P - 1 ? 2 : 0;
        first[b] = b == 0 ? 0 : (size_t)(P - b); /* empty first block */
        ramp[b] = (size_t)b * 3 + 1;
    }
    struct { const size_t *rc; size_t count; } cases[] = {
        { NULL, 0 }, { NULL, 1 }, { NULL, 2 }, { NULL, 37 },
        { sparse, 0 }, { last, 0 }, { first, 0 }, { ramp, 0 }
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        for (int k = 0; k < 3; k++) {
            size_t es = unit_op_esize((unit_op_kind_t)k);
            check_rs(fn, ex, keeps_order, P, (unit_op_kind_t)k, cases[ci].rc, cases[ci].count, true,
                     0, name);
            check_rs(fn, ex, keeps_order, P, (unit_op_kind_t)k, cases[ci].rc, cases[ci].count, true,
                     es, name);
        }
}

START_TEST(test_rs_ring) { rs_sweep(braid_reduce_scatter_ring, rs_expect_ring, false, _i, "ring"); }
END_TEST
START_TEST(test_rs_halving_doubling)
{
    rs_sweep(braid_reduce_scatter_halving_doubling, rs_expect_hd, true, _i, "halving_doubling");
}
END_TEST

START_TEST(test_rs_in_place_ring)
{
    rs_in_place_sweep(braid_reduce_scatter_ring, rs_expect_ring, false, _i, "ring");
}
END_TEST
START_TEST(test_rs_in_place_halving_doubling)
{
    rs_in_place_sweep(braid_reduce_scatter_halving_doubling, rs_expect_hd, true, _i, "halving_doubling");
}
END_TEST

/* power-of-two P, block variant: S - S/P, plus S/P for the bit-reversal
 * fix-up when bitrev(r) != r */
START_TEST(test_rs_pow2_formula)
{
    for (int P = 2; P <= 64; P *= 2) {
        size_t off[MAX_P + 1], count = 100;
        for (int b = 0; b <= P; b++) off[b] = (size_t)b * count;
        int k = braid_floor_log2(P);
        for (int r = 0; r < P; r++) {
            traffic_t t = rs_expect_hd(P, r, off, 8, (size_t)P * count);
            uint64_t fix = bitrev(r, k) != r ? count * 8 : 0;
            ck_assert_uint_eq(t.bytes, ((size_t)P - 1) * count * 8 + fix);
            ck_assert_uint_eq(t.msgs, (uint64_t)k + (fix ? 1 : 0));
        }
    }
}
END_TEST

/* ================= allgather ================= */

typedef struct ag_run {
    braid_algo_fn_t fn;
    bool in_place;
    size_t count, esize, chunk_bytes;
    unsigned char *sbuf[MAX_P], *rbuf[MAX_P];
    int violations[MAX_P];   /* strict_transport.h */
} ag_run_t;

static int ag_body(braid_comm_t *c, void *p)
{
    ag_run_t *R = p;
    braid_coll_args_t a;
    memset(&a, 0, sizeof a);
    a.sbuf = R->in_place ? NULL : R->sbuf[c->rank];
    a.rbuf = R->rbuf[c->rank];
    a.count = R->count;
    a.esize = R->esize;
    a.params.chunk_bytes = R->chunk_bytes;
    return strict_run(c, R->fn, &a, 0, &R->violations[c->rank]);
}

static traffic_t ag_expect_ring(int P, int r, size_t bytes, size_t ce_bytes_chunks)
{
    (void)r;
    traffic_t t = { (uint64_t)(P - 1) * ce_bytes_chunks, (uint64_t)(P - 1) * bytes };
    return t;
}

/* power of two: one message per step; otherwise the range [r, r+n_k) mod P
 * of step k is one message, or two when it wraps */
static traffic_t ag_expect_rd(int P, int r, size_t bytes, size_t unused)
{
    (void)unused;
    traffic_t t = { 0, (uint64_t)(P - 1) * bytes };
    if (bytes == 0) return t;
    for (int d = 1; d < P; d <<= 1) {
        int n = d < P - d ? d : P - d;
        t.msgs += ((P & (P - 1)) == 0 || r + n <= P) ? 1 : 2;
    }
    return t;
}

static void check_ag(braid_algo_fn_t fn, int P, size_t count, size_t esize, bool in_place,
                     size_t chunk_bytes, bool is_ring, const char *name)
{
    ag_run_t *R = calloc(1, sizeof *R);
    R->fn = fn;
    R->in_place = in_place;
    R->count = count;
    R->esize = esize;
    R->chunk_bytes = chunk_bytes;
    size_t bytes = count * esize, total = (size_t)P * bytes;
    for (int r = 0; r < P; r++) {
        R->sbuf[r] = malloc(bytes + 1);
        R->rbuf[r] = malloc(total + 1);
        memset(R->rbuf[r], 0xa5, total);
        unsigned char *mine = in_place ? R->rbuf[r] + (size_t)r * bytes : R->sbuf[r];
        for (size_t i = 0; i < bytes; i++) mine[i] = unit_byte(r, i);
    }
    inproc_result_t res = inproc_run(P, ag_body, NULL, R);
    char what[160];
    snprintf(what, sizeof what, "allgather %s P=%d count=%zu esize=%zu in_place=%d chunk=%zu", name, P,
             count, esize, (int)in_place, chunk_bytes);
    ck_assert_msg(res.rc == BRAID_OK, "%s: rc %d", what, res.rc);
    ck_assert_msg(res.leftover_msgs == 0, "%s: %d messages left", what, res.leftover_msgs);
    int violations = 0;
    for (int r = 0; r < P; r++) violations += R->violations[r];
    ck_assert_msg(violations == 0, "%s: %d send-buffer violations", what, violations);
    size_t bad = 0, wrong_traffic = 0;
    int first = -1;
    size_t chunks = nch(count, chunk_elems(chunk_bytes, esize));
    unsigned char *ref = malloc(total + 1);
    for (int b = 0; b < P; b++)
        for (size_t i = 0; i < bytes; i++) ref[(size_t)b * bytes + i] = unit_byte(b, i);
    for (int r = 0; r < P; r++) {
        bad += memcmp(R->rbuf[r], ref, total) != 0;
        traffic_t t = is_ring ? ag_expect_ring(P, r, bytes, chunks) : ag_expect_rd(P, r, bytes, 0);
        if (t.bytes != res.stats[r].bytes_sent || t.msgs != res.stats[r].msgs_sent) {
            if (first < 0) first = r;
            wrong_traffic++;
        }
    }
    free(ref);
    ck_assert_msg(bad == 0, "%s: %zu ranks with wrong bytes", what, bad);
    if (wrong_traffic) {
        traffic_t t = is_ring ? ag_expect_ring(P, first, bytes, chunks) : ag_expect_rd(P, first, bytes, 0);
        ck_abort_msg("%s: rank %d sent %llu msgs / %llu bytes, expected %llu / %llu", what, first,
                     (unsigned long long)res.stats[first].msgs_sent,
                     (unsigned long long)res.stats[first].bytes_sent, (unsigned long long)t.msgs,
                     (unsigned long long)t.bytes);
    }
    for (int r = 0; r < P; r++) {
        free(R->sbuf[r]);
        free(R->rbuf[r]);
    }
    free(res.stats);
    free(R);
}

static void ag_sweep(braid_algo_fn_t fn, bool is_ring, int P, const char *name)
{
    /* beyond P = 9 the buffers are P*P blocks in all: smaller counts */
    size_t counts[] = { 0, 1, 3, P > 9 ? 101 : 1001, 8000 };
    for (int ci = 0; ci < 5; ci++) {
        if (P > 9 && (ci == 0 || ci == 4)) continue;
        for (int ip = 0; ip < 2; ip++) {
            size_t esize = (ci + ip) % 2 ? 32 : 8;   /* elements wider than 8 bytes too */
            check_ag(fn, P, counts[ci], esize, ip, 0, is_ring, name);
            if (P <= 9) check_ag(fn, P, counts[ci], esize, ip, ci == 4 ? 8200 : 200, is_ring, name);
        }
    }
}

START_TEST(test_ag_ring) { ag_sweep(braid_allgather_ring, true, _i, "ring"); }
END_TEST
START_TEST(test_ag_recursive_doubling)
{
    ag_sweep(braid_allgather_recursive_doubling, false, _i, "recursive_doubling");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("reduce_scatter_allgather");
    TCase *rs = tcase_create("reduce_scatter");
    tcase_set_timeout(rs, 300);
    tcase_add_loop_test(rs, test_rs_ring, 1, MAX_P + 1);
    tcase_add_loop_test(rs, test_rs_halving_doubling, 1, MAX_P + 1);
    tcase_add_test(rs, test_rs_pow2_formula);
    suite_add_tcase(s, rs);
    TCase *ip = tcase_create("reduce_scatter_in_place");
    tcase_set_timeout(ip, 300);
    tcase_add_loop_test(ip, test_rs_in_place_ring, 1, 10);
    tcase_add_loop_test(ip, test_rs_in_place_halving_doubling, 1, 10);
    suite_add_tcase(s, ip);
    TCase *ag = tcase_create("allgather");
    tcase_set_timeout(ag, 300);
    tcase_add_loop_test(ag, test_ag_ring, 1, MAX_P + 1);
    tcase_add_loop_test(ag, test_ag_recursive_doubling, 1, MAX_P + 1);
    suite_add_tcase(s, ag);
    return unit_run_suite(s);
}
