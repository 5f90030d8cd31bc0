/*
 * test_barrier_bcast.c - barrier and bcast algorithms over the in-process
 * transport for P = 1..64: values, synchronisation, and the messages and
 * bytes each rank sends against the contracts in DESIGN.md.
 */
#include "unit_common.h"

#include <stdatomic.h>
#include <string.h>

#define MAX_P 64

/* ---------------- barrier ---------------- */

typedef struct barrier_arg {
    braid_algo_fn_t fn;
    atomic_int arrived;
    atomic_int early;     /* ranks that left before everyone arrived */
} barrier_arg_t;

static int barrier_body(braid_comm_t *c, void *p)
{
    barrier_arg_t *b = p;
    for (int round = 0; round < 3; round++) {
        atomic_fetch_add(&b->arrived, 1);
        int rc = b->fn(c, NULL);
        if (BRAID_OK != rc) return rc;
        if (atomic_load(&b->arrived) < (round + 1) * c->size) atomic_fetch_add(&b->early, 1);
        /* a second barrier separates the rounds' arrival counts */
        rc = b->fn(c, NULL);
        if (BRAID_OK != rc) return rc;
    }
    return BRAID_OK;
}

static void check_barrier(braid_algo_fn_t fn, int P, int (*expected_msgs)(int P, int r))
{
    barrier_arg_t b = { fn, 0, 0 };
    inproc_result_t res = inproc_run(P, barrier_body, NULL, &b);
    ck_assert_int_eq(res.rc, BRAID_OK);
    ck_assert_int_eq(atomic_load(&b.early), 0);
    ck_assert_int_eq(res.leftover_msgs, 0);
    for (int r = 0; r < P; r++) {
        ck_assert_uint_eq(res.stats[r].msgs_sent, 6u * (unsigned)expected_msgs(P, r));
        ck_assert_uint_eq(res.stats[r].bytes_sent, 0);
    }
    free(res.stats);
}

static int msgs_all_to_all(int P, int r) { (void)r; return P - 1; }
static int msgs_all_to_one(int P, int r) { return P == 1 ? 0 : (r == 0 ? P - 1 : 1); }
static int msgs_dissemination(int P, int r) { (void)r; return braid_ceil_log2(P); }

START_TEST(test_barrier_all_to_all)
{
    check_barrier(braid_barrier_all_to_all, _i, msgs_all_to_all);
}
END_TEST

START_TEST(test_barrier_all_to_one)
{
    check_barrier(braid_barrier_all_to_one, _i, msgs_all_to_one);
}
END_TEST

START_TEST(test_barrier_dissemination)
{
    check_barrier(braid_barrier_dissemination, _i, msgs_dissemination);
}
END_TEST

/* ---------------- bcast ---------------- */

typedef struct bcast_arg {
    braid_algo_fn_t fn;
    size_t bytes;
    int root;
    unsigned char *bufs[MAX_P];
} bcast_arg_t;

static int bcast_body(braid_comm_t *c, void *p)
{
    bcast_arg_t *b = p;
    braid_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.rbuf = b->bufs[c->rank];
    a.count = b->bytes;
    a.esize = 1;
    a.root = b->root;
    return b->fn(c, &a);
}

typedef uint64_t (*bcast_bytes_fn)(int P, int v, size_t S);

static void check_bcast(braid_algo_fn_t fn, int P, size_t S, int root, bcast_bytes_fn expect)
{
    bcast_arg_t b;
    b.fn = fn;
    b.bytes = S;
    b.root = root;
    for (int r = 0; r < P; r++) {
        b.bufs[r] = malloc(S ? S : 1);
        for (size_t i = 0; i < S; i++) b.bufs[r][i] = unit_byte(r == root ? 1000 : r, i);
    }
    inproc_result_t res = inproc_run(P, bcast_body, NULL, &b);
    ck_assert_int_eq(res.rc, BRAID_OK);
    ck_assert_int_eq(res.leftover_msgs, 0);
    for (int r = 0; r < P; r++) {
        /* count first, assert once: every passing ck_assert costs a pipe
         * write in Check's fork mode */
        size_t bad = 0, first_bad = 0;
        for (size_t i = 0; i < S; i++)
            if (b.bufs[r][i] != unit_byte(1000, i) && 0 == bad++) first_bad = i;
        ck_assert_msg(0 == bad, "P=%d S=%zu root=%d: rank %d has %zu wrong bytes, first at %zu",
                      P, S, root, r, bad, first_bad);
        if (expect) {
            int v = (r - root + P) % P;
            ck_assert_msg(res.stats[r].bytes_sent == expect(P, v, S),
                          "P=%d S=%zu root=%d rank %d sent %llu bytes, expected %llu", P, S, root,
                          r, (unsigned long long)res.stats[r].bytes_sent,
                          (unsigned long long)expect(P, v, S));
        }
        free(b.bufs[r]);
    }
    free(res.stats);
}

static uint64_t bytes_one_to_all(int P, int v, size_t S) { return v == 0 ? (uint64_t)(P - 1) * S : 0; }

/* binomial: rank v sends S to each child v + 2^k, 2^k below its lowest set bit */
static uint64_t bytes_binomial(int P, int v, size_t S)
{
    uint64_t n = 0;
    int low = 1;
    while (low < P && !(v & low)) low <<= 1;
    for (int m = low >> 1; m > 0; m >>= 1)
        if (v + m < P) n += S;
    return n;
}

/* scatter_allgather: the ring moves every block except the rank's
 * successor's own, i.e. S - block(v+1); the scatter forwards children's
 * subtrees. */
static uint64_t bytes_scatter_allgather(int P, int v, size_t S)
{
    if (P == 1) return 0;
    uint64_t n = S - braid_block_count(S, P, (v + 1) % P);
    int low = 1;
    while (low < P && !(v & low)) low <<= 1;
    for (int m = low >> 1; m > 0; m >>= 1)
        if (v + m < P) {
            int last = v + 2 * m > P ? P : v + 2 * m;
            n += braid_block_start(S, P, last) - braid_block_start(S, P, v + m);
        }
    return n;
}

static const size_t bcast_sizes[] = { 0, 1, 7, 63, 64, 1000, 4099 };

/* Every size and three roots up to P = 9; beyond, the sizes that exercise
 * uneven blocks and two roots (keeps the suite fast on two cores). */
static void bcast_sweep(braid_algo_fn_t fn, int P, bcast_bytes_fn expect)
{
    size_t nsizes = sizeof bcast_sizes / sizeof *bcast_sizes;
    for (size_t k = 0; k < nsizes; k++) {
        if (P > 9 && k != 1 && k != nsizes - 1) continue;
        int roots[3] = { 0, P - 1, P / 2 };
        for (int j = 0; j < (P > 9 ? 2 : 3); j++) check_bcast(fn, P, bcast_sizes[k], roots[j], expect);
    }
}

START_TEST(test_bcast_one_to_all) { bcast_sweep(braid_bcast_one_to_all, _i, bytes_one_to_all); }
END_TEST
START_TEST(test_bcast_binomial) { bcast_sweep(braid_bcast_binomial, _i, bytes_binomial); }
END_TEST
START_TEST(test_bcast_scatter_allgather)
{
    bcast_sweep(braid_bcast_scatter_allgather, _i, bytes_scatter_allgather);
}
END_TEST

/* every root at small P */
START_TEST(test_bcast_every_root)
{
    braid_algo_fn_t fns[] = { braid_bcast_one_to_all, braid_bcast_binomial,
                              braid_bcast_scatter_allgather };
    for (int P = 1; P <= 9; P++)
        for (int root = 0; root < P; root++)
            for (int f = 0; f < 3; f++) check_bcast(fns[f], P, 37, root, NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("barrier_bcast");
    TCase *tb = tcase_create("barrier");
    tcase_set_timeout(tb, 120);
    tcase_add_loop_test(tb, test_barrier_all_to_all, 1, MAX_P + 1);
    tcase_add_loop_test(tb, test_barrier_all_to_one, 1, MAX_P + 1);
    tcase_add_loop_test(tb, test_barrier_dissemination, 1, MAX_P + 1);
    suite_add_tcase(s, tb);
    TCase *tc = tcase_create("bcast");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_bcast_one_to_all, 1, MAX_P + 1);
    tcase_add_loop_test(tc, test_bcast_binomial, 1, MAX_P + 1);
    tcase_add_loop_test(tc, test_bcast_scatter_allgather, 1, MAX_P + 1);
    tcase_add_test(tc, test_bcast_every_root);
    suite_add_tcase(s, tc);
    return unit_run_suite(s);
}
