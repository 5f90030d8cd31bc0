/*
 * test_cuda_pipeline.c - the device-buffer staging pipeline
 * (cuda/braid_devpipe.c) driven by a mock device in host memory
 * (mock_device.h) that completes copies late and out of order between its
 * two queues, over the in-process transport, P = 1..8:
 *
 *  - values: allreduce (every algorithm), reduce (every algorithm, several
 *    roots) and bcast (every algorithm, several roots) through the pipeline
 *    with several segment sizes, every rank's send and receive buffers on
 *    the "device" or the host independently (in place or not), against
 *    locally computed references; int64 sums exactly, double sums
 *    bit-identical across ranks;
 *  - discipline: no copy submitted over bytes a queued copy still uses, no
 *    host step over bytes a queued copy still uses, directions right,
 *    every event waited before it is recorded again, nothing left queued;
 *  - ordering: the device-to-host copy of segment k+1 and the host-to-device
 *    copy of segment k-1 are queued and still unfinished while the host
 *    step of segment k runs;
 *  - errors: a failing copy or wait on one rank is reported there, the other
 *    ranks finish (no hang, no message left over); an unsupported op stops
 *    before any copy; staging falls back to malloc when pinned memory fails;
 *    a job missing a buffer is refused before any message.
 */
#include "unit_common.h"
#include "unit_ops.h"
#include "mock_device.h"
#include "braid_devpipe.h"

#include <stdio.h>
#include <string.h>

#define MAX_P 8

typedef enum { K_ALLREDUCE, K_REDUCE, K_BCAST } kind_t;

/* where a rank's buffers live */
typedef enum {
    PL_HOST_INPLACE, PL_HOST, PL_DEV_INPLACE, PL_DEV_DEV, PL_DEV_HOST, PL_HOST_DEV, PL_N
} placement_t;
static const char *pl_name[PL_N] = { "host-inplace", "host/host", "dev-inplace", "dev/dev",
                                     "dev/host", "host/dev" };
static bool pl_in_dev(placement_t p) { return p == PL_DEV_INPLACE || p == PL_DEV_DEV || p == PL_DEV_HOST; }
static bool pl_out_dev(placement_t p) { return p == PL_DEV_INPLACE || p == PL_DEV_DEV || p == PL_HOST_DEV; }
static bool pl_inplace(placement_t p) { return p == PL_HOST_INPLACE || p == PL_DEV_INPLACE; }

typedef struct rank_ctx {
    mock_dev_t *dev;
    braid_devpipe_t pipe;
    braid_comm_t *comm;
    braid_algo_fn_t fn;
    int rc;
    long steps;
} rank_ctx_t;

typedef struct run {
    kind_t kind;
    braid_algo_fn_t fn;
    const char *name;
    unit_op_kind_t op;
    int P, root;
    size_t count, seg;
    mock_mode_t mode;
    placement_t pl[MAX_P];
    bool unsupported;          /* the step returns BRAID_ERR_UNSUPPORTED */
    int fail_copy_rank, fail_copy_at, fail_wait_at;
    bool fail_host_alloc;
    /* per rank */
    rank_ctx_t ctx[MAX_P];
    void *in[MAX_P], *out[MAX_P];
} run_t;

/* One host step: the algorithm on one segment, after checking that no
 * queued copy still uses the bytes it reads or writes. */
static int step(void *arg, int segment, const braid_coll_args_t *a)
{
    rank_ctx_t *x = arg;
    size_t len = a->count * a->esize;
    if (a->sbuf) mock_host_access(x->dev, a->sbuf, len, false);
    if (a->rbuf) mock_host_access(x->dev, a->rbuf, len, true);
    mock_log(x->dev, MOCK_T_STEP_START, NULL, segment);
    x->steps++;
    int rc = x->fn(x->comm, a);
    mock_log(x->dev, MOCK_T_STEP_END, NULL, segment);
    return rc;
}

static int unsupported_step(void *arg, int segment, const braid_coll_args_t *a)
{
    (void)a; (void)segment;
    ((rank_ctx_t *)arg)->steps++;
    return BRAID_ERR_UNSUPPORTED;
}

static int body(braid_comm_t *c, void *p)
{
    run_t *R = p;
    int r = c->rank;
    rank_ctx_t *x = &R->ctx[r];
    x->comm = c;
    x->fn = R->fn;
    braid_scratch_t scratch;
    memset(&scratch, 0, sizeof scratch);
    braid_devpipe_job_t job;
    memset(&job, 0, sizeof job);
    job.tmpl.count = R->count;
    job.tmpl.esize = R->kind == K_BCAST ? 1 : unit_op_esize(R->op);
    job.tmpl.op = unit_op(R->op);
    job.tmpl.exact = R->op == UNIT_OP_SUM_I64;
    job.tmpl.root = R->root;
    job.tmpl.scratch = &scratch;
    job.seg_count = R->seg;
    job.run = R->unsupported ? unsupported_step : step;
    job.run_arg = x;
    placement_t pl = R->pl[r];
    switch (R->kind) {
    case K_ALLREDUCE:
        job.kind = BRAID_DEVPIPE_ALLREDUCE;
        job.in = R->in[r]; job.in_dev = pl_in_dev(pl);
        job.out = R->out[r]; job.out_dev = pl_out_dev(pl);
        break;
    case K_REDUCE:
        job.kind = BRAID_DEVPIPE_REDUCE;
        job.in = R->in[r]; job.in_dev = pl_in_dev(pl);
        job.out = r == R->root ? R->out[r] : NULL; job.out_dev = pl_out_dev(pl);
        break;
    case K_BCAST:
        job.kind = BRAID_DEVPIPE_BCAST;
        job.in = r == R->root ? R->in[r] : NULL; job.in_dev = pl_in_dev(pl);
        job.out = r == R->root ? NULL : R->out[r]; job.out_dev = pl_out_dev(pl);
        break;
    }
    braid_device_t dev = { &mock_devops, x->dev };
    x->rc = braid_devpipe_run(&x->pipe, &dev, &job);
    braid_scratch_release(&scratch);
    return BRAID_OK;   /* per-rank codes are checked through x->rc */
}

/* ---------------- setting up and checking one run ---------------- */

static void fill_input(const run_t *R, int r, void *buf)
{
    if (R->kind == K_BCAST) {
        for (size_t i = 0; i < R->count; i++) ((unsigned char *)buf)[i] = unit_byte(R->root, i);
    } else {
        unit_fill(R->op, r, buf, R->count);
    }
}

static void setup(run_t *R)
{
    size_t es = R->kind == K_BCAST ? 1 : unit_op_esize(R->op);
    size_t bytes = R->count * es;
    for (int r = 0; r < R->P; r++) {
        rank_ctx_t *x = &R->ctx[r];
        memset(x, 0, sizeof *x);
        x->dev = calloc(1, sizeof(mock_dev_t));
        ck_assert_ptr_nonnull(x->dev);
        mock_init(x->dev, R->mode, (unsigned)(r * 7919 + R->P * 31 + (int)R->seg));
        x->dev->fail_host_alloc = R->fail_host_alloc;
        if (r == R->fail_copy_rank) {
            x->dev->fail_copy_at = R->fail_copy_at;
            x->dev->fail_wait_at = R->fail_wait_at;
        }
        placement_t pl = R->pl[r];
        bool has_in = R->kind != K_BCAST || r == R->root;
        bool has_out = R->kind == K_ALLREDUCE || (R->kind == K_REDUCE && r == R->root) ||
                       (R->kind == K_BCAST && r != R->root);
        R->in[r] = R->out[r] = NULL;
        /* device buffers are written through the mock's backing: the host
         * cannot touch them */
        if (pl_inplace(pl) && R->kind != K_BCAST && (has_out || R->kind == K_ALLREDUCE)) {
            void *b = pl_in_dev(pl) ? mock_dev_alloc(x->dev, bytes) : malloc(bytes);
            ck_assert_ptr_nonnull(b);
            fill_input(R, r, mock_dev_host(x->dev, b));
            R->in[r] = R->out[r] = b;
            continue;
        }
        if (has_in) {
            R->in[r] = pl_in_dev(pl) ? mock_dev_alloc(x->dev, bytes) : malloc(bytes);
            ck_assert_ptr_nonnull(R->in[r]);
            fill_input(R, r, mock_dev_host(x->dev, R->in[r]));
        }
        if (has_out) {
            R->out[r] = pl_out_dev(pl) ? mock_dev_alloc(x->dev, bytes) : malloc(bytes);
            ck_assert_ptr_nonnull(R->out[r]);
            memset(mock_dev_host(x->dev, R->out[r]), 0xa5, bytes);
        }
    }
}

static void teardown(run_t *R)
{
    for (int r = 0; r < R->P; r++) {
        rank_ctx_t *x = &R->ctx[r];
        void *bufs[2] = { R->in[r], R->out[r] == R->in[r] ? NULL : R->out[r] };
        for (int i = 0; i < 2; i++)   /* host buffers; the mock frees its "device" ones */
            if (bufs[i] && !mock_is_dev(x->dev, bufs[i], 1)) free(bufs[i]);
        braid_devpipe_release(&x->pipe);
        mock_dev_free_all(x->dev);
        free(x->dev);
    }
}

/* Count the elements of the run's outputs that differ from the reference
 * and the device-discipline violations, over every rank. */
typedef struct verdict {
    long wrong, hazards, host_hazards, bad_copies, bad_waits, rerecords, pending, bad_rc;
    long differing_bits;   /* double sums: ranks that disagree with rank 0's bits */
} verdict_t;

static verdict_t check(run_t *R)
{
    verdict_t v = { 0 };
    size_t es = R->kind == K_BCAST ? 1 : unit_op_esize(R->op);
    unsigned char *ref = malloc(R->count * es + 1);
    if (R->kind == K_BCAST) fill_input(R, R->root, ref);
    else unit_reference(R->op, R->P, 0, R->count, ref);
    const void *first_out = NULL;
    for (int r = 0; r < R->P; r++) {
        rank_ctx_t *x = &R->ctx[r];
        mock_dev_t *d = x->dev;
        v.hazards += d->hazards;
        v.host_hazards += d->host_hazards;
        v.bad_copies += d->bad_copies;
        v.bad_waits += d->bad_waits;
        v.rerecords += d->rerecords;
        v.pending += mock_pending(d);
        if (BRAID_OK != x->rc) v.bad_rc++;
        const unsigned char *out = mock_dev_host(d, R->out[r]);
        if (NULL == out || (R->kind == K_REDUCE && r != R->root)) continue;
        if (R->op == UNIT_OP_SUM_F64 && R->kind != K_BCAST) {
            for (size_t i = 0; i < R->count; i++) {
                double got, want;
                memcpy(&got, out + i * 8, 8);
                memcpy(&want, ref + i * 8, 8);
                if (!(got == got) || (got - want > 1e-6 * (want > 0 ? want : -want) + 1e-9) ||
                    (want - got > 1e-6 * (want > 0 ? want : -want) + 1e-9))
                    v.wrong++;
            }
            if (NULL == first_out) first_out = out;
            else if (memcmp(first_out, out, R->count * 8)) v.differing_bits++;
        } else if (memcmp(out, ref, R->count * es)) {
            for (size_t i = 0; i < R->count; i++)
                if (memcmp(out + i * es, ref + i * es, es)) v.wrong++;
        }
    }
    free(ref);
    return v;
}

static void run_and_check(run_t *R)
{
    setup(R);
    inproc_result_t res = inproc_run(R->P, body, NULL, R);
    verdict_t v = check(R);
    char pls[256] = "";
    for (int r = 0; r < R->P; r++) {
        strncat(pls, pl_name[R->pl[r]], sizeof(pls) - strlen(pls) - 2);
        strncat(pls, " ", sizeof(pls) - strlen(pls) - 1);
    }
    free(res.stats);
    teardown(R);
    ck_assert_msg(BRAID_OK == res.rc && 0 == res.leftover_msgs && 0 == v.bad_rc && 0 == v.wrong &&
                      0 == v.differing_bits && 0 == v.hazards && 0 == v.host_hazards &&
                      0 == v.bad_copies && 0 == v.bad_waits && 0 == v.rerecords && 0 == v.pending,
                  "%s P=%d root=%d count=%zu seg=%zu mode=%d [%s]: rc=%d leftover=%d bad_rc=%ld "
                  "wrong=%ld differing=%ld hazards=%ld host_hazards=%ld bad_copies=%ld "
                  "bad_waits=%ld rerecords=%ld pending=%ld",
                  R->name, R->P, R->root, R->count, R->seg, (int)R->mode, pls, res.rc,
                  res.leftover_msgs, v.bad_rc, v.wrong, v.differing_bits, v.hazards,
                  v.host_hazards, v.bad_copies, v.bad_waits, v.rerecords, v.pending);
}

/* ---------------- the matrix ---------------- */

static const size_t segs[] = { 7, 64, 250, 0 };   /* elements; 0 = one segment */
#define NSEGS (sizeof(segs) / sizeof(segs[0]))

/* placement of rank r in pattern p: p < PL_N puts every rank alike; the
 * mixed patterns give neighbouring ranks different placements */
#define NPATTERNS (PL_N + 2)
static placement_t placement(int pattern, int r)
{
    if (pattern < PL_N) return (placement_t)pattern;
    return (placement_t)((r * (pattern == PL_N ? 1 : 5) + pattern) % PL_N);
}

static void matrix(kind_t kind, braid_algo_fn_t fn, const char *name, unit_op_kind_t op,
                   size_t count)
{
    for (int P = 1; P <= MAX_P; P++) {
        for (int pattern = 0; pattern < NPATTERNS; pattern++) {
            run_t *R = calloc(1, sizeof(run_t));
            R->kind = kind;
            R->fn = fn;
            R->name = name;
            R->op = op;
            R->P = P;
            R->root = (kind == K_ALLREDUCE) ? 0 : (pattern * 3 + 1) % P;
            R->count = count;
            R->seg = segs[(size_t)(P + pattern) % NSEGS];
            R->mode = (mock_mode_t)((P * 5 + pattern) % 3);
            R->fail_copy_rank = -1;
            for (int r = 0; r < P; r++) R->pl[r] = placement(pattern, r);
            run_and_check(R);
            free(R);
        }
    }
}

START_TEST(test_allreduce_algorithms)
{
    static const struct { braid_algo_fn_t fn; const char *name; } algs[] = {
        { braid_allreduce_ring, "allreduce ring" },
        { braid_allreduce_ring_chunked, "allreduce ring_chunked" },
        { braid_allreduce_halving_doubling, "allreduce halving_doubling" },
        { braid_allreduce_bcube, "allreduce bcube" },
        { braid_allreduce_dbtree, "allreduce dbtree" },
    };
    matrix(K_ALLREDUCE, algs[_i].fn, algs[_i].name, UNIT_OP_SUM_I64, 600);
}
END_TEST

START_TEST(test_allreduce_double)
{
    /* inexact op: every rank must still get the same bits */
    matrix(K_ALLREDUCE, _i ? braid_allreduce_ring : braid_allreduce_halving_doubling,
           _i ? "allreduce ring (double)" : "allreduce halving_doubling (double)", UNIT_OP_SUM_F64,
           333);
}
END_TEST

START_TEST(test_reduce_algorithms)
{
    matrix(K_REDUCE, _i ? braid_reduce_dbtree : braid_reduce_binomial,
           _i ? "reduce dbtree" : "reduce binomial", UNIT_OP_SUM_I64, 600);
}
END_TEST

START_TEST(test_bcast_algorithms)
{
    static const struct { braid_algo_fn_t fn; const char *name; } algs[] = {
        { braid_bcast_one_to_all, "bcast one_to_all" },
        { braid_bcast_binomial, "bcast binomial" },
        { braid_bcast_scatter_allgather, "bcast scatter_allgather" },
        { braid_bcast_dbtree, "bcast dbtree" },
    };
    matrix(K_BCAST, algs[_i].fn, algs[_i].name, UNIT_OP_SUM_I64, 3001);
}
END_TEST

/* every segment size at one P with the mixed placements */
START_TEST(test_every_segment_size)
{
    for (size_t s = 0; s < NSEGS + 2; s++) {
        run_t *R = calloc(1, sizeof(run_t));
        R->kind = K_ALLREDUCE;
        R->fn = braid_allreduce_ring_chunked;
        R->name = "allreduce ring_chunked, every segment size";
        R->op = UNIT_OP_SUM_I64;
        R->P = 5;
        R->count = 601;
        /* the listed sizes, then 1 element and exactly count */
        R->seg = s < NSEGS ? segs[s] : (s == NSEGS ? 1 : 601);
        R->mode = (mock_mode_t)(s % 3);
        R->fail_copy_rank = -1;
        for (int r = 0; r < R->P; r++) R->pl[r] = placement(PL_N + 1, r);
        run_and_check(R);
        free(R);
    }
}
END_TEST

/* ---------------- ordering ---------------- */

static int find(const mock_dev_t *d, mock_trace_kind_t k, const void *ptr, long seg)
{
    for (int i = 0; i < d->ntrace; i++)
        if (d->trace[i].kind == k && (ptr ? d->trace[i].ptr == ptr : d->trace[i].seg == seg))
            return i;
    return -1;
}

START_TEST(test_overlap_order)
{
    const size_t count = 640, seg = 64, es = 8;
    const long nseg = (long)(count / seg);
    run_t *R = calloc(1, sizeof(run_t));
    R->kind = K_ALLREDUCE;
    R->fn = braid_allreduce_ring;
    R->name = "ordering";
    R->op = UNIT_OP_SUM_I64;
    R->P = 2;
    R->count = count;
    R->seg = seg;
    R->mode = MOCK_LAZY;   /* copies finish only when waited for */
    R->fail_copy_rank = -1;
    R->pl[0] = R->pl[1] = PL_DEV_DEV;
    setup(R);
    inproc_result_t res = inproc_run(R->P, body, NULL, R);
    free(res.stats);
    const mock_dev_t *d = R->ctx[0].dev;
    const char *in = R->in[0], *out = R->out[0];
    int misordered = 0, not_overlapping = 0;
    for (long k = 0; k < nseg; k++) {
        int start = find(d, MOCK_T_STEP_START, NULL, k), end = find(d, MOCK_T_STEP_END, NULL, k);
        int h2d = find(d, MOCK_T_H2D, out + (size_t)k * seg * es, 0);
        if (start < 0 || end < 0 || h2d < 0 || h2d < end) misordered++;
        if (k + 1 < nseg) {
            /* the next segment's D2H is queued before this step and still
             * unfinished when the step starts */
            int d2h = find(d, MOCK_T_D2H, in + (size_t)(k + 1) * seg * es, 0);
            int done = find(d, MOCK_T_DONE_D2H, in + (size_t)(k + 1) * seg * es, 0);
            if (d2h < 0 || d2h > start) misordered++;
            if (done >= 0 && done < start) not_overlapping++;
        }
        if (k >= 1) {
            /* the previous segment's H2D is queued and unfinished too */
            int prev = find(d, MOCK_T_H2D, out + (size_t)(k - 1) * seg * es, 0);
            int done = find(d, MOCK_T_DONE_H2D, out + (size_t)(k - 1) * seg * es, 0);
            if (prev < 0 || prev > start) misordered++;
            if (done >= 0 && done < start) not_overlapping++;
        }
    }
    verdict_t v = check(R);
    teardown(R);
    free(R);
    ck_assert_msg(0 == misordered && 0 == not_overlapping && 0 == v.wrong && 0 == v.hazards &&
                      0 == v.host_hazards && 0 == v.pending,
                  "misordered=%d not_overlapping=%d wrong=%ld hazards=%ld host_hazards=%ld "
                  "pending=%ld", misordered, not_overlapping, v.wrong, v.hazards, v.host_hazards,
                  v.pending);
}
END_TEST

/* ---------------- errors ---------------- */

static void failing_run(int fail_copy_at, int fail_wait_at, int *rcs, long *pending,
                        int *leftover)
{
    run_t *R = calloc(1, sizeof(run_t));
    R->kind = K_ALLREDUCE;
    R->fn = braid_allreduce_ring_chunked;
    R->name = "device failure";
    R->op = UNIT_OP_SUM_I64;
    R->P = 3;
    R->count = 640;
    R->seg = 64;
    R->mode = MOCK_RANDOM;
    R->fail_copy_rank = 1;
    R->fail_copy_at = fail_copy_at;
    R->fail_wait_at = fail_wait_at;
    for (int r = 0; r < R->P; r++) R->pl[r] = PL_DEV_DEV;
    setup(R);
    inproc_result_t res = inproc_run(R->P, body, NULL, R);
    free(res.stats);
    *leftover = res.leftover_msgs;
    *pending = 0;
    for (int r = 0; r < R->P; r++) {
        rcs[r] = R->ctx[r].rc;
        *pending += mock_pending(R->ctx[r].dev);
        if (R->ctx[r].steps != 10) rcs[r] = 1000 + (int)R->ctx[r].steps;   /* every segment ran */
    }
    teardown(R);
    free(R);
}

START_TEST(test_device_error_reported_no_hang)
{
    int rcs[3], leftover;
    long pending;
    failing_run(_i ? 0 : 5, _i ? 4 : 0, rcs, &pending, &leftover);
    ck_assert_msg(BRAID_OK == rcs[0] && BRAID_ERR_DEVICE == rcs[1] && BRAID_OK == rcs[2] &&
                      0 == leftover && 0 == pending,
                  "%s failure: rc %d %d %d (1000+n: only n segments ran), leftover %d, pending %ld",
                  _i ? "wait" : "copy", rcs[0], rcs[1], rcs[2], leftover, pending);
}
END_TEST

START_TEST(test_unsupported_stops_before_copies)
{
    run_t *R = calloc(1, sizeof(run_t));
    R->kind = K_ALLREDUCE;
    R->fn = braid_allreduce_ring;
    R->name = "unsupported";
    R->op = UNIT_OP_SUM_I64;
    R->P = 1;
    R->count = 640;
    R->seg = 64;
    R->mode = MOCK_LAZY;
    R->unsupported = true;
    R->fail_copy_rank = -1;
    R->pl[0] = PL_DEV_DEV;
    setup(R);
    inproc_result_t res = inproc_run(R->P, body, NULL, R);
    free(res.stats);
    int rc = R->ctx[0].rc;
    long steps = R->ctx[0].steps, pending = mock_pending(R->ctx[0].dev);
    int h2d = find(R->ctx[0].dev, MOCK_T_H2D, R->out[0], 0);
    teardown(R);
    free(R);
    ck_assert_msg(BRAID_ERR_UNSUPPORTED == rc && 1 == steps && 0 == pending && h2d < 0,
                  "rc %d steps %ld pending %ld h2d %d", rc, steps, pending, h2d);
}
END_TEST

START_TEST(test_pinned_alloc_failure_falls_back)
{
    run_t *R = calloc(1, sizeof(run_t));
    R->kind = K_ALLREDUCE;
    R->fn = braid_allreduce_halving_doubling;
    R->name = "no pinned memory";
    R->op = UNIT_OP_SUM_I64;
    R->P = 4;
    R->count = 500;
    R->seg = 64;
    R->mode = MOCK_RANDOM;
    R->fail_host_alloc = true;
    R->fail_copy_rank = -1;
    for (int r = 0; r < R->P; r++) R->pl[r] = placement(PL_N, r);
    run_and_check(R);
    free(R);
}
END_TEST

static int missing_buffer_body(braid_comm_t *c, void *p)
{
    void **arg = p;
    braid_devpipe_job_t *job = arg[0];
    rank_ctx_t *x = job->run_arg;
    x->comm = c;
    braid_device_t dev = { &mock_devops, x->dev };
    return braid_devpipe_run(arg[1], &dev, job);
}

/* Defect: a NULL buffer counted as "none", so a rank whose device
 * allocation had failed ran halving_doubling with rbuf NULL (the SIGSEGV in
 * test_cuda_device on the H100). The job is refused before any message. */
START_TEST(test_missing_buffer_refused_not_segfault)
{
    const size_t count = 100;
    int64_t *in = malloc(count * 8);
    unit_fill(UNIT_OP_SUM_I64, 0, in, count);
    mock_dev_t *d = calloc(1, sizeof(mock_dev_t));
    mock_init(d, MOCK_EAGER, 1);
    braid_devpipe_t pipe;
    memset(&pipe, 0, sizeof pipe);
    braid_scratch_t scratch;
    memset(&scratch, 0, sizeof scratch);
    rank_ctx_t x = { .dev = d, .fn = braid_allreduce_halving_doubling };
    braid_devpipe_job_t job = {
        .kind = BRAID_DEVPIPE_ALLREDUCE, .in = in, .in_dev = false, .out = NULL, .out_dev = true,
        .seg_count = 0, .run = step, .run_arg = &x,
    };
    job.tmpl.count = count;
    job.tmpl.esize = 8;
    job.tmpl.op = unit_op(UNIT_OP_SUM_I64);
    job.tmpl.exact = true;
    job.tmpl.scratch = &scratch;
    void *body_arg[2] = { &job, &pipe };
    inproc_result_t res = inproc_run(1, missing_buffer_body, NULL, body_arg);
    free(res.stats);
    braid_devpipe_release(&pipe);
    braid_scratch_release(&scratch);
    free(d);
    free(in);
    ck_assert_msg(BRAID_ERR_ARG == res.rc && 0 == x.steps, "rc %d steps %ld", res.rc, x.steps);
}
END_TEST

START_TEST(test_seg_count)
{
    /* depends on its arguments only: every rank cuts alike */
    ck_assert_uint_eq(braid_devpipe_seg_count(1000, 8, 0), 1000);
    ck_assert_uint_eq(braid_devpipe_seg_count(1000, 8, 8000), 1000);
    ck_assert_uint_eq(braid_devpipe_seg_count(1000, 8, 7999), 999);
    ck_assert_uint_eq(braid_devpipe_seg_count(1000, 8, 800), 100);
    ck_assert_uint_eq(braid_devpipe_seg_count(1000, 8, 3), 1);
    ck_assert_uint_eq(braid_devpipe_seg_count(0, 8, 3), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cuda_pipeline");
    TCase *tc = tcase_create("mock device");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_seg_count);
    tcase_add_loop_test(tc, test_allreduce_algorithms, 0, 5);
    tcase_add_loop_test(tc, test_allreduce_double, 0, 2);
    tcase_add_loop_test(tc, test_reduce_algorithms, 0, 2);
    tcase_add_loop_test(tc, test_bcast_algorithms, 0, 4);
    tcase_add_test(tc, test_every_segment_size);
    tcase_add_test(tc, test_overlap_order);
    tcase_add_loop_test(tc, test_device_error_reported_no_hang, 0, 2);
    tcase_add_test(tc, test_unsupported_stops_before_copies);
    tcase_add_test(tc, test_pinned_alloc_failure_falls_back);
    tcase_add_test(tc, test_missing_buffer_refused_not_segfault);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return unit_run_suite(suite()); }
