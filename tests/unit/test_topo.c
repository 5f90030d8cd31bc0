/*
 * test_topo.c - node grouping, communicator views and the hierarchical
 * allreduce over the in-process transport.
 *
 *  - grouping: for P = 1..64 and cyclic (--map-by node), block, reversed
 *    and random node maps, `order` is a permutation, each node's ranks are
 *    adjacent and ascending, nodes come in order of their lowest rank,
 *    leaders are those lowest ranks, a ring over `order` crosses nodes
 *    exactly nnodes times; P = 4096 cyclic too.
 *  - views: invalid member lists are refused; every allreduce algorithm,
 *    bcast and reduce (every root) give the reference values when run on
 *    the node-ordered view; a ring on it sends exactly total x N / P of its
 *    messages to other nodes (counted by a wrapper that knows every rank's
 *    node).
 *  - hierarchical: P = 1..12 with 1..4 nodes (cyclic and random maps), the
 *    phase algorithms rotating, int64 sum exact, double sum bit-identical
 *    on every rank and close to the reference, in place and not; only
 *    leaders send to other nodes; a non-commutative op is refused on every
 *    rank before any message.
 */
#include "unit_common.h"
#include "unit_ops.h"
#include "braid_topo.h"

#include <math.h>
#include <string.h>

#define MAX_P 64

/* ------------------------------------------------------------------ */
/* node maps                                                           */
/* ------------------------------------------------------------------ */

typedef enum { MAP_CYCLIC, MAP_BLOCK, MAP_REVERSED, MAP_RANDOM } map_kind_t;

static void make_map(map_kind_t kind, int P, int nodes, unsigned seed, uint64_t *key)
{
    int per = (P + nodes - 1) / nodes;
    for (int r = 0; r < P; r++) {
        switch (kind) {
        case MAP_CYCLIC: key[r] = (uint64_t)(r % nodes); break;
        case MAP_BLOCK: key[r] = (uint64_t)(r / per); break;
        case MAP_REVERSED: key[r] = (uint64_t)((P - 1 - r) % nodes) * 1000003u; break;
        case MAP_RANDOM:
            seed = seed * 1103515245u + 12345u;
            key[r] = 0xabcdef00ull + (seed >> 16) % (unsigned)nodes;
            break;
        }
    }
}

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
            for (int kind = MAP_CYCLIC; kind <= MAP_RANDOM; kind++) {
                make_map((map_kind_t)kind, P, nodes, (unsigned)(P * 31 + nodes), key);
                check_grouping(P, key);
            }
    /* a block map is already grouped; a cyclic one over 2+ nodes is not */
    braid_topo_t t;
    make_map(MAP_BLOCK, 8, 2, 0, key);
    ck_assert_int_eq(braid_topo_init(&t, 8, key), BRAID_OK);
    ck_assert(braid_topo_is_grouped(&t));
    braid_topo_fini(&t);
    make_map(MAP_CYCLIC, 8, 2, 0, key);
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
    make_map(MAP_CYCLIC, BIG, 64, 0, key);
    braid_topo_t t;
    ck_assert_int_eq(braid_topo_init(&t, BIG, key), BRAID_OK);
    ck_assert_int_eq(t.nnodes, 64);
    for (int k = 0; k < 64; k++) ck_assert_int_eq(braid_topo_node_size(&t, k), BIG / 64);
    ck_assert_int_eq(t.order[BIG / 64], 1);   /* node 1 starts with rank 1 */
    braid_topo_fini(&t);
    free(key);
}
END_TEST

/* ------------------------------------------------------------------ */
/* a transport wrapper that counts messages to other nodes             */
/* ------------------------------------------------------------------ */

typedef struct locality {
    braid_comm_t inner;      /* the in-process rank */
    const uint64_t *key;     /* node key of every rank */
    unsigned long inter_msgs, msgs;
} locality_t;

static int loc_isend(void *state, int peer, braid_step_t step, const void *buf, size_t len,
                     braid_req_t *req)
{
    locality_t *l = state;
    l->msgs++;
    l->inter_msgs += l->key[peer] != l->key[l->inner.rank];
    return braid_isend(&l->inner, peer, step, buf, len, req);
}
static int loc_irecv(void *state, int peer, braid_step_t step, void *buf, size_t len,
                     braid_req_t *req)
{
    locality_t *l = state;
    return braid_irecv(&l->inner, peer, step, buf, len, req);
}
static int loc_waitall(void *state, int n, braid_req_t *reqs)
{
    locality_t *l = state;
    return braid_waitall(&l->inner, n, reqs);
}
static const braid_transport_ops_t loc_ops = { loc_isend, loc_irecv, loc_waitall };

static void loc_wrap(locality_t *l, braid_comm_t *c, const uint64_t *key, braid_comm_t *out)
{
    memset(l, 0, sizeof(*l));
    l->inner = *c;
    l->key = key;
    *out = *c;
    out->ops = &loc_ops;
    out->state = l;
}

/* ------------------------------------------------------------------ */
/* running collectives on views                                        */
/* ------------------------------------------------------------------ */

typedef enum { RUN_ORDERED, RUN_HIER } run_mode_t;
typedef enum { COLL_ALLREDUCE, COLL_BCAST, COLL_REDUCE } coll_kind_t;

typedef struct run {
    run_mode_t mode;
    coll_kind_t coll;
    braid_algo_fn_t fn;             /* RUN_ORDERED */
    braid_hier_t phases;            /* RUN_HIER: algorithms (views filled per rank) */
    unit_op_kind_t op;
    size_t count;
    int root;
    bool inplace;
    const uint64_t *key;
    int64_t *out[MAX_P];
    unsigned long inter_msgs[MAX_P], msgs[MAX_P];
    bool leads[MAX_P];
    int rc[MAX_P];
} run_t;

static void fill_args(run_t *r, int me, braid_coll_args_t *a, braid_scratch_t *scratch, void *in)
{
    memset(a, 0, sizeof(*a));
    size_t es = unit_op_esize(r->op);
    a->count = r->coll == COLL_BCAST ? r->count * es : r->count;
    a->esize = r->coll == COLL_BCAST ? 1 : es;
    a->op = unit_op(r->op);
    a->scratch = scratch;
    a->rbuf = r->out[me];
    a->root = r->root;
    if (r->coll == COLL_BCAST) {
        if (me == r->root) unit_fill(r->op, me, r->out[me], r->count);
    } else if (r->inplace) {
        unit_fill(r->op, me, r->out[me], r->count);
    } else {
        unit_fill(r->op, me, in, r->count);
        a->sbuf = in;
    }
}

static int body(braid_comm_t *c, void *p)
{
    run_t *r = p;
    int me = c->rank, P = c->size;
    locality_t loc;
    braid_comm_t counted;
    loc_wrap(&loc, c, r->key, &counted);
    braid_topo_t t;
    braid_subcomm_t ordered, node, leaders;
    int rc = braid_topo_init(&t, P, r->key);
    ck_assert_int_eq(rc, BRAID_OK);
    void *in = malloc(r->count * unit_op_esize(r->op) + 1);
    braid_scratch_t scratch;
    memset(&scratch, 0, sizeof(scratch));
    braid_coll_args_t a;
    fill_args(r, me, &a, &scratch, in);
    if (RUN_ORDERED == r->mode) {
        ck_assert_int_eq(braid_subcomm_init(&ordered, &counted, P, t.order), BRAID_OK);
        a.root = braid_subcomm_rank_of(&ordered, r->root);
        rc = r->fn(&ordered.comm, &a);
        braid_subcomm_fini(&ordered);
    } else {
        int k = t.node_of[me], lead[MAX_P];
        braid_topo_leaders(&t, lead);
        ck_assert_int_eq(braid_subcomm_init(&node, &counted, braid_topo_node_size(&t, k),
                                            braid_topo_node_ranks(&t, k)), BRAID_OK);
        ck_assert_int_eq(braid_subcomm_init(&leaders, &counted, t.nnodes, lead), BRAID_OK);
        braid_hier_t h = r->phases;
        h.node = &node.comm;
        h.leaders = braid_subcomm_is_member(&leaders) ? &leaders.comm : NULL;
        r->leads[me] = NULL != h.leaders;
        a.hier = &h;
        rc = braid_allreduce_hierarchical(&counted, &a);
        braid_subcomm_fini(&node);
        braid_subcomm_fini(&leaders);
    }
    r->inter_msgs[me] = loc.inter_msgs;
    r->msgs[me] = loc.msgs;
    r->rc[me] = rc;
    braid_topo_fini(&t);
    braid_scratch_release(&scratch);
    free(in);
    return rc == BRAID_ERR_UNSUPPORTED ? BRAID_OK : rc;
}

/* Run and check values against the reference; returns the total of
 * inter-node and all messages in *inter / *all. */
static void run_and_check(run_t *r, int P, unsigned long *inter, unsigned long *all)
{
    size_t es = unit_op_esize(r->op), bytes = r->count * es;
    for (int i = 0; i < P; i++) r->out[i] = malloc(bytes + 1);
    inproc_result_t res = inproc_run(P, body, NULL, r);
    ck_assert_int_eq(res.rc, BRAID_OK);
    ck_assert_int_eq(res.leftover_msgs, 0);
    free(res.stats);
    unsigned char *ref = malloc(bytes + 1);
    if (r->coll == COLL_BCAST) unit_fill(r->op, r->root, ref, r->count);
    else unit_reference(r->op, P, 0, r->count, ref);
    *inter = *all = 0;
    for (int i = 0; i < P; i++) {
        *inter += r->inter_msgs[i];
        *all += r->msgs[i];
        ck_assert_int_eq(r->rc[i], BRAID_OK);
        if (r->coll == COLL_REDUCE && i != r->root) continue;
        if (r->op == UNIT_OP_SUM_F64) {
            /* bit-identical on every rank, close to the rank-order sum */
            if (r->coll == COLL_ALLREDUCE)
                ck_assert_int_eq(memcmp(r->out[i], r->out[0], bytes), 0);
            for (size_t e = 0; e < r->count; e++) {
                double got = ((double *)r->out[i])[e], want = ((double *)ref)[e];
                ck_assert(fabs(got - want) <= 1e-9 * (fabs(want) + 1.0));
            }
        } else {
            ck_assert_msg(0 == memcmp(r->out[i], ref, bytes), "P=%d rank %d: wrong values", P, i);
        }
    }
    for (int i = 0; i < P; i++) free(r->out[i]);
    free(ref);
}

static const braid_algo_fn_t allreduce_algs[] = {
    braid_allreduce_ring, braid_allreduce_ring_chunked, braid_allreduce_halving_doubling,
    braid_allreduce_bcube, braid_allreduce_dbtree, braid_allreduce_recursive_doubling,
};
enum { N_ALLREDUCE_ALGS = sizeof(allreduce_algs) / sizeof(allreduce_algs[0]) };

START_TEST(ordered_views)
{
    static const int sizes[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16 };
    uint64_t key[MAX_P];
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        int P = sizes[si];
        for (int nodes = 2; nodes <= 3; nodes++) {
            make_map(MAP_CYCLIC, P, nodes, 0, key);
            for (int alg = 0; alg < N_ALLREDUCE_ALGS; alg++) {
                run_t r;
                memset(&r, 0, sizeof(r));
                r.mode = RUN_ORDERED;
                r.coll = COLL_ALLREDUCE;
                r.fn = allreduce_algs[alg];
                r.op = alg % 2 ? UNIT_OP_SUM_F64 : UNIT_OP_SUM_I64;
                r.count = (size_t)(37 * P + 5);
                r.inplace = alg % 3 == 0;
                r.key = key;
                unsigned long inter, all;
                run_and_check(&r, P, &inter, &all);
                /* rings (0: ring, 1: ring_chunked) cross nodes once per node */
                if (alg <= 1 && P > 1 && P >= nodes)
                    ck_assert_msg(inter * (unsigned long)P == all * (unsigned long)nodes,
                                  "P=%d nodes=%d ring alg %d: %lu of %lu messages inter-node",
                                  P, nodes, alg, inter, all);
            }
            for (int root = 0; root < P; root++) {
                run_t r;
                memset(&r, 0, sizeof(r));
                r.mode = RUN_ORDERED;
                r.op = UNIT_OP_SUM_I64;
                r.count = 100;
                r.root = root;
                r.key = key;
                unsigned long inter, all;
                r.coll = COLL_BCAST;
                r.fn = root % 2 ? braid_bcast_binomial : braid_bcast_dbtree;
                run_and_check(&r, P, &inter, &all);
                r.coll = COLL_REDUCE;
                r.fn = root % 2 ? braid_reduce_dbtree : braid_reduce_binomial;
                run_and_check(&r, P, &inter, &all);
            }
        }
    }
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
/* hierarchical                                                        */
/* ------------------------------------------------------------------ */

static braid_hier_t phases(int variant)
{
    static const braid_algo_fn_t reduce[] = { braid_reduce_binomial, braid_reduce_dbtree };
    static const braid_algo_fn_t bcast[] = { braid_bcast_binomial, braid_bcast_dbtree,
                                             braid_bcast_scatter_allgather };
    static const braid_algo_fn_t leaders[] = { braid_allreduce_ring, braid_allreduce_halving_doubling,
                                               braid_allreduce_recursive_doubling,
                                               braid_allreduce_ring_chunked };
    braid_hier_t h;
    memset(&h, 0, sizeof(h));
    h.node_reduce = reduce[variant % 2];
    h.node_bcast = bcast[variant % 3];
    h.leaders_allreduce = leaders[variant % 4];
    h.node_bcast_params.chunk_bytes = variant % 2 ? 64 : 0;
    return h;
}

START_TEST(hierarchical_values)
{
    uint64_t key[MAX_P];
    int variant = 0;
    for (int P = 1; P <= 12; P++)
        for (int nodes = 1; nodes <= 4 && nodes <= P; nodes++)
            for (int kind = MAP_CYCLIC; kind <= MAP_RANDOM; kind += MAP_RANDOM - MAP_CYCLIC) {
                make_map((map_kind_t)kind, P, nodes, (unsigned)P, key);
                for (int op = UNIT_OP_SUM_I64; op <= UNIT_OP_SUM_F64; op++) {
                    run_t r;
                    memset(&r, 0, sizeof(r));
                    r.mode = RUN_HIER;
                    r.coll = COLL_ALLREDUCE;
                    r.phases = phases(variant);
                    r.op = (unit_op_kind_t)op;
                    r.count = variant % 5 == 0 ? 1 : (size_t)(97 * P + variant);
                    r.inplace = variant % 2;
                    r.key = key;
                    variant++;
                    unsigned long inter, all;
                    run_and_check(&r, P, &inter, &all);
                    /* only leaders talk across nodes */
                    for (int i = 0; i < P; i++)
                        if (!r.leads[i]) ck_assert_int_eq(r.inter_msgs[i], 0);
                }
            }
}
END_TEST

START_TEST(hierarchical_noncommutative)
{
    uint64_t key[8];
    make_map(MAP_CYCLIC, 8, 2, 0, key);
    run_t r;
    memset(&r, 0, sizeof(r));
    r.mode = RUN_HIER;
    r.coll = COLL_ALLREDUCE;
    r.phases = phases(1);
    r.op = UNIT_OP_MATMUL;
    r.count = 10;
    r.key = key;
    for (int i = 0; i < 8; i++) r.out[i] = malloc(10 * unit_op_esize(r.op));
    inproc_result_t res = inproc_run(8, body, NULL, &r);
    ck_assert_int_eq(res.rc, BRAID_OK);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(r.rc[i], BRAID_ERR_UNSUPPORTED);
        ck_assert_int_eq(r.msgs[i], 0);
        free(r.out[i]);
    }
    free(res.stats);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("topo");
    TCase *tc = tcase_create("topo");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, grouping);
    tcase_add_test(tc, grouping_large);
    tcase_add_test(tc, subcomm_members);
    tcase_add_test(tc, ordered_views);
    tcase_add_test(tc, hierarchical_values);
    tcase_add_test(tc, hierarchical_noncommutative);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return unit_run_suite(suite()); }
