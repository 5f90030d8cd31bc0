/*
 * unit_coll.h - the harness of the per-collective unit tests
 * (test_barrier.c, test_bcast.c, test_allreduce.c, test_reduce.c,
 * test_reduce_scatter.c, test_allgather.c, test_alltoall.c, test_scan.c,
 * test_gather.c, test_allgatherv.c,
 * test_alltoallv.c)
 * and of the view tests in
 * test_topo.c.
 *
 * One run is one call of one algorithm of the registry (braid_registry.h)
 * on P ranks of the in-process transport: unit_run_new() takes a case
 * (counts, op, root, in place, parameters), allocates every rank's buffers
 * as the collective's contract wants them (braid_algo.h) and fills them
 * with known inputs; unit_run_exec() runs it, every rank under the strict
 * transport (strict_transport.h) on a fresh scratch cache, and asserts what
 * every collective shares: no message left over, no send buffer touched or
 * received into before its send completed, every send waited for;
 * unit_check_values() compares every rank's result with a reference
 * computed here from the same inputs (unit_ops.h); unit_check_traffic()
 * compares the messages and bytes each rank sent with a model.
 * unit_run_check() does all of it, the contract taken from the test file's
 * table of models and bounds by registry id (unit_contract_t).
 *
 * Shared by several collectives: the sizes of the full matrices and their
 * counts (unit_p_list, unit_counts_for), the rooted matrix of bcast and
 * reduce (unit_rooted_matrix), and the models of the double binary tree
 * (unit_model_dbtree) and of halving-doubling's binary blocks
 * (unit_hd_halving).
 *
 * Test files loop over their collective's algorithms with
 *   tcase_add_loop_test(tc, fn, 0, unit_loop_end(coll, n));
 * and take the algorithm id and an index 0..n-1 (P - 1, or a position in a
 * list of sizes) from _i with unit_loop_alg() / unit_loop_index(), so that a
 * new row of braid_registry.h is tested without touching the loops. What
 * the tests need to know of an algorithm comes from its registry row (option
 * keys, what it does with a non-commutative op) and from its row in the test
 * file's contract table, which every algorithm must have: a run of an
 * algorithm without one fails.
 *
 * UNIT_ALG=name[,name...] in the environment runs only those algorithms
 * (unit_alg_filter() in main, unit_alg_selected() in the loops): a name
 * that is no algorithm of any collective is an error listing the valid
 * names; a test whose collective has none of the names is skipped.
 */
#ifndef UNIT_COLL_H
#define UNIT_COLL_H

#include <malloc.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "unit_common.h"
#include "unit_ops.h"
#include "strict_transport.h"
#include "braid_trees.h"
#include "braid_shm.h"
#include "dbtree_pipeline.h"

#define UNIT_MAX_P 64
/* what an output buffer holds before the collective writes it */
#define UNIT_GARBAGE 0xa5

/* ------------------------------------------------------------------ */
/* loops over the registry                                             */
/* ------------------------------------------------------------------ */

/* Whether the comma-separated list names (a copy of) equal to name. */
static inline bool unit_list_has(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && 0 == strncmp(p, name, n)) return true;
        if (NULL == end) break;
        p = end + 1;
    }
    return false;
}

/* UNIT_ALG, or NULL when unset or empty (every algorithm) */
static inline const char *unit_alg_env(void)
{
    const char *f = getenv("UNIT_ALG");
    return f && *f ? f : NULL;
}

/* Whether algorithm alg of coll runs under UNIT_ALG. */
static inline bool unit_alg_selected(braid_coll_t coll, int alg)
{
    const char *f = unit_alg_env();
    return NULL == f || unit_list_has(f, braid_alg_name(coll, alg));
}

/* Check UNIT_ALG for a test of coll (call first in main): exit 99 with the
 * valid names when a name is no algorithm of any collective, exit 77
 * (skipped) when none of the names is one of coll's. */
static inline void unit_alg_filter(braid_coll_t coll)
{
    const char *f = unit_alg_env();
    if (NULL == f) return;
    bool mine = false;
    for (const char *p = f; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name - 1 ? len : sizeof name - 1), p);
        bool known = false;
        for (int c = 0; c < BRAID_COLL_N; c++) {
            int id = braid_alg_lookup((braid_coll_t)c, name);
            if (id > 0) {
                known = true;
                if ((braid_coll_t)c == coll) mine = true;
            }
        }
        if (!known) {
            char valid[256];
            braid_alg_names_joined(coll, valid, sizeof valid);
            fprintf(stderr, "UNIT_ALG=%s: '%s' is no algorithm of any collective; valid for %s: %s "
                    "(without auto; several separated by commas)\n", f, name, braid_coll_name(coll),
                    strncmp(valid, "auto | ", 7) ? valid : valid + 7);
            exit(99);
        }
        if (NULL == end) break;
        p = end + 1;
    }
    if (!mine) {
        printf("UNIT_ALG=%s: no %s algorithm of that name; skipped\n", f, braid_coll_name(coll));
        exit(77);
    }
}

/* The k-th (0-based) algorithm id of coll under UNIT_ALG; 0 if none. */
static inline int unit_nth_alg(braid_coll_t coll, int k)
{
    for (int alg = 1; alg < braid_alg_count(coll); alg++)
        if (unit_alg_selected(coll, alg) && 0 == k--) return alg;
    return 0;
}

/* end of a loop test over every algorithm of coll (under UNIT_ALG) times n
 * indices */
static inline int unit_loop_end(braid_coll_t coll, int n)
{
    int sel = 0;
    for (int alg = 1; alg < braid_alg_count(coll); alg++) sel += unit_alg_selected(coll, alg);
    return sel * n;
}
/* The largest P of the loops over P = 1..max: max, or n under UNIT_MAX_NP=n
 * in the environment. The sanitizer pass runs P = 1..16, where every shape
 * the algorithms have (powers of two, one less and one more, odd, primes)
 * occurs, and leaves the larger P to the plain pass: each P costs ~5 times
 * as much under ASan. */
static inline int unit_np(int max)
{
    const char *e = getenv("UNIT_MAX_NP");
    int n = e ? atoi(e) : 0;
    return n > 0 && n < max ? n : max;
}
static inline int unit_loop_alg(braid_coll_t coll, int i, int n) { return unit_nth_alg(coll, i / n); }
static inline int unit_loop_index(int i, int n) { return i % n; }

static inline bool unit_alg_has(braid_coll_t coll, int alg, unsigned options)
{
    return 0 != (braid_algorithm(coll, alg)->options & options);
}

/* ------------------------------------------------------------------ */
/* traffic                                                             */
/* ------------------------------------------------------------------ */

/* messages and bytes one rank sends; UNIT_ANY where a model does not say */
typedef struct unit_traffic {
    uint64_t msgs, bytes;
} unit_traffic_t;
#define UNIT_ANY UINT64_MAX

/* chunks of n elements at ce elements each (0 for n == 0) */
static inline size_t unit_nchunks(size_t n, size_t ce) { return n / ce + (n % ce != 0); }

/* elements per chunk for a chunk_bytes parameter (0: the 1 MiB default) */
static inline size_t unit_chunk_elems(size_t chunk_bytes, size_t es)
{
    size_t b = chunk_bytes ? chunk_bytes : ((size_t)1 << 20), ce = b / es;
    return ce ? ce : 1;
}

/* ------------------------------------------------------------------ */
/* one run                                                             */
/* ------------------------------------------------------------------ */

/* What a run computes. */
typedef struct unit_case {
    unit_op_kind_t kind;    /* reductions: the op and its inputs (unit_ops.h) */
    bool exact;             /* allreduce: a->exact */
    bool in_place;          /* allreduce, reduce_scatter, allgather: every rank;
                               reduce: the root */
    bool null_rbuf;         /* reduce: non-roots pass rbuf NULL */
    size_t count;           /* elements (bcast: bytes; reduce_scatter: per rank
                               in the block variant) */
    size_t esize;           /* allgather: bytes per element (0: 8) */
    int root;
    const size_t *rcounts;  /* reduce_scatter, allgatherv: P entries; NULL: block
                               variant (allgatherv: count each) */
    braid_params_t params;
} unit_case_t;

struct unit_run;
/* Runs the algorithm on one rank in place of strict_run() (views, several
 * calls); returns its code. */
typedef int (*unit_rank_fn_t)(struct unit_run *R, braid_comm_t *c, braid_coll_args_t *a);

typedef struct unit_run {
    braid_coll_t coll;
    int alg;                        /* registry id */
    braid_algo_fn_t fn;             /* braid_algorithm(coll, alg)->run */
    int P;
    unit_case_t k;
    braid_coll_args_t args;         /* every rank's, but sbuf, rbuf, scratch */
    size_t off[UNIT_MAX_P + 1];     /* reduce_scatter: block b is [off[b], off[b+1]) */
    /* allgatherv, gatherv, scatterv: each rank's elements and where its
     * block starts in rbuf (the root's sbuf for scatterv; the blocks in
     * reverse rank order, with gaps), and that buffer's elements */
    size_t vcount[UNIT_MAX_P], vdispl[UNIT_MAX_P], vspan;
    /* alltoallv: each rank's send counts, send displacements, receive
     * counts and receive displacements (P x P each, by rank), and the
     * elements of each rank's receive buffer */
    size_t *av[4], avspan[UNIT_MAX_P];
    unsigned char *sbuf[UNIT_MAX_P], *rbuf[UNIT_MAX_P];   /* as each rank passes them */
    /* reduce_scatter: rbuf as it was before the call (rlen bytes: the whole
     * input and a guard), to check that only the result block is written */
    unsigned char *rbuf0[UNIT_MAX_P];
    size_t rlen[UNIT_MAX_P];
    int fail_alloc;                 /* scratch allocations fail (strict_run) */
    bool may_leave_msgs;            /* messages left unreceived are no error */
    unit_rank_fn_t rank_fn;         /* NULL: strict_run(fn) */
    void *ctx;                      /* the test's, for rank_fn */
    /* shm algorithms (BRAID_OPT_SHM): a segment in this process's heap that
     * the rank threads share as the ranks of a node share the mapped one,
     * with slots of the case's size (unit_shm_new); each rank's c->shm */
    void *shm_seg;
    size_t shm_slot;
    bool shm_direct;                /* the segment has a single-copy reader (unit_shm_read) */
    size_t shm_direct_above;        /* ... used above these bytes (or the slot) */
    size_t shm_split_from;          /* ... single-copy reduce splits the fold from
                                       these P x bytes */
    bool shm_far;                   /* ... its two ranks count as far apart (s->far) */
    _Atomic unsigned long shm_copies; /* ... single-copy reads and writes made
                                       (unit_shm_read, unit_shm_write) */
    _Atomic unsigned long shm_writes; /* ... of which writes */
    bool shm_driver_mem;            /* the ranks' buffers act as CUDA-mapped memory:
                                       the reader refuses them (unit_shm_read) */
    bool shm_write_fails;           /* every single-copy write fails, as
                                       process_vm_writev on a peer gone wrong
                                       (set by the test; unit_run_exec keeps it) */
    braid_shm_t shm[UNIT_MAX_P];
    /* results */
    int rc[UNIT_MAX_P];
    int violations[UNIT_MAX_P];     /* strict_transport.h */
    size_t scratch[UNIT_MAX_P];     /* scratch bytes each rank used (strict_run only) */
    braid_stats_t *stats;           /* P entries */
    char what[200];                 /* the run, for failure messages */
} unit_run_t;

/* bytes checked past the end of a reduce_scatter's receive buffer */
#define UNIT_GUARD 64

static inline unsigned char *unit_alloc(size_t bytes, int fill)
{
    unsigned char *p = malloc(bytes + 1);
    memset(p, fill, bytes + 1);
    return p;
}

/* A fresh buffer holding one rank's n input elements of a reduction. */
static inline unsigned char *unit_input(const unit_run_t *R, int rank, size_t n)
{
    unsigned char *p = unit_alloc(n * R->args.esize, UNIT_GARBAGE);
    unit_fill(R->k.kind, rank, p, n);
    return p;
}

/* alltoall: byte i of the block rank s sends rank d */
static inline unsigned char unit_a2a_byte(int s, int d, size_t i)
{
    return unit_byte(1 + s * UNIT_MAX_P + d, i);
}

/* alltoallv: the elements rank s sends rank d, 0 to 1.5 count (one pair
 * in four empty); symmetric in place, as MPI requires there */
static inline size_t unit_a2av_count(const struct unit_case *k, int s, int d)
{
    int h = k->in_place ? (s + d) % 4 : (s * 7 + d * 3) % 4;
    return (size_t)h * k->count / 2;
}

/* Allocate and fill every rank's buffers for case k of algorithm alg. */
static inline unit_run_t *unit_run_new(braid_coll_t coll, int alg, int P, const unit_case_t *k)
{
    ck_assert_msg(P >= 1 && P <= UNIT_MAX_P, "P=%d out of range", P);
    const braid_algorithm_t *A = braid_algorithm(coll, alg);
    ck_assert_msg(NULL != A, "%s: no algorithm %d", braid_coll_name(coll), alg);
    unit_run_t *R = calloc(1, sizeof *R);
    R->coll = coll;
    R->alg = alg;
    R->fn = A->run;
    R->P = P;
    R->k = *k;
    braid_coll_args_t *a = &R->args;
    a->count = k->count;
    bool moves = BRAID_COLL_ALLGATHER == coll || BRAID_COLL_ALLTOALL == coll ||
                 BRAID_COLL_GATHER == coll || BRAID_COLL_SCATTER == coll ||
                 BRAID_COLL_ALLGATHERV == coll || BRAID_COLL_ALLTOALLV == coll ||
                 BRAID_COLL_GATHERV == coll || BRAID_COLL_SCATTERV == coll;
    a->esize = BRAID_COLL_BCAST == coll ? 1 : moves ? (k->esize ? k->esize : 8) : unit_op_esize(k->kind);
    a->root = k->root;
    a->op = unit_op(k->kind);
    a->exact = k->exact;
    a->params = k->params;
    a->rcounts = k->rcounts;
    size_t es = a->esize, bytes = k->count * es;
    if (BRAID_COLL_ALLGATHERV == coll) {
        /* blocks in reverse rank order, rank q's followed by q % 3 unused
         * elements; count: the largest block */
        a->count = 0;
        for (int q = P - 1; q >= 0; q--) {
            R->vcount[q] = k->rcounts ? k->rcounts[q] : k->count;
            R->vdispl[q] = R->vspan;
            R->vspan += R->vcount[q] + (size_t)(q % 3);
            if (R->vcount[q] > a->count) a->count = R->vcount[q];
        }
        a->rcounts = R->vcount;
        a->displs = R->vdispl;
    }
    if (BRAID_COLL_GATHERV == coll || BRAID_COLL_SCATTERV == coll) {
        /* 1.5, 1, 0.5 and 0 times count elements in turn, the blocks in
         * reverse rank order with gaps; the counts and displacements are
         * the root's alone, count each rank's own (unit_rank_args) */
        for (int q = P - 1; q >= 0; q--) {
            R->vcount[q] = (size_t)(3 - (q + 3) % 4) * k->count / 2;
            R->vdispl[q] = R->vspan;
            R->vspan += R->vcount[q] + (size_t)(q % 3);
        }
        a->rcounts = NULL;
    }
    for (int r = 0; r < P; r++) {
        switch (coll) {
        case BRAID_COLL_BARRIER:
            break;
        case BRAID_COLL_BCAST:
            R->rbuf[r] = unit_alloc(bytes, 0);
            for (size_t i = 0; i < bytes; i++) R->rbuf[r][i] = unit_byte(r == k->root ? 1000 : r, i);
            break;
        case BRAID_COLL_ALLREDUCE:
        case BRAID_COLL_SCAN:
        case BRAID_COLL_EXSCAN:
            if (k->in_place) R->rbuf[r] = unit_input(R, r, k->count);
            else {
                R->sbuf[r] = unit_input(R, r, k->count);
                R->rbuf[r] = unit_alloc(bytes, UNIT_GARBAGE);
            }
            break;
        case BRAID_COLL_REDUCE:
            if (r == k->root && k->in_place) R->rbuf[r] = unit_input(R, r, k->count);
            else {
                R->sbuf[r] = unit_input(R, r, k->count);
                if (r == k->root || !k->null_rbuf) R->rbuf[r] = unit_alloc(bytes, UNIT_GARBAGE);
            }
            break;
        case BRAID_COLL_REDUCE_SCATTER:
            if (0 == r)
                for (int b = 0; b < P; b++)
                    R->off[b + 1] = R->off[b] + (k->rcounts ? k->rcounts[b] : k->count);
            /* rbuf: the input (in place) or a pattern, the whole input's
             * size plus a guard either way, so that a write past the result
             * block shows */
            R->rlen[r] = R->off[P] * es + UNIT_GUARD;
            R->rbuf[r] = unit_alloc(R->rlen[r], 0);
            for (size_t i = 0; i < R->rlen[r]; i++) R->rbuf[r][i] = unit_byte(r + 100, i);
            if (k->in_place) unit_fill(k->kind, r, R->rbuf[r], R->off[P]);
            else R->sbuf[r] = unit_input(R, r, R->off[P]);
            R->rbuf0[r] = unit_alloc(R->rlen[r], 0);
            memcpy(R->rbuf0[r], R->rbuf[r], R->rlen[r]);
            break;
        case BRAID_COLL_ALLGATHER: {
            R->rbuf[r] = unit_alloc((size_t)P * bytes, UNIT_GARBAGE);
            unsigned char *mine = R->rbuf[r] + (size_t)r * bytes;
            if (!k->in_place) mine = R->sbuf[r] = unit_alloc(bytes, 0);
            for (size_t i = 0; i < bytes; i++) mine[i] = unit_byte(r, i);
            break;
        }
        case BRAID_COLL_ALLTOALL: {
            /* block d of rank r: unit_a2a_byte(r, d, i) */
            R->rbuf[r] = unit_alloc((size_t)P * bytes, UNIT_GARBAGE);
            unsigned char *in = R->rbuf[r];
            if (!k->in_place) in = R->sbuf[r] = unit_alloc((size_t)P * bytes, 0);
            for (int d = 0; d < P; d++)
                for (size_t i = 0; i < bytes; i++) in[(size_t)d * bytes + i] = unit_a2a_byte(r, d, i);
            break;
        }
        case BRAID_COLL_ALLGATHERV: {
            size_t n = R->vcount[r] * es;
            R->rbuf[r] = unit_alloc(R->vspan * es, UNIT_GARBAGE);
            unsigned char *mine = R->rbuf[r] + R->vdispl[r] * es;
            if (!k->in_place) mine = R->sbuf[r] = unit_alloc(n, 0);
            for (size_t i = 0; i < n; i++) mine[i] = unit_byte(r, i);
            break;
        }
        case BRAID_COLL_ALLTOALLV: {
            /* the block r sends d: unit_a2a_byte(r, d, i), cnt(r, d) elements;
             * sent in reverse order with gaps, received in order with others */
            if (0 == r)
                for (int i = 0; i < 4; i++) R->av[i] = calloc((size_t)P * (size_t)P, sizeof(size_t));
            size_t *sc = R->av[0] + r * P, *sd = R->av[1] + r * P, *rc = R->av[2] + r * P,
                   *rd = R->av[3] + r * P, sspan = 0, rspan = 0;
            for (int q = P - 1; q >= 0; q--) {
                sc[q] = unit_a2av_count(k, r, q);
                sd[q] = sspan;
                sspan += sc[q] + (size_t)(q % 3);
            }
            for (int q = 0; q < P; q++) {
                rc[q] = unit_a2av_count(k, q, r);
                rd[q] = rspan;
                rspan += rc[q] + (size_t)((q + 1) % 2);
            }
            if (k->in_place)   /* the input in the receive layout */
                memcpy(sd, rd, (size_t)P * sizeof *sd);
            R->avspan[r] = rspan;
            R->rbuf[r] = unit_alloc(rspan * es, UNIT_GARBAGE);
            unsigned char *in = R->rbuf[r];
            if (!k->in_place) in = R->sbuf[r] = unit_alloc(sspan * es, UNIT_GARBAGE);
            for (int d = 0; d < P; d++)
                for (size_t i = 0; i < sc[d] * es; i++) in[sd[d] * es + i] = unit_a2a_byte(r, d, i);
            break;
        }
        case BRAID_COLL_GATHER: {
            /* rank r's block: unit_byte(r, i); in place the root's sits in rbuf */
            unsigned char *mine;
            if (r == k->root) R->rbuf[r] = unit_alloc((size_t)P * bytes, UNIT_GARBAGE);
            if (r == k->root && k->in_place) mine = R->rbuf[r] + (size_t)r * bytes;
            else mine = R->sbuf[r] = unit_alloc(bytes, 0);
            for (size_t i = 0; i < bytes; i++) mine[i] = unit_byte(r, i);
            break;
        }
        case BRAID_COLL_GATHERV: {
            /* rank r's block: unit_byte(r, i); in place the root's sits in rbuf */
            size_t n = R->vcount[r] * es;
            unsigned char *mine;
            if (r == k->root) R->rbuf[r] = unit_alloc(R->vspan * es, UNIT_GARBAGE);
            if (r == k->root && k->in_place) mine = R->rbuf[r] + R->vdispl[r] * es;
            else mine = R->sbuf[r] = unit_alloc(n, 0);
            for (size_t i = 0; i < n; i++) mine[i] = unit_byte(r, i);
            break;
        }
        case BRAID_COLL_SCATTERV:
            /* the root's block d: unit_a2a_byte(root, d, i) at its
             * displacement; in place its rbuf is NULL */
            if (r == k->root) {
                R->sbuf[r] = unit_alloc(R->vspan * es, UNIT_GARBAGE);
                for (int d = 0; d < P; d++)
                    for (size_t i = 0; i < R->vcount[d] * es; i++)
                        R->sbuf[r][R->vdispl[d] * es + i] = unit_a2a_byte(r, d, i);
            }
            if (r != k->root || !k->in_place) R->rbuf[r] = unit_alloc(R->vcount[r] * es, UNIT_GARBAGE);
            break;
        case BRAID_COLL_SCATTER:
            /* the root's block d: unit_a2a_byte(root, d, i); in place its rbuf is NULL */
            if (r == k->root) {
                R->sbuf[r] = unit_alloc((size_t)P * bytes, 0);
                for (int d = 0; d < P; d++)
                    for (size_t i = 0; i < bytes; i++)
                        R->sbuf[r][(size_t)d * bytes + i] = unit_a2a_byte(r, d, i);
            }
            if (r != k->root || !k->in_place) R->rbuf[r] = unit_alloc(bytes, UNIT_GARBAGE);
            break;
        default:
            ck_abort_msg("unknown collective %d", (int)coll);
        }
    }
    int n = snprintf(R->what, sizeof R->what, "%s %s P=%d", braid_coll_name(coll), A->name, P);
    if (BRAID_COLL_BARRIER != coll)
        snprintf(R->what + n, sizeof R->what - (size_t)n,
                 " kind=%d exact=%d count=%zu%s esize=%zu root=%d in_place=%d null_rbuf=%d "
                 "chunk=%zu base=%d",
                 (int)k->kind, (int)k->exact, k->count, k->rcounts ? " (uneven rcounts)" : "", es,
                 k->root, (int)k->in_place, (int)k->null_rbuf, k->params.chunk_bytes,
                 k->params.bcube_base);
    return R;
}

/* A zeroed, formatted segment for P ranks, ncells cells of slot bytes. */
static inline void *unit_shm_segment(int P, int ncells, size_t slot)
{
    size_t n = braid_shm_segment_bytes(P, ncells, slot);
    void *seg = aligned_alloc(BRAID_SHM_LINE, (n + BRAID_SHM_LINE - 1) / BRAID_SHM_LINE * BRAID_SHM_LINE);
    ck_assert_ptr_nonnull(seg);
    memset(seg, 0, n);
    braid_shm_format(seg, P, ncells, slot);
    return seg;
}

/* The largest slot the harness gives a shm algorithm: a case with more
 * bytes per rank must be refused (BRAID_ERR_UNSUPPORTED) on every rank,
 * as the component's segment refuses what does not fit its slots. */
#define UNIT_SHM_SLOT_MAX ((size_t)16 << 10)
/* cells of the unit tests' segments */
#define UNIT_SHM_CELLS 3

/* The v forms whose shm algorithms choose a way per block or per owner
 * in the call (messages where neither the cells nor a reader carries
 * it): never refused for a size. */
static inline bool unit_per_block(braid_coll_t coll)
{
    return BRAID_COLL_ALLTOALLV == coll || BRAID_COLL_GATHERV == coll || BRAID_COLL_SCATTERV == coll;
}

/* One rank's bytes in case k of R (the size a shm slot must hold). */
static inline size_t unit_case_bytes(const unit_run_t *R)
{
    /* reduce_scatter: every rank's whole input; alltoall: P blocks;
     * scatter: the root's P - 1 for the others */
    if (BRAID_COLL_REDUCE_SCATTER == R->coll) return R->off[R->P] * R->args.esize;
    if (BRAID_COLL_ALLTOALL == R->coll) return (size_t)R->P * R->k.count * R->args.esize;
    if (BRAID_COLL_SCATTER == R->coll) return (size_t)(R->P - 1) * R->k.count * R->args.esize;
    if (BRAID_COLL_ALLGATHERV == R->coll) return R->args.count * R->args.esize;
    if (BRAID_COLL_GATHERV == R->coll || BRAID_COLL_SCATTERV == R->coll) {
        /* gatherv: the largest block; scatterv: the root's table of P + 1
         * words and its blocks for the others */
        size_t most = 0, others = (size_t)(R->P + 1) * 8;
        for (int q = 0; q < R->P; q++) {
            if (R->vcount[q] * R->args.esize > most) most = R->vcount[q] * R->args.esize;
            if (q != R->k.root) others += R->vcount[q] * R->args.esize;
        }
        return BRAID_COLL_GATHERV == R->coll ? most : others;
    }
    if (BRAID_COLL_ALLTOALLV == R->coll) {
        /* the most any rank sends the others, after its way word and a
         * table of P - 1 4-byte offsets (its blocks need not fit their
         * places in a slot of that size: the stream then runs on into
         * the next cells) */
        size_t most = 0;
        for (int r = 0; r < R->P; r++) {
            size_t need = 8 + (size_t)(R->P - 1) * 4;
            for (int q = 0; q < R->P; q++)
                if (q != r) need += R->av[0][r * R->P + q] * R->args.esize;
            if (need > most) most = need;
        }
        return most;
    }
    return R->k.count * R->args.esize;
}

/* [p, p + bytes) overlaps a buffer a rank passed (sbuf or rbuf) */
static inline bool unit_in_rank_buffers(const unit_run_t *R, const void *p, size_t bytes)
{
    const unsigned char *lo = p, *hi = lo + (bytes ? bytes : 1);
    for (int r = 0; r < R->P; r++) {
        const unsigned char *b[2] = { R->sbuf[r], R->rbuf[r] };
        for (int i = 0; i < 2; i++)
            if (NULL != b[i] && lo < b[i] + malloc_usable_size((void *)b[i]) && b[i] < hi)
                return true;
    }
    return false;
}

/* The single-copy reader of the rank threads: their "other processes"
 * share this address space, so reading rank r's memory is a memcpy - what
 * process_vm_readv does across processes. Like process_vm_readv on memory
 * the CUDA driver mapped (pinned host, device, managed: EFAULT), it refuses
 * the ranks' own buffers in the cases that mark them so (shm_driver_mem),
 * and it refuses address 0 (a buffer that was never exposed). */
static inline int unit_shm_read(void *arg, int r, void *dst, uint64_t src, size_t bytes)
{
    unit_run_t *R = arg;
    (void)r;
    atomic_fetch_add_explicit(&R->shm_copies, 1, memory_order_relaxed);
    if (0 == src || (R->shm_driver_mem && unit_in_rank_buffers(R, (const void *)(uintptr_t)src, bytes)))
        return BRAID_ERR_TRANSPORT;
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return BRAID_OK;
}

/* ... and its writer: process_vm_writev refuses the same memory */
static inline int unit_shm_write(void *arg, int r, uint64_t dst, const void *src, size_t bytes)
{
    unit_run_t *R = arg;
    (void)r;
    atomic_fetch_add_explicit(&R->shm_copies, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&R->shm_writes, 1, memory_order_relaxed);
    if (R->shm_write_fails) return BRAID_ERR_TRANSPORT;
    if (0 == dst || (R->shm_driver_mem && unit_in_rank_buffers(R, (const void *)(uintptr_t)dst, bytes)))
        return BRAID_ERR_TRANSPORT;
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return BRAID_OK;
}

/* the hook that tells the algorithms so (the glue asks the CUDA driver) */
static inline bool unit_shm_unreadable(void *arg, const void *p, size_t bytes)
{
    const unit_run_t *R = arg;
    return R->shm_driver_mem && unit_in_rank_buffers(R, p, bytes);
}

/* Rank rank's arguments of run R: its buffers, and alltoallv's counts and
 * displacements */
static inline braid_coll_args_t unit_rank_args(const unit_run_t *R, int rank)
{
    braid_coll_args_t a = R->args;
    a.sbuf = R->sbuf[rank];
    a.rbuf = R->rbuf[rank];
    if (BRAID_COLL_GATHERV == R->coll || BRAID_COLL_SCATTERV == R->coll) {
        bool root = rank == R->k.root, gather = BRAID_COLL_GATHERV == R->coll;
        a.count = R->vcount[rank];
        a.rcounts = root && gather ? R->vcount : NULL;
        a.displs = root && gather ? R->vdispl : NULL;
        a.scounts = root && !gather ? R->vcount : NULL;
        a.sdispls = root && !gather ? R->vdispl : NULL;
    }
    if (NULL != R->av[0]) {
        size_t at = (size_t)rank * (size_t)R->P;
        a.scounts = R->av[0] + at;
        a.sdispls = R->av[1] + at;
        a.rcounts = R->av[2] + at;
        a.displs = R->av[3] + at;
    }
    return a;
}

static int unit_rank_body(braid_comm_t *c, void *p)
{
    unit_run_t *R = p;
    if (NULL != R->shm_seg) {
        /* ranks are threads on a few cores: yield as an oversubscribed node does */
        int rc = braid_shm_attach(&R->shm[c->rank], R->shm_seg, c->rank, c->size, true);
        if (BRAID_OK != rc) return rc;
        if (R->shm_direct) {
            R->shm[c->rank].read = unit_shm_read;
            R->shm[c->rank].read_arg = R;
            R->shm[c->rank].write = unit_shm_write;
            R->shm[c->rank].unreadable = unit_shm_unreadable;
            R->shm[c->rank].unreadable_arg = R;
            R->shm[c->rank].direct_above = R->shm_direct_above;
            R->shm[c->rank].split_from = R->shm_split_from;
            R->shm[c->rank].far = R->shm_far;
        }
        c->shm = &R->shm[c->rank];
    }
    braid_coll_args_t a = unit_rank_args(R, c->rank);
    int rc = R->rank_fn ? R->rank_fn(R, c, &a)
                        : strict_run_counted(c, R->fn, &a, R->fail_alloc, &R->violations[c->rank],
                                             &R->scratch[c->rank]);
    R->rc[c->rank] = rc;
    /* UNSUPPORTED is reported through R->rc only, so the run is not an error */
    return BRAID_ERR_UNSUPPORTED == rc ? BRAID_OK : rc;
}

/* Run on P ranks: asserts that no message is left over (unless
 * may_leave_msgs) and no send buffer was misused; returns the first code other than OK and UNSUPPORTED of any
 * rank (R->rc has each rank's). */
static inline int unit_run_exec(unit_run_t *R)
{
    if (unit_alg_has(R->coll, R->alg, BRAID_OPT_SHM)) {
        /* a fresh segment per run: call numbers start again at 1 */
        size_t bytes = unit_case_bytes(R), slot = bytes;
        slot = slot < 1 ? 1 : slot > UNIT_SHM_SLOT_MAX ? UNIT_SHM_SLOT_MAX : slot;
        /* algorithms with a single-copy path get a reader, used above
         * the slot (cases above UNIT_SHM_SLOT_MAX) and, for odd counts, at
         * any size: the threshold (count % 4 == 1) or a slot too small
         * (count % 4 == 3) sends every size through it */
        R->shm_direct = unit_alg_has(R->coll, R->alg, BRAID_OPT_SHM_DIRECT);
        /* alltoallv without a reader (count % 4 == 3): a rank whose blocks
         * do not fit its slot has no way, and every rank runs pairwise */
        if (unit_per_block(R->coll) && 3 == (R->k.count & 3)) R->shm_direct = false;
        R->shm_direct_above = SIZE_MAX;
        if (R->shm_direct && 1 == (R->k.count & 3)) R->shm_direct_above = 0;
        /* single-copy reductions fold at the root alone or split among the
         * ranks (count % 16 < 8: split at every size) */
        R->shm_split_from = (R->k.count & 15) < 8 ? 0 : SIZE_MAX;
        /* two ranks far apart (count & 32: 1001 among them): reduce reads 4-16 KiB flat */
        R->shm_far = R->shm_direct && 0 != (R->k.count & 32);
        /* and some of those (count % 8 == 5) with buffers the reader refuses */
        R->shm_driver_mem = R->shm_direct && 5 == (R->k.count & 7);
        if (R->shm_direct && 3 == (R->k.count & 3) && bytes >= 2) slot = bytes / 2;
        /* alltoallv: count % 4 == 3, a slot too small for some rank's
         * blocks: a quarter, beyond the 3 cells its stream may span */
        if (unit_per_block(R->coll) && 3 == (R->k.count & 3) && bytes >= 2)
            slot = BRAID_COLL_ALLTOALLV == R->coll && bytes >= 4 ? bytes / 4 : bytes / 2;
        free(R->shm_seg);
        R->shm_seg = unit_shm_segment(R->P, UNIT_SHM_CELLS, slot);
        R->shm_slot = slot;
    }
    inproc_result_t res = inproc_run(R->P, unit_rank_body, NULL, R);
    R->stats = res.stats;
    ck_assert_msg(R->may_leave_msgs || res.leftover_msgs == 0, "%s: %d messages left", R->what, res.leftover_msgs);
    int violations = 0;
    for (int r = 0; r < R->P; r++) violations += R->violations[r];
    ck_assert_msg(violations == 0, "%s: %d send-buffer violations", R->what, violations);
    return res.rc;
}

/* The run succeeded on every rank, or (supported false) every rank
 * returned BRAID_ERR_UNSUPPORTED. */
/* supported, unless R runs a shm algorithm on more bytes than its slot */
static inline bool unit_shm_supported(const unit_run_t *R, bool supported)
{
    return supported && !(NULL != R->shm_seg && !R->shm_direct && !unit_per_block(R->coll) &&
                          unit_case_bytes(R) > R->shm_slot);
}

static inline void unit_check_rc(const unit_run_t *R, int exec_rc, bool supported)
{
    supported = unit_shm_supported(R, supported);
    ck_assert_msg(exec_rc == BRAID_OK, "%s: rc %d", R->what, exec_rc);
    int bad_rc = 0;
    for (int r = 0; r < R->P; r++) bad_rc += R->rc[r] != R->rc[0];
    ck_assert_msg(bad_rc == 0, "%s: ranks disagree on the return code", R->what);
    ck_assert_msg(R->rc[0] == (supported ? BRAID_OK : BRAID_ERR_UNSUPPORTED), "%s: rc %d", R->what,
                  R->rc[0]);
}

/* Every rank numbered the same calls on the segment: a call that spans
 * cells, or a rank that skips one, would leave the next call on other
 * cells than its peers' (a hang the one call of a run does not show) */
static inline void unit_check_shm_numbers(const unit_run_t *R)
{
    if (NULL == R->shm_seg) return;
    for (int r = 1; r < R->P; r++)
        ck_assert_msg(R->shm[r].seq == R->shm[0].seq, "%s: rank %d numbered %llu calls, rank 0 %llu",
                      R->what, r, (unsigned long long)R->shm[r].seq, (unsigned long long)R->shm[0].seq);
}

static inline void unit_run_free(unit_run_t *R)
{
    for (int r = 0; r < R->P; r++) {
        free(R->sbuf[r]);
        free(R->rbuf[r]);
        free(R->rbuf0[r]);
    }
    for (int i = 0; i < 4; i++) free(R->av[i]);
    free(R->stats);
    free(R->shm_seg);
    free(R);
}

/* ------------------------------------------------------------------ */
/* values                                                              */
/* ------------------------------------------------------------------ */

/* Wrong elements of got against ref: bit for bit, except double sums,
 * within 1e-9 (relative) of the rank-order reference. */
static inline size_t unit_bad_values(unit_op_kind_t kind, const void *got, const void *ref, size_t n)
{
    size_t bad = 0;
    if (UNIT_OP_SUM_F64 == kind) {
        const double *x = got, *y = ref;
        for (size_t i = 0; i < n; i++)
            if (!(fabs(x[i] - y[i]) <= 1e-9 * fmax(1.0, fabs(y[i])))) bad++;
        return bad;
    }
    size_t es = unit_op_esize(kind);
    if (0 == memcmp(got, ref, n * es)) return 0;
    for (size_t i = 0; i < n; i++) bad += 0 != memcmp((const char *)got + i * es, (const char *)ref + i * es, es);
    return bad;
}

/* Every rank's result against the reference of the collective; counted
 * first and asserted once (every passing ck_assert costs a pipe write in
 * Check's fork mode). */
static inline void unit_check_values(const unit_run_t *R)
{
    const unit_case_t *k = &R->k;
    int P = R->P;
    size_t es = R->args.esize, bytes = k->count * es, bad = 0, differ = 0, untouched = 0;
    int first = -1;
    unsigned char *ref = NULL;
    switch (R->coll) {
    case BRAID_COLL_BARRIER:
        return;
    case BRAID_COLL_BCAST:
        ref = unit_alloc(bytes, 0);
        for (size_t i = 0; i < bytes; i++) ref[i] = unit_byte(1000, i);
        for (int r = 0; r < P; r++) {
            size_t b = 0;
            for (size_t i = 0; i < bytes; i++) b += R->rbuf[r][i] != ref[i];
            if (b && first < 0) first = r;
            bad += b;
        }
        break;
    case BRAID_COLL_ALLREDUCE:
    case BRAID_COLL_REDUCE:
        ref = unit_alloc(bytes, 0);
        unit_reference(k->kind, P, 0, k->count, ref);
        for (int r = 0; r < P; r++) {
            if (BRAID_COLL_REDUCE == R->coll && r != k->root) {
                /* a non-root's rbuf is not written */
                if (R->rbuf[r])
                    for (size_t i = 0; i < bytes; i++) untouched += R->rbuf[r][i] != UNIT_GARBAGE;
                continue;
            }
            size_t b = unit_bad_values(k->kind, R->rbuf[r], ref, k->count);
            if (b && first < 0) first = r;
            bad += b;
            /* inexact ops too: every rank holds the same bits */
            if (BRAID_COLL_ALLREDUCE == R->coll) differ += 0 != memcmp(R->rbuf[r], R->rbuf[0], bytes);
        }
        break;
    case BRAID_COLL_SCAN:
    case BRAID_COLL_EXSCAN: {
        /* rank r: the reduction of ranks 0..r (exscan: 0..r-1); exscan's
         * rank 0 keeps what it had (its input in place, else garbage) */
        bool ex = BRAID_COLL_EXSCAN == R->coll;
        ref = unit_alloc(bytes, 0);
        for (int r = 0; r < P; r++) {
            size_t b;
            if (ex && 0 == r) {
                if (k->in_place) unit_fill(k->kind, 0, ref, k->count);
                else memset(ref, UNIT_GARBAGE, bytes);
                b = 0 != memcmp(R->rbuf[0], ref, bytes);
            } else {
                unit_reference(k->kind, ex ? r : r + 1, 0, k->count, ref);
                b = unit_bad_values(k->kind, R->rbuf[r], ref, k->count);
            }
            if (b && first < 0) first = r;
            bad += b;
        }
        break;
    }
    case BRAID_COLL_REDUCE_SCATTER:
        for (int r = 0; r < P; r++) {
            size_t n = R->off[r + 1] - R->off[r];
            unsigned char *block = unit_alloc(n * es, 0);
            unit_reference(k->kind, P, R->off[r], n, block);
            size_t b = unit_bad_values(k->kind, R->rbuf[r], block, n);
            if (b && first < 0) first = r;
            bad += b;
            free(block);
        }
        break;
    case BRAID_COLL_ALLTOALL:
        for (int r = 0; r < P; r++) {
            size_t b = 0;
            for (int s = 0; s < P; s++)
                for (size_t i = 0; i < bytes; i++)
                    b += R->rbuf[r][(size_t)s * bytes + i] != unit_a2a_byte(s, r, i);
            if (b && first < 0) first = r;
            bad += b;
        }
        break;
    case BRAID_COLL_ALLTOALLV:
        /* rank q's block at its place, the gaps untouched */
        for (int r = 0; r < P; r++) {
            const size_t *rc = R->av[2] + r * P, *rd = R->av[3] + r * P;
            unsigned char *want = unit_alloc(R->avspan[r] * es, UNIT_GARBAGE);
            for (int q = 0; q < P; q++)
                for (size_t i = 0; i < rc[q] * es; i++) want[rd[q] * es + i] = unit_a2a_byte(q, r, i);
            size_t b = 0;
            for (size_t i = 0; i < R->avspan[r] * es; i++) b += R->rbuf[r][i] != want[i];
            free(want);
            if (b && first < 0) first = r;
            bad += b;
        }
        break;
    case BRAID_COLL_ALLGATHERV:
        /* every block at its place, and the gaps between them untouched */
        ref = unit_alloc(R->vspan * es, UNIT_GARBAGE);
        for (int q = 0; q < P; q++)
            for (size_t i = 0; i < R->vcount[q] * es; i++) ref[R->vdispl[q] * es + i] = unit_byte(q, i);
        for (int r = 0; r < P; r++) {
            size_t b = 0;
            for (size_t i = 0; i < R->vspan * es; i++) b += R->rbuf[r][i] != ref[i];
            if (b && first < 0) first = r;
            bad += b;
        }
        break;
    case BRAID_COLL_GATHER:
        for (int s = 0; s < P; s++)
            for (size_t i = 0; i < bytes; i++)
                bad += R->rbuf[k->root][(size_t)s * bytes + i] != unit_byte(s, i);
        if (bad) first = k->root;
        break;
    case BRAID_COLL_GATHERV:
        /* every block at its place in the root's rbuf, the gaps untouched */
        ref = unit_alloc(R->vspan * es, UNIT_GARBAGE);
        for (int q = 0; q < P; q++)
            for (size_t i = 0; i < R->vcount[q] * es; i++) ref[R->vdispl[q] * es + i] = unit_byte(q, i);
        for (size_t i = 0; i < R->vspan * es; i++) bad += R->rbuf[k->root][i] != ref[i];
        if (bad) first = k->root;
        break;
    case BRAID_COLL_SCATTERV:
        for (int r = 0; r < P; r++) {
            size_t b = 0;
            for (size_t i = 0; i < R->vcount[r] * es && NULL != R->rbuf[r]; i++)
                b += R->rbuf[r][i] != unit_a2a_byte(k->root, r, i);
            if (b && first < 0) first = r;
            bad += b;
        }
        break;
    case BRAID_COLL_SCATTER:
        for (int r = 0; r < P; r++) {
            size_t b = 0;
            for (size_t i = 0; i < bytes && NULL != R->rbuf[r]; i++)
                b += R->rbuf[r][i] != unit_a2a_byte(k->root, r, i);
            if (b && first < 0) first = r;
            bad += b;
        }
        break;
    case BRAID_COLL_ALLGATHER:
        ref = unit_alloc((size_t)P * bytes, 0);
        for (int b = 0; b < P; b++)
            for (size_t i = 0; i < bytes; i++) ref[(size_t)b * bytes + i] = unit_byte(b, i);
        for (int r = 0; r < P; r++) {
            size_t b = 0;
            for (size_t i = 0; i < (size_t)P * bytes; i++) b += R->rbuf[r][i] != ref[i];
            if (b && first < 0) first = r;
            bad += b;
        }
        break;
    default:
        break;
    }
    free(ref);
    ck_assert_msg(0 == bad && 0 == differ && 0 == untouched,
                  "%s: %zu wrong values (first on rank %d), %zu ranks differ from rank 0, %zu bytes "
                  "written to non-root rbuf",
                  R->what, bad, first, differ, untouched);
}

/* ------------------------------------------------------------------ */
/* contracts                                                           */
/* ------------------------------------------------------------------ */

/* messages and bytes that rank sends in run R */
typedef unit_traffic_t (*unit_model_fn_t)(const unit_run_t *R, int rank);

/* Every rank's messages and bytes against model (UNIT_ANY: not checked);
 * on one rank nothing is sent, whatever the algorithm. */
static inline void unit_check_traffic(const unit_run_t *R, unit_model_fn_t model)
{
    if (1 == R->P)
        ck_assert_msg(0 == R->stats[0].msgs_sent && 0 == R->stats[0].bytes_sent,
                      "%s: one rank sent %llu messages", R->what,
                      (unsigned long long)R->stats[0].msgs_sent);
    if (NULL == model) return;
    int wrong = 0, first = -1;
    for (int r = 0; r < R->P; r++) {
        unit_traffic_t t = model(R, r);
        if ((t.msgs != UNIT_ANY && t.msgs != R->stats[r].msgs_sent) ||
            (t.bytes != UNIT_ANY && t.bytes != R->stats[r].bytes_sent)) {
            if (first < 0) first = r;
            wrong++;
        }
    }
    if (wrong) {
        unit_traffic_t t = model(R, first);
        ck_abort_msg("%s: %d ranks off contract; rank %d sent %llu msgs / %llu bytes, expected "
                     "%llu / %llu (%llu: any)",
                     R->what, wrong, first, (unsigned long long)R->stats[first].msgs_sent,
                     (unsigned long long)R->stats[first].bytes_sent, (unsigned long long)t.msgs,
                     (unsigned long long)t.bytes, (unsigned long long)UNIT_ANY);
    }
}

/* Ranks that sent more than limit bytes. */
static inline int unit_ranks_over(const unit_run_t *R, uint64_t limit)
{
    int over = 0;
    for (int r = 0; r < R->P; r++) over += R->stats[r].bytes_sent > limit;
    return over;
}

static inline uint64_t unit_total_bytes(const unit_run_t *R)
{
    uint64_t total = 0;
    for (int r = 0; r < R->P; r++) total += R->stats[r].bytes_sent;
    return total;
}

/* A collective's contract for one algorithm: the messages and bytes of
 * each rank (model), and totals and bounds that do not depend on the model
 * (asserted by check); or, where neither can be stated, values_only: why
 * (and where else the algorithm's traffic is checked). Every algorithm of
 * the registry has a row with at least one of the three. */
typedef struct unit_contract {
    unit_model_fn_t model;
    void (*check)(const unit_run_t *R);
    const char *values_only;
} unit_contract_t;

/* the contract of algorithms that send no message at all (the shm tier:
 * loads and stores in the node's segment) */
static inline unit_traffic_t unit_model_silent(const unit_run_t *R, int rank)
{
    (void)R;
    (void)rank;
    unit_traffic_t t = { 0, 0 };
    return t;
}

/* Row alg of a test's contract table (n rows, by registry id); fails the
 * test when the algorithm has none. */
static inline const unit_contract_t *unit_contract_of(braid_coll_t coll, int alg,
                                                      const unit_contract_t *table, int n)
{
    const unit_contract_t *c = alg > 0 && alg < n ? &table[alg] : NULL;
    ck_assert_msg(NULL != c && (c->model || c->check || c->values_only),
                  "%s %s has no row in the test's contract table (unit_contract_t, by registry "
                  "id): give it a model of each rank's messages and bytes, a check of its "
                  "bounds, or values_only with the reason", braid_coll_name(coll),
                  braid_alg_name(coll, alg));
    return c;
}

/* In place (alltoall, alltoallv): every rank's scratch at most its largest
 * block for another rank, most(R, r) bytes, as braid_scratch_get rounds it,
 * and nothing else: the ranks swap a pair's blocks through it rather than
 * copy their whole input. Not checked where the reader refuses the buffers
 * (shm_driver_mem), whose copy to readable memory is the whole input. */
static inline void unit_check_swap_scratch(const unit_run_t *R, size_t (*most)(const unit_run_t *, int))
{
    if (!R->k.in_place || R->shm_driver_mem) return;
    int over = 0, first = -1;
    for (int r = 0; r < R->P; r++) {
        size_t limit = (most(R, r) + 63) / 64 * 64;
        if (R->scratch[r] > (limit ? limit : 64) && first < 0) first = r;
        over += R->scratch[r] > (limit ? limit : 64);
    }
    ck_assert_msg(0 == over, "%s: %d ranks used more scratch than one block in place (rank %d: %zu bytes, its largest block %zu)",
                  R->what, over, first, first < 0 ? 0 : R->scratch[first], first < 0 ? 0 : most(R, first));
}

static inline void unit_check_contract(const unit_run_t *R, const unit_contract_t *table, int n)
{
    const unit_contract_t *c = unit_contract_of(R->coll, R->alg, table, n);
    unit_check_traffic(R, c->model);
    if (c->check) c->check(R);
}

/* dbtree (allreduce, bcast, reduce): per tree a rank sends each chunk once
 * per send edge of the tree (braid_trees.h), for the tree kind and root
 * the algorithm uses for this op. An explicit chunk size is taken as is
 * (whole elements, at least one); only the adaptive default comes from the
 * library. */
static inline unit_traffic_t unit_model_dbtree(const unit_run_t *R, int rank)
{
    unit_traffic_t e = { 0, 0 };
    const braid_coll_args_t *a = &R->args;
    int P = R->P;
    if (P < 2 || 0 == a->count) return e;
    size_t chunk = a->params.chunk_bytes ? a->params.chunk_bytes / a->esize : braid_dbt_chunk_elems(a, P);
    if (0 == chunk) chunk = 1;
    bool comm = a->op.commutative;
    braid_dbtree_t t = { P, BRAID_DBTREE_NCCL, -1 };
    if (BRAID_COLL_ALLREDUCE == R->coll && !comm) t.kind = BRAID_DBTREE_INORDER;
    if (BRAID_COLL_BCAST == R->coll || (BRAID_COLL_REDUCE == R->coll && comm)) t.root = a->root;
    if (BRAID_COLL_REDUCE == R->coll && !comm) t.kind = BRAID_DBTREE_INORDER;
    for (int w = 0; w < 2; w++) {
        braid_tree_node_t n;
        braid_dbtree_get(&t, w, rank, &n);
        size_t cnt = braid_block_count(a->count, 2, w);
        uint64_t K = (cnt + chunk - 1) / chunk;
        int sends = 0;
        if (BRAID_COLL_ALLREDUCE == R->coll) sends = (n.parent >= 0) + n.nchildren;
        else if (BRAID_COLL_BCAST == R->coll) sends = n.nchildren;
        else sends = (n.parent >= 0) + (n.parent < 0 && rank != a->root);
        e.msgs += (uint64_t)sends * K;
        e.bytes += (uint64_t)sends * cnt * a->esize;
    }
    return e;
}

/* ------------------------------------------------------------------ */
/* matrices shared by several collectives                              */
/* ------------------------------------------------------------------ */

/* The sizes at which the full matrices run (the others get sweeps). */
static const int unit_p_list[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 64 };
#define UNIT_P_LIST_LEN ((int)(sizeof unit_p_list / sizeof *unit_p_list))
/* how many sizes of unit_p_list are at most unit_np(P) (it is sorted) */
static inline int unit_np_list(int max)
{
    int k = 0;
    while (k < UNIT_P_LIST_LEN && unit_p_list[k] <= unit_np(max)) k++;
    return k;
}
#define UNIT_NP_LIST unit_np_list(UNIT_MAX_P)

static inline bool unit_in_p_list(int P)
{
    for (int k = 0; k < UNIT_P_LIST_LEN; k++)
        if (unit_p_list[k] == P) return true;
    return false;
}

static const unit_op_kind_t unit_ops3[] = { UNIT_OP_SUM_I64, UNIT_OP_SUM_F64, UNIT_OP_MATMUL };

/* counts {0, 1, P-1, P, P+1, 1001, 2^16+3} for P; P-1 and P up to 16 only,
 * the largest only where it stays cheap */
static inline int unit_counts_for(int P, unit_op_kind_t op, size_t *c)
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

typedef void (*unit_case_fn_t)(int alg, int P, const unit_case_t *k);

/* bcast and reduce: every op (bcast: bytes), the counts of
 * unit_counts_for; every root (roots 0, P/2, P-1 beyond P = 9) for counts
 * 1 and P+1 with the variants alternating, roots 0 and the last otherwise.
 * Variant 1: bcast 8*count+1 bytes, reduce in place at the root, and a
 * small chunk (2 elements; bcast 5 bytes) for an algorithm with a chunk
 * option; variant 0: bcast 8*count bytes, reduce with rbuf NULL on the
 * non-roots. */
static inline void unit_rooted_matrix(braid_coll_t coll, int alg, int P, unit_case_fn_t run)
{
    int roots[3] = { 0, P / 2, P - 1 };
    int nroots = P <= 9 ? P : 3;
    bool bcast = BRAID_COLL_BCAST == coll;
    bool chunked = unit_alg_has(coll, alg, BRAID_OPT_CHUNK | BRAID_OPT_TREE_CHUNK);
    for (int o = 0; o < (bcast ? 1 : 3); o++) {
        size_t counts[8];
        int nc = unit_counts_for(P, unit_ops3[o], counts);
        for (int c = 0; c < nc; c++)
            for (int ri = 0; ri < nroots; ri++)
                for (int v = 0; v < 2; v++) {
                    bool every = 1 == counts[c] || (size_t)P + 1 == counts[c];
                    if (every && v != (ri & 1)) continue;
                    if (!every && ri != 0 && ri != nroots - 1) continue;
                    if (!every && counts[c] > 1001 && v) continue;
                    unit_case_t k = { .kind = unit_ops3[o], .count = counts[c] };
                    if (bcast) k.count = counts[c] * 8 + (size_t)v;
                    k.root = P <= 9 ? ri : roots[ri];
                    k.in_place = v;
                    k.null_rbuf = !v;
                    if (chunked && v && counts[c] <= 1001)
                        k.params.chunk_bytes = bcast ? 5 : 2 * unit_op_esize(k.kind);
                    run(alg, P, &k);
                }
    }
}

/* halving_doubling (allreduce and reduce_scatter) over the binary blocks
 * of P (powers of two, largest first), in M0 groups (M0 the largest block)
 * whose element edges edge(R, M0, g) gives, g = 0..M0. */
typedef size_t (*unit_edge_fn_t)(const unit_run_t *R, int M0, int g);

typedef struct unit_hd {
    int nb, base[32], lg[32];   /* the blocks: ranks [base, base + 2^lg) */
    int me, M0, q, k;           /* the rank's block, its index there and that block's lg */
    int g0, g1;                 /* the rank's groups after the halving */
    int seg0[33], seg1[33];     /* its groups after level i (1..k) */
} unit_hd_t;

/* The part both algorithms share: intra-block halving sends the other half
 * of the current range; a non-largest block sends its piece up (one chunked
 * message per sub-piece of the next larger block). Adds rank r's messages
 * and bytes (ce elements per chunk) to t and describes its place in h. */
static inline void unit_hd_halving(const unit_run_t *R, int r, unit_edge_fn_t edge, size_t ce,
                                   unit_hd_t *h, unit_traffic_t *t)
{
    int P = R->P;
    size_t es = R->args.esize;
    h->nb = 0;
    h->me = 0;
    for (int bit = 30, b0 = 0; bit >= 0; bit--)
        if (P & (1 << bit)) {
            h->base[h->nb] = b0;
            h->lg[h->nb] = bit;
            if (r >= b0 && r < b0 + (1 << bit)) h->me = h->nb;
            b0 += 1 << bit;
            h->nb++;
        }
    int M0 = h->M0 = 1 << h->lg[0];
    h->q = r - h->base[h->me];
    h->k = h->lg[h->me];
    h->g0 = 0;
    h->g1 = M0;
    for (int i = 0; i < h->k; i++) {
        int mid = (h->g0 + h->g1) / 2;
        size_t lo = edge(R, M0, mid) - edge(R, M0, h->g0), hi = edge(R, M0, h->g1) - edge(R, M0, mid);
        if ((h->q >> i) & 1) { t->bytes += lo * es; t->msgs += unit_nchunks(lo, ce); h->g0 = mid; }
        else { t->bytes += hi * es; t->msgs += unit_nchunks(hi, ce); h->g1 = mid; }
        h->seg0[i + 1] = h->g0;
        h->seg1[i + 1] = h->g1;
    }
    if (h->me > 0) {
        int w = M0 >> h->lg[h->me - 1];
        for (int L = h->g0 / w; L < h->g1 / w; L++) {
            size_t n = edge(R, M0, (L + 1) * w) - edge(R, M0, L * w);
            t->bytes += n * es;
            t->msgs += unit_nchunks(n, ce);
        }
    }
}

/* reduce_scatter writes nothing of rbuf but the result block rbuf[0, mine)
 * (in place the rest of the input keeps its values, as MPI implementations
 * leave it), and nothing at all when it declines. */
static inline void unit_check_untouched(const unit_run_t *R, bool supported)
{
    if (BRAID_COLL_REDUCE_SCATTER != R->coll) return;
    for (int r = 0; r < R->P; r++) {
        size_t keep = supported ? (R->off[r + 1] - R->off[r]) * R->args.esize : 0, at = keep;
        while (at < R->rlen[r] && R->rbuf[r][at] == R->rbuf0[r][at]) at++;
        ck_assert_msg(at == R->rlen[r], "%s: rank %d wrote rbuf byte %zu beyond its %zu-byte result",
                      R->what, r, at, keep);
    }
}

/* Execute R and check the return code: BRAID_ERR_UNSUPPORTED on every rank
 * when supported is false or the algorithm does not take the op (its
 * registry row's noncomm, braid_alg_takes_op); when it ran, the values and
 * the contract (row R->alg of table, n rows; table NULL where the caller
 * runs the algorithm on views that change its traffic: only that one rank
 * sends nothing). Frees R. */
static inline void unit_run_check(unit_run_t *R, bool supported, const unit_contract_t *table, int n)
{
    supported = supported && braid_alg_takes_op(R->coll, R->alg, R->P, R->args.op.commutative,
                                                R->args.exact);
    int rc = unit_run_exec(R);
    supported = unit_shm_supported(R, supported);
    unit_check_rc(R, rc, supported);
    unit_check_shm_numbers(R);
    unit_check_untouched(R, supported);
    if (supported) {
        unit_check_values(R);
        if (table) unit_check_contract(R, table, n);
        else unit_check_traffic(R, NULL);
    }
    unit_run_free(R);
}

/* The rooted collectives' cases (gather, scatter and their v forms): at
 * P ranks, every root to P = 9 and roots 0, P / 2 and P - 1 above, each
 * of the counts 0, 1, 3, 1001, 2 (the callers say what each exercises)
 * but 0 and 1001 above P = 16, in place and not, elements of 8 or 32
 * bytes alternating; each run checked against contracts (n rows). */
static inline void unit_rooted_cases(braid_coll_t coll, int alg, int P, const unit_contract_t *contracts,
                                     int n)
{
    static const size_t counts[] = { 0, 1, 3, 1001, 2 };
    int roots[3] = { 0, P / 2, P - 1 }, nroots = P <= 9 ? P : 3;
    for (int ri = 0; ri < nroots; ri++)
        for (int ci = 0; ci < 5; ci++) {
            if (P > 16 && (ci == 0 || ci == 3)) continue;
            for (int ip = 0; ip < 2; ip++) {
                unit_case_t k = { .count = counts[ci], .esize = (ci + ip + ri) % 2 ? 32 : 8,
                                  .in_place = ip, .root = P <= 9 ? ri : roots[ri] };
                unit_run_check(unit_run_new(coll, alg, P, &k), true, contracts, n);
            }
        }
}

#endif
