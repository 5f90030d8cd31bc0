/*
 * test_allgatherv.c - every allgatherv algorithm of the registry
 * (braid_registry.h) over the in-process transport (harness: unit_coll.h),
 * every rank under the strict transport.
 *
 * values, every algorithm, P = 1..64: blocks of random sizes 0..max
 * (max 1, 3, 40 and 1000 elements, one of three empty), equal blocks of
 * 0 and 2 elements, 8 and 32 bytes per element, in place and not; the
 * blocks sit in rbuf in reverse rank order with gaps (unit_run_new), and
 * every rank's whole receive buffer is checked: each block at its place,
 * the gaps untouched.
 *
 * contracts, every run: ring sends, in step k, block r-k to r+1 unless it
 * is empty; bruck sends, in step k, its first min(2^k, P - 2^k) blocks
 * (r, r+1, ...) to r - 2^k in one message unless they are all empty; shm
 * sends nothing.
 */
#include "unit_coll.h"

#define MAX_P UNIT_MAX_P
#define COLL BRAID_COLL_ALLGATHERV

static unit_traffic_t model_ring(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    for (int k = 0; k < R->P - 1; k++) {
        size_t n = R->vcount[(r - k + R->P) % R->P] * R->args.esize;
        t.msgs += 0 != n;
        t.bytes += n;
    }
    return t;
}

static unit_traffic_t model_bruck(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    for (int have = 1; have < R->P; have *= 2) {
        int n = have < R->P - have ? have : R->P - have;
        size_t bytes = 0;
        for (int i = 0; i < n; i++) bytes += R->vcount[(r + i) % R->P] * R->args.esize;
        t.msgs += 0 != bytes;
        t.bytes += bytes;
    }
    return t;
}

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[BRAID_ALLGATHERV_NALGS] = {
    [BRAID_ALLGATHERV_RING] = { model_ring, NULL, NULL },
    [BRAID_ALLGATHERV_BRUCK] = { model_bruck, NULL, NULL },
    [BRAID_ALLGATHERV_SHM] = { unit_model_silent, NULL, NULL },
};

START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
    if (P > 16 && !unit_in_p_list(P)) return;
    size_t maxes[] = { 1, 3, 40, 1000 }, counts[UNIT_MAX_P];
    unsigned seed = (unsigned)P * 7919u + (unsigned)alg;
    for (int mi = 0; mi < 6; mi++) {
        if (P > 16 && 3 == mi) continue;
        for (int ip = 0; ip < 2; ip++) {
            unit_case_t k = { .esize = (mi + ip) % 2 ? 32 : 8, .in_place = ip };
            if (mi < 4) {
                for (int q = 0; q < P; q++) {
                    seed = seed * 1103515245u + 12345u;
                    counts[q] = 0 == (seed >> 16) % 3 ? 0 : (seed >> 8) % (maxes[mi] + 1);
                }
                k.rcounts = counts;
            } else {
                k.count = 4 == mi ? 0 : 2;
            }
            unit_run_check(unit_run_new(COLL, alg, P, &k), true, contracts, BRAID_ALLGATHERV_NALGS);
        }
    }
}
END_TEST

int main(void)
{
    unit_alg_filter(COLL);
    Suite *s = suite_create("allgatherv");
    tcase_add_loop_test(unit_tcase(s, "allgatherv", 300), values, 0, unit_loop_end(COLL, unit_np(MAX_P)));
    return unit_run_suite(s);
}
