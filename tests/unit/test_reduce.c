/*
 * test_reduce.c - every reduce algorithm of the registry
 * (braid_registry.h) over the in-process transport (harness: unit_coll.h),
 * every rank under the strict transport.
 *
 * values, every algorithm, P = 1..64: the root's result against the
 * rank-order reference (int64 sum and the non-commutative 2x2 matrix
 * product bit for bit, double sum within 1e-9), and a non-root's rbuf left
 * untouched. At P = 1..9, 16, 64: every op, counts {0, 1, P-1, P, P+1,
 * 1001, 2^16+3} (P-1 and P up to 16; the largest for int64 only beyond
 * 16), every root for counts 1 and P+1 (roots 0, P/2, P-1 beyond P = 9),
 * roots 0 and P-1 otherwise, in place at the root alternating with rbuf
 * NULL on the non-roots, a two-element chunk for an algorithm with a chunk
 * option. At the other P: counts {1, 2P+3} (the matrix product: the larger
 * only) with a root rotating with P, once with rbuf NULL on the non-roots
 * and once in place at the mirrored root. Every reduce algorithm must keep
 * the rank order of a non-commutative op (none documents
 * BRAID_ERR_UNSUPPORTED).
 *
 * contracts, every run: messages and bytes of each rank against the
 * algorithm's model (binomial: S from every rank but the tree root, plus
 * rank 0 forwarding to the root for non-commutative ops; dbtree: (sends per
 * chunk) x chunks of each tree); every non-root sends exactly S, the root
 * at most S; one rank sends nothing.
 *
 * A failing scratch allocation (binomial) is reported as BRAID_ERR_NOMEM.
 */
#include "unit_coll.h"

#define MAX_P UNIT_MAX_P
#define COLL BRAID_COLL_REDUCE

/* binomial reduce: one message of S from every rank but the tree root, and
 * rank 0 forwards to the root for non-commutative ops */
static unit_traffic_t model_binomial(const unit_run_t *R, int rank)
{
    unit_traffic_t e = { 0, 0 };
    const braid_coll_args_t *a = &R->args;
    if (R->P < 2 || 0 == a->count) return e;
    bool comm = a->op.commutative;
    int tree_root = comm ? a->root : 0;
    int sends = (rank != tree_root) + (!comm && rank == 0 && a->root != 0);
    e.msgs = (uint64_t)sends;
    e.bytes = (uint64_t)sends * a->count * a->esize;
    return e;
}

/* non-roots send exactly S, the root at most S */
static void bound_reduce(const unit_run_t *R)
{
    uint64_t S = (uint64_t)R->args.count * R->args.esize;
    int bad = 0;
    if (R->P < 2) return;
    for (int rank = 0; rank < R->P; rank++)
        if (rank != R->args.root && R->stats[rank].bytes_sent != S) bad++;
    ck_assert_msg(0 == bad && R->stats[R->args.root].bytes_sent <= S,
                  "%s: non-roots must send exactly S", R->what);
}

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[BRAID_REDUCE_NALGS] = {
    [BRAID_REDUCE_BINOMIAL] = { model_binomial, bound_reduce },
    [BRAID_REDUCE_DBTREE] = { unit_model_dbtree, bound_reduce },
    [BRAID_REDUCE_SHM] = { unit_model_silent, NULL, NULL },
};

static void check_case(int alg, int P, const unit_case_t *k)
{
    unit_run_check(unit_run_new(COLL, alg, P, k), true, contracts, BRAID_REDUCE_NALGS);
}

START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
    if (unit_in_p_list(P)) {
        unit_rooted_matrix(COLL, alg, P, check_case);
        return;
    }
    size_t counts[2] = { 1, 2 * (size_t)P + 3 };
    unit_op_kind_t ops[2] = { UNIT_OP_SUM_I64, UNIT_OP_MATMUL };
    for (int o = 0; o < 2; o++)
        for (int c = o; c < 2; c++) {      /* matmul: the larger count only */
            int v = (P + 2 * o + c) & 3;   /* rotate the root over P */
            int root = v & 1 ? 0 : P - 1 - P / 3;
            unit_case_t k = { .kind = ops[o], .count = counts[c], .root = root, .null_rbuf = true };
            check_case(alg, P, &k);
            unit_case_t m = { .kind = ops[o], .count = counts[c], .root = P - 1 - root, .in_place = true };
            check_case(alg, P, &m);
        }
}
END_TEST

/* a failing scratch allocation is reported, not a crash: every message
 * algorithm (shm needs no scratch) with every scratch allocation failing
 * returns BRAID_ERR_NOMEM on every rank that allocates (every rank fails
 * alike, so nothing hangs; a leaf's message to a rank that failed may be
 * left unreceived), or, needing no scratch, runs to the right values */
START_TEST(nomem)
{
    int nomem = 0;
    for (int alg = 1; alg < braid_alg_count(COLL); alg++) {
        if (!unit_alg_selected(COLL, alg) || unit_alg_has(COLL, alg, BRAID_OPT_SHM)) continue;
        unit_case_t k = { .kind = UNIT_OP_SUM_I64, .count = 100 };
        unit_run_t *R = unit_run_new(COLL, alg, 4, &k);
        R->fail_alloc = 1;
        R->may_leave_msgs = true;
        int rc = unit_run_exec(R);
        ck_assert_msg(BRAID_ERR_NOMEM == rc || BRAID_OK == rc, "%s: rc %d", R->what, rc);
        if (BRAID_OK == rc) unit_check_values(R);
        else nomem++;
        unit_run_free(R);
    }
    if (unit_alg_selected(COLL, BRAID_REDUCE_BINOMIAL)) ck_assert_int_gt(nomem, 0);
}
END_TEST

int main(void)
{
    unit_alg_filter(COLL);
    Suite *s = suite_create("reduce");
    TCase *tc = unit_tcase(s, "reduce", 120);
    tcase_add_loop_test(tc, values, 0, unit_loop_end(COLL, unit_np(MAX_P)));
    tcase_add_test(tc, nomem);
    return unit_run_suite(s);
}
