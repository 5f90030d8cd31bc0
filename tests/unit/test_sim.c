/*
 * test_sim.c - the simulator's coroutine scheduler and counting transport
 * (tools/sim/braid_sim_sched.c), and braid's allreduce contracts at the
 * sizes only the simulator reaches.
 *
 *  - real data through the coroutine transport: allreduce ring_chunked,
 *    halving_doubling, bcube and dbtree at P = 1000 (int32 sum, every rank's
 *    every element against the closed-form sum);
 *  - alltoall's contracts in phantom mode at P = 1024: pairwise P-1
 *    messages of one block, bruck lg P messages of P/2 blocks;
 *  - scan's and exscan's recursive doubling in phantom mode at P = 1024
 *    and 4096: one S message up to every partner above, down only to
 *    partners that send again later, at most lg P per rank;
 *  - gather's and scatter's binomial and linear, gatherv's and scatterv's
 *    linear, allgatherv's ring and bruck and alltoallv's pairwise in phantom mode at
 *    P = 1024 and 4096 (contract_rooted);
 *  - contracts in phantom mode (no data) at P = 1024 and 4096, S = 32P bytes
 *    (8 floats per block), per rank, against docs/DESIGN.md:
 *      ring_chunked      2(P-1) messages, 2S(P-1)/P bytes
 *      halving_doubling  2 lg P messages, 2S(P-1)/P bytes
 *      bcube (base 4)    2 * 3 * log4 P messages, 2S(P-1)/P bytes
 *      dbtree            (sends per chunk) x chunks with sends from the
 *                        NCCL tree formulas written out here (lowest set
 *                        bit, mirror), bytes <= 2S, all ranks 2(P-1)S;
 *  - the cost model on one message within and across nodes (hand-computed
 *    times), inter-node message counts of a ring for block and cyclic
 *    mappings, and deadlock detection.
 */
#include "unit_common.h"
#include "braid_sim.h"
#include "braid_trees.h"

#include <string.h>

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

typedef struct job {
    braid_algo_fn_t fn;
    size_t count, esize;
    braid_params_t params;
    bool phantom;
    char *shared;          /* phantom: one buffer for every rank */
    /* phantom, the rooted and v collectives: a send buffer of their own
     * (NULL: in place), root 0, and the counts and displacements every
     * rank passes (the root alone with root_counts) */
    char *shared_in;
    const size_t *counts, *displs;
    bool root_counts;
    int32_t **buf;         /* real: per rank */
    braid_scratch_t *scratch;
} job_t;

static void sum_i32(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    const int32_t *a = in;
    int32_t *b = inout;
    for (size_t i = 0; i < n; i++) b[i] += a[i];
    braid_sim_charge_reduce(n * sizeof(int32_t));
}

static void phantom_reduce(const void *in, void *inout, size_t n, void *arg)
{
    (void)in;
    (void)inout;
    braid_sim_charge_reduce(n * *(const size_t *)arg);
}

static int body(braid_comm_t *c, void *p)
{
    job_t *j = p;
    braid_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.rbuf = j->phantom ? (void *)j->shared : (void *)j->buf[c->rank];
    a.sbuf = j->shared_in;
    if (NULL != j->counts && (!j->root_counts || 0 == c->rank)) {
        a.rcounts = a.scounts = j->counts;
        a.displs = a.sdispls = j->displs;
    }
    a.count = j->count;
    a.esize = j->esize;
    a.op.fn = j->phantom ? phantom_reduce : sum_i32;
    a.op.arg = &j->esize;
    a.op.commutative = true;
    a.exact = !j->phantom;
    a.scratch = &j->scratch[c->rank];
    a.params = j->params;
    int rc = j->fn(c, &a);
    braid_scratch_release(a.scratch);
    return rc;
}

static braid_sim_result_t run(int P, const int *node_of, job_t *j)
{
    braid_sim_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.P = P;
    cfg.node_of = node_of;
    cfg.phantom = j->phantom;
    braid_sim_model_default(&cfg.model);
    j->scratch = calloc((size_t)P, sizeof(braid_scratch_t));
    ck_assert_ptr_nonnull(j->scratch);
    braid_sim_result_t res;
    ck_assert_int_eq(0, braid_sim_run(&cfg, body, j, &res));
    free(j->scratch);
    ck_assert_int_eq(BRAID_OK, res.rc);
    ck_assert(!res.deadlock);
    ck_assert_uint_eq(0, res.leftover_msgs);
    return res;
}

static braid_sim_result_t run_phantom(int P, braid_algo_fn_t fn, size_t count,
                                      braid_params_t params)
{
    job_t j;
    memset(&j, 0, sizeof(j));
    j.fn = fn;
    j.count = count;
    j.esize = 4;
    j.params = params;
    j.phantom = true;
    j.shared = malloc(count * 4);
    ck_assert_ptr_nonnull(j.shared);
    braid_sim_result_t res = run(P, NULL, &j);
    free(j.shared);
    return res;
}

/* ------------------------------------------------------------------ */
/* real data at P = 1000                                               */
/* ------------------------------------------------------------------ */

static braid_algo_fn_t const value_fns[] = {
    braid_allreduce_ring_chunked, braid_allreduce_halving_doubling, braid_allreduce_bcube,
    braid_allreduce_dbtree,
};

START_TEST(values_p1000)
{
    const int P = 1000;
    const size_t count = 2 * (size_t)P + 37;
    job_t j;
    memset(&j, 0, sizeof(j));
    j.fn = value_fns[_i];
    j.count = count;
    j.esize = sizeof(int32_t);
    j.params.chunk_bytes = 4096;   /* several chunks per tree and exchange */
    j.buf = calloc((size_t)P, sizeof(int32_t *));
    ck_assert_ptr_nonnull(j.buf);
    for (int r = 0; r < P; r++) {
        j.buf[r] = malloc(count * sizeof(int32_t));
        ck_assert_ptr_nonnull(j.buf[r]);
        for (size_t i = 0; i < count; i++) j.buf[r][i] = (int32_t)(r * 7 + (int)(i % 13));
    }
    braid_sim_result_t res = run(P, NULL, &j);
    size_t wrong = 0;
    for (int r = 0; r < P; r++) {
        for (size_t i = 0; i < count; i++) {
            int32_t want = (int32_t)(7 * P * (P - 1) / 2 + P * (int)(i % 13));
            if (j.buf[r][i] != want) wrong++;
        }
        free(j.buf[r]);
    }
    free(j.buf);
    ck_assert_msg(0 == wrong, "algorithm %d: %zu wrong elements", _i, wrong);
    ck_assert(res.t_max > 0);
    braid_sim_result_free(&res);
}
END_TEST

/* ------------------------------------------------------------------ */
/* contracts at P = 1024 and 4096                                      */
/* ------------------------------------------------------------------ */

static const int contract_P[] = { 1024, 4096 };

/* How many of contract_P the contract loops run: those up to
 * UNIT_SIM_MAX_P when it is set (at least the first). The sanitizer pass
 * stops at 1024, where every contract already has its shape; P = 4096
 * costs five times as much under ASan and runs in the plain pass. */
static int contract_nP = 2;

static int contract_count(void)
{
    const char *e = getenv("UNIT_SIM_MAX_P");
    int max = e ? atoi(e) : 0, n = 1;
    while (n < 2 && (max <= 0 || contract_P[n] <= max)) n++;
    return n;
}

static int lg2(int P) { return braid_floor_log2(P); }

/* count ranks whose messages or bytes differ from the expectation */
static void expect_uniform(const braid_sim_result_t *res, int P, uint64_t msgs, uint64_t bytes,
                           const char *what)
{
    int bad = 0, first = -1;
    for (int r = 0; r < P; r++) {
        if (res->ranks[r].msgs_sent != msgs || res->ranks[r].bytes_sent != bytes) {
            if (first < 0) first = r;
            bad++;
        }
    }
    ck_assert_msg(0 == bad, "%s P=%d: %d ranks off (rank %d: %llu msgs %llu bytes, want %llu %llu)",
                  what, P, bad, first, first < 0 ? 0ULL : (unsigned long long)res->ranks[first].msgs_sent,
                  first < 0 ? 0ULL : (unsigned long long)res->ranks[first].bytes_sent,
                  (unsigned long long)msgs, (unsigned long long)bytes);
}

START_TEST(contract_ring_chunked)
{
    int P = contract_P[_i];
    size_t count = 8 * (size_t)P, S = count * 4;
    braid_params_t p = { 0, 0 };
    braid_sim_result_t res = run_phantom(P, braid_allreduce_ring_chunked, count, p);
    expect_uniform(&res, P, 2 * (uint64_t)(P - 1), 2 * (uint64_t)S * (uint64_t)(P - 1) / (uint64_t)P,
                   "ring_chunked");
    braid_sim_result_free(&res);
}
END_TEST

START_TEST(contract_halving_doubling)
{
    int P = contract_P[_i];
    size_t count = 8 * (size_t)P, S = count * 4;
    braid_params_t p = { 0, 0 };
    braid_sim_result_t res = run_phantom(P, braid_allreduce_halving_doubling, count, p);
    expect_uniform(&res, P, 2 * (uint64_t)lg2(P), 2 * (uint64_t)S * (uint64_t)(P - 1) / (uint64_t)P,
                   "halving_doubling");
    braid_sim_result_free(&res);
}
END_TEST

START_TEST(contract_bcube)
{
    int P = contract_P[_i];
    size_t count = 8 * (size_t)P, S = count * 4;
    braid_params_t p = { 0, 4 };
    int steps = lg2(P) / 2;   /* P = 4^steps */
    braid_sim_result_t res = run_phantom(P, braid_allreduce_bcube, count, p);
    expect_uniform(&res, P, 2 * 3 * (uint64_t)steps,
                   2 * (uint64_t)S * (uint64_t)(P - 1) / (uint64_t)P, "bcube");
    braid_sim_result_free(&res);
}
END_TEST

/* NCCL's btree written out from docs/DESIGN.md: parent of r > 0 with lowest set
 * bit b is (r ^ b) | (b << 1), or r ^ b when that is >= P; root 0 */
static int btree_parent(int P, int r)
{
    if (0 == r) return -1;
    int b = r & -r, up = (r ^ b) | (b << 1);
    return up < P ? up : (r ^ b);
}

/* sends per chunk of rank r in tree w (P even: tree 1 is the mirror) */
static void tree_degrees(int P, int *deg0, int *deg1)
{
    for (int r = 0; r < P; r++) deg0[r] = deg1[r] = 0;
    for (int r = 0; r < P; r++) {
        int par = btree_parent(P, r);
        if (par < 0) continue;
        deg0[r]++;                 /* up to the parent */
        deg0[par]++;               /* down to this child */
        deg1[P - 1 - r]++;
        deg1[P - 1 - par]++;
    }
}

START_TEST(contract_dbtree)
{
    int P = contract_P[_i];
    size_t count = 8 * (size_t)P, S = count * 4;
    size_t chunk = 2048;           /* explicit: chunks per tree known here */
    braid_params_t p = { chunk, 0 };
    braid_sim_result_t res = run_phantom(P, braid_allreduce_dbtree, count, p);
    int *d0 = malloc((size_t)P * sizeof(int)), *d1 = malloc((size_t)P * sizeof(int));
    ck_assert(d0 && d1);
    tree_degrees(P, d0, d1);
    uint64_t half0 = (count - count / 2) * 4, half1 = count / 2 * 4;   /* first half: ceil */
    uint64_t ch0 = (half0 + chunk - 1) / chunk, ch1 = (half1 + chunk - 1) / chunk;
    int bad = 0, over = 0;
    uint64_t total = 0;
    for (int r = 0; r < P; r++) {
        uint64_t m = (uint64_t)d0[r] * ch0 + (uint64_t)d1[r] * ch1;
        uint64_t b = (uint64_t)d0[r] * half0 + (uint64_t)d1[r] * half1;
        if (res.ranks[r].msgs_sent != m || res.ranks[r].bytes_sent != b) bad++;
        if (res.ranks[r].bytes_sent > 2 * S) over++;
        total += res.ranks[r].bytes_sent;
    }
    ck_assert_msg(0 == bad, "dbtree P=%d: %d ranks off the tree formula", P, bad);
    ck_assert_msg(0 == over, "dbtree P=%d: %d ranks send more than 2S", P, over);
    ck_assert_uint_eq(total, 2 * (uint64_t)(P - 1) * S);
    free(d0);
    free(d1);
    braid_sim_result_free(&res);
}
END_TEST

/* scan and exscan recursive doubling at P = 1024 and 4096 (S = 64
 * bytes), per rank: one message of S up to each partner r XOR 2^k above
 * it, and down to each one below it that sends again later (counted here
 * from the rule, recursively) - at most lg P messages. */
static bool sim_sends_later(int r, int mask, int P)
{
    for (int m = 2 * mask; m < P; m *= 2)
        if ((r ^ m) > r || sim_sends_later(r ^ m, m, P)) return true;
    return false;
}

START_TEST(contract_scan)
{
    int P = contract_P[_i];
    const uint64_t S = 64;
    braid_algo_fn_t fns[2] = { braid_scan_recursive_doubling, braid_exscan_recursive_doubling };
    for (int f = 0; f < 2; f++) {
        braid_sim_result_t res = run_phantom(P, fns[f], S / 4, (braid_params_t){ 0, 0 });
        int bad = 0;
        for (int r = 0; r < P; r++) {
            uint64_t m = 0;
            for (int mask = 1; mask < P; mask *= 2)
                m += (r ^ mask) > r || sim_sends_later(r ^ mask, mask, P);
            bad += res.ranks[r].msgs_sent != m || res.ranks[r].bytes_sent != m * S ||
                   m > (uint64_t)lg2(P);
        }
        ck_assert_msg(0 == bad, "%s recursive_doubling P=%d: %d ranks off contract",
                      f ? "exscan" : "scan", P, bad);
        braid_sim_result_free(&res);
    }
}
END_TEST

/* alltoall at P = 1024 (a block of 8 bytes), per rank: pairwise P-1
 * messages of one block; bruck lg P messages of P/2 blocks. The shared
 * buffer is one rank's P blocks. */
START_TEST(contract_alltoall)
{
    const int P = 1024;
    const uint64_t block = 8;
    braid_sim_result_t res;
    job_t j;
    memset(&j, 0, sizeof(j));
    j.count = 2;
    j.esize = 4;
    j.phantom = true;
    j.shared = malloc((size_t)P * block);
    ck_assert_ptr_nonnull(j.shared);
    j.fn = braid_alltoall_pairwise;
    res = run(P, NULL, &j);
    expect_uniform(&res, P, (uint64_t)(P - 1), (uint64_t)(P - 1) * block, "alltoall pairwise");
    braid_sim_result_free(&res);
    j.fn = braid_alltoall_bruck;
    res = run(P, NULL, &j);
    expect_uniform(&res, P, (uint64_t)lg2(P), (uint64_t)lg2(P) * (uint64_t)(P / 2) * block,
                   "alltoall bruck");
    braid_sim_result_free(&res);
    free(j.shared);
}
END_TEST

/* The rooted and v collectives at P = 1024 and 4096, root 0, blocks of
 * 8 bytes (the v forms: every count 2 elements of 4 bytes), per rank
 * against docs/DESIGN.md: gather binomial one message of its subtree's
 * blocks up (relative rank v: min(lowbit(v), P - v) blocks), scatter
 * binomial one of min(2^k, P - v - 2^k) blocks to each child v + 2^k
 * within its subtree; linear, gatherv and scatterv linear one block per
 * non-root (the root sends P - 1 for the scatters); allgatherv ring and
 * alltoallv pairwise P - 1 blocks each; allgatherv bruck lg P messages,
 * P - 1 blocks in all. */
typedef enum {
    SHAPE_GATHER_TREE, SHAPE_SCATTER_TREE, SHAPE_TO_ROOT, SHAPE_FROM_ROOT, SHAPE_ALL, SHAPE_LOG
} shape_t;

static const struct {
    braid_algo_fn_t fn;
    shape_t shape;
    bool v, root_counts;
    const char *name;
} rooted_algs[] = {
    { braid_gather_binomial, SHAPE_GATHER_TREE, false, false, "gather binomial" },
    { braid_scatter_binomial, SHAPE_SCATTER_TREE, false, false, "scatter binomial" },
    { braid_gather_linear, SHAPE_TO_ROOT, false, false, "gather linear" },
    { braid_scatter_linear, SHAPE_FROM_ROOT, false, false, "scatter linear" },
    { braid_gatherv_linear, SHAPE_TO_ROOT, true, true, "gatherv linear" },
    { braid_scatterv_linear, SHAPE_FROM_ROOT, true, true, "scatterv linear" },
    { braid_allgatherv_ring, SHAPE_ALL, true, false, "allgatherv ring" },
    { braid_allgatherv_bruck, SHAPE_LOG, true, false, "allgatherv bruck" },
    { braid_alltoallv_pairwise, SHAPE_ALL, true, false, "alltoallv pairwise" },
};

static int subtree_of(int v, int P)
{
    int low = 1;
    if (0 == v) while (low < P) low <<= 1;
    else low = v & -v;
    return low < P - v ? low : P - v;
}

/* rank r's messages and bytes under shape sh, blocks of b bytes */
static void shape_traffic(shape_t sh, int P, int r, uint64_t b, uint64_t *msgs, uint64_t *bytes)
{
    *msgs = *bytes = 0;
    int n = subtree_of(r, P);
    switch (sh) {
    case SHAPE_GATHER_TREE:
        if (r) *msgs = 1, *bytes = (uint64_t)n * b;
        break;
    case SHAPE_SCATTER_TREE:
        for (int m = 1; m < n; m <<= 1) {
            (*msgs)++;
            *bytes += (uint64_t)(m < P - r - m ? m : P - r - m) * b;
        }
        break;
    case SHAPE_TO_ROOT:
        if (r) *msgs = 1, *bytes = b;
        break;
    case SHAPE_FROM_ROOT:
        if (!r) *msgs = (uint64_t)(P - 1), *bytes = (uint64_t)(P - 1) * b;
        break;
    case SHAPE_ALL:
        *msgs = (uint64_t)(P - 1);
        *bytes = (uint64_t)(P - 1) * b;
        break;
    case SHAPE_LOG:   /* P a power of two: lg P messages, P - 1 blocks in all */
        *msgs = (uint64_t)lg2(P);
        *bytes = (uint64_t)(P - 1) * b;
        break;
    }
}

START_TEST(contract_rooted)
{
    int P = contract_P[_i % contract_nP];
    size_t ai = (size_t)_i / (size_t)contract_nP;
    const uint64_t block = 8;
    job_t j;
    memset(&j, 0, sizeof(j));
    j.fn = rooted_algs[ai].fn;
    j.phantom = true;
    j.shared = malloc((size_t)P * block);
    j.shared_in = malloc((size_t)P * block);
    size_t *counts = malloc((size_t)P * sizeof(size_t)), *displs = malloc((size_t)P * sizeof(size_t));
    ck_assert(j.shared && j.shared_in && counts && displs);
    for (int q = 0; q < P; q++) {
        counts[q] = 2;
        displs[q] = 2 * (size_t)q;
    }
    /* the v forms: each rank's own count (gatherv, scatterv) or the
     * largest block (allgatherv) in count, elements of 4 bytes */
    j.count = rooted_algs[ai].v ? 2 : 1;
    j.esize = rooted_algs[ai].v ? 4 : block;
    if (rooted_algs[ai].v) {
        j.counts = counts;
        j.displs = displs;
        j.root_counts = rooted_algs[ai].root_counts;
    }
    braid_sim_result_t res = run(P, NULL, &j);
    int bad = 0, first = -1;
    for (int r = 0; r < P; r++) {
        uint64_t m, b;
        shape_traffic(rooted_algs[ai].shape, P, r, block, &m, &b);
        if (res.ranks[r].msgs_sent != m || res.ranks[r].bytes_sent != b) {
            if (first < 0) first = r;
            bad++;
        }
    }
    ck_assert_msg(0 == bad, "%s P=%d: %d ranks off contract (first rank %d)", rooted_algs[ai].name, P,
                  bad, first);
    braid_sim_result_free(&res);
    free(j.shared);
    free(j.shared_in);
    free(counts);
    free(displs);
}
END_TEST

/* ------------------------------------------------------------------ */
/* model, locality counters, deadlock                                  */
/* ------------------------------------------------------------------ */

typedef struct one_msg {
    size_t n;
    char buf[2][64];
} one_msg_t;

static int one_message(braid_comm_t *c, void *p)
{
    one_msg_t *m = p;
    if (0 == c->rank) return braid_send(c, 1, 0, m->buf[0], m->n);
    int rc = braid_recv(c, 0, 0, m->buf[1], m->n);
    braid_sim_charge_reduce(m->n);
    return rc;
}

START_TEST(model_one_message)
{
    const int nodes[2][2] = { { 0, 0 }, { 0, 1 } };
    for (int inter = 0; inter < 2; inter++) {
        braid_sim_config_t cfg;
        memset(&cfg, 0, sizeof(cfg));
        cfg.P = 2;
        cfg.node_of = nodes[inter];
        cfg.model = (braid_sim_model_t){ 1.0, 0.01, 10.0, 0.1, 0.001, 0.5 };
        one_msg_t m = { 64, { "payload", "" } };
        braid_sim_result_t res;
        ck_assert_int_eq(0, braid_sim_run(&cfg, one_message, &m, &res));
        ck_assert_int_eq(BRAID_OK, res.rc);
        ck_assert_str_eq(m.buf[1], "payload");
        double alpha = inter ? 10.0 : 1.0, beta = inter ? 0.1 : 0.01;
        double t0 = 0.5 + 64 * beta, t1 = t0 + alpha + 64 * 0.001;
        ck_assert_double_eq_tol(res.ranks[0].t_end, t0, 1e-9);
        ck_assert_double_eq_tol(res.ranks[1].t_end, t1, 1e-9);
        ck_assert_double_eq_tol(res.t_max, t1, 1e-9);
        ck_assert_uint_eq(res.msgs_inter_total, (uint64_t)inter);
        braid_sim_result_free(&res);
    }
}
END_TEST

START_TEST(ring_inter_node_messages)
{
    /* P = 16 on 4 nodes: a ring over block-mapped ranks crosses nodes on 4
     * of its 16 edges, over cyclic (map-by node) ranks on all 16 */
    const int P = 16;
    for (int cyclic = 0; cyclic < 2; cyclic++) {
        int node_of[16];
        ck_assert_int_eq(4, braid_sim_nodes(P, 4, cyclic, node_of));
        job_t j;
        memset(&j, 0, sizeof(j));
        j.fn = braid_allreduce_ring_chunked;
        j.count = 8 * P;
        j.esize = 4;
        j.phantom = true;
        j.shared = malloc(j.count * 4);
        braid_sim_result_t res = run(P, node_of, &j);
        free(j.shared);
        uint64_t per_rank = 2 * (P - 1);
        ck_assert_uint_eq(res.msgs_inter_total, (cyclic ? 16 : 4) * per_rank);
        ck_assert_uint_eq(res.msgs_total, P * per_rank);
        braid_sim_result_free(&res);
    }
}
END_TEST

static int stuck(braid_comm_t *c, void *p)
{
    (void)p;
    char b;
    if (0 == c->rank) return braid_recv(c, 1, 5, &b, 1);   /* rank 1 never sends */
    return BRAID_OK;
}

START_TEST(deadlock_reported)
{
    braid_sim_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.P = 3;
    braid_sim_model_default(&cfg.model);
    braid_sim_result_t res;
    ck_assert_int_eq(0, braid_sim_run(&cfg, stuck, NULL, &res));
    ck_assert(res.deadlock);
    ck_assert_int_ne(BRAID_OK, res.rc);
    braid_sim_result_free(&res);
}
END_TEST

static Suite *sim_suite(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, model_one_message);
    tcase_add_test(tc, ring_inter_node_messages);
    tcase_add_test(tc, deadlock_reported);
    suite_add_tcase(s, tc);
    tc = tcase_create("values");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, values_p1000, 0, (int)(sizeof value_fns / sizeof value_fns[0]));
    suite_add_tcase(s, tc);
    tc = tcase_create("contracts");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, contract_ring_chunked, 0, contract_nP);
    tcase_add_loop_test(tc, contract_halving_doubling, 0, contract_nP);
    tcase_add_loop_test(tc, contract_bcube, 0, contract_nP);
    tcase_add_loop_test(tc, contract_dbtree, 0, contract_nP);
    tcase_add_test(tc, contract_alltoall);
    tcase_add_loop_test(tc, contract_scan, 0, contract_nP);
    tcase_add_loop_test(tc, contract_rooted, 0,
                        contract_nP * (int)(sizeof rooted_algs / sizeof rooted_algs[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    contract_nP = contract_count();
    return unit_run_suite(sim_suite());
}
