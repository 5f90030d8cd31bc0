/*
 * test_gather.c - every gather algorithm of the registry
 * (braid_registry.h) over the in-process transport (harness: unit_coll.h),
 * every rank under the strict transport; built a second time with
 * -DUNIT_SCATTER as test_scatter, for every scatter algorithm.
 *
 * values, every algorithm, P = 1..64: blocks of {0, 1, 2, 3, 1001} elements
 * of 8 and 32 bytes up to P = 16 ({1, 2, 3} beyond), every root up to P = 9
 * (0, P/2 and P-1 beyond), in place at the root and not; the root's whole
 * receive buffer (gather) or every rank's block (scatter) against the
 * bytes each rank knows were sent.
 *
 * contracts, every run, for relative rank v = rank - root (mod P) and
 * n = min(lowbit(v), P - v) (v = 0: n = P): gather binomial sends its n
 * blocks up in one message, scatter binomial one message of
 * min(2^k, P - v - 2^k) blocks to each child v + 2^k below n; linear: one
 * block per non-root (gather) or P - 1 from the root (scatter); shm sends
 * nothing.
 */
#include "unit_coll.h"

#ifdef UNIT_SCATTER
#define COLL BRAID_COLL_SCATTER
#define NALGS BRAID_SCATTER_NALGS
#define ALG_BINOMIAL BRAID_SCATTER_BINOMIAL
#define ALG_LINEAR BRAID_SCATTER_LINEAR
#define ALG_SHM BRAID_SCATTER_SHM
#else
#define COLL BRAID_COLL_GATHER
#define NALGS BRAID_GATHER_NALGS
#define ALG_BINOMIAL BRAID_GATHER_BINOMIAL
#define ALG_LINEAR BRAID_GATHER_LINEAR
#define ALG_SHM BRAID_GATHER_SHM
#endif

#define MAX_P UNIT_MAX_P

static uint64_t block_bytes(const unit_run_t *R) { return (uint64_t)R->args.count * R->args.esize; }

/* the subtree size of relative rank v */
static int subtree(int v, int P)
{
    int low = 1;
    if (0 == v) while (low < P) low <<= 1;
    else low = v & -v;
    return low < P - v ? low : P - v;
}

static unit_traffic_t model_binomial(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    int P = R->P, v = (r - R->args.root + P) % P, n = subtree(v, P);
    if (0 == block_bytes(R)) return t;
#ifdef UNIT_SCATTER
    for (int m = 1; m < n; m <<= 1) {
        int cnt = m < P - v - m ? m : P - v - m;
        t.msgs++;
        t.bytes += (uint64_t)cnt * block_bytes(R);
    }
#else
    if (v) {
        t.msgs = 1;
        t.bytes = (uint64_t)n * block_bytes(R);
    }
#endif
    return t;
}

static unit_traffic_t model_linear(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    bool root = r == R->args.root;
    if (0 == block_bytes(R)) return t;
#ifdef UNIT_SCATTER
    if (root) t.msgs = (uint64_t)(R->P - 1);
#else
    if (!root) t.msgs = 1;
#endif
    t.bytes = t.msgs * block_bytes(R);
    return t;
}

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[NALGS] = {
    [ALG_BINOMIAL] = { model_binomial, NULL, NULL },
    [ALG_LINEAR] = { model_linear, NULL, NULL },
    [ALG_SHM] = { unit_model_silent, NULL, NULL },
};

START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
    if (P > 16 && !unit_in_p_list(P)) return;
    /* 2: the cells (count % 4 == 2 keeps a slot that holds the case, and
     * the single-copy threshold above it); 1, 1001, 3: single copy */
    unit_rooted_cases(COLL, alg, P, contracts, NALGS);
}
END_TEST

int main(void)
{
    unit_alg_filter(COLL);
    Suite *s = suite_create(braid_coll_name(COLL));
    tcase_add_loop_test(unit_tcase(s, braid_coll_name(COLL), 300), values, 0,
                        unit_loop_end(COLL, unit_np(MAX_P)));
    return unit_run_suite(s);
}
