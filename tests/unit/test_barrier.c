/*
 * test_barrier.c - every barrier algorithm of the registry
 * (braid_registry.h) over the in-process transport (harness: unit_coll.h),
 * P = 1..64, every rank under the strict transport.
 *
 * Synchronisation: three rounds of two barriers; no rank leaves the first
 * barrier of a round before every rank has arrived at it. Contract: no
 * bytes, and the messages of each rank against the algorithm's model
 * (all_to_all: P-1; all_to_one: P-1 at rank 0, 1 elsewhere;
 * dissemination: ceil(lg P); shm: none) per barrier; one rank sends nothing.
 */
#include "unit_coll.h"

#include <stdatomic.h>

#define MAX_P UNIT_MAX_P
#define COLL BRAID_COLL_BARRIER

typedef struct barrier_ctx {
    atomic_int arrived;
    atomic_int early;     /* ranks that left before everyone arrived */
} barrier_ctx_t;

enum { ROUNDS = 3, CALLS = 2 * ROUNDS };

/* one rank: ROUNDS x (count the arrival, barrier, check, barrier) */
static int barrier_rank(unit_run_t *R, braid_comm_t *c, braid_coll_args_t *a)
{
    barrier_ctx_t *b = R->ctx;
    (void)a;
    strict_state_t strict;
    strict_wrap(c, &strict);
    int rc = BRAID_OK;
    for (int round = 0; round < ROUNDS && BRAID_OK == rc; round++) {
        atomic_fetch_add(&b->arrived, 1);
        rc = R->fn(c, NULL);   /* barrier: a is unused and may be NULL */
        if (BRAID_OK != rc) break;
        if (atomic_load(&b->arrived) < (round + 1) * c->size) atomic_fetch_add(&b->early, 1);
        /* a second barrier separates the rounds' arrival counts */
        rc = R->fn(c, NULL);
    }
    R->violations[c->rank] = strict_unwrap(c, &strict);
    return rc;
}

/* messages of one barrier, by registry id */
static uint64_t msgs_all_to_all(int P, int r) { (void)r; return (uint64_t)(P - 1); }
static uint64_t msgs_all_to_one(int P, int r) { return P == 1 ? 0 : (r == 0 ? (uint64_t)(P - 1) : 1); }
static uint64_t msgs_dissemination(int P, int r) { (void)r; return (uint64_t)braid_ceil_log2(P); }

static uint64_t (*const msgs_of[BRAID_BARRIER_NALGS])(int P, int r) = {
    [BRAID_BARRIER_ALL_TO_ALL] = msgs_all_to_all,
    [BRAID_BARRIER_ALL_TO_ONE] = msgs_all_to_one,
    [BRAID_BARRIER_DISSEMINATION] = msgs_dissemination,
};

/* no bytes, and the messages of msgs_of */
static unit_traffic_t model(const unit_run_t *R, int r)
{
    unit_traffic_t t = { CALLS * msgs_of[R->alg](R->P, r), 0 };
    return t;
}

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[BRAID_BARRIER_NALGS] = {
    [BRAID_BARRIER_ALL_TO_ALL] = { model, NULL, NULL },
    [BRAID_BARRIER_ALL_TO_ONE] = { model, NULL, NULL },
    [BRAID_BARRIER_DISSEMINATION] = { model, NULL, NULL },
    [BRAID_BARRIER_SHM] = { unit_model_silent, NULL, NULL },
};

START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
    unit_case_t k = { .count = 0 };
    barrier_ctx_t b = { 0, 0 };
    unit_run_t *R = unit_run_new(COLL, alg, P, &k);
    R->rank_fn = barrier_rank;
    R->ctx = &b;
    unit_check_rc(R, unit_run_exec(R), true);
    ck_assert_msg(atomic_load(&b.early) == 0, "%s: %d ranks left a barrier early", R->what,
                  atomic_load(&b.early));
    unit_check_contract(R, contracts, BRAID_BARRIER_NALGS);
    unit_run_free(R);
}
END_TEST

int main(void)
{
    unit_alg_filter(COLL);
    Suite *s = suite_create("barrier");
    tcase_add_loop_test(unit_tcase(s, "barrier", 120), values, 0, unit_loop_end(COLL, unit_np(MAX_P)));
    return unit_run_suite(s);
}
