/*
 * test_alltoall.c - every alltoall algorithm of the registry
 * (braid_registry.h) over the in-process transport (harness: unit_coll.h),
 * every rank under the strict transport.
 *
 * values, every algorithm, P = 1..64: blocks of {0, 1, 2, 3, 5, 1001} elements
 * of 8 and 32 bytes up to P = 16 ({1, 2, 3} beyond), in place and not; every
 * rank's whole receive buffer against the block each rank sent it (shm:
 * through one cell, blocks spanning several, and single copy).
 *
 * contracts, every run: messages and bytes of each rank against the
 * algorithm's model (pairwise: one message to each other rank; bruck: one
 * message per step k, the blocks whose index has bit k set); pairwise and
 * shm in place use one block of scratch per rank.
 */
#include "unit_coll.h"

#define MAX_P UNIT_MAX_P
#define COLL BRAID_COLL_ALLTOALL

static uint64_t block_bytes(const unit_run_t *R) { return (uint64_t)R->args.count * R->args.esize; }

static unit_traffic_t model_pairwise(const unit_run_t *R, int r)
{
    (void)r;
    unit_traffic_t t = { block_bytes(R) ? (uint64_t)(R->P - 1) : 0,
                         (uint64_t)(R->P - 1) * block_bytes(R) };
    return t;
}

static unit_traffic_t model_bruck(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    (void)r;
    if (0 == block_bytes(R)) return t;
    for (int bit = 1; bit < R->P; bit <<= 1) {
        uint64_t n = 0;
        for (int i = 0; i < R->P; i++) n += 0 != (i & bit);
        t.msgs++;
        t.bytes += n * block_bytes(R);
    }
    return t;
}

static size_t one_block(const unit_run_t *R, int r)
{
    (void)r;
    return block_bytes(R);
}

/* in place: one block of scratch, whether the blocks go by messages or by
 * single copy (the cells hold their own copy and take none) */
static void swap_scratch(const unit_run_t *R) { unit_check_swap_scratch(R, one_block); }

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[BRAID_ALLTOALL_NALGS] = {
    [BRAID_ALLTOALL_PAIRWISE] = { model_pairwise, swap_scratch },
    [BRAID_ALLTOALL_BRUCK] = { model_bruck, NULL },
    [BRAID_ALLTOALL_SHM] = { unit_model_silent, swap_scratch, NULL },
};

START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
    /* shm (unit_run_exec sets the segment by count): 2, one cell (a slot
     * that holds the case); 3, a slot of half the case, the blocks span
     * two cells; 1, single copy at any size (threshold 0); 1001, above the
     * 16 KiB slots: the blocks span the 3 cells at small P, single copy
     * beyond; 5, single copy of buffers the reader refuses (published as
     * copies) */
    size_t counts[] = { 0, 1, 3, 1001, 2, 5 };
    for (int ci = 0; ci < 6; ci++) {
        if (P > 16 && (ci == 0 || ci == 3 || ci == 5)) continue;
        for (int ip = 0; ip < 2; ip++) {
            unit_case_t k = { .count = counts[ci], .esize = (ci + ip) % 2 ? 32 : 8, .in_place = ip };
            unit_run_check(unit_run_new(COLL, alg, P, &k), true, contracts, BRAID_ALLTOALL_NALGS);
        }
    }
}
END_TEST

int main(void)
{
    unit_alg_filter(COLL);
    Suite *s = suite_create("alltoall");
    tcase_add_loop_test(unit_tcase(s, "alltoall", 300), values, 0, unit_loop_end(COLL, unit_np(MAX_P)));
    return unit_run_suite(s);
}
