/*
 * test_allreduce.c - every allreduce algorithm of the registry
 * (braid_registry.h) over the in-process transport (harness: unit_coll.h).
 *
 * values, every algorithm, P = 1..64: up to P = 9 counts {0, 1, P-1, P,
 * P+1, 1001, 2^16+3}, every op, in place and not, the default and a tiny
 * chunk; beyond, counts {1, P+1, 1001, 8*M0} (M0 the largest power of two
 * <= P) with the op / in-place combination rotating with P. Ops: int64 sum
 * and the non-commutative 2x2 matrix product (as a user op, and declared
 * exact) bit for bit against the rank-order reference; double sum
 * bit-identical on every rank and within 1e-9 of the reference. Every rank
 * runs under the strict transport (send buffers untouched until waited).
 * A non-commutative op must work, except where the algorithm's registry
 * row says it returns BRAID_ERR_UNSUPPORTED on every rank (noncomm: ring
 * when not exact and ring_chunked at P > 1, hierarchical always); there
 * that code is asserted. The hierarchical algorithm
 * (BRAID_OPT_HIER) runs on the node views of a cyclic or random map of up
 * to three nodes.
 *
 * contracts, every run: the messages and bytes of each rank against the
 * model of its algorithm (ring: the buffer P-1 times when exact, else the
 * reduce-scatter + allgather ring; ring_chunked: one message per chunk of
 * every block but two; halving_doubling: binary blocks; recursive_doubling:
 * lg P' exchanges plus the fold; bcube: the range of each step; dbtree:
 * (sends per chunk) x chunks of each tree); bounds: ring_chunked, ring when
 * not exact and halving_doubling (count a multiple of M0) at most 2S per
 * rank; dbtree 2(P-1)S in all and at most 2S + one element per rank; bcube
 * in all what the model says, exactly 2S(P-1)/P per rank when P divides
 * the count; one rank sends nothing.
 *
 * options, every algorithm that reads them: bcube bases {default, 2, 3, 4,
 * 8, auto} (BRAID_OPT_BASE) and chunk sizes {default, one element, three
 * elements or 8 KiB} (BRAID_OPT_CHUNK, BRAID_OPT_TREE_CHUNK) at P = 1..9,
 * 16, 64 with counts {0, 1, P-1, P, P+1, 1001, 2^16+3} and every op; at the
 * other P up to 64, counts {1, 2P+3} with a base rotating with P and a
 * two-element chunk.
 *
 * specific: P = 2 moves S/2 each way per phase; the models' closed forms
 * 2(S - S/P) and 2 lg P at powers of two; bcube exactly 2S(P-1)/P per rank,
 * Gloo's per-step formula and 2 sum(g-1) messages at P = B^k; a
 * hand-computed P = 4 double tree; a failing scratch allocation reported
 * as BRAID_ERR_NOMEM with no message left over; hierarchical at P = 1..12
 * on 1..4 nodes (cyclic and random maps) with the phase algorithms
 * rotating through the registry, values as above, only node leaders
 * sending to other nodes, and a non-commutative op refused on every rank
 * before any message.
 */
#include "unit_coll.h"
#include "unit_topo.h"

#define MAX_P UNIT_MAX_P
#define COLL BRAID_COLL_ALLREDUCE

/* ---------------- models of the messages and bytes of each rank ---------------- */

static size_t ce_of(const unit_run_t *R) { return unit_chunk_elems(R->args.params.chunk_bytes, R->args.esize); }

/* ring_chunked: reduce-scatter sends every block but r, allgather every
 * block but r+1; one message per chunk */
static unit_traffic_t model_ring_chunked(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    int P = R->P;
    size_t count = R->args.count, es = R->args.esize, ce = ce_of(R);
    if (P == 1) return t;
    for (int b = 0; b < P; b++) {
        size_t n = braid_block_count(count, P, b);
        if (b != r) { t.bytes += n * es; t.msgs += unit_nchunks(n, ce); }
        if (b != (r + 1) % P) { t.bytes += n * es; t.msgs += unit_nchunks(n, ce); }
    }
    return t;
}

/* ring: the whole buffer P-1 times when exact; otherwise the
 * reduce-scatter + allgather ring of ring_chunked */
static unit_traffic_t model_ring(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    if (!R->args.exact) return model_ring_chunked(R, r);
    if (R->P > 1 && R->args.count > 0) {
        t.msgs = (uint64_t)(R->P - 1);
        t.bytes = (uint64_t)(R->P - 1) * R->args.count * R->args.esize;
    }
    return t;
}

/* the groups' edges: braid_block_start(count, M0, g) elements */
static size_t edge_of(const unit_run_t *R, int M0, int g)
{
    return braid_block_start(R->args.count, M0, g);
}

/* halving_doubling, binary blocks (largest first): intra-block halving
 * sends the other half of the current range; a non-largest block sends its
 * piece up (one chunked message per sub-piece of the next larger block)
 * (unit_hd_halving); a non-smallest block sends its final piece down (one
 * message); the allgather sends the own range at levels lg..1. Ranges are
 * in M0 groups of braid_block_start(count, M0, g) elements. */
static unit_traffic_t model_hd(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    size_t es = R->args.esize;
    if (R->P == 1 || R->args.count == 0) return t;
    unit_hd_t h;
    unit_hd_halving(R, r, edge_of, ce_of(R), &h, &t);
#define E(g) edge_of(R, h.M0, (g))
    if (h.me + 1 < h.nb && E(h.g1) > E(h.g0)) { t.bytes += (E(h.g1) - E(h.g0)) * es; t.msgs++; }
    for (int i = h.k; i >= 1; i--) {
        size_t n = E(h.seg1[i]) - E(h.seg0[i]);
        t.bytes += n * es;
        t.msgs += n > 0;
    }
#undef E
    return t;
}

/* recursive doubling: lg P' whole-vector exchanges; in the fold the even
 * rank sends once, the odd rank also hands the result back */
static unit_traffic_t model_rd(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    int P = R->P;
    uint64_t S = (uint64_t)R->args.count * R->args.esize;
    if (P < 2 || 0 == S) return t;
    int pof2 = 1 << braid_floor_log2(P), rem = P - pof2, lgp = braid_floor_log2(P);
    if (r < 2 * rem && r % 2 == 0) t.msgs = 1;
    else if (r < 2 * rem) t.msgs = (uint64_t)lgp + 1;
    else t.msgs = (uint64_t)lgp;
    t.bytes = t.msgs * S;
    return t;
}

/* bcube: follow this rank's range through the steps */
static unit_traffic_t model_bcube(const unit_run_t *R, int rank)
{
    unit_traffic_t e = { 0, 0 };
    int P = R->P;
    size_t es = R->args.esize;
    if (P < 2 || 0 == R->args.count) return e;
    int g[BRAID_BCUBE_MAX_STEPS];
    int m = braid_bcube_factor(P, R->args.params.bcube_base, g);
    size_t len = R->args.count;
    for (int s = 0; s < m; s++) {
        int d = braid_bcube_digit(g, s, rank);
        for (int j = 0; j < g[s]; j++) {
            size_t cj = braid_block_count(len, g[s], j);
            if (j != d && cj) { e.msgs++; e.bytes += cj * es; }
        }
        size_t mine = braid_block_count(len, g[s], d);
        if (mine) { e.msgs += (uint64_t)(g[s] - 1); e.bytes += (uint64_t)(g[s] - 1) * mine * es; }
        len = mine;
    }
    return e;
}

/* ---------------- bounds that do not depend on the models ---------------- */

static uint64_t S_of(const unit_run_t *R) { return (uint64_t)R->args.count * R->args.esize; }

static void assert_two_s(const unit_run_t *R)
{
    int over = unit_ranks_over(R, 2 * S_of(R));
    ck_assert_msg(over == 0, "%s: %d ranks sent more than 2S", R->what, over);
}

/* the bandwidth contract: ring_chunked never sends more than 2S per rank,
 * nor ring when not exact (it runs the same ring) */
static void bound_ring(const unit_run_t *R)
{
    if (!R->args.exact) assert_two_s(R);
}

/* halving_doubling: 2S when the count splits evenly into the M0 groups
 * (otherwise a tiny count is sent at every level) */
static void bound_hd(const unit_run_t *R)
{
    size_t M0 = (size_t)1 << braid_floor_log2(R->P);
    if (R->args.count % M0 == 0) assert_two_s(R);
}

/* bcube: in all what the model says; exactly 2S(P-1)/P per rank when P
 * divides the count */
static void bound_bcube(const unit_run_t *R)
{
    uint64_t model = 0, S = S_of(R);
    for (int rank = 0; rank < R->P; rank++) model += model_bcube(R, rank).bytes;
    ck_assert_uint_eq(unit_total_bytes(R), model);
    if (0 == R->args.count % (size_t)R->P)
        for (int rank = 0; rank < R->P; rank++)
            ck_assert_uint_eq(R->stats[rank].bytes_sent, 2 * S * (uint64_t)(R->P - 1) / (uint64_t)R->P);
}

/* dbtree: 2(P-1)S in all, at most 2S + one element per rank */
static void bound_dbtree(const unit_run_t *R)
{
    uint64_t S = S_of(R), maxb = 0;
    if (R->P < 2) return;
    for (int rank = 0; rank < R->P; rank++)
        if (R->stats[rank].bytes_sent > maxb) maxb = R->stats[rank].bytes_sent;
    ck_assert_uint_eq(unit_total_bytes(R), 2 * (uint64_t)(R->P - 1) * S);
    ck_assert_msg(maxb <= 2 * S + R->args.esize, "%s: a rank sent %llu > 2S", R->what,
                  (unsigned long long)maxb);
}

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[BRAID_ALLREDUCE_NALGS] = {
    [BRAID_ALLREDUCE_RING] = { model_ring, bound_ring },
    [BRAID_ALLREDUCE_RING_CHUNKED] = { model_ring_chunked, assert_two_s },
    [BRAID_ALLREDUCE_HALVING_DOUBLING] = { model_hd, bound_hd },
    [BRAID_ALLREDUCE_RECURSIVE_DOUBLING] = { model_rd, NULL },
    [BRAID_ALLREDUCE_BCUBE] = { model_bcube, bound_bcube },
    [BRAID_ALLREDUCE_DBTREE] = { unit_model_dbtree, bound_dbtree },
    [BRAID_ALLREDUCE_HIERARCHICAL] = { NULL, NULL, "its phases are other registry algorithms "
                                       "with their own contracts; only node leaders talk across "
                                       "nodes (hierarchical_values)" },
    [BRAID_ALLREDUCE_SHM] = { unit_model_silent, NULL, NULL },
};

/* ---------------- the hierarchical allreduce: node views ---------------- */

/* The v-th (cyclically) algorithm of coll that runs on messages alone:
 * neither hierarchical itself nor needing a shared-memory segment, which
 * these views do not have. */
static int message_alg(braid_coll_t coll, int v)
{
    int n = 0, ids[BRAID_MAX_ALGS];
    for (int alg = 1; alg < braid_alg_count(coll); alg++)
        if (!unit_alg_has(coll, alg, BRAID_OPT_HIER | BRAID_OPT_SHM)) ids[n++] = alg;
    return ids[v % n];
}

/* The phase algorithms of variant v, rotating through the registry: a
 * reduce, an allreduce that does not itself need views, a bcast. */
static braid_hier_t phases(int v)
{
    braid_hier_t h;
    memset(&h, 0, sizeof(h));
    h.node_reduce = braid_algorithm(BRAID_COLL_REDUCE, message_alg(BRAID_COLL_REDUCE, v))->run;
    h.node_bcast = braid_algorithm(BRAID_COLL_BCAST, message_alg(BRAID_COLL_BCAST, v))->run;
    h.leaders_allreduce = braid_algorithm(COLL, message_alg(COLL, v))->run;
    h.node_bcast_params.chunk_bytes = v % 2 ? 64 : 0;
    return h;
}

/* one rank of a hierarchical run: views of the node map in R->ctx, under
 * the strict transport */
static int hier_rank(unit_run_t *R, braid_comm_t *c, braid_coll_args_t *a)
{
    unit_topo_ctx_t *x = R->ctx;
    unit_views_t v;
    unit_views_init(&v, c, x->key);
    braid_hier_t h = x->phases;
    h.node = &v.node.comm;
    h.leaders = braid_subcomm_is_member(&v.leaders) ? &v.leaders.comm : NULL;
    x->leads[c->rank] = NULL != h.leaders;
    a->hier = &h;
    int rc = strict_run(&v.counted, R->fn, a, R->fail_alloc, &R->violations[c->rank]);
    unit_views_fini(&v, c, x);
    return rc;
}

typedef struct hier_setup {
    unit_topo_ctx_t ctx;
    uint64_t key[MAX_P];
} hier_setup_t;

/* ---------------- one run ---------------- */

/* Run case k of algorithm alg on P ranks and check it; an algorithm that
 * needs node views gets those of hier (NULL: a map chosen from P). */
static void check_case(int alg, int P, const unit_case_t *k, hier_setup_t *hier)
{
    unit_run_t *R = unit_run_new(COLL, alg, P, k);
    hier_setup_t own;
    if (unit_alg_has(COLL, alg, BRAID_OPT_HIER)) {
        if (NULL == hier) {
            hier = &own;
            memset(hier, 0, sizeof(*hier));
            int nodes = 1 + P % 3 < P ? 1 + P % 3 : P;
            unit_make_map(P % 2 ? UNIT_MAP_RANDOM : UNIT_MAP_CYCLIC, P, nodes, (unsigned)P, hier->key);
            hier->ctx.phases = phases(P + (int)k->count);
        }
        hier->ctx.key = hier->key;
        R->rank_fn = hier_rank;
        R->ctx = &hier->ctx;
    }
    unit_run_check(R, true, contracts, BRAID_ALLREDUCE_NALGS);
}

static void check_run(int alg, int P, unit_op_kind_t kind, bool exact, size_t count, bool in_place,
                      size_t chunk_bytes)
{
    unit_case_t k = { .kind = kind, .exact = exact, .in_place = in_place, .count = count };
    k.params.chunk_bytes = chunk_bytes;
    check_case(alg, P, &k, NULL);
}

/* ---------------- values: every algorithm, P = 1..64 ---------------- */

/* Up to P = 9: counts {0, 1, P-1, P, P+1, 1001, 2^16+3}, every op, in place
 * and not, default and tiny chunks. Beyond: counts {1, P+1, 1001} and 8*M0
 * (even groups), each with one op / in-place combination that rotates with
 * P, so that every combination still runs at many P. */
START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
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
END_TEST

/* ---------------- options: bcube bases and chunk sizes ---------------- */

/* Variant v of an option on case k: false to skip the case. */
typedef bool (*variant_fn)(unit_case_t *k, int v, int P);

static const int BASES[] = { 0, 2, 3, 4, 8, BRAID_BCUBE_AUTO };
static bool set_base(unit_case_t *k, int v, int P)
{
    (void)P;
    k->params.bcube_base = BASES[v];
    return true;
}

/* chunk sizes: the default, one element, three elements (8 KiB for the
 * largest count) */
static bool set_chunk(unit_case_t *k, int v, int P)
{
    size_t es = unit_op_esize(k->kind);
    if (1 == v) {
        if (P > 16 && k->count > (size_t)P + 1) return false;
        k->params.chunk_bytes = es;
    }
    if (2 == v) k->params.chunk_bytes = k->count > 1001 ? 8192 : 3 * es;
    return true;
}

/* every op and count with every variant, in place and not alternating */
static void option_matrix(int P, int alg, variant_fn set, int nvariants)
{
    for (int o = 0; o < 3; o++) {
        size_t counts[8];
        int nc = unit_counts_for(P, unit_ops3[o], counts);
        for (int c = 0; c < nc; c++)
            for (int b = 0; b < nvariants; b++) {
                /* the largest count only with the first and last variant */
                if (counts[c] > 1001 && b != 0 && b != nvariants - 1) continue;
                for (int ip = (c + b + o) & 1; ip < 2; ip += 2 - (counts[c] <= (size_t)P + 1)) {
                    unit_case_t k = { .kind = unit_ops3[o], .count = counts[c], .in_place = ip };
                    if (set(&k, b, P)) check_case(alg, P, &k, NULL);
                }
            }
    }
}

START_TEST(bcube_bases)
{
    for (int alg = 1; alg < braid_alg_count(COLL); alg++)
        if (unit_alg_selected(COLL, alg) && unit_alg_has(COLL, alg, BRAID_OPT_BASE))
            option_matrix(unit_p_list[_i], alg, set_base, (int)(sizeof BASES / sizeof *BASES));
}
END_TEST

START_TEST(chunk_sizes)
{
    for (int alg = 1; alg < braid_alg_count(COLL); alg++)
        if (unit_alg_selected(COLL, alg) && unit_alg_has(COLL, alg, BRAID_OPT_CHUNK | BRAID_OPT_TREE_CHUNK))
            option_matrix(unit_p_list[_i], alg, set_chunk, 3);
}
END_TEST

/* P = 1..64 not in P_LIST, counts {1, 2P+3} (the matrix product: the
 * larger only), every algorithm with an option: a base rotating with P,
 * a two-element chunk */
START_TEST(option_sweep)
{
    int P = _i;
    if (unit_in_p_list(P)) return;          /* covered by the full matrix */
    size_t counts[2] = { 1, 2 * (size_t)P + 3 };
    unit_op_kind_t ops[2] = { UNIT_OP_SUM_I64, UNIT_OP_MATMUL };
    static const int bases[] = { 2, 3, 4, BRAID_BCUBE_AUTO };
    for (int alg = 1; alg < braid_alg_count(COLL); alg++)
        for (int o = 0; o < 2 && unit_alg_selected(COLL, alg); o++)
            for (int c = o; c < 2; c++) {
                int v = (P + 2 * o + c) & 3;   /* rotate the variants over P */
                unit_case_t k = { .kind = ops[o], .count = counts[c] };
                if (unit_alg_has(COLL, alg, BRAID_OPT_BASE)) {
                    k.params.bcube_base = bases[v];
                    k.in_place = v & 1;
                    check_case(alg, P, &k, NULL);
                }
                if (unit_alg_has(COLL, alg, BRAID_OPT_CHUNK | BRAID_OPT_TREE_CHUNK)) {
                    k.params.chunk_bytes = 2 * unit_op_esize(ops[o]);
                    k.in_place = !(v & 1);
                    check_case(alg, P, &k, NULL);
                }
            }
}
END_TEST

/* ---------------- contracts in closed form ---------------- */

/* a run's parameters without buffers, for the models (double sum) */
static unit_run_t model_run(int P, size_t count, size_t chunk_bytes)
{
    unit_run_t M;
    memset(&M, 0, sizeof(M));
    M.coll = COLL;
    M.P = P;
    M.args.count = count;
    M.args.esize = 8;
    M.args.op = unit_op(UNIT_OP_SUM_F64);
    M.args.params.chunk_bytes = chunk_bytes;
    return M;
}

/* P = 2 moves exactly S/2 each way per phase (even count) */
START_TEST(p2_half_each_way)
{
    const int algs[2] = { BRAID_ALLREDUCE_RING_CHUNKED, BRAID_ALLREDUCE_HALVING_DOUBLING };
    for (int j = 0; j < 2; j++) {
        if (!unit_alg_selected(COLL, algs[j])) continue;
        size_t count = 1 << 16;
        unit_run_t M = model_run(2, count, count * 8);
        ck_assert_uint_eq(contracts[algs[j]].model(&M, 0).bytes, count * 8);   /* S/2 + S/2 */
        check_run(algs[j], 2, UNIT_OP_SUM_F64, false, count, false, 0);
    }
}
END_TEST

/* contract formulas at power-of-two P: 2(S - S/P) for an even split */
START_TEST(pow2_formulas)
{
    if (!unit_alg_selected(COLL, BRAID_ALLREDUCE_HALVING_DOUBLING)
        && !unit_alg_selected(COLL, BRAID_ALLREDUCE_RING_CHUNKED))
        return;
    for (int P = 2; P <= 64; P *= 2) {
        size_t count = (size_t)P * 1000;
        unit_run_t M = model_run(P, count, count * 8);
        for (int r = 0; r < P; r++) {
            unit_traffic_t h = model_hd(&M, r), g = model_ring_chunked(&M, r);
            ck_assert_uint_eq(h.bytes, 2 * (count - count / (size_t)P) * 8);
            ck_assert_uint_eq(g.bytes, 2 * (count - count / (size_t)P) * 8);
            ck_assert_uint_eq(h.msgs, 2 * (uint64_t)braid_floor_log2(P));
        }
    }
}
END_TEST

/* bcube: exactly 2S(P-1)/P per rank and 2*sum(g-1) messages for P = B^k */
START_TEST(bcube_exact_contract)
{
    static const int cases[][2] = { { 4, 2 }, { 4, 4 }, { 8, 2 }, { 9, 3 }, { 16, 4 },
                                    { 16, 2 }, { 27, 3 }, { 64, 4 }, { 64, 8 }, { 25, 5 } };
    if (!unit_alg_selected(COLL, BRAID_ALLREDUCE_BCUBE)) return;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int P = cases[c][0], B = cases[c][1];
        unit_case_t k = { .kind = UNIT_OP_SUM_I64, .count = (size_t)P * 37 };
        k.params.bcube_base = B;
        unit_run_t *R = unit_run_new(COLL, BRAID_ALLREDUCE_BCUBE, P, &k);
        uint64_t S = k.count * 8;
        ck_assert_int_eq(unit_run_exec(R), BRAID_OK);
        /* compare with Gloo's formula, independently of the model */
        int steps = 0;
        for (int q = 1; q < P; q *= B) steps++;
        uint64_t gloo = 0, q = 1;
        for (int s = 0; s < steps; s++, q *= (uint64_t)B) gloo += 2 * (S / q) * (uint64_t)(B - 1) / (uint64_t)B;
        int bad = 0;
        for (int rank = 0; rank < P; rank++) {
            if (R->stats[rank].bytes_sent != 2 * S * (uint64_t)(P - 1) / (uint64_t)P) bad++;
            if (R->stats[rank].bytes_sent != gloo) bad++;
            if (R->stats[rank].msgs_sent != 2 * (uint64_t)steps * (uint64_t)(B - 1)) bad++;
        }
        ck_assert_msg(0 == bad, "bcube P=%d B=%d: %d ranks off 2S(P-1)/P", P, B, bad);
        unit_run_free(R);
    }
}
END_TEST

/* P = 4, n = 8 int64 (S = 64, halves of 32): tree 0 is 0 -> 2 -> {1, 3},
 * tree 1 its mirror 3 -> 1 -> {0, 2}; one chunk per tree */
START_TEST(dbtree_hand_p4)
{
    if (!unit_alg_selected(COLL, BRAID_ALLREDUCE_DBTREE)) return;
    unit_case_t k = { .kind = UNIT_OP_SUM_I64, .count = 8 };
    unit_run_t *R = unit_run_new(COLL, BRAID_ALLREDUCE_DBTREE, 4, &k);
    ck_assert_int_eq(unit_run_exec(R), BRAID_OK);
    const uint64_t bytes[4] = { 64, 128, 128, 64 }, msgs[4] = { 2, 4, 4, 2 };
    for (int rank = 0; rank < 4; rank++) {
        ck_assert_uint_eq(R->stats[rank].bytes_sent, bytes[rank]);
        ck_assert_uint_eq(R->stats[rank].msgs_sent, msgs[rank]);
    }
    unit_run_free(R);
}
END_TEST

/* a failing scratch allocation is reported, not a crash: every message
 * algorithm (the hierarchical one runs others; shm needs no scratch) with
 * every scratch allocation failing, in place and not, returns
 * BRAID_ERR_NOMEM on every rank with no message left over (every rank
 * fails alike, so nothing hangs) - or, where it needs no scratch at all,
 * runs to the right values */
START_TEST(nomem)
{
    int nomem = 0;
    for (int alg = 1; alg < braid_alg_count(COLL); alg++) {
        if (!unit_alg_selected(COLL, alg) || unit_alg_has(COLL, alg, BRAID_OPT_HIER | BRAID_OPT_SHM))
            continue;
        for (int ip = 0; ip < 2; ip++) {
            unit_case_t k = { .kind = UNIT_OP_SUM_I64, .exact = true, .in_place = ip, .count = 100 };
            unit_run_t *R = unit_run_new(COLL, alg, 4, &k);
            R->fail_alloc = 1;
            int rc = unit_run_exec(R);
            ck_assert_msg(BRAID_ERR_NOMEM == rc || BRAID_OK == rc, "%s: rc %d", R->what, rc);
            for (int r = 0; r < R->P; r++)
                ck_assert_msg(R->rc[r] == rc, "%s: rank %d rc %d, rank 0 %d", R->what, r, R->rc[r], rc);
            if (BRAID_OK == rc) unit_check_values(R);
            else nomem++;
            unit_run_free(R);
        }
    }
    /* the scratch-using algorithms are there to fail (ring_chunked among them) */
    if (unit_alg_selected(COLL, BRAID_ALLREDUCE_RING_CHUNKED)) ck_assert_int_gt(nomem, 0);
}
END_TEST

/* ---------------- hierarchical: node maps ---------------- */

START_TEST(hierarchical_values)
{
    int variant = 0;
    for (int alg = 1; alg < braid_alg_count(COLL); alg++) {
        if (!unit_alg_selected(COLL, alg) || !unit_alg_has(COLL, alg, BRAID_OPT_HIER)) continue;
        for (int P = 1; P <= 12; P++)
            for (int nodes = 1; nodes <= 4 && nodes <= P; nodes++)
                for (int map = UNIT_MAP_CYCLIC; map <= UNIT_MAP_RANDOM; map += UNIT_MAP_RANDOM - UNIT_MAP_CYCLIC)
                    for (int op = UNIT_OP_SUM_I64; op <= UNIT_OP_SUM_F64; op++) {
                        hier_setup_t h;
                        memset(&h, 0, sizeof(h));
                        unit_make_map((unit_map_t)map, P, nodes, (unsigned)P, h.key);
                        h.ctx.phases = phases(variant);
                        unit_case_t k = { .kind = (unit_op_kind_t)op, .in_place = variant % 2 };
                        k.count = variant % 5 == 0 ? 1 : (size_t)(97 * P + variant);
                        variant++;
                        check_case(alg, P, &k, &h);
                        /* only leaders talk across nodes */
                        for (int i = 0; i < P; i++)
                            if (!h.ctx.leads[i])
                                ck_assert_msg(h.ctx.inter_msgs[i] == 0,
                                              "P=%d nodes=%d: rank %d (no leader) sent %lu messages "
                                              "to other nodes", P, nodes, i, h.ctx.inter_msgs[i]);
                    }
    }
}
END_TEST

START_TEST(hierarchical_noncommutative)
{
    for (int alg = 1; alg < braid_alg_count(COLL); alg++) {
        if (!unit_alg_selected(COLL, alg) || !unit_alg_has(COLL, alg, BRAID_OPT_HIER)) continue;
        hier_setup_t h;
        memset(&h, 0, sizeof(h));
        unit_make_map(UNIT_MAP_CYCLIC, 8, 2, 0, h.key);
        h.ctx.key = h.key;
        h.ctx.phases = phases(1);
        unit_case_t k = { .kind = UNIT_OP_MATMUL, .count = 10 };
        unit_run_t *R = unit_run_new(COLL, alg, 8, &k);
        R->rank_fn = hier_rank;
        R->ctx = &h.ctx;
        unit_check_rc(R, unit_run_exec(R), false);
        for (int i = 0; i < 8; i++) {
            ck_assert_int_eq(R->rc[i], BRAID_ERR_UNSUPPORTED);
            ck_assert_int_eq(h.ctx.msgs[i], 0);
            ck_assert_int_eq(R->stats[i].msgs_sent, 0);
        }
        unit_run_free(R);
    }
}
END_TEST

int main(void)
{
    unit_alg_filter(COLL);
    Suite *s = suite_create("allreduce");
    tcase_add_loop_test(unit_tcase(s, "values", 300), values, 0, unit_loop_end(COLL, unit_np(MAX_P)));
    TCase *to = unit_tcase(s, "options", 300);
    tcase_add_loop_test(to, bcube_bases, 0, UNIT_NP_LIST);
    tcase_add_loop_test(to, chunk_sizes, 0, UNIT_NP_LIST);
    tcase_add_loop_test(to, option_sweep, 1, unit_np(MAX_P) + 1);
    TCase *tc = unit_tcase(s, "contracts", 300);
    tcase_add_test(tc, p2_half_each_way);
    tcase_add_test(tc, pow2_formulas);
    tcase_add_test(tc, bcube_exact_contract);
    tcase_add_test(tc, dbtree_hand_p4);
    tcase_add_test(tc, nomem);
    TCase *th = unit_tcase(s, "hierarchical", 300);
    tcase_add_test(th, hierarchical_values);
    tcase_add_test(th, hierarchical_noncommutative);
    return unit_run_suite(s);
}
