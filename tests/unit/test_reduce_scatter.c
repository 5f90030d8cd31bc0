/*
 * test_reduce_scatter.c - every reduce_scatter algorithm of the registry
 * (braid_registry.h) over the in-process transport (harness: unit_coll.h),
 * every rank under the strict transport.
 *
 * values, every algorithm, P = 1..64: the block variant (count 0, 1, 3,
 * 1001; 101 beyond P = 9) and uneven rcounts (0..6 per rank, zeros
 * included; everything to one rank; 7000+ per rank up to P = 9); int64 and
 * double sums and the non-commutative 2x2 matrix product; in place and
 * not; the default and a tiny chunk; each rank's block against the
 * rank-order reference (double sum within 1e-9). Beyond P = 9 one op /
 * in-place combination per case, rotating with P. A non-commutative op
 * must work, except where the algorithm documents BRAID_ERR_UNSUPPORTED
 * on every rank: ring (P > 1).
 *
 * untouched bytes, every run: nothing of rbuf but the result block
 * rbuf[0, mine) is written (in place the rest of the input keeps its
 * values; a guard past the end stays), nothing at all when the algorithm
 * declines; the in_place case sweeps P = 1..9 in place with uneven counts
 * (zeros, fewer elements than ranks, empty first block), default and
 * one-element chunks, for that contract.
 *
 * contracts, every run: messages and bytes of each rank against the
 * algorithm's model (ring: every block but the own one, one message per
 * chunk; halving_doubling: binary blocks over M0 groups of blocks, then
 * the bit-reversal fix-up); at most S per rank; one rank sends nothing.
 * In closed form at powers of two: halving_doubling sends S - S/P plus
 * S/P for the fix-up when bitrev(r) != r, in lg P (+1) messages.
 */
#include "unit_coll.h"

#define MAX_P UNIT_MAX_P
#define COLL BRAID_COLL_REDUCE_SCATTER

static int bitrev(int v, int bits)
{
    int r = 0;
    for (int i = 0; i < bits; i++) r |= ((v >> i) & 1) << (bits - 1 - i);
    return r;
}

/* ---------------- models ---------------- */

static size_t ce_of(const unit_run_t *R) { return unit_chunk_elems(R->args.params.chunk_bytes, R->args.esize); }

/* ring: every block but the own one, chunked */
static unit_traffic_t model_ring(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    const size_t *off = R->off;
    if (R->P == 1) return t;
    for (int b = 0; b < R->P; b++)
        if (b != r) {
            size_t n = off[b + 1] - off[b];
            t.bytes += n * R->args.esize;
            t.msgs += unit_nchunks(n, ce_of(R));
        }
    return t;
}

/* the groups' edges: block braid_block_start(P, M0, g) */
static size_t edge_of(const unit_run_t *R, int M0, int g)
{
    return R->off[braid_block_start((size_t)R->P, M0, g)];
}

/* halving_doubling: binary blocks over M0 groups of blocks; intra-block
 * halving, pieces up the chain (unit_hd_halving), then block 0 sends every
 * block of its group but its own to the owner (one message each) */
static unit_traffic_t model_hd(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    int P = R->P;
    const size_t *off = R->off;
    if (P == 1 || off[P] == 0) return t;
    unit_hd_t h;
    unit_hd_halving(R, r, edge_of, ce_of(R), &h, &t);
    if (h.me == 0) {
        int g = bitrev(h.q, h.k);
        for (int b = (int)braid_block_start((size_t)P, h.M0, g); b < (int)braid_block_start((size_t)P, h.M0, g + 1); b++) {
            size_t n = off[b + 1] - off[b];
            if (b != r && n > 0) { t.bytes += n * R->args.esize; t.msgs++; }
        }
    }
    return t;
}

/* at most S (the whole input) per rank */
static void bound_s(const unit_run_t *R)
{
    int over = unit_ranks_over(R, R->off[R->P] * R->args.esize);
    ck_assert_msg(over == 0, "%s: %d ranks sent more than S", R->what, over);
}

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[BRAID_REDUCE_SCATTER_NALGS] = {
    [BRAID_REDUCE_SCATTER_RING] = { model_ring, bound_s },
    [BRAID_REDUCE_SCATTER_HALVING_DOUBLING] = { model_hd, bound_s },
    [BRAID_REDUCE_SCATTER_SHM] = { unit_model_silent, NULL, NULL },
};

/* ---------------- one run ---------------- */

/* rcounts NULL: the block variant, count elements per rank */
static void check_rs(int alg, int P, unit_op_kind_t kind, const size_t *rcounts, size_t count,
                     bool in_place, size_t chunk_bytes)
{
    unit_case_t k = { .kind = kind, .rcounts = rcounts, .count = count, .in_place = in_place };
    k.params.chunk_bytes = chunk_bytes;
    unit_run_check(unit_run_new(COLL, alg, P, &k), true, contracts, BRAID_REDUCE_SCATTER_NALGS);
}

/* ---------------- values ---------------- */

START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
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
                check_rs(alg, P, (unit_op_kind_t)k, cases[ci].rc, cases[ci].count, ip,
                         (ci + k + ip) % 2 ? small : 0);
            }
        }
    }
}
END_TEST

/* ---------------- in place: only the result block is written ---------------- */

START_TEST(in_place)
{
    int alg = unit_loop_alg(COLL, _i, 9), P = 1 + unit_loop_index(_i, 9);
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
            check_rs(alg, P, (unit_op_kind_t)k, cases[ci].rc, cases[ci].count, true, 0);
            check_rs(alg, P, (unit_op_kind_t)k, cases[ci].rc, cases[ci].count, true, es);
        }
}
END_TEST

/* ---------------- contracts in closed form ---------------- */

/* power-of-two P, block variant: S - S/P, plus S/P for the bit-reversal
 * fix-up when bitrev(r) != r */
START_TEST(pow2_formula)
{
    if (!unit_alg_selected(COLL, BRAID_REDUCE_SCATTER_HALVING_DOUBLING)) return;
    for (int P = 2; P <= 64; P *= 2) {
        size_t count = 100;
        unit_run_t M;
        memset(&M, 0, sizeof(M));
        M.P = P;
        M.args.count = count;
        M.args.esize = 8;
        M.args.params.chunk_bytes = (size_t)P * count * 8;
        for (int b = 0; b <= P; b++) M.off[b] = (size_t)b * count;
        int k = braid_floor_log2(P);
        for (int r = 0; r < P; r++) {
            unit_traffic_t t = model_hd(&M, r);
            uint64_t fix = bitrev(r, k) != r ? count * 8 : 0;
            ck_assert_uint_eq(t.bytes, ((size_t)P - 1) * count * 8 + fix);
            ck_assert_uint_eq(t.msgs, (uint64_t)k + (fix ? 1 : 0));
        }
    }
}
END_TEST

int main(void)
{
    unit_alg_filter(COLL);
    Suite *s = suite_create("reduce_scatter");
    TCase *tc = unit_tcase(s, "reduce_scatter", 300);
    tcase_add_loop_test(tc, values, 0, unit_loop_end(COLL, unit_np(MAX_P)));
    tcase_add_test(tc, pow2_formula);
    TCase *ip = unit_tcase(s, "reduce_scatter_in_place", 300);
    tcase_add_loop_test(ip, in_place, 0, unit_loop_end(COLL, 9));
    return unit_run_suite(s);
}
