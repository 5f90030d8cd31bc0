/*
 * test_cuda_pipeline.c - the device-buffer staging pipeline
 * (libbraid/devpipe/braid_devpipe.c) driven by a mock device in host memory
 * (mock_device.h) that completes copies late and out of order between its
 * two queues, over the in-process transport, P = 1..8:
 *
 *  - values: allreduce (ring, ring_chunked, halving_doubling, bcube and
 *    dbtree; not recursive_doubling nor hierarchical), reduce (binomial and
 *    dbtree, several roots) and bcast (one_to_all, binomial,
 *    scatter_allgather and dbtree, several roots) through the pipeline
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
 *
 * Then braid's CUDA layer itself (cuda/braid_cuda.c: pointer kinds,
 * contexts, streams, copies, kernels, the pipeline through sessions) on a
 * mock CUDA driver that behaves as the real one did on the H100
 * (mock_cuda_driver.h). The tests named after a failure mode reproduce it
 * without a GPU.
 */
#include "unit_common.h"
#include "unit_ops.h"
#include "mock_device.h"
#include "mock_cuda_driver.h"
#include "braid_cuda.h"
#include "braid_devpipe.h"
#include "unit_cuda_session.h"

#include <stdio.h>
#include <string.h>

/* braid_cuda.c loads its kernels from this image; the mock driver needs
 * none (it runs the CPU kernels) */
const unsigned char braid_cuda_fatbin[] = "mock fatbin";
const size_t braid_cuda_fatbin_len = sizeof(braid_cuda_fatbin);

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

/* The run in progress: the pipeline calls the algorithm function with the
 * communicator only, so the instrumented steps find their rank's context
 * here (one run at a time). */
static run_t *current_run;

/* One host step: the algorithm on one segment, after checking that no
 * queued copy still uses the bytes it reads or writes. */
static int step(braid_comm_t *c, const braid_coll_args_t *a)
{
    rank_ctx_t *x = &current_run->ctx[c->rank];
    int segment = x->steps;
    size_t len = a->count * a->esize;
    if (a->sbuf) mock_host_access(x->dev, a->sbuf, len, false);
    if (a->rbuf) mock_host_access(x->dev, a->rbuf, len, true);
    mock_log(x->dev, MOCK_T_STEP_START, NULL, segment);
    x->steps++;
    int rc = x->fn(x->comm, a);
    mock_log(x->dev, MOCK_T_STEP_END, NULL, segment);
    return rc;
}

static int unsupported_step(braid_comm_t *c, const braid_coll_args_t *a)
{
    (void)a;
    current_run->ctx[c->rank].steps++;
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
    job.fn = R->unsupported ? unsupported_step : step;
    job.comm = c;
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
    current_run = R;
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
    current_run = R;
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
    current_run = R;
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
    current_run = R;
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

/* halving_doubling, counting its calls (one rank: no race) */
static long missing_buffer_steps;
static int counted_hd(braid_comm_t *c, const braid_coll_args_t *a)
{
    missing_buffer_steps++;
    return braid_allreduce_halving_doubling(c, a);
}

static int missing_buffer_body(braid_comm_t *c, void *p)
{
    void **arg = p;
    braid_devpipe_job_t *job = arg[0];
    job->comm = c;
    braid_device_t dev = { &mock_devops, arg[2] };
    return braid_devpipe_run(arg[1], &dev, job);
}

/* A NULL buffer must not count as "none": a rank whose device allocation
 * failed would run halving_doubling with rbuf NULL (a SIGSEGV in
 * test_cuda_device on an H100). The job is refused before any message. */
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
    braid_devpipe_job_t job = {
        .kind = BRAID_DEVPIPE_ALLREDUCE, .in = in, .in_dev = false, .out = NULL, .out_dev = true,
        .seg_count = 0, .fn = counted_hd,
    };
    missing_buffer_steps = 0;
    job.tmpl.count = count;
    job.tmpl.esize = 8;
    job.tmpl.op = unit_op(UNIT_OP_SUM_I64);
    job.tmpl.exact = true;
    job.tmpl.scratch = &scratch;
    void *body_arg[3] = { &job, &pipe, d };
    inproc_result_t res = inproc_run(1, missing_buffer_body, NULL, body_arg);
    free(res.stats);
    braid_devpipe_release(&pipe);
    braid_scratch_release(&scratch);
    free(d);
    free(in);
    ck_assert_msg(BRAID_ERR_ARG == res.rc && 0 == missing_buffer_steps, "rc %d steps %ld", res.rc,
                  missing_buffer_steps);
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

/* ================================================================== */
/* braid's CUDA layer on the mock driver                                */
/* ================================================================== */

/* A fresh driver with two GPUs, nothing current on this thread. */
static void driver_up(mcu_mode_t mode)
{
    mcu_reset(2, mode, 17);
    ck_assert_msg(braid_cuda_available() && 2 == braid_cuda_device_count(),
                  "braid did not take the mock driver (a symbol it asks for is not exported?)");
}

/* the attributes braid asks for, straight from the driver */
typedef struct raw_attrs {
    unsigned memtype, managed;
    void *ctx;
    int ordinal;
} raw_attrs_t;

static raw_attrs_t raw_attrs(const void *p)
{
    raw_attrs_t a = { 99, 99, (void *)&a, 99 };
    int attrs[4] = { 2, 8, 1, 9 };   /* MEMORY_TYPE, IS_MANAGED, CONTEXT, DEVICE_ORDINAL */
    void *data[4] = { &a.memtype, &a.managed, &a.ctx, &a.ordinal };
    ck_assert_int_eq(mcu_cuPointerGetAttributes(4, attrs, data, (mcu_devptr_t)(uintptr_t)p), 0);
    return a;
}

/* braid resolves every entry point by the name CUDA 13's cuda.h binds
 * (cuMemAlloc_v2, cuCtxPushCurrent_v2, ...): the mock exports only those,
 * as libcuda.so.1 exports the old 32-bit-size names under the plain ones */
START_TEST(test_driver_entry_points_by_abi_name)
{
    driver_up(MCU_LAZY);
    ck_assert(braid_cuda_driver_present());
    ck_assert_ptr_null(mcu_symbol("cuMemAlloc"));
    ck_assert_ptr_null(mcu_symbol("cuMemcpyDtoHAsync"));
    ck_assert_ptr_nonnull(mcu_symbol("cuMemcpyDtoHAsync_v2"));
}
END_TEST

/* The kinds as driver 580 reports them: plain host memory is MEMORY_TYPE 0
 * (not HOST) with ordinal -2 and no context, pinned memory HOST, managed
 * memory DEVICE with IS_MANAGED. Only device and managed memory is "device". */
START_TEST(test_pointer_kinds_as_the_driver_reports)
{
    driver_up(MCU_LAZY);
    ck_assert_ptr_nonnull(mcu_app_use_device(0));
    char *host = malloc(64);
    int stack = 0;
    void *pinned = NULL;
    ck_assert_int_eq(mcu_cuMemHostAlloc(&pinned, 4096, 1), 0);
    char *dev = mcu_app_alloc(MCU_MEM_DEVICE, 0, 4096, false);
    char *managed = mcu_app_alloc(MCU_MEM_MANAGED, 1, 4096, false);
    char *unowned = mcu_app_alloc(MCU_MEM_DEVICE, 1, 4096, true);

    raw_attrs_t h = raw_attrs(host), pi = raw_attrs(pinned), m = raw_attrs(managed);
    ck_assert_msg(0 == h.memtype && 0 == h.managed && NULL == h.ctx && -2 == h.ordinal,
                  "the mock must answer for host memory as driver 580 does");
    ck_assert(1 == pi.memtype && NULL != pi.ctx && 0 == pi.ordinal);
    ck_assert(2 == m.memtype && 1 == m.managed && 1 == m.ordinal);

    bool got[9] = { braid_cuda_is_device_ptr(host), braid_cuda_is_device_ptr(&stack),
                    braid_cuda_is_device_ptr(NULL), braid_cuda_is_device_ptr(pinned),
                    braid_cuda_is_device_ptr(dev), braid_cuda_is_device_ptr(dev + 100),
                    braid_cuda_is_device_ptr(dev + 4095), braid_cuda_is_device_ptr(managed),
                    braid_cuda_is_device_ptr(unowned) };
    bool want[9] = { false, false, false, false, true, true, true, true, true };
    for (int i = 0; i < 9; i++) ck_assert_msg(got[i] == want[i], "pointer %d: device %d", i, got[i]);
    mcu_cuMemFreeHost(pinned);
    free(host);
}
END_TEST

/* Fill the stack below the caller with a non-zero pattern, so that a
 * variable read before it is written holds garbage, not a lucky zero. */
static __attribute__((noinline)) void paint_stack(void)
{
    volatile unsigned char junk[16384];
    for (size_t i = 0; i < sizeof(junk); i++) junk[i] = 0x7f;
}

/* With no current context, context_for() must not read the device ordinal
 * of a pointer it never queried (uninitialised): cuDeviceGet then fails with
 * "invalid device ordinal" (CUresult 101) and braid_cuda_malloc returns
 * BRAID_ERR_DEVICE (-5), as test_cuda_device showed on an H100. */
START_TEST(test_no_current_context_uses_device_0)
{
    driver_up(MCU_LAZY);
    void *d = NULL;
    paint_stack();
    int rc = braid_cuda_malloc(&d, 4096);
    ck_assert_msg(BRAID_OK == rc, "braid_cuda_malloc without a current context: rc %d", rc);
    raw_attrs_t a = raw_attrs(d);
    ck_assert(2 == a.memtype && 0 == a.ordinal);
    paint_stack();
    char host[64] = "to the device";
    ck_assert_int_eq(braid_cuda_memcpy(d, host, sizeof host), BRAID_OK);
    braid_cuda_free(d);
}
END_TEST

/* braid retains a device's primary context once per device per process,
 * not on every call that finds no current context: unreleased retains
 * would keep the application from ever tearing the context down. */
START_TEST(test_primary_context_retained_once)
{
    driver_up(MCU_LAZY);
    char host[256] = { 1, 2, 3 };
    braid_cuda_session_t *s = braid_cuda_session_create();
    for (int i = 0; i < 50; i++) {
        void *d = NULL;
        ck_assert_int_eq(braid_cuda_malloc(&d, sizeof host), BRAID_OK);
        ck_assert_int_eq(braid_cuda_memcpy(d, host, sizeof host), BRAID_OK);
        ck_assert_int_eq(braid_cuda_memcpy(host, d, sizeof host), BRAID_OK);
        braid_device_t dev;
        ck_assert_int_eq(braid_cuda_session_begin(s, d, &dev), BRAID_OK);
        braid_cuda_session_end(s);
        braid_cuda_free(d);
    }
    braid_cuda_session_destroy(s);
    ck_assert_msg(1 == mcu_primary_retains(0) && 0 == mcu_primary_retains(1),
                  "primary context retains: device 0 %d, device 1 %d", mcu_primary_retains(0),
                  mcu_primary_retains(1));
}
END_TEST

/* braid_cuda_memcpy from pageable host memory must not return when the
 * driver has staged the bytes, before they reach the device (cuMemcpy
 * does that): "synchronous" means the bytes are there on return. */
START_TEST(test_memcpy_to_device_complete_on_return)
{
    driver_up(MCU_LAZY);
    ck_assert_ptr_nonnull(mcu_app_use_device(1));
    enum { N = 4099 };
    unsigned char *host = malloc(N);
    for (size_t i = 0; i < N; i++) host[i] = unit_byte(3, i);
    void *d = NULL;
    ck_assert_int_eq(braid_cuda_malloc(&d, N), BRAID_OK);
    ck_assert_int_eq(braid_cuda_memcpy(d, host, N), BRAID_OK);
    ck_assert_msg(0 == memcmp(mcu_peek(d), host, N),
                  "braid_cuda_memcpy returned before the bytes reached the device");
    braid_cuda_free(d);
    free(host);
}
END_TEST

/* a failed copy is an error, not a crash (the H100's "cuMemcpy failed:
 * invalid argument" came from NULL buffers) */
START_TEST(test_copy_with_null_fails_cleanly)
{
    driver_up(MCU_LAZY);
    char host[8] = { 0 };
    void *d = NULL;
    ck_assert_int_eq(braid_cuda_malloc(&d, 8), BRAID_OK);
    ck_assert_int_eq(braid_cuda_memcpy(NULL, host, 8), BRAID_ERR_DEVICE);
    ck_assert_int_eq(braid_cuda_memcpy(d, NULL, 8), BRAID_ERR_DEVICE);
    ck_assert_int_eq(braid_cuda_memcpy(host, (char *)d + 4, 8), BRAID_ERR_DEVICE);   /* past the end */
    braid_cuda_free(d);
}
END_TEST

/* braid's kernels through the driver: every (type, op) pair, against the
 * CPU kernels, inputs uploaded with braid_cuda_memcpy (no current context:
 * an uninitialised ordinal would fail every allocation here, as on an H100) */
START_TEST(test_reduce_kernels_through_the_driver)
{
    driver_up(MCU_RANDOM);
    const size_t n = 1003;
    braid_cuda_session_t *s = braid_cuda_session_create();
    int checked = 0;
    for (int t = 0; t < BRAID_KT_NTYPES; t++) {
        size_t es = braid_ktype_size((braid_ktype_t)t), bytes = n * es;
        unsigned char *in = malloc(bytes), *io = malloc(bytes), *got = malloc(bytes);
        void *din = NULL, *dio = NULL;
        ck_assert_int_eq(braid_cuda_malloc(&din, bytes), BRAID_OK);
        ck_assert_int_eq(braid_cuda_malloc(&dio, bytes), BRAID_OK);
        for (int op = 0; op < BRAID_KOP_NOPS; op++) {
            braid_kernel_fn_t cpu = braid_kernel_lookup((braid_ktype_t)t, (braid_kop_t)op);
            if (NULL == cpu) continue;
            for (size_t i = 0; i < bytes; i++) {
                in[i] = unit_byte(t, i * 3 + (size_t)op);
                io[i] = unit_byte(op, i);
            }
            if (BRAID_KT_BOOL == t)
                for (size_t i = 0; i < n; i++) { in[i] &= 1; io[i] &= 1; }
            ck_assert_int_eq(braid_cuda_memcpy(din, in, bytes), BRAID_OK);
            ck_assert_int_eq(braid_cuda_memcpy(dio, io, bytes), BRAID_OK);
            ck_assert_int_eq(braid_cuda_reduce(s, din, dio, n, t, op), BRAID_OK);
            ck_assert_int_eq(braid_cuda_memcpy(got, dio, bytes), BRAID_OK);
            cpu(in, io, n);
            ck_assert_msg(0 == memcmp(got, io, bytes), "%s %s differs", braid_kop_name((braid_kop_t)op),
                          braid_ktype_name((braid_ktype_t)t));
            checked++;
        }
        braid_cuda_free(din);
        braid_cuda_free(dio);
        free(in); free(io); free(got);
    }
    braid_cuda_session_destroy(s);
    ck_assert_int_ge(checked, 90);
}
END_TEST

/* Memory that names no context (virtual memory management, pools) must
 * not run in whatever context is current, possibly another GPU's: a kernel
 * there cannot reach it. It runs in its own device's primary context. */
START_TEST(test_unowned_memory_runs_on_its_device)
{
    driver_up(MCU_LAZY);
    ck_assert_ptr_nonnull(mcu_app_use_device(0));
    const size_t n = 64;
    int32_t *din = mcu_app_alloc(MCU_MEM_DEVICE, 1, n * 4, true);
    int32_t *dio = mcu_app_alloc(MCU_MEM_DEVICE, 1, n * 4, true);
    int32_t *in = mcu_poke(din), *io = mcu_poke(dio);
    for (size_t i = 0; i < n; i++) { in[i] = (int32_t)i; io[i] = 1000; }
    braid_cuda_session_t *s = braid_cuda_session_create();
    braid_device_t dev;
    ck_assert_int_eq(braid_cuda_session_begin(s, din, &dev), BRAID_OK);
    int ordinal = -1;
    ck_assert_int_eq(mcu_cuCtxGetDevice(&ordinal), 0);
    braid_cuda_session_end(s);
    int rc = braid_cuda_reduce(s, din, dio, n, BRAID_KT_INT32, BRAID_KOP_SUM);
    braid_cuda_session_destroy(s);
    const int32_t *got = mcu_peek(dio);
    ck_assert_msg(1 == ordinal && BRAID_OK == rc && 1000 == got[0] && 1063 == got[63],
                  "session on device %d (want 1), reduce rc %d", ordinal, rc);
}
END_TEST

/* ---- the pipeline through braid's sessions, ranks as threads ---- */

typedef struct drv_run {
    braid_devpipe_kind_t kind;
    braid_algo_fn_t fn;
    size_t count, seg, esize;
    int P, root;
    void *in[MAX_P], *out[MAX_P];
    bool in_dev[MAX_P], out_dev[MAX_P];
    int rc[MAX_P];
} drv_run_t;

static int drv_body(braid_comm_t *c, void *p)
{
    drv_run_t *R = p;
    int r = c->rank;
    braid_scratch_t scratch;
    memset(&scratch, 0, sizeof scratch);
    braid_devpipe_job_t job = {
        .kind = R->kind, .in = R->in[r], .in_dev = R->in_dev[r], .out = R->out[r],
        .out_dev = R->out_dev[r], .seg_count = R->seg, .fn = R->fn, .comm = c,
    };
    job.tmpl.count = R->count;
    job.tmpl.esize = R->esize;
    job.tmpl.op = unit_op(UNIT_OP_SUM_I64);
    job.tmpl.exact = true;
    job.tmpl.root = R->root;
    job.tmpl.scratch = &scratch;
    int rc = unit_cuda_session_run(&job);
    R->rc[r] = rc;
    return rc;
}

/* braid's copy streams must be blocking streams: non-blocking ones do not
 * wait for the application's cuMemcpyHtoD, which from pageable memory
 * returns before the bytes reach the device, so the root's device-to-host
 * copy reads the buffer's old contents (zeros). On an H100 that gave
 * "bcast 4099 bytes np=2 root=1 on host: 4084 wrong" (a host receiver of a
 * device root) and wrong allreduce values on host/host ranks. */
START_TEST(test_copies_wait_for_the_applications_upload)
{
    driver_up(MCU_LAZY);
    ck_assert_ptr_nonnull(mcu_app_use_device(0));
    enum { N = 4099 };
    unsigned char *pattern = malloc(N), *got = malloc(N);
    for (size_t i = 0; i < N; i++) pattern[i] = unit_byte(1, i);
    mcu_devptr_t root_buf = 0;
    ck_assert_int_eq(mcu_cuMemAlloc(&root_buf, N), 0);
    ck_assert_int_eq(mcu_cuMemcpyHtoD(root_buf, pattern, N), 0);   /* staged, still queued */
    drv_run_t R = { .kind = BRAID_DEVPIPE_BCAST, .fn = braid_bcast_binomial, .count = N, .esize = 1,
                    .P = 2, .root = 0 };
    R.in[0] = (void *)(uintptr_t)root_buf;
    R.in_dev[0] = true;
    R.out[1] = calloc(1, N);   /* the receiver: host memory */
    inproc_result_t res = inproc_run(2, drv_body, NULL, &R);
    free(res.stats);
    size_t wrong = 0;
    for (size_t i = 0; i < N; i++) wrong += ((unsigned char *)R.out[1])[i] != pattern[i];
    free(R.out[1]);
    mcu_cuMemFree(root_buf);
    free(pattern);
    free(got);
    ck_assert_msg(BRAID_OK == res.rc && 0 == wrong, "rc %d, %zu of %d bytes wrong on the host receiver",
                  res.rc, wrong, N);
}
END_TEST

/* test_cuda_device's pipeline run on the mock driver: allreduce with every
 * rank's buffers on the device or the host, P = 1..4, queues progressing at
 * random, no current context on any rank's thread */
START_TEST(test_pipeline_through_sessions)
{
    static const braid_algo_fn_t fns[] = { braid_allreduce_ring_chunked,
                                           braid_allreduce_halving_doubling, braid_allreduce_dbtree };
    static const size_t segs[] = { 100, 512, 4096, 0 };
    const size_t count = 3001, bytes = count * 8;
    driver_up(MCU_RANDOM);
    int64_t *want = malloc(bytes), *got = malloc(bytes);
    for (int P = 1; P <= 4; P++) {
        unit_reference(UNIT_OP_SUM_I64, P, 0, count, want);
        for (int pattern = 0; pattern < 4; pattern++) {
            drv_run_t R = { .kind = BRAID_DEVPIPE_ALLREDUCE, .fn = fns[(P + pattern) % 3],
                            .count = count, .seg = segs[(P * 3 + pattern) % 4], .esize = 8, .P = P };
            for (int r = 0; r < P; r++) {
                int kind = (pattern + r) % 4;   /* dev in place, dev/dev, dev/host, host/dev */
                R.in_dev[r] = kind != 3;
                R.out_dev[r] = kind != 2;
                int64_t *h = malloc(bytes);
                unit_fill(UNIT_OP_SUM_I64, r, h, count);
                if (R.in_dev[r]) {
                    ck_assert_int_eq(braid_cuda_malloc(&R.in[r], bytes), BRAID_OK);
                    ck_assert_int_eq(braid_cuda_memcpy(R.in[r], h, bytes), BRAID_OK);
                    free(h);
                } else {
                    R.in[r] = h;
                }
                if (0 == kind) R.out[r] = R.in[r];
                else if (R.out_dev[r]) ck_assert_int_eq(braid_cuda_malloc(&R.out[r], bytes), BRAID_OK);
                else R.out[r] = malloc(bytes);
            }
            inproc_result_t res = inproc_run(P, drv_body, NULL, &R);
            free(res.stats);
            for (int r = 0; r < P; r++) {
                if (R.out_dev[r]) ck_assert_int_eq(braid_cuda_memcpy(got, R.out[r], bytes), BRAID_OK);
                else memcpy(got, R.out[r], bytes);
                ck_assert_msg(BRAID_OK == res.rc && 0 == res.leftover_msgs && 0 == memcmp(got, want, bytes),
                              "P=%d pattern=%d rank %d: rc %d (rank rc %d), leftover %d, values %s", P,
                              pattern, r, res.rc, R.rc[r], res.leftover_msgs,
                              memcmp(got, want, bytes) ? "wrong" : "right");
                if (R.out[r] != R.in[r]) {
                    if (R.out_dev[r]) braid_cuda_free(R.out[r]);
                    else free(R.out[r]);
                }
                if (R.in_dev[r]) braid_cuda_free(R.in[r]);
                else free(R.in[r]);
            }
        }
    }
    ck_assert_msg(0 == mcu_pending() && 0 == mcu.misdirected, "pending %ld misdirected %ld",
                  mcu_pending(), mcu.misdirected);
    free(want);
    free(got);
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

    TCase *drv = tcase_create("mock driver");
    tcase_set_timeout(drv, 120);
    tcase_add_test(drv, test_driver_entry_points_by_abi_name);
    tcase_add_test(drv, test_pointer_kinds_as_the_driver_reports);
    tcase_add_test(drv, test_no_current_context_uses_device_0);
    tcase_add_test(drv, test_primary_context_retained_once);
    tcase_add_test(drv, test_memcpy_to_device_complete_on_return);
    tcase_add_test(drv, test_copy_with_null_fails_cleanly);
    tcase_add_test(drv, test_reduce_kernels_through_the_driver);
    tcase_add_test(drv, test_unowned_memory_runs_on_its_device);
    tcase_add_test(drv, test_copies_wait_for_the_applications_upload);
    tcase_add_test(drv, test_pipeline_through_sessions);
    suite_add_tcase(s, drv);
    return s;
}

int main(void)
{
    /* every test forks from here; each brings the mock driver up itself */
    braid_cuda_set_driver(mcu_symbol);
    return unit_run_suite(suite());
}
