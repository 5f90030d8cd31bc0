/*
 * test_cuda_device.c - braid's CUDA layer on a real GPU: the embedded
 * kernels against braid's CPU kernels for every (type, op) pair, device
 * pointer detection, and the staging pipeline with the real driver (two
 * streams, events, pinned slots) over the in-process transport, P = 1..4
 * ranks (threads) sharing the GPU, host and device buffers mixed.
 *
 * Without a usable GPU (no libcuda.so.1, cuInit failing, no device) it
 * prints "SKIP: no CUDA device" and exits 77, which automake counts as a
 * skipped test.
 */
#include "unit_common.h"
#include "unit_ops.h"
#include "braid_cuda.h"
#include "braid_kernels.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    braid_cuda_session_t *s = braid_cuda_session_create();
    braid_devpipe_t pipe;
    memset(&pipe, 0, sizeof pipe);
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
    braid_device_t dev;
    int rc = BRAID_OK;
    bool any_dev = R->in_dev[r] || R->out_dev[r];
    if (any_dev) rc = braid_cuda_session_begin(s, R->in_dev[r] ? R->in[r] : R->out[r], &dev);
    if (BRAID_OK == rc) rc = braid_devpipe_run(&pipe, any_dev ? &dev : NULL, &job);
    if (any_dev) braid_cuda_session_end(s);
    braid_devpipe_release(&pipe);
    braid_cuda_session_destroy(s);
    braid_scratch_release(&scratch);
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
                if (R.in_dev[r]) { braid_cuda_malloc(&R.in[r], bytes); braid_cuda_memcpy(R.in[r], h, bytes); }
                else R.in[r] = h;
                if (0 == kind) R.out[r] = R.in[r];
                else if (R.out_dev[r]) braid_cuda_malloc(&R.out[r], bytes);
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

int main(void)
{
    braid_cuda_set_log(log_to_stderr);
    if (!braid_cuda_available()) {
        printf("SKIP: no CUDA device (libcuda.so.1 %s; reason on stderr): the CUDA device tests "
               "need a GPU\n", braid_cuda_driver_present() ? "loaded but unusable" : "not found");
        return 77;
    }
    printf("CUDA devices: %d\n", braid_cuda_device_count());
    Suite *s = suite_create("cuda_device");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_kernels_match_cpu);
    tcase_add_test(tc, test_pointer_detection);
    tcase_add_test(tc, test_pipeline_real_device);
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
