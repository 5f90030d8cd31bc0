/*
 * test_allgather.c - every allgather algorithm of the registry
 * (braid_registry.h) over the in-process transport (harness: unit_coll.h),
 * every rank under the strict transport.
 *
 * values, every algorithm, P = 1..64: counts {0, 1, 3, 1001, 8000}
 * elements of 8 and 32 bytes up to P = 9 ({1, 3, 101} beyond), in place
 * and not, the default chunk and (up to P = 9) a tiny one; every rank's
 * whole buffer against every rank's known block.
 *
 * contracts, every run: messages and bytes of each rank against the
 * algorithm's model (ring: the P-1 other blocks, one message per chunk;
 * recursive_doubling: one message per step, two where the range wraps when
 * P is not a power of two); one rank sends nothing.
 */
#include "unit_coll.h"

#define MAX_P UNIT_MAX_P
#define COLL BRAID_COLL_ALLGATHER

static uint64_t block_bytes(const unit_run_t *R) { return (uint64_t)R->args.count * R->args.esize; }

/* ring: the P-1 other blocks, one message per chunk */
static unit_traffic_t model_ring(const unit_run_t *R, int r)
{
    (void)r;
    size_t chunks = unit_nchunks(R->args.count, unit_chunk_elems(R->args.params.chunk_bytes, R->args.esize));
    unit_traffic_t t = { (uint64_t)(R->P - 1) * chunks, (uint64_t)(R->P - 1) * block_bytes(R) };
    return t;
}

/* power of two: one message per step; otherwise the range [r, r+n_k) mod P
 * of step k is one message, or two when it wraps */
static unit_traffic_t model_rd(const unit_run_t *R, int r)
{
    int P = R->P;
    unit_traffic_t t = { 0, (uint64_t)(P - 1) * block_bytes(R) };
    if (block_bytes(R) == 0) return t;
    for (int d = 1; d < P; d <<= 1) {
        int n = d < P - d ? d : P - d;
        t.msgs += ((P & (P - 1)) == 0 || r + n <= P) ? 1 : 2;
    }
    return t;
}

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[BRAID_ALLGATHER_NALGS] = {
    [BRAID_ALLGATHER_RING] = { model_ring, NULL },
    [BRAID_ALLGATHER_RECURSIVE_DOUBLING] = { model_rd, NULL },
    [BRAID_ALLGATHER_SHM] = { unit_model_silent, NULL, NULL },
};

static void check_ag(int alg, int P, size_t count, size_t esize, bool in_place, size_t chunk_bytes)
{
    unit_case_t k = { .count = count, .esize = esize, .in_place = in_place };
    k.params.chunk_bytes = chunk_bytes;
    unit_run_check(unit_run_new(COLL, alg, P, &k), true, contracts, BRAID_ALLGATHER_NALGS);
}

START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
    /* beyond P = 9 the buffers are P*P blocks in all: smaller counts */
    size_t counts[] = { 0, 1, 3, P > 9 ? 101 : 1001, 8000 };
    for (int ci = 0; ci < 5; ci++) {
        if (P > 9 && (ci == 0 || ci == 4)) continue;
        for (int ip = 0; ip < 2; ip++) {
            size_t esize = (ci + ip) % 2 ? 32 : 8;   /* elements wider than 8 bytes too */
            check_ag(alg, P, counts[ci], esize, ip, 0);
            if (P <= 9) check_ag(alg, P, counts[ci], esize, ip, ci == 4 ? 8200 : 200);
        }
    }
}
END_TEST

int main(void)
{
    unit_alg_filter(COLL);
    Suite *s = suite_create("allgather");
    tcase_add_loop_test(unit_tcase(s, "allgather", 300), values, 0, unit_loop_end(COLL, unit_np(MAX_P)));
    return unit_run_suite(s);
}
