/*
 * test_bcast.c - every bcast algorithm of the registry (braid_registry.h)
 * over the in-process transport (harness: unit_coll.h), every rank under
 * the strict transport; every rank's buffer against the root's bytes.
 *
 * values, every algorithm, P = 1..64: sizes {0, 1, 7, 63, 64, 1000, 4099}
 * bytes and roots {0, P-1, P/2} up to P = 9; beyond, sizes {1, 4099} and
 * roots {0, P-1}. Every root: every algorithm at P = 1..9, 37 bytes.
 *
 * contracts, every run: the bytes each rank sends against the algorithm's
 * model (one_to_all: (P-1)S from the root; binomial: S per child;
 * scatter_allgather: the scatter's subtrees plus S minus the successor's
 * block; dbtree: messages and bytes, (sends per chunk) x chunks of each
 * tree, (P-1)S in all, at most S + 1 per non-root and 3S/2 + 1 at the
 * root); one rank sends nothing.
 *
 * chunk sizes, every algorithm with BRAID_OPT_CHUNK / BRAID_OPT_TREE_CHUNK:
 * at P = 1..9, 16, 64 sizes 8n and 8n+1 for n in {0, 1, P-1, P, P+1, 1001,
 * 2^16+3} with the default chunk and 5 bytes, every root for n = 1 and
 * P+1 (roots 0, P/2, P-1 beyond P = 9); at the other P up to 64, sizes
 * {5, 10P+15} with a 3-byte chunk and a root rotating with P.
 */
#include "unit_coll.h"

#define MAX_P UNIT_MAX_P
#define COLL BRAID_COLL_BCAST

/* ---------------- models: bytes each rank sends ---------------- */

/* v: the rank relative to the root */
static int rel(const unit_run_t *R, int r) { return (r - R->args.root + R->P) % R->P; }

static unit_traffic_t model_one_to_all(const unit_run_t *R, int r)
{
    unit_traffic_t t = { UNIT_ANY, rel(R, r) == 0 ? (uint64_t)(R->P - 1) * R->args.count : 0 };
    return t;
}

/* binomial: rank v sends S to each child v + 2^k, 2^k below its lowest set bit */
static unit_traffic_t model_binomial(const unit_run_t *R, int r)
{
    unit_traffic_t t = { UNIT_ANY, 0 };
    int P = R->P, v = rel(R, r), low = 1;
    while (low < P && !(v & low)) low <<= 1;
    for (int m = low >> 1; m > 0; m >>= 1)
        if (v + m < P) t.bytes += R->args.count;
    return t;
}

/* scatter_allgather: the ring moves every block except the rank's
 * successor's own, i.e. S - block(v+1); the scatter forwards children's
 * subtrees. */
static unit_traffic_t model_scatter_allgather(const unit_run_t *R, int r)
{
    unit_traffic_t t = { UNIT_ANY, 0 };
    int P = R->P, v = rel(R, r), low = 1;
    size_t S = R->args.count;
    if (P == 1) return t;
    t.bytes = S - braid_block_count(S, P, (v + 1) % P);
    while (low < P && !(v & low)) low <<= 1;
    for (int m = low >> 1; m > 0; m >>= 1)
        if (v + m < P) {
            int last = v + 2 * m > P ? P : v + 2 * m;
            t.bytes += braid_block_start(S, P, last) - braid_block_start(S, P, v + m);
        }
    return t;
}

/* dbtree: (P-1)S in all; a non-root sends at most S + 1, the root 3S/2 + 1 */
static void bound_dbtree(const unit_run_t *R)
{
    uint64_t S = R->args.count;
    int bad = 0;
    if (R->P < 2) return;
    ck_assert_uint_eq(unit_total_bytes(R), (uint64_t)(R->P - 1) * S);
    for (int rank = 0; rank < R->P; rank++)
        if (rank != R->args.root && R->stats[rank].bytes_sent > S + 1) bad++;
    ck_assert_msg(0 == bad && R->stats[R->args.root].bytes_sent <= S + S / 2 + 1,
                  "%s: a rank sent more than S (root: 3S/2)", R->what);
}

/* by registry id; every algorithm has a row (unit_contract_of) */
static const unit_contract_t contracts[BRAID_BCAST_NALGS] = {
    [BRAID_BCAST_ONE_TO_ALL] = { model_one_to_all, NULL },
    [BRAID_BCAST_BINOMIAL] = { model_binomial, NULL },
    [BRAID_BCAST_SCATTER_ALLGATHER] = { model_scatter_allgather, NULL },
    [BRAID_BCAST_DBTREE] = { unit_model_dbtree, bound_dbtree },
    [BRAID_BCAST_SHM] = { unit_model_silent, NULL, NULL },
};

static void check_case(int alg, int P, const unit_case_t *k)
{
    unit_run_check(unit_run_new(COLL, alg, P, k), true, contracts, BRAID_BCAST_NALGS);
}

static void check_bcast(int alg, int P, size_t bytes, int root)
{
    unit_case_t k = { .count = bytes, .root = root };
    check_case(alg, P, &k);
}

/* ---------------- values ---------------- */

static const size_t bcast_sizes[] = { 0, 1, 7, 63, 64, 1000, 4099 };

/* Every size and three roots up to P = 9; beyond, the sizes that exercise
 * uneven blocks and two roots (keeps the suite fast on two cores). */
START_TEST(values)
{
    int alg = unit_loop_alg(COLL, _i, unit_np(MAX_P)), P = 1 + unit_loop_index(_i, unit_np(MAX_P));
    size_t nsizes = sizeof bcast_sizes / sizeof *bcast_sizes;
    for (size_t k = 0; k < nsizes; k++) {
        if (P > 9 && k != 1 && k != nsizes - 1) continue;
        int roots[3] = { 0, P - 1, P / 2 };
        for (int j = 0; j < (P > 9 ? 2 : 3); j++) check_bcast(alg, P, bcast_sizes[k], roots[j]);
    }
}
END_TEST

/* every root at small P */
START_TEST(every_root)
{
    int alg = unit_nth_alg(COLL, _i);
    for (int P = 1; P <= 9; P++)
        for (int root = 0; root < P; root++) check_bcast(alg, P, 37, root);
}
END_TEST

/* ---------------- chunk sizes ---------------- */

START_TEST(chunk_sizes)
{
    for (int alg = 1; alg < braid_alg_count(COLL); alg++)
        if (unit_alg_selected(COLL, alg) && unit_alg_has(COLL, alg, BRAID_OPT_CHUNK | BRAID_OPT_TREE_CHUNK))
            unit_rooted_matrix(COLL, alg, unit_p_list[_i], check_case);
}
END_TEST

/* P = 1..64 not in unit_p_list: sizes {5, 10P+15}, a 3-byte chunk */
START_TEST(chunk_sweep)
{
    int P = _i;
    if (unit_in_p_list(P)) return;     /* covered by chunk_sizes */
    size_t counts[2] = { 1, 2 * (size_t)P + 3 };
    for (int alg = 1; alg < braid_alg_count(COLL); alg++) {
        if (!unit_alg_selected(COLL, alg) || !unit_alg_has(COLL, alg, BRAID_OPT_CHUNK | BRAID_OPT_TREE_CHUNK))
            continue;
        for (int c = 0; c < 2; c++) {
            int v = (P + c) & 3;
            unit_case_t k = { .count = counts[c] * 5, .root = v & 1 ? 0 : P - 1 - P / 3 };
            k.params.chunk_bytes = 3;
            check_case(alg, P, &k);
        }
    }
}
END_TEST

int main(void)
{
    unit_alg_filter(COLL);
    Suite *s = suite_create("bcast");
    TCase *tv = unit_tcase(s, "values", 120);
    tcase_add_loop_test(tv, values, 0, unit_loop_end(COLL, unit_np(MAX_P)));
    tcase_add_loop_test(tv, every_root, 0, unit_loop_end(COLL, 1));
    TCase *tc = unit_tcase(s, "chunks", 120);
    tcase_add_loop_test(tc, chunk_sizes, 0, UNIT_NP_LIST);
    tcase_add_loop_test(tc, chunk_sweep, 1, unit_np(MAX_P) + 1);
    return unit_run_suite(s);
}
