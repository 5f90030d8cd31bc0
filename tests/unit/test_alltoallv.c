/*
 * test_alltoallv.c - every alltoallv algorithm of the registry
 * (braid_registry.h) over the in-process transport (harness: unit_coll.h),
 * every rank under the strict transport.
 *
 * values, every algorithm, P = 1..64: rank s sends rank d 0 to 1.5 n
 * elements (one pair in four empty; symmetric in place, as MPI requires),
 * n in {0, 1, 2, 3, 40, 1000, 1005} (P > 16: {1, 2, 3}), 8 and 32 bytes per
 * element, in place and not; blocks sent in reverse order with gaps and
 * received in order with other gaps (unit_run_new); every rank's whole
 * receive buffer checked: each block at its place, the gaps untouched.
 * shm runs on slots that hold every rank's blocks, on slots too small
 * for some with a single-copy reader (n = 40, 1000: a rank's blocks span
 * up to the 3 cells, beyond them a reader takes them above 8 KiB; ranks of
 * both ways in one call; 1005: buffers the reader refuses, published as
 * copies), and (n % 4 == 3) on slots of a quarter of the
 * largest rank's blocks without one, where every rank must agree to run
 * pairwise.
 *
 * contracts, every run: pairwise sends each non-empty block once; shm
 * sends nothing when every rank's blocks fit its slots of the cells or a
 * reader takes them, else pairwise's; in place both use at most a rank's
 * largest block of scratch (a pair's swap).
 */
#include "unit_coll.h"

#define MAX_P UNIT_MAX_P
#define COLL BRAID_COLL_ALLTOALLV

static unit_traffic_t model_pairwise(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    for (int d = 0; d < R->P; d++) {
        size_t n = R->av[0][r * R->P + d] * R->args.esize;
        if (d == r || 0 == n) continue;
        t.msgs++;
        t.bytes += n;
    }
    return t;
}

/* every rank has a way: its blocks for the others fit its slots of the
 * cells (spanning them), or a reader takes them (above 8 KiB). Its stream
 * is the way word, a table of P - 1 4-byte offsets, one place per other
 * rank (each an equal share of the rest of the first slot) up to the last
 * place a block took, and the blocks larger than their place after it. */
static bool every_rank_has_a_way(const unit_run_t *R)
{
    /* the word and a table of P - 1 addresses must fit the first slot (the
     * slot as attached: the segment rounds it up) */
    if ((size_t)R->P * 8 > R->shm[0].slot_bytes) return false;
    for (int s = 0; s < R->P; s++) {
        size_t others = 0, over = 0, slot = R->shm[0].slot_bytes, head = 8 + (size_t)(R->P - 1) * 4;
        size_t place = R->P > 2 ? (slot - head) / (size_t)(R->P - 1) : slot - head, end = head;
        for (int d = 0; d < R->P; d++) {
            size_t n = R->av[0][s * R->P + d] * R->args.esize;
            if (d == s || 0 == n) continue;
            others += n;
            if (n > place) over += n;
            else end = head + (size_t)(d - (d > s) + 1) * place;
        }
        bool cells = 0 == over || end + over <= UNIT_SHM_CELLS * slot;
        if (!cells && !(R->shm_direct && others > ((size_t)8 << 10))) return false;
    }
    return true;
}

static unit_traffic_t model_shm(const unit_run_t *R, int r)
{
    unit_traffic_t none = { 0, 0 };
    return every_rank_has_a_way(R) ? none : model_pairwise(R, r);
}

/* rank r's largest block for another rank */
static size_t largest_block(const unit_run_t *R, int r)
{
    size_t most = 0;
    for (int d = 0; d < R->P; d++)
        if (d != r && R->av[0][r * R->P + d] * R->args.esize > most) most = R->av[0][r * R->P + d] * R->args.esize;
    return most;
}

static void swap_scratch(const unit_run_t *R) { unit_check_swap_scratch(R, largest_block); }

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[BRAID_ALLTOALLV_NALGS] = {
    [BRAID_ALLTOALLV_PAIRWISE] = { model_pairwise, swap_scratch, NULL },
    [BRAID_ALLTOALLV_SHM] = { model_shm, swap_scratch, NULL },
};

START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
    if (P > 16 && !unit_in_p_list(P)) return;
    size_t counts[] = { 0, 1, 2, 3, 40, 1000, 1005 };
    for (int ci = 0; ci < 7; ci++) {
        if (P > 16 && (0 == ci || ci > 3)) continue;
        for (int ip = 0; ip < 2; ip++) {
            unit_case_t k = { .count = counts[ci], .esize = (ci + ip) % 2 ? 32 : 8, .in_place = ip };
            unit_run_check(unit_run_new(COLL, alg, P, &k), true, contracts, BRAID_ALLTOALLV_NALGS);
        }
    }
}
END_TEST

int main(void)
{
    unit_alg_filter(COLL);
    Suite *s = suite_create("alltoallv");
    tcase_add_loop_test(unit_tcase(s, "alltoallv", 300), values, 0, unit_loop_end(COLL, unit_np(MAX_P)));
    return unit_run_suite(s);
}
