/*
 * test_scan.c - every scan algorithm of the registry (braid_registry.h)
 * over the in-process transport (harness: unit_coll.h), every rank under
 * the strict transport; built a second time with -DUNIT_EXSCAN as
 * test_exscan, for every exscan algorithm.
 *
 * values, every algorithm, P = 1..64: the counts of unit_counts_for with
 * an integer sum, a double sum and 2x2 matrix products (non-commutative:
 * rank order must hold), in place and not; rank r's result against the
 * reduction of ranks 0..r (exscan: 0..r-1) computed from the same inputs,
 * and exscan's rank 0 receive buffer left as it was.
 *
 * contracts, every run: recursive_doubling sends one message of S bytes
 * to each partner r XOR 2^k above it (below P), and to each one below it
 * that sends again in a later step; shm sends none.
 */
#include "unit_coll.h"

#ifdef UNIT_EXSCAN
#define COLL BRAID_COLL_EXSCAN
#define NALGS BRAID_EXSCAN_NALGS
#define ALG_DOUBLING BRAID_EXSCAN_RECURSIVE_DOUBLING
#define ALG_SHM BRAID_EXSCAN_SHM
#else
#define COLL BRAID_COLL_SCAN
#define NALGS BRAID_SCAN_NALGS
#define ALG_DOUBLING BRAID_SCAN_RECURSIVE_DOUBLING
#define ALG_SHM BRAID_SCAN_SHM
#endif

#define MAX_P UNIT_MAX_P

/* rank r of P sends something after the step of distance mask */
static bool sends_later(int r, int mask, int P)
{
    for (int m = 2 * mask; m < P; m *= 2)
        if ((r ^ m) < P && ((r ^ m) > r || sends_later(r ^ m, m, P))) return true;
    return false;
}

static unit_traffic_t model_doubling(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    uint64_t bytes = (uint64_t)R->args.count * R->args.esize;
    if (0 == bytes) return t;
    for (int mask = 1; mask < R->P; mask <<= 1) {
        int peer = r ^ mask;
        /* up always, down only to a rank that sends again later */
        if (peer < R->P && (peer > r || sends_later(peer, mask, R->P))) {
            t.msgs++;
            t.bytes += bytes;
        }
    }
    return t;
}

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[NALGS] = {
    [ALG_DOUBLING] = { model_doubling, NULL, NULL },
    [ALG_SHM] = { unit_model_silent, NULL, NULL },
};

START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
    if (P > 16 && !unit_in_p_list(P)) return;
    for (int o = 0; o < 3; o++) {
        size_t counts[8];
        int nc = unit_counts_for(P, unit_ops3[o], counts);
        for (int ci = 0; ci < nc; ci++)
            for (int ip = 0; ip < 2; ip++) {
                if (P > 16 && counts[ci] > 1001 && ip) continue;
                unit_case_t k = { .kind = unit_ops3[o], .count = counts[ci], .in_place = ip };
                unit_run_check(unit_run_new(COLL, alg, P, &k), true, contracts, NALGS);
            }
    }
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
