/*
 * test_bcube_dbtree.c - allreduce bcube and dbtree, bcast dbtree, reduce
 * dbtree and binomial over the in-process transport.
 *
 * Values: P = 1..9, 16, 64 with counts {0, 1, P-1, P, P+1, 1001, 2^16+3}
 * (trimmed at P = 64), int64 sum and the non-commutative 2x2
 * matrix product bit for bit against the rank-order reference, double sum
 * bit-identical on every rank and within 1e-9 (relative) of the reference;
 * in place and not; chunk sizes down to one element; every root at P <= 9;
 * reduce with rbuf NULL on non-roots; a sweep P = 1..64 with small counts.
 * Contracts, every run: messages and bytes of each rank against the trees'
 * formulas (dbtree: (sends per chunk) x (chunks) from braid_trees.h) and the
 * bcube range model; independent totals (dbtree allreduce moves exactly
 * 2(P-1)S in all, bcast (P-1)S, reduce S per non-root); per-rank bounds
 * (dbtree allreduce <= 2S + one element); bcube exactly 2S(P-1)/P per rank
 * for P a power of B; a hand-computed P = 4 double tree.
 */
#include "unit_common.h"
#include "unit_ops.h"
#include "braid_trees.h"
#include "dbtree_pipeline.h"

#include <math.h>
#include <string.h>

#define MAX_P 64

typedef enum { C_ALLREDUCE, C_REDUCE, C_BCAST } coll_t;
typedef enum { A_DBTREE, A_BCUBE, A_BINOMIAL } algo_t;

typedef struct run_arg {
    coll_t coll;
    algo_t algo;
    braid_algo_fn_t fn;
    unit_op_kind_t op;
    size_t count;          /* elements (bcast: bytes) */
    size_t esize;
    int root;
    bool inplace;          /* allreduce: every rank; reduce: the root */
    bool null_rbuf;        /* reduce: non-roots pass rbuf NULL */
    braid_params_t params;
    unsigned char *in[MAX_P], *out[MAX_P];
    braid_scratch_t scratch[MAX_P];
} run_arg_t;

static const unsigned char GARBAGE = 0xa5;

static int body(braid_comm_t *c, void *p)
{
    run_arg_t *r = p;
    int me = c->rank;
    braid_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.count = r->count;
    a.esize = r->esize;
    a.root = r->root;
    a.op = unit_op(r->op);
    a.scratch = &r->scratch[me];
    a.params = r->params;
    switch (r->coll) {
    case C_ALLREDUCE:
        a.sbuf = r->inplace ? NULL : r->in[me];
        a.rbuf = r->out[me];
        break;
    case C_REDUCE:
        if (me == r->root) {
            a.sbuf = r->inplace ? NULL : r->in[me];
            a.rbuf = r->out[me];
        } else {
            a.sbuf = r->in[me];
            a.rbuf = r->null_rbuf ? NULL : r->out[me];
        }
        break;
    case C_BCAST:
        a.rbuf = r->out[me];
        break;
    }
    return r->fn(c, &a);
}

/* ---------------- expected messages and bytes ---------------- */

typedef struct expect { uint64_t msgs, bytes; } expect_t;

static braid_coll_args_t args_of(const run_arg_t *r)
{
    braid_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.count = r->count;
    a.esize = r->esize;
    a.params = r->params;
    a.op = unit_op(r->op);
    return a;
}

/* dbtree: per tree, a rank sends each chunk once per send edge */
static expect_t expect_dbtree(const run_arg_t *r, int P, int rank)
{
    expect_t e = { 0, 0 };
    if (P < 2 || 0 == r->count) return e;
    braid_coll_args_t a = args_of(r);
    /* an explicit chunk size is taken as is (whole elements, at least one);
     * only the adaptive default comes from the library */
    size_t chunk = r->params.chunk_bytes ? r->params.chunk_bytes / r->esize : braid_dbt_chunk_elems(&a, P);
    if (0 == chunk) chunk = 1;
    bool comm = unit_op(r->op).commutative;
    braid_dbtree_t t = { P, BRAID_DBTREE_NCCL, -1 };
    if (C_ALLREDUCE == r->coll && !comm) t.kind = BRAID_DBTREE_INORDER;
    if (C_BCAST == r->coll || (C_REDUCE == r->coll && comm)) t.root = r->root;
    if (C_REDUCE == r->coll && !comm) t.kind = BRAID_DBTREE_INORDER;
    for (int w = 0; w < 2; w++) {
        braid_tree_node_t n;
        braid_dbtree_get(&t, w, rank, &n);
        size_t cnt = braid_block_count(r->count, 2, w);
        uint64_t K = (cnt + chunk - 1) / chunk;
        int sends = 0;
        if (C_ALLREDUCE == r->coll) sends = (n.parent >= 0) + n.nchildren;
        else if (C_BCAST == r->coll) sends = n.nchildren;
        else sends = (n.parent >= 0) + (n.parent < 0 && rank != r->root);
        e.msgs += (uint64_t)sends * K;
        e.bytes += (uint64_t)sends * cnt * r->esize;
    }
    return e;
}

/* bcube: follow this rank's range through the steps */
static expect_t expect_bcube(const run_arg_t *r, int P, int rank)
{
    expect_t e = { 0, 0 };
    if (P < 2 || 0 == r->count) return e;
    int g[BRAID_BCUBE_MAX_STEPS];
    int m = braid_bcube_factor(P, r->params.bcube_base, g);
    size_t len = r->count;
    for (int s = 0; s < m; s++) {
        int d = braid_bcube_digit(g, s, rank);
        for (int j = 0; j < g[s]; j++) {
            size_t cj = braid_block_count(len, g[s], j);
            if (j != d && cj) { e.msgs++; e.bytes += cj * r->esize; }
        }
        size_t mine = braid_block_count(len, g[s], d);
        if (mine) { e.msgs += (uint64_t)(g[s] - 1); e.bytes += (uint64_t)(g[s] - 1) * mine * r->esize; }
        len = mine;
    }
    return e;
}

/* binomial reduce: one message of S from every rank but the tree root, and
 * rank 0 forwards to the root for non-commutative ops */
static expect_t expect_binomial(const run_arg_t *r, int P, int rank)
{
    expect_t e = { 0, 0 };
    if (P < 2 || 0 == r->count) return e;
    bool comm = unit_op(r->op).commutative;
    int tree_root = comm ? r->root : 0;
    int sends = (rank != tree_root) + (!comm && rank == 0 && r->root != 0);
    e.msgs = (uint64_t)sends;
    e.bytes = (uint64_t)sends * r->count * r->esize;
    return e;
}

static void check_stats(const run_arg_t *r, int P, const braid_stats_t *st)
{
    uint64_t S = (uint64_t)r->count * r->esize, total = 0;
    int bad = 0, first = -1;
    expect_t fe = { 0, 0 };
    for (int rank = 0; rank < P; rank++) {
        expect_t e = A_DBTREE == r->algo ? expect_dbtree(r, P, rank)
                   : A_BCUBE == r->algo ? expect_bcube(r, P, rank) : expect_binomial(r, P, rank);
        if (e.msgs != st[rank].msgs_sent || e.bytes != st[rank].bytes_sent) {
            if (0 == bad++) { first = rank; fe = e; }
        }
        total += st[rank].bytes_sent;
    }
    ck_assert_msg(0 == bad,
                  "coll %d algo %d P=%d count=%zu root=%d: %d ranks off contract; rank %d sent "
                  "%llu msgs %llu bytes, expected %llu %llu",
                  r->coll, r->algo, P, r->count, r->root, bad, first,
                  first >= 0 ? (unsigned long long)st[first].msgs_sent : 0ull,
                  first >= 0 ? (unsigned long long)st[first].bytes_sent : 0ull,
                  (unsigned long long)fe.msgs, (unsigned long long)fe.bytes);
    if (P < 2) { ck_assert_uint_eq(total, 0); return; }
    /* totals and bounds that do not depend on the tree formulas */
    uint64_t maxb = 0;
    for (int rank = 0; rank < P; rank++)
        if (st[rank].bytes_sent > maxb) maxb = st[rank].bytes_sent;
    if (A_DBTREE == r->algo && C_ALLREDUCE == r->coll) {
        ck_assert_uint_eq(total, 2 * (uint64_t)(P - 1) * S);
        ck_assert_msg(maxb <= 2 * S + r->esize, "dbtree allreduce P=%d: a rank sent %llu > 2S", P,
                      (unsigned long long)maxb);
    } else if (C_BCAST == r->coll) {
        ck_assert_uint_eq(total, (uint64_t)(P - 1) * S);
        for (int rank = 0; rank < P; rank++)
            if (rank != r->root && st[rank].bytes_sent > S + 1) bad++;
        ck_assert_msg(0 == bad && st[r->root].bytes_sent <= S + S / 2 + 1,
                      "bcast dbtree P=%d: a rank sent more than S (root: 3S/2)", P);
    } else if (C_REDUCE == r->coll) {
        for (int rank = 0; rank < P; rank++)
            if (rank != r->root && st[rank].bytes_sent != S) bad++;
        ck_assert_msg(0 == bad && st[r->root].bytes_sent <= S,
                      "reduce P=%d: non-roots must send exactly S", P);
    } else if (A_BCUBE == r->algo) {
        /* each group's members together send (g-1)*range twice */
        uint64_t tot = 0;
        int g[BRAID_BCUBE_MAX_STEPS];
        int m = braid_bcube_factor(P, r->params.bcube_base, g);
        (void)m;
        for (int rank = 0; rank < P; rank++) tot += expect_bcube(r, P, rank).bytes;
        ck_assert_uint_eq(total, tot);
        if (0 == r->count % (size_t)P)
            for (int rank = 0; rank < P; rank++)
                ck_assert_uint_eq(st[rank].bytes_sent, 2 * S * (uint64_t)(P - 1) / (uint64_t)P);
    }
}

/* ---------------- running and checking values ---------------- */

static void fill_input(const run_arg_t *r, int rank, unsigned char *buf)
{
    if (C_BCAST == r->coll) {
        for (size_t i = 0; i < r->count; i++) buf[i] = unit_byte(rank == r->root ? 1000 : rank, i);
    } else {
        unit_fill(r->op, rank, buf, r->count);
    }
}

static size_t bad_values(const run_arg_t *r, const unsigned char *got, const unsigned char *ref)
{
    size_t bad = 0;
    if (C_BCAST == r->coll || UNIT_OP_SUM_F64 != r->op) {
        size_t n = r->count * r->esize;
        if (0 != memcmp(got, ref, n))
            for (size_t i = 0; i < n; i++) bad += got[i] != ref[i];
        return bad;
    }
    const double *g = (const double *)got, *f = (const double *)ref;
    for (size_t i = 0; i < r->count; i++)
        if (!(fabs(g[i] - f[i]) <= 1e-9 * fmax(1.0, fabs(f[i])))) bad++;
    return bad;
}

static void run_case(run_arg_t *r, int P)
{
    size_t bytes = r->count * r->esize, alloc = bytes ? bytes : 1;
    for (int rank = 0; rank < P; rank++) {
        r->in[rank] = malloc(alloc);
        r->out[rank] = malloc(alloc);
        memset(&r->scratch[rank], 0, sizeof(r->scratch[rank]));
        fill_input(r, rank, r->in[rank]);
        bool pre = C_BCAST == r->coll || (r->inplace && (C_ALLREDUCE == r->coll || rank == r->root));
        if (pre) memcpy(r->out[rank], r->in[rank], bytes);
        else memset(r->out[rank], GARBAGE, bytes);
    }
    unsigned char *ref = malloc(alloc);
    if (C_BCAST == r->coll) fill_input(r, r->root, ref);
    else unit_reference(r->op, P, 0, r->count, ref);

    inproc_result_t res = inproc_run(P, body, NULL, r);
    ck_assert_msg(BRAID_OK == res.rc, "coll %d algo %d P=%d count=%zu: rc %d", r->coll, r->algo, P,
                  r->count, res.rc);
    ck_assert_int_eq(res.leftover_msgs, 0);

    size_t bad = 0, untouched = 0, differ = 0;
    int first = -1;
    for (int rank = 0; rank < P; rank++) {
        bool has_result = C_REDUCE != r->coll || rank == r->root;
        if (has_result) {
            size_t b = bad_values(r, r->out[rank], ref);
            if (b && first < 0) first = rank;
            bad += b;
            /* inexact ops: every rank must hold the same bits */
            if (C_ALLREDUCE == r->coll && 0 != memcmp(r->out[rank], r->out[0], bytes)) differ++;
        } else if (!r->null_rbuf) {
            for (size_t i = 0; i < bytes; i++) untouched += r->out[rank][i] != GARBAGE;
        }
    }
    ck_assert_msg(0 == bad && 0 == differ && 0 == untouched,
                  "coll %d algo %d op %d P=%d count=%zu root=%d inplace=%d chunk=%zu base=%d: "
                  "%zu wrong values (first rank %d), %zu ranks differ from rank 0, "
                  "%zu bytes written to non-root rbuf",
                  r->coll, r->algo, r->op, P, r->count, r->root, r->inplace, r->params.chunk_bytes,
                  r->params.bcube_base, bad, first, differ, untouched);
    check_stats(r, P, res.stats);
    for (int rank = 0; rank < P; rank++) {
        free(r->in[rank]);
        free(r->out[rank]);
        braid_scratch_release(&r->scratch[rank]);
    }
    free(ref);
    free(res.stats);
}

static run_arg_t *new_run(coll_t coll, algo_t algo, braid_algo_fn_t fn, unit_op_kind_t op)
{
    run_arg_t *r = calloc(1, sizeof(*r));
    r->coll = coll;
    r->algo = algo;
    r->fn = fn;
    r->op = op;
    r->esize = C_BCAST == coll ? 1 : unit_op_esize(op);
    return r;
}

/* ---------------- test matrix ---------------- */

static const int P_LIST[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 64 };
#define NP_LIST ((int)(sizeof P_LIST / sizeof *P_LIST))
static const unit_op_kind_t OPS[] = { UNIT_OP_SUM_I64, UNIT_OP_SUM_F64, UNIT_OP_MATMUL };

/* counts for P; the largest only where it stays cheap */
static int counts_for(int P, unit_op_kind_t op, size_t *c)
{
    int n = 0;
    c[n++] = 0;
    c[n++] = 1;
    if (P > 2 && P <= 16) c[n++] = (size_t)P - 1;
    if (P > 1 && P <= 16) c[n++] = (size_t)P;
    c[n++] = (size_t)P + 1;
    c[n++] = 1001;
    if (P <= 16 || UNIT_OP_SUM_I64 == op) c[n++] = (1u << 16) + 3;
    return n;
}

static void allreduce_matrix(int P, algo_t algo, braid_algo_fn_t fn, const int *bases, int nbases)
{
    for (int o = 0; o < 3; o++) {
        size_t counts[8];
        int nc = counts_for(P, OPS[o], counts);
        for (int k = 0; k < nc; k++)
            for (int b = 0; b < nbases; b++) {
                /* the largest count only with the first and last variant */
                if (counts[k] > 1001 && b != 0 && b != nbases - 1) continue;
                /* in place and not alternate over the matrix */
                for (int ip = (k + b + o) & 1; ip < 2; ip += 2 - (counts[k] <= (size_t)P + 1)) {
                    run_arg_t *r = new_run(C_ALLREDUCE, algo, fn, OPS[o]);
                    r->count = counts[k];
                    r->inplace = ip;
                    if (A_BCUBE == algo) r->params.bcube_base = bases[b];
                    /* dbtree: the variants are chunk sizes: default, three
                     * elements (8 KiB for the largest count), one element */
                    if (A_DBTREE == algo && 1 == bases[b])
                        r->params.chunk_bytes = (counts[k] > 1001 ? 8192 : 3 * r->esize);
                    if (A_DBTREE == algo && 2 == bases[b]) {
                        if (P > 16 && counts[k] > (size_t)P + 1) { free(r); continue; }
                        r->params.chunk_bytes = r->esize;
                    }
                    run_case(r, P);
                    free(r);
                }
            }
    }
}

START_TEST(test_allreduce_dbtree)
{
    static const int chunks[] = { 0, 2, 1 };
    allreduce_matrix(P_LIST[_i], A_DBTREE, braid_allreduce_dbtree, chunks, 3);
}
END_TEST

START_TEST(test_allreduce_bcube)
{
    static const int bases[] = { 0, 2, 3, 4, 8, BRAID_BCUBE_AUTO };
    allreduce_matrix(P_LIST[_i], A_BCUBE, braid_allreduce_bcube, bases, 6);
}
END_TEST

static void rooted_matrix(int P, coll_t coll, algo_t algo, braid_algo_fn_t fn)
{
    int roots[3] = { 0, P / 2, P - 1 };
    int nroots = P <= 9 ? P : 3;
    for (int o = 0; o < (C_BCAST == coll ? 1 : 3); o++) {
        size_t counts[8];
        int nc = counts_for(P, OPS[o], counts);
        for (int k = 0; k < nc; k++)
            for (int ri = 0; ri < nroots; ri++)
                for (int v = 0; v < 2; v++) {
                    /* every root for counts 1 and P+1 (in place / rbuf
                     * NULL alternating), roots 0 and P-1 otherwise */
                    bool every = 1 == counts[k] || (size_t)P + 1 == counts[k];
                    if (every && v != (ri & 1)) continue;
                    if (!every && ri != 0 && ri != nroots - 1) continue;
                    if (!every && counts[k] > 1001 && v) continue;
                    run_arg_t *r = new_run(coll, algo, fn, OPS[o]);
                    r->count = counts[k];
                    if (C_BCAST == coll) r->count = counts[k] * 8 + (size_t)v;
                    r->root = P <= 9 ? ri : roots[ri];
                    r->inplace = v;
                    r->null_rbuf = !v;
                    if (A_DBTREE == algo && v && counts[k] <= 1001)
                        r->params.chunk_bytes = 2 * r->esize + (C_BCAST == coll ? 3 : 0);
                    run_case(r, P);
                    free(r);
                }
    }
}

START_TEST(test_bcast_dbtree) { rooted_matrix(P_LIST[_i], C_BCAST, A_DBTREE, braid_bcast_dbtree); }
END_TEST
START_TEST(test_reduce_dbtree) { rooted_matrix(P_LIST[_i], C_REDUCE, A_DBTREE, braid_reduce_dbtree); }
END_TEST
START_TEST(test_reduce_binomial)
{
    rooted_matrix(P_LIST[_i], C_REDUCE, A_BINOMIAL, braid_reduce_binomial);
}
END_TEST

/* P = 1..64 (those not in P_LIST), small counts, every algorithm */
START_TEST(test_sweep)
{
    int P = _i;
    for (int k = 0; k < NP_LIST; k++)
        if (P_LIST[k] == P) return;        /* covered by the full matrix */
    size_t counts[2] = { 1, 2 * (size_t)P + 3 };
    unit_op_kind_t ops[2] = { UNIT_OP_SUM_I64, UNIT_OP_MATMUL };
    static const int bases[] = { 2, 3, 4, BRAID_BCUBE_AUTO };
    for (int o = 0; o < 2; o++)
        for (int k = o; k < 2; k++) {      /* matmul: the larger count only */
            int v = (P + 2 * o + k) & 3;   /* rotate the variants over P */
            run_arg_t *r = new_run(C_ALLREDUCE, A_BCUBE, braid_allreduce_bcube, ops[o]);
            r->count = counts[k];
            r->params.bcube_base = bases[v];
            r->inplace = v & 1;
            run_case(r, P);
            free(r);
            r = new_run(C_ALLREDUCE, A_DBTREE, braid_allreduce_dbtree, ops[o]);
            r->count = counts[k];
            r->params.chunk_bytes = 2 * r->esize;
            r->inplace = !(v & 1);
            run_case(r, P);
            free(r);
            int root = v & 1 ? 0 : P - 1 - P / 3;
            r = new_run(C_REDUCE, A_DBTREE, braid_reduce_dbtree, ops[o]);
            r->count = counts[k];
            r->root = root;
            r->null_rbuf = true;
            run_case(r, P);
            free(r);
            r = new_run(C_REDUCE, A_BINOMIAL, braid_reduce_binomial, ops[o]);
            r->count = counts[k];
            r->root = P - 1 - root;
            r->inplace = true;
            run_case(r, P);
            free(r);
            if (0 == o) {
                r = new_run(C_BCAST, A_DBTREE, braid_bcast_dbtree, ops[o]);
                r->count = counts[k] * 5;
                r->root = root;
                r->params.chunk_bytes = 3;
                run_case(r, P);
                free(r);
            }
        }
}
END_TEST

/* bcube: exactly 2S(P-1)/P per rank and 2*sum(g-1) messages for P = B^k */
START_TEST(test_bcube_exact_contract)
{
    static const int cases[][2] = { { 4, 2 }, { 4, 4 }, { 8, 2 }, { 9, 3 }, { 16, 4 },
                                    { 16, 2 }, { 27, 3 }, { 64, 4 }, { 64, 8 }, { 25, 5 } };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int P = cases[k][0], B = cases[k][1];
        run_arg_t *r = new_run(C_ALLREDUCE, A_BCUBE, braid_allreduce_bcube, UNIT_OP_SUM_I64);
        r->count = (size_t)P * 37;
        r->params.bcube_base = B;
        uint64_t S = r->count * 8;
        /* run and compare with Gloo's formula, independently of the model */
        for (int rank = 0; rank < P; rank++) {
            r->in[rank] = malloc(S);
            r->out[rank] = malloc(S);
            memset(&r->scratch[rank], 0, sizeof(r->scratch[rank]));
            unit_fill(r->op, rank, r->in[rank], r->count);
        }
        inproc_result_t res = inproc_run(P, body, NULL, r);
        ck_assert_int_eq(res.rc, BRAID_OK);
        int steps = 0;
        for (int q = 1; q < P; q *= B) steps++;
        uint64_t gloo = 0, q = 1;
        for (int s = 0; s < steps; s++, q *= (uint64_t)B) gloo += 2 * (S / q) * (uint64_t)(B - 1) / (uint64_t)B;
        int bad = 0;
        for (int rank = 0; rank < P; rank++) {
            if (res.stats[rank].bytes_sent != 2 * S * (uint64_t)(P - 1) / (uint64_t)P) bad++;
            if (res.stats[rank].bytes_sent != gloo) bad++;
            if (res.stats[rank].msgs_sent != 2 * (uint64_t)steps * (uint64_t)(B - 1)) bad++;
        }
        ck_assert_msg(0 == bad, "bcube P=%d B=%d: %d ranks off 2S(P-1)/P", P, B, bad);
        for (int rank = 0; rank < P; rank++) {
            free(r->in[rank]);
            free(r->out[rank]);
            braid_scratch_release(&r->scratch[rank]);
        }
        free(res.stats);
        free(r);
    }
}
END_TEST

/* P = 4, n = 8 int64 (S = 64, halves of 32): tree 0 is 0 -> 2 -> {1, 3},
 * tree 1 its mirror 3 -> 1 -> {0, 2}; one chunk per tree */
START_TEST(test_dbtree_hand_p4)
{
    run_arg_t *r = new_run(C_ALLREDUCE, A_DBTREE, braid_allreduce_dbtree, UNIT_OP_SUM_I64);
    r->count = 8;
    for (int rank = 0; rank < 4; rank++) {
        r->in[rank] = malloc(64);
        r->out[rank] = malloc(64);
        memset(&r->scratch[rank], 0, sizeof(r->scratch[rank]));
        unit_fill(r->op, rank, r->in[rank], 8);
    }
    inproc_result_t res = inproc_run(4, body, NULL, r);
    ck_assert_int_eq(res.rc, BRAID_OK);
    const uint64_t bytes[4] = { 64, 128, 128, 64 }, msgs[4] = { 2, 4, 4, 2 };
    for (int rank = 0; rank < 4; rank++) {
        ck_assert_uint_eq(res.stats[rank].bytes_sent, bytes[rank]);
        ck_assert_uint_eq(res.stats[rank].msgs_sent, msgs[rank]);
        free(r->in[rank]);
        free(r->out[rank]);
        braid_scratch_release(&r->scratch[rank]);
    }
    free(res.stats);
    free(r);
}
END_TEST

/* a failing scratch allocation is reported, not a crash (every rank fails
 * alike, so nothing hangs) */
static int nomem_body(braid_comm_t *c, void *p)
{
    run_arg_t *r = p;
    r->scratch[c->rank].fail_alloc = 1;
    return body(c, p);
}

START_TEST(test_nomem)
{
    braid_algo_fn_t fns[3] = { braid_allreduce_dbtree, braid_allreduce_bcube, braid_reduce_binomial };
    coll_t colls[3] = { C_ALLREDUCE, C_ALLREDUCE, C_REDUCE };
    for (int f = 0; f < 3; f++) {
        run_arg_t *r = new_run(colls[f], A_DBTREE, fns[f], UNIT_OP_SUM_I64);
        r->count = 100;
        for (int rank = 0; rank < 4; rank++) {
            r->in[rank] = calloc(100, 8);
            r->out[rank] = calloc(100, 8);
            memset(&r->scratch[rank], 0, sizeof(r->scratch[rank]));
        }
        inproc_result_t res = inproc_run(4, nomem_body, NULL, r);
        ck_assert_int_eq(res.rc, BRAID_ERR_NOMEM);
        for (int rank = 0; rank < 4; rank++) { free(r->in[rank]); free(r->out[rank]); }
        free(res.stats);
        free(r);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bcube_dbtree");
    TCase *t = tcase_create("values");
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, test_allreduce_dbtree, 0, NP_LIST);
    tcase_add_loop_test(t, test_allreduce_bcube, 0, NP_LIST);
    tcase_add_loop_test(t, test_bcast_dbtree, 0, NP_LIST);
    tcase_add_loop_test(t, test_reduce_dbtree, 0, NP_LIST);
    tcase_add_loop_test(t, test_reduce_binomial, 0, NP_LIST);
    tcase_add_loop_test(t, test_sweep, 1, MAX_P + 1);
    suite_add_tcase(s, t);
    TCase *c = tcase_create("contracts");
    tcase_set_timeout(c, 120);
    tcase_add_test(c, test_bcube_exact_contract);
    tcase_add_test(c, test_dbtree_hand_p4);
    tcase_add_test(c, test_nomem);
    suite_add_tcase(s, c);
    return unit_run_suite(s);
}
