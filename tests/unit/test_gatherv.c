/*
 * test_gatherv.c - every gatherv algorithm of the registry
 * (braid_registry.h) over the in-process transport (harness: unit_coll.h),
 * every rank under the strict transport; built a second time with
 * -DUNIT_SCATTERV as test_scatterv, for every scatterv algorithm.
 *
 * values, every algorithm, P = 1..64: rank q's block holds 1.5, 1, 0.5 or
 * 0 times n elements in turn (every fourth rank's is empty), n in
 * {0, 1, 3, 1001, 2} of 8 and 32 bytes up to P = 16 ({1, 3, 2} beyond),
 * the root's blocks in reverse rank order with gaps, every root up to
 * P = 9 (0, P/2 and P-1 beyond), in place at the root and not; the
 * root's whole receive buffer (gatherv: every block at its place, the
 * gaps untouched) or every rank's block (scatterv) against the bytes each
 * rank knows were sent. Each rank is given its own count alone; the
 * counts and displacements are the root's (unit_rank_args).
 * shm runs on slots that hold the largest block (gatherv) or the root's
 * table and blocks (scatterv); n = 1001 on a 16 KiB slot with a
 * single-copy reader; n = 3 on a slot half that size without a reader,
 * where the blocks that do not fit go as messages in the same call.
 *
 * contracts, every run: linear sends each non-empty block once (gatherv:
 * each non-root its own; scatterv: the root the others'); shm sends only
 * the blocks neither its cells nor a reader carries - gatherv per block,
 * scatterv all of the root's or none.
 */
#include "unit_coll.h"

#ifdef UNIT_SCATTERV
#define COLL BRAID_COLL_SCATTERV
#define NALGS BRAID_SCATTERV_NALGS
#define ALG_LINEAR BRAID_SCATTERV_LINEAR
#define ALG_SHM BRAID_SCATTERV_SHM
#else
#define COLL BRAID_COLL_GATHERV
#define NALGS BRAID_GATHERV_NALGS
#define ALG_LINEAR BRAID_GATHERV_LINEAR
#define ALG_SHM BRAID_GATHERV_SHM
#endif

#define MAX_P UNIT_MAX_P

static uint64_t block_bytes(const unit_run_t *R, int q) { return (uint64_t)R->vcount[q] * R->args.esize; }

static unit_traffic_t model_linear(const unit_run_t *R, int r)
{
    unit_traffic_t t = { 0, 0 };
    int root = R->k.root;
#ifdef UNIT_SCATTERV
    for (int q = 0; q < R->P && r == root; q++)
        if (q != root && block_bytes(R, q)) {
            t.msgs++;
            t.bytes += block_bytes(R, q);
        }
#else
    if (r != root && block_bytes(R, r)) {
        t.msgs = 1;
        t.bytes = block_bytes(R, r);
    }
#endif
    return t;
}

/* a slot's capacity as the segment stores it: whole 16-byte units */
static size_t slot_capacity(const unit_run_t *R) { return (R->shm_slot + 15) / 16 * 16; }

static unit_traffic_t model_shm(const unit_run_t *R, int r)
{
    unit_traffic_t none = { 0, 0 };
    size_t cap = slot_capacity(R);
#ifdef UNIT_SCATTERV
    /* the root's table and the others' blocks in its slot, or a reader */
    size_t head = (size_t)(R->P + 1) * 8;
    if (cap < head) return model_linear(R, r);
    if (unit_case_bytes(R) <= cap || R->shm_direct) return none;
    return model_linear(R, r);
#else
    /* a block within a slot goes through the cells, above it to a reader */
    if (block_bytes(R, r) <= cap || R->shm_direct) return none;
    return model_linear(R, r);
#endif
}

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[NALGS] = {
    [ALG_LINEAR] = { model_linear, NULL, NULL },
    [ALG_SHM] = { model_shm, NULL, NULL },
};

START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
    if (P > 16 && !unit_in_p_list(P)) return;
    /* 2: the cells (a slot that holds the case); 1: the cells with a
     * reader from byte 0; 1001: single copy above a 16 KiB slot; 3: no
     * reader and a slot of half the case: cells and messages mixed */
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
