/*
 * test_cuda_device.c - braid's CUDA layer on a real GPU: the embedded
 * kernels against braid's CPU kernels for every (type, op) pair, device
 * pointer detection, and the staging pipeline with the real driver (two
 * streams, events, pinned slots) over the in-process transport, P = 1..4
 * ranks (threads) sharing the GPU, host and device buffers mixed.
 *
 * Also what goes wrong on a real GPU (an H100) if mishandled: allocation and
 * copies with no current context, pinned and managed memory told apart as
 * driver 580 reports them, and the pipeline reading a buffer that the
 * application has just filled with cuMemcpyHtoD from pageable memory
 * (which returns before the bytes land).
 *
 * Without a usable GPU (no libcuda.so.1, cuInit failing, no device) it
 * prints "SKIP: no CUDA device" and exits 77, which automake counts as a
 * skipped test. run_cuda_device_on_mock.sh runs it on the mock driver
 * (tests/mpi/mock_libcuda.c) instead.
 */
#include "unit_common.h"
#include "unit_ops.h"
#include "braid_cuda.h"
#include "braid_kernels.h"
#include "unit_cuda_session.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The driver as an application sees it (dlopen'ed like braid does), for
 * what braid has no API for: pinned and managed memory, a current context,
 * the application's own copies. */
typedef unsigned long long cu_ptr_t;
static struct {
    int (*DevicePrimaryCtxRetain)(void **, int);
    int (*CtxSetCurrent)(void *);
    int (*MemHostAlloc)(void **, size_t, unsigned);
    int (*MemFreeHost)(void *);
    int (*MemAlloc)(cu_ptr_t *, size_t);
    int (*MemAllocManaged)(cu_ptr_t *, size_t, unsigned);
    int (*MemFree)(cu_ptr_t);
    int (*MemcpyHtoD)(cu_ptr_t, const void *, size_t);
    int (*PointerGetAttributes)(unsigned, int *, void **, cu_ptr_t);
} app;

static bool app_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    struct { void **fn; const char *name; } syms[] = {
        { (void **)&app.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain" },
        { (void **)&app.CtxSetCurrent, "cuCtxSetCurrent" },
        { (void **)&app.MemHostAlloc, "cuMemHostAlloc" },
        { (void **)&app.MemFreeHost, "cuMemFreeHost" },
        { (void **)&app.MemAlloc, "cuMemAlloc_v2" },
        { (void **)&app.MemAllocManaged, "cuMemAllocManaged" },
        { (void **)&app.MemFree, "cuMemFree_v2" },
        { (void **)&app.MemcpyHtoD, "cuMemcpyHtoD_v2" },
        { (void **)&app.PointerGetAttributes, "cuPointerGetAttributes" },
    };
    for (size_t i = 0; NULL != lib && i < sizeof syms / sizeof *syms; i++)
        if (NULL == (*syms[i].fn = dlsym(lib, syms[i].name))) return false;
    return NULL != lib;
}

static void log_to_stderr(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[cuda log %d] ", level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void fill_random(braid_ktype_t t, void *buf, size_t n)
{
    unsigned char *b = buf;
    size_t es = braid_ktype_size(t);
    for (size_t i = 0; i < n; i++) {
        if (BRAID_KT_FLOAT == t) { float f = (float)((int64_t)(next_rand() % 2001) - 1000) / 7.0f; memcpy(b + i * 4, &f, 4); }
        else if (BRAID_KT_DOUBLE == t) { double d = (double)((int64_t)(next_rand() % 200001) - 100000) / 13.0; memcpy(b + i * 8, &d, 8); }
        else if (BRAID_KT_BOOL == t) b[i] = (unsigned char)(next_rand() & 1);
        else { uint64_t v = next_rand(); if (i % 5 == 0) v = 0; memcpy(b + i * es, &v, es); }
    }
}

START_TEST(test_kernels_match_cpu)
{
    const size_t n = 100003;   /* not a multiple of the block size */
    int checked = 0, mismatched_pairs = 0, errors = 0;
    char first[128] = "";
    braid_cuda_session_t *s = braid_cuda_session_create();
    for (int t = 0; t < BRAID_KT_NTYPES; t++) {
        size_t bytes = n * braid_ktype_size((braid_ktype_t)t);
        unsigned char *in = malloc(bytes), *io = malloc(bytes), *got = malloc(bytes);
        void *din = NULL, *dio = NULL;
        if (BRAID_OK != braid_cuda_malloc(&din, bytes) || BRAID_OK != braid_cuda_malloc(&dio, bytes))
            errors++;
        for (int op = 0; op < BRAID_KOP_NOPS && din && dio; op++) {
            braid_kernel_fn_t cpu = braid_kernel_lookup((braid_ktype_t)t, (braid_kop_t)op);
            if (NULL == cpu) continue;
            fill_random((braid_ktype_t)t, in, n);
            fill_random((braid_ktype_t)t, io, n);
            if (BRAID_OK != braid_cuda_memcpy(din, in, bytes) ||
                BRAID_OK != braid_cuda_memcpy(dio, io, bytes) ||
                BRAID_OK != braid_cuda_reduce(s, din, dio, n, t, op) ||
                BRAID_OK != braid_cuda_memcpy(got, dio, bytes)) {
                errors++;
                continue;
            }
            cpu(in, io, n);
            checked++;
            if (memcmp(got, io, bytes)) {
                mismatched_pairs++;
                if (!first[0])
                    snprintf(first, sizeof first, "%s %s", braid_kop_name((braid_kop_t)op),
                             braid_ktype_name((braid_ktype_t)t));
            }
        }
        braid_cuda_free(din);
        braid_cuda_free(dio);
        free(in); free(io); free(got);
    }
    braid_cuda_session_destroy(s);
    ck_assert_msg(0 == errors && 0 == mismatched_pairs && checked >= 90,
                  "checked %d pairs, %d differ from the CPU kernels (first: %s), %d CUDA errors",
                  checked, mismatched_pairs, first, errors);
}
END_TEST

/* no current context here: braid_cuda_malloc uses device 0's primary one
 * (reading an uninitialised ordinal instead fails with -5 on an H100) */
START_TEST(test_pointer_detection)
{
    void *d = NULL;
    int local = 0;
    char *h = malloc(64);
    ck_assert_int_eq(braid_cuda_malloc(&d, 4096), BRAID_OK);
    bool dev = braid_cuda_is_device_ptr(d), mid = braid_cuda_is_device_ptr((char *)d + 100);
    bool host = braid_cuda_is_device_ptr(h), stack = braid_cuda_is_device_ptr(&local);
    bool null = braid_cuda_is_device_ptr(NULL);
    braid_cuda_free(d);
    free(h);
    ck_assert_msg(dev && mid && !host && !stack && !null, "device %d interior %d host %d stack %d NULL %d",
                  dev, mid, host, stack, null);
}
END_TEST

/* Pinned memory is host memory, managed memory is device memory, as driver
 * 580 reports them (pinned: MEMORY_TYPE HOST; managed: DEVICE with
 * IS_MANAGED; plain host: MEMORY_TYPE 0, ordinal -2, no context). */
START_TEST(test_pointer_kinds)
{
    void *ctx = NULL, *pinned = NULL;
    cu_ptr_t managed = 0;
    ck_assert_int_eq(app.DevicePrimaryCtxRetain(&ctx, 0), 0);
    ck_assert_int_eq(app.CtxSetCurrent(ctx), 0);
    ck_assert_int_eq(app.MemHostAlloc(&pinned, 4096, 0), 0);
    ck_assert_int_eq(app.MemAllocManaged(&managed, 4096, 1), 0);
    char *h = malloc(64);
    unsigned memtype = 99, is_managed = 99;
    void *hctx = &ctx;
    int ordinal = 99;
    int attrs[4] = { 2, 8, 1, 9 };   /* MEMORY_TYPE, IS_MANAGED, CONTEXT, DEVICE_ORDINAL */
    void *data[4] = { &memtype, &is_managed, &hctx, &ordinal };
    ck_assert_int_eq(app.PointerGetAttributes(4, attrs, data, (cu_ptr_t)(uintptr_t)h), 0);
    bool p = braid_cuda_is_device_ptr(pinned), m = braid_cuda_is_device_ptr((void *)(uintptr_t)managed);
    bool mh = braid_cuda_is_device_ptr(h);
    app.MemFreeHost(pinned);
    app.MemFree(managed);
    app.CtxSetCurrent(NULL);
    free(h);
    ck_assert_msg(!p && m && !mh, "pinned %d managed %d malloc'ed %d", p, m, mh);
    ck_assert_msg(0 == memtype && 0 == is_managed && NULL == hctx && -2 == ordinal,
                  "plain host memory now reports MEMORY_TYPE %u IS_MANAGED %u CONTEXT %p ORDINAL %d "
                  "(driver 580: 0 0 NULL -2)", memtype, is_managed, hctx, ordinal);
}
END_TEST

/* ---- the pipeline on the real device, P ranks as threads ---- */

typedef struct run {
    braid_algo_fn_t fn;
    size_t count, seg;
    int P;
    int pattern;
    void *in[4], *out[4];      /* in == out: in place */
    bool in_dev[4], out_dev[4];
    int rc[4];
} run_t;

static int body(braid_comm_t *c, void *p)
{
    run_t *R = p;
    int r = c->rank;
    braid_scratch_t scratch;
    memset(&scratch, 0, sizeof scratch);
    braid_devpipe_job_t job = {
        .kind = BRAID_DEVPIPE_ALLREDUCE, .in = R->in[r], .in_dev = R->in_dev[r],
        .out = R->out[r], .out_dev = R->out_dev[r], .seg_count = R->seg, .fn = R->fn,
        .comm = c,
    };
    job.tmpl.count = R->count;
    job.tmpl.esize = 8;
    job.tmpl.op = unit_op(UNIT_OP_SUM_I64);
    job.tmpl.exact = true;
    job.tmpl.scratch = &scratch;
    int rc = unit_cuda_session_run(&job);
    R->rc[r] = rc;
    return rc;
}

START_TEST(test_pipeline_real_device)
{
    static const braid_algo_fn_t fns[] = { braid_allreduce_ring_chunked,
                                           braid_allreduce_halving_doubling, braid_allreduce_dbtree };
    static const size_t segs[] = { 1000, 4096, 65536, 0 };
    const size_t count = 300007;
    const size_t bytes = count * 8;
    int64_t *want = malloc(bytes), *got = malloc(bytes);
    int runs = 0, bad_runs = 0;
    char first[160] = "";
    for (int P = 1; P <= 4; P++) {
        unit_reference(UNIT_OP_SUM_I64, P, 0, count, want);
        for (int pattern = 0; pattern < 4; pattern++) {
            run_t R = { .fn = fns[(P + pattern) % 3], .count = count,
                        .seg = segs[(P * 3 + pattern) % 4], .P = P, .pattern = pattern };
            for (int r = 0; r < P; r++) {
                int kind = (pattern + r) % 4;   /* dev in place, dev/dev, dev/host, host/dev */
                R.in_dev[r] = kind != 3;
                R.out_dev[r] = kind != 2;
                int64_t *h = malloc(bytes);
                unit_fill(UNIT_OP_SUM_I64, r, h, count);
                /* a failed allocation stops here: a NULL buffer must not
                 * reach the ranks (on an H100 that is a SIGSEGV) */
                if (R.in_dev[r]) {
                    ck_assert_int_eq(braid_cuda_malloc(&R.in[r], bytes), BRAID_OK);
                    ck_assert_int_eq(braid_cuda_memcpy(R.in[r], h, bytes), BRAID_OK);
                } else {
                    R.in[r] = h;
                }
                if (0 == kind) R.out[r] = R.in[r];
                else if (R.out_dev[r]) ck_assert_int_eq(braid_cuda_malloc(&R.out[r], bytes), BRAID_OK);
                else R.out[r] = malloc(bytes);
                if (R.in[r] != h) free(h);
            }
            inproc_result_t res = inproc_run(P, body, NULL, &R);
            free(res.stats);
            runs++;
            bool bad = BRAID_OK != res.rc || res.leftover_msgs;
            for (int r = 0; r < P; r++) {
                if (R.out_dev[r]) braid_cuda_memcpy(got, R.out[r], bytes);
                else memcpy(got, R.out[r], bytes);
                if (memcmp(got, want, bytes)) bad = true;
                if (R.out[r] != R.in[r]) { if (R.out_dev[r]) braid_cuda_free(R.out[r]); else free(R.out[r]); }
                if (R.in_dev[r]) braid_cuda_free(R.in[r]); else free(R.in[r]);
            }
            if (bad && !first[0])
                snprintf(first, sizeof first, "P=%d pattern=%d seg=%zu rc=%d leftover=%d", P,
                         pattern, R.seg, res.rc, res.leftover_msgs);
            bad_runs += bad;
        }
    }
    free(want);
    free(got);
    ck_assert_msg(0 == bad_runs, "%d of %d runs wrong (first: %s)", bad_runs, runs, first);
}
END_TEST

/* The application fills a device buffer with cuMemcpyHtoD from pageable
 * memory, which returns once the bytes are staged, and calls braid at once:
 * braid's copies must wait for that upload (non-blocking streams read the
 * old contents on an H100: wrong values in mpi_cuda). P = 1 allreduce,
 * device in, host out: the output is the input. */
START_TEST(test_pipeline_after_unsynchronised_upload)
{
    static const size_t counts[] = { 513, (8u << 20) / 8 + 3 };
    void *ctx = NULL;
    ck_assert_int_eq(app.DevicePrimaryCtxRetain(&ctx, 0), 0);
    ck_assert_int_eq(app.CtxSetCurrent(ctx), 0);
    int bad = 0, runs = 0;
    for (size_t c = 0; c < 2; c++)
        for (int rep = 0; rep < 10; rep++, runs++) {
            size_t count = counts[c], bytes = count * 8;
            int64_t *h = malloc(bytes), *out = calloc(1, bytes);
            unit_fill(UNIT_OP_SUM_I64, rep, h, count);
            cu_ptr_t d = 0;
            ck_assert_int_eq(app.MemAlloc(&d, bytes), 0);
            ck_assert_int_eq(app.MemcpyHtoD(d, h, bytes), 0);
            run_t R = { .fn = braid_allreduce_ring, .count = count, .seg = 65536, .P = 1 };
            R.in[0] = (void *)(uintptr_t)d;
            R.in_dev[0] = true;
            R.out[0] = out;
            inproc_result_t res = inproc_run(1, body, NULL, &R);
            free(res.stats);
            bad += BRAID_OK != res.rc || 0 != memcmp(out, h, bytes);
            app.MemFree(d);
            free(h);
            free(out);
        }
    app.CtxSetCurrent(NULL);
    ck_assert_msg(0 == bad, "%d of %d runs read something else than the uploaded bytes", bad, runs);
}
END_TEST

int main(void)
{
    braid_cuda_set_log(log_to_stderr);
    if (!braid_cuda_available()) {
        printf("SKIP: no CUDA device (libcuda.so.1 %s; reason on stderr): the CUDA device tests "
               "need a GPU\n", braid_cuda_driver_present() ? "loaded but unusable" : "not found");
        return 77;
    }
    printf("CUDA devices: %d\n", braid_cuda_device_count());
    if (!app_driver()) {
        printf("libcuda.so.1 lacks an entry point the tests use\n");
        return EXIT_FAILURE;
    }
    Suite *s = suite_create("cuda_device");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_kernels_match_cpu);
    tcase_add_test(tc, test_pointer_detection);
    tcase_add_test(tc, test_pointer_kinds);
    tcase_add_test(tc, test_pipeline_real_device);
    tcase_add_test(tc, test_pipeline_after_unsynchronised_upload);
    suite_add_tcase(s, tc);
    /* CUDA is initialised in this process already and does not survive a
     * fork: run the tests in it */
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
