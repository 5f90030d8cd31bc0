/*
 * test_topo.c - node grouping and communicator views (libbraid/patterns/
 * braid_topo.c) over the in-process transport.
 *
 *  - grouping: for P = 1..64 and cyclic (--map-by node), block, reversed
 *    and random node maps, `order` is a permutation, each node's ranks are
 *    adjacent and ascending, nodes come in order of their lowest rank,
 *    leaders are those lowest ranks, a ring over `order` crosses nodes
 *    exactly nnodes times; P = 4096 cyclic too.
 *  - views: invalid member lists are refused, membership and rank
 *    translation; on the node-ordered view of cyclic maps over 2 and 3
 *    nodes (P = 1..9, 12, 16) every allreduce algorithm of the registry
 *    that needs no node views, and every bcast and reduce algorithm at
 *    every root, give the reference values (harness: unit_coll.h, strict
 *    transport); a ring on it sends exactly total x N / P of its messages
 *    to other nodes (counted by a wrapper that knows every rank's node).
 *  - braid_view_allgather and braid_view_reduce_scatter: every allgather
 *    and reduce_scatter algorithm of the registry on the node-ordered view
 *    of cyclic and random maps over 2 and 3 nodes (P = 1..9, 12, 16), in
 *    place and not, block and uneven counts (zeros included), int64 and
 *    double sums: every rank gets its own block (parent-rank order), and
 *    the rings send total x N / P of their messages to other nodes.
 *
 * The hierarchical allreduce, which runs on the node and leader views, is
 * tested in test_allreduce.c.
 */
#include "unit_coll.h"
#include "unit_topo.h"

#define MAX_P UNIT_MAX_P

/* ------------------------------------------------------------------ */
/* node grouping                                                       */
/* ------------------------------------------------------------------ */

static void check_grouping(int P, const uint64_t *key)
{
    braid_topo_t t;
    ck_assert_int_eq(braid_topo_init(&t, P, key), BRAID_OK);
    int *seen = calloc((size_t)P, sizeof(int));
    for (int i = 0; i < P; i++) {
        ck_assert(t.order[i] >= 0 && t.order[i] < P);
        seen[t.order[i]]++;
    }
    for (int r = 0; r < P; r++) ck_assert_int_eq(seen[r], 1);
    free(seen);
    int crossings = 0, leaders[MAX_P * 64];
    braid_topo_leaders(&t, leaders);
    for (int k = 0; k < t.nnodes; k++) {
        const int *ranks = braid_topo_node_ranks(&t, k);
        int n = braid_topo_node_size(&t, k);
        ck_assert_int_gt(n, 0);
        ck_assert_int_eq(leaders[k], ranks[0]);
        if (k > 0) ck_assert_int_gt(ranks[0], leaders[k - 1]);
        for (int j = 0; j < n; j++) {
            ck_assert_int_eq(t.node_of[ranks[j]], k);
            ck_assert(key[ranks[j]] == key[ranks[0]]);
            if (j > 0) ck_assert_int_gt(ranks[j], ranks[j - 1]);
        }
        /* no other node has the same key */
        if (k > 0) ck_assert(key[leaders[k]] != key[leaders[k - 1]]);
    }
    for (int i = 0; i < P; i++)
        crossings += t.node_of[t.order[i]] != t.node_of[t.order[(i + 1) % P]];
    ck_assert_int_eq(crossings, t.nnodes > 1 ? t.nnodes : 0);
    braid_topo_fini(&t);
}

START_TEST(grouping)
{
    uint64_t key[MAX_P];
    for (int P = 1; P <= MAX_P; P++)
        for (int nodes = 1; nodes <= 5 && nodes <= P; nodes++)
            for (int kind = UNIT_MAP_CYCLIC; kind <= UNIT_MAP_RANDOM; kind++) {
                unit_make_map((unit_map_t)kind, P, nodes, (unsigned)(P * 31 + nodes), key);
                check_grouping(P, key);
            }
    /* a block map is already grouped; a cyclic one over 2+ nodes is not */
    braid_topo_t t;
    unit_make_map(UNIT_MAP_BLOCK, 8, 2, 0, key);
    ck_assert_int_eq(braid_topo_init(&t, 8, key), BRAID_OK);
    ck_assert(braid_topo_is_grouped(&t));
    braid_topo_fini(&t);
    unit_make_map(UNIT_MAP_CYCLIC, 8, 2, 0, key);
    ck_assert_int_eq(braid_topo_init(&t, 8, key), BRAID_OK);
    ck_assert(!braid_topo_is_grouped(&t));
    ck_assert_int_eq(t.nnodes, 2);
    ck_assert_int_eq(t.order[1], 2);
    ck_assert_int_eq(t.order[4], 1);
    braid_topo_fini(&t);
    ck_assert_int_eq(braid_topo_init(&t, 0, key), BRAID_ERR_ARG);
}
END_TEST

START_TEST(grouping_large)
{
    enum { BIG = 4096 };
    uint64_t *key = malloc(BIG * sizeof(uint64_t));
    unit_make_map(UNIT_MAP_CYCLIC, BIG, 64, 0, key);
    braid_topo_t t;
    ck_assert_int_eq(braid_topo_init(&t, BIG, key), BRAID_OK);
    ck_assert_int_eq(t.nnodes, 64);
    for (int k = 0; k < 64; k++) ck_assert_int_eq(braid_topo_node_size(&t, k), BIG / 64);
    ck_assert_int_eq(t.order[BIG / 64], 1);   /* node 1 starts with rank 1 */
    braid_topo_fini(&t);
    free(key);
}
END_TEST

START_TEST(subcomm_members)
{
    braid_comm_t parent;
    memset(&parent, 0, sizeof(parent));
    parent.rank = 2;
    parent.size = 4;
    braid_subcomm_t s;
    int dup[] = { 0, 1, 1 }, out_of_range[] = { 0, 4 }, ok[] = { 3, 1 }, all[] = { 3, 2, 1, 0 };
    ck_assert_int_eq(braid_subcomm_init(&s, &parent, 3, dup), BRAID_ERR_ARG);
    ck_assert_int_eq(braid_subcomm_init(&s, &parent, 2, out_of_range), BRAID_ERR_ARG);
    ck_assert_int_eq(braid_subcomm_init(&s, &parent, 0, ok), BRAID_ERR_ARG);
    ck_assert_int_eq(braid_subcomm_init(&s, &parent, 2, ok), BRAID_OK);
    ck_assert(!braid_subcomm_is_member(&s));
    ck_assert_int_eq(braid_subcomm_rank_of(&s, 1), 1);
    ck_assert_int_eq(braid_subcomm_rank_of(&s, 2), -1);
    ck_assert_int_eq(braid_subcomm_rank_of(&s, 9), -1);
    braid_subcomm_fini(&s);
    ck_assert_int_eq(braid_subcomm_init(&s, &parent, 4, all), BRAID_OK);
    ck_assert_int_eq(s.comm.rank, 1);
    ck_assert_int_eq(s.comm.size, 4);
    braid_subcomm_fini(&s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* algorithms on the node-ordered view                                 */
/* ------------------------------------------------------------------ */

/* one rank: the algorithm on the node-ordered view (the root translated),
 * under the strict transport */
static int ordered_rank(unit_run_t *R, braid_comm_t *c, braid_coll_args_t *a)
{
    unit_topo_ctx_t *x = R->ctx;
    unit_views_t v;
    unit_views_init(&v, c, x->key);
    a->root = braid_subcomm_rank_of(&v.ordered, a->root);
    int rc = strict_run(&v.ordered.comm, R->fn, a, 0, &R->violations[c->rank]);
    unit_views_fini(&v, c, x);
    return rc;
}

/* one rank: braid_view_allgather / braid_view_reduce_scatter with the
 * algorithm, as the component's glue calls them */
static int block_view_rank(unit_run_t *R, braid_comm_t *c, braid_coll_args_t *a)
{
    unit_topo_ctx_t *x = R->ctx;
    int P = c->size, me = c->rank;
    unit_views_t v;
    unit_views_init(&v, c, x->key);
    braid_scratch_t scratch;
    memset(&scratch, 0, sizeof(scratch));
    a->scratch = &scratch;
    strict_state_t strict;
    strict_wrap(&v.counted, &strict);
    int rc;
    if (BRAID_COLL_ALLGATHER == R->coll) {
        /* bytes; the block in sbuf (not in place, as the glue passes a
         * contiguous send buffer) or at its place in rbuf */
        size_t block = a->count * a->esize;
        (void)me;
        a->count = block;
        a->esize = 1;
        char *tmp = malloc((size_t)P * block + 1);
        rc = braid_view_allgather(&v.ordered, &v.counted, R->fn, a, block, tmp);
        free(tmp);
    } else {
        size_t counts[2 * MAX_P + 1];
        char *tmp = malloc(R->off[P] * a->esize + 1);
        rc = braid_view_reduce_scatter(&v.ordered, &v.counted, R->fn, a, tmp, counts);
        free(tmp);
    }
    R->violations[me] = strict_unwrap(&v.counted, &strict);
    braid_scratch_release(&scratch);
    unit_views_fini(&v, c, x);
    return rc;
}

/* Run case k of algorithm alg of coll on the views of map key through
 * rank_fn; check the values; return the messages to other nodes and all
 * messages in *inter and *all. */
static void run_on_view(braid_coll_t coll, int alg, int P, const unit_case_t *k, const uint64_t *key,
                        unit_rank_fn_t rank_fn, unsigned long *inter, unsigned long *all)
{
    unit_topo_ctx_t x;
    memset(&x, 0, sizeof(x));
    x.key = key;
    unit_run_t *R = unit_run_new(coll, alg, P, k);
    R->rank_fn = rank_fn;
    R->ctx = &x;
    *inter = *all = 0;
    unit_run_check(R, true, NULL, 0);
    for (int i = 0; i < P; i++) {
        *inter += x.inter_msgs[i];
        *all += x.msgs[i];
    }
}

/* a ring over the node-ordered view crosses nodes once per node (of those
 * the map really uses; never on one node): that share of its messages goes
 * to other nodes */
static void assert_ring_crossings(const char *what, int P, const uint64_t *key, unsigned long inter,
                                  unsigned long all)
{
    int nodes = 0;
    for (int r = 0; r < P; r++) {
        int seen = 0;
        for (int q = 0; q < r; q++) seen |= key[q] == key[r];
        nodes += !seen;
    }
    if (1 == nodes) nodes = 0;
    if (P > 1)
        ck_assert_msg(inter * (unsigned long)P == all * (unsigned long)nodes,
                      "%s P=%d nodes=%d: %lu of %lu messages inter-node", what, P, nodes, inter, all);
}

static const int VIEW_SIZES[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16 };
#define N_VIEW_SIZES ((int)(sizeof VIEW_SIZES / sizeof *VIEW_SIZES))

START_TEST(ordered_views)
{
    uint64_t key[MAX_P];
    int P = VIEW_SIZES[_i];
    unsigned long inter, all;
    for (int nodes = 2; nodes <= 3; nodes++) {
        unit_make_map(UNIT_MAP_CYCLIC, P, nodes, 0, key);
        for (int alg = 1; alg < braid_alg_count(BRAID_COLL_ALLREDUCE); alg++) {
            /* views have no shared-memory segment: the shm algorithms run
             * on a whole one-node communicator only */
            if (unit_alg_has(BRAID_COLL_ALLREDUCE, alg, BRAID_OPT_HIER | BRAID_OPT_SHM)) continue;
            int j = alg - 1;
            unit_case_t k = { .kind = j % 2 ? UNIT_OP_SUM_F64 : UNIT_OP_SUM_I64,
                              .count = (size_t)(37 * P + 5), .in_place = j % 3 == 0 };
            run_on_view(BRAID_COLL_ALLREDUCE, alg, P, &k, key, ordered_rank, &inter, &all);
            if (BRAID_ALLREDUCE_RING == alg || BRAID_ALLREDUCE_RING_CHUNKED == alg)
                assert_ring_crossings(braid_alg_name(BRAID_COLL_ALLREDUCE, alg), P, key, inter, all);
        }
        for (int root = 0; root < P; root++) {
            unit_case_t b = { .count = 800, .root = root };
            for (int alg = 1; alg < braid_alg_count(BRAID_COLL_BCAST); alg++)
                if (!unit_alg_has(BRAID_COLL_BCAST, alg, BRAID_OPT_SHM)) run_on_view(BRAID_COLL_BCAST, alg, P, &b, key, ordered_rank, &inter, &all);
            unit_case_t r = { .kind = UNIT_OP_SUM_I64, .count = 100, .root = root };
            for (int alg = 1; alg < braid_alg_count(BRAID_COLL_REDUCE); alg++)
                if (!unit_alg_has(BRAID_COLL_REDUCE, alg, BRAID_OPT_SHM)) run_on_view(BRAID_COLL_REDUCE, alg, P, &r, key, ordered_rank, &inter, &all);
        }
    }
}
END_TEST

START_TEST(view_allgather)
{
    uint64_t key[MAX_P];
    int P = VIEW_SIZES[_i];
    unsigned long inter, all;
    for (int nodes = 2; nodes <= 3; nodes++)
        for (int map = UNIT_MAP_CYCLIC; map <= UNIT_MAP_RANDOM; map += UNIT_MAP_RANDOM - UNIT_MAP_CYCLIC) {
            unit_make_map((unit_map_t)map, P, nodes, (unsigned)(P + nodes), key);
            for (int alg = 1; alg < braid_alg_count(BRAID_COLL_ALLGATHER); alg++)
                if (!unit_alg_has(BRAID_COLL_ALLGATHER, alg, BRAID_OPT_SHM))
                for (int ip = 0; ip < 2; ip++) {
                    unit_case_t k = { .count = ip ? 3 : 129, .esize = ip ? 8 : 32, .in_place = ip };
                    run_on_view(BRAID_COLL_ALLGATHER, alg, P, &k, key, block_view_rank, &inter, &all);
                    if (BRAID_ALLGATHER_RING == alg)
                        assert_ring_crossings("allgather ring", P, key, inter, all);
                }
        }
}
END_TEST

START_TEST(view_reduce_scatter)
{
    uint64_t key[MAX_P];
    int P = VIEW_SIZES[_i];
    size_t uneven[MAX_P];
    for (int b = 0; b < P; b++) uneven[b] = (size_t)((b * 37 + 11) % 7);   /* includes zeros */
    unsigned long inter, all;
    for (int nodes = 2; nodes <= 3; nodes++)
        for (int map = UNIT_MAP_CYCLIC; map <= UNIT_MAP_RANDOM; map += UNIT_MAP_RANDOM - UNIT_MAP_CYCLIC) {
            unit_make_map((unit_map_t)map, P, nodes, (unsigned)(P * nodes), key);
            for (int alg = 1; alg < braid_alg_count(BRAID_COLL_REDUCE_SCATTER); alg++)
                if (!unit_alg_has(BRAID_COLL_REDUCE_SCATTER, alg, BRAID_OPT_SHM))
                for (int ip = 0; ip < 2; ip++)
                    for (int block = 0; block < 2; block++) {
                        /* the view changes the order of the reduction:
                         * commutative ops only */
                        unit_case_t k = { .kind = ip ? UNIT_OP_SUM_F64 : UNIT_OP_SUM_I64,
                                          .in_place = ip, .count = block ? 41 : 0,
                                          .rcounts = block ? NULL : uneven };
                        run_on_view(BRAID_COLL_REDUCE_SCATTER, alg, P, &k, key, block_view_rank,
                                    &inter, &all);
                        if (BRAID_REDUCE_SCATTER_RING == alg && block)
                            assert_ring_crossings("reduce_scatter ring", P, key, inter, all);
                    }
        }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topo");
    TCase *tc = unit_tcase(s, "topo", 300);
    tcase_add_test(tc, grouping);
    tcase_add_test(tc, grouping_large);
    tcase_add_test(tc, subcomm_members);
    tcase_add_loop_test(tc, ordered_views, 0, N_VIEW_SIZES);
    tcase_add_loop_test(tc, view_allgather, 0, N_VIEW_SIZES);
    tcase_add_loop_test(tc, view_reduce_scatter, 0, N_VIEW_SIZES);
    return unit_run_suite(s);
}
