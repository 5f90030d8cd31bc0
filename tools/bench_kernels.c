/*
 * bench_kernels.c - braid's reduction kernels against MPI_Reduce_local
 * (which Open MPI serves with op/avx where the CPU has AVX/AVX2/AVX-512).
 *
 *   mpirun -np 1 ./tools/bench_kernels [--aa] [max_bytes]
 *
 * --aa times braid against itself in the MPI column: the spread of its
 * speed-ups around 1.00 is the noise floor of the machine.
 *
 * For float/double/int32/uint8 SUM, int32 MAX and uint8 BXOR and buffer
 * sizes 4 KiB, 16 KiB, ... (x4) up to 32 MiB per operand, times
 * inout = in op inout with both implementations, interleaving braid and MPI
 * samples (alternating which goes first) on the same buffers, and prints the
 * median of the samples as payload bandwidth (size / time; the memory traffic
 * is 3x that: read in, read inout, write inout) and the median over samples
 * of the time ratio MPI / braid of the two adjacent halves of each sample
 * (robust to load changes on a shared machine). Each case first checks that
 * both give identical results on random data. Then it prints what
 * MPI_Reduce_local and braid return for 8-bit SUM with wrap-around operands
 * (uint8 200+200, int8 100+100) at several counts.
 * Output is markdown.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid_kernels.h"

enum { SAMPLES = 31 };
static const size_t BATCH_BYTES = (size_t)8 << 20; /* payload per timed sample */
static bool aa_mode; /* --aa: time braid against itself (noise floor) */

typedef struct {
    const char *label;
    braid_ktype_t kt;
    braid_kop_t kop;
    MPI_Datatype dt;
    MPI_Op op;
} bench_case_t;

static uint64_t rng_state = 12345;
static uint64_t rng(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* values that keep float sums finite and normal over many repetitions */
static void fill(braid_ktype_t kt, void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (kt) {
        case BRAID_KT_FLOAT: ((float *)p)[i] = (float)(rng() % 1000) / 64.0f; break;
        case BRAID_KT_DOUBLE: ((double *)p)[i] = (double)(rng() % 1000) / 64.0; break;
        case BRAID_KT_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)rng(); break;
        default: ((uint8_t *)p)[i] = (uint8_t)rng(); break;
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

/* does MPI_Reduce_local give braid's result on random data? */
static size_t count_differences(const bench_case_t *c, size_t n)
{
    size_t es = braid_ktype_size(c->kt);
    char *in = malloc(n * es), *a = malloc(n * es), *b = malloc(n * es);
    fill(c->kt, in, n);
    fill(c->kt, a, n);
    memcpy(b, a, n * es);
    braid_kernel_lookup(c->kt, c->kop)(in, a, n);
    MPI_Reduce_local(in, b, (int)n, c->dt, c->op);
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) diff += 0 != memcmp(a + i * es, b + i * es, es);
    free(in), free(a), free(b);
    return diff;
}

static void bench_case(const bench_case_t *c, size_t min_bytes, size_t max_bytes)
{
    size_t es = braid_ktype_size(c->kt);
    braid_kernel_fn_t fn = braid_kernel_lookup(c->kt, c->kop);
    size_t diff = count_differences(c, 1003) + count_differences(c, 65536);
    void *in = NULL, *io = NULL;
    if (posix_memalign(&in, 64, max_bytes) || posix_memalign(&io, 64, max_bytes)) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t bytes = min_bytes; bytes <= max_bytes;
         bytes = bytes < max_bytes && bytes * 4 > max_bytes ? max_bytes : bytes * 4) {
        size_t n = bytes / es;
        size_t iters = bytes >= BATCH_BYTES ? 1 : BATCH_BYTES / bytes;
        double tb[SAMPLES], tm[SAMPLES]; /* seconds per call */
        fill(c->kt, in, n);
        memset(io, 0, bytes);
        fn(in, io, n); /* touch pages, warm caches */
        MPI_Reduce_local(in, io, (int)n, c->dt, c->op);
        for (int s = 0; s < SAMPLES; s++) { /* alternate which goes first */
            for (int turn = 0; turn < 2; turn++) {
                bool braid = (turn == 0) == (s % 2 == 0);
                double t0 = MPI_Wtime();
                if (braid || aa_mode)
                    for (size_t k = 0; k < iters; k++) fn(in, io, n);
                else
                    for (size_t k = 0; k < iters; k++)
                        MPI_Reduce_local(in, io, (int)n, c->dt, c->op);
                double t = (MPI_Wtime() - t0) / (double)iters;
                if (braid) tb[s] = t;
                else tm[s] = t;
            }
        }
        double ratio[SAMPLES]; /* paired: both halves of a sample saw the same load */
        for (int s = 0; s < SAMPLES; s++) ratio[s] = tm[s] / tb[s];
        double r = median(ratio, SAMPLES);
        double gb = median(tb, SAMPLES), gm = median(tm, SAMPLES);
        char size[32];
        if (bytes >= (1u << 20)) snprintf(size, sizeof size, "%zu MiB", bytes >> 20);
        else snprintf(size, sizeof size, "%zu KiB", bytes >> 10);
        printf("| %s | %s | %.1f | %.1f | %.2f | %s |\n", c->label, size, (double)bytes / gb / 1e9,
               (double)bytes / gm / 1e9, r,
               diff ? "**differ**" : "identical");
        fflush(stdout);
    }
    free(in), free(io);
}

/* 8-bit SUM of wrap-around operands at count n: first result of each, and
 * the number of elements that are not the wrapped value */
static void wrap_line(const char *label, MPI_Datatype dt, braid_ktype_t kt, int a, size_t n)
{
    uint8_t in[256], mo[256], bo[256];
    memset(in, a & 0xff, n), memset(mo, a & 0xff, n), memset(bo, a & 0xff, n);
    uint8_t want = (uint8_t)(2 * a);
    MPI_Reduce_local(in, mo, (int)n, dt, MPI_SUM);
    braid_kernel_lookup(kt, BRAID_KOP_SUM)(in, bo, n);
    size_t mbad = 0, bbad = 0;
    for (size_t i = 0; i < n; i++) mbad += mo[i] != want, bbad += bo[i] != want;
    bool sgn = BRAID_KT_INT8 == kt;
    printf("| %s %d+%d | %zu | %d | %d (%zu/%zu wrong) | %d (%zu/%zu wrong) |\n", label, a, a, n,
           sgn ? (int)(int8_t)want : (int)want, sgn ? (int)(int8_t)mo[0] : (int)mo[0], mbad, n,
           sgn ? (int)(int8_t)bo[0] : (int)bo[0], bbad, n);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    size_t max_bytes = (size_t)32 << 20;
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--aa")) aa_mode = true;
        else max_bytes = strtoull(argv[i], NULL, 0);
    }
    if (max_bytes < 4096 || max_bytes > INT32_MAX) {
        fprintf(stderr, "usage: bench_kernels [--aa] [max_bytes >= 4096]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(ver, &len);
    ver[strcspn(ver, ",\n")] = '\0';
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    const char *isa = __builtin_cpu_supports("avx512bw") ? "AVX-512BW"
                      : __builtin_cpu_supports("avx2")   ? "AVX2" : "SSE2";
#else
    const char *isa = "n/a";
#endif
    printf("MPI: %s; best braid kernel clone for this CPU: %s%s\n\n", ver, isa,
           aa_mode ? "; --aa: the MPI column is braid again (noise floor)" : "");

    static const bench_case_t cases[] = {
        { "float sum", BRAID_KT_FLOAT, BRAID_KOP_SUM, MPI_FLOAT, MPI_SUM },
        { "double sum", BRAID_KT_DOUBLE, BRAID_KOP_SUM, MPI_DOUBLE, MPI_SUM },
        { "int32 sum", BRAID_KT_INT32, BRAID_KOP_SUM, MPI_INT32_T, MPI_SUM },
        { "uint8 sum", BRAID_KT_UINT8, BRAID_KOP_SUM, MPI_UINT8_T, MPI_SUM },
        { "int32 max", BRAID_KT_INT32, BRAID_KOP_MAX, MPI_INT32_T, MPI_MAX },
        { "uint8 bxor", BRAID_KT_UINT8, BRAID_KOP_BXOR, MPI_UINT8_T, MPI_BXOR },
    };
    printf("| kernel | size | braid GB/s | MPI_Reduce_local GB/s | speed-up braid vs MPI | results |\n");
    printf("| --- | ---: | ---: | ---: | ---: | --- |\n");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        bench_case(&cases[i], 4096, max_bytes);

    printf("\n| 8-bit SUM | count | correct (mod 256) | MPI_Reduce_local | braid |\n");
    printf("| --- | ---: | ---: | --- | --- |\n");
    static const size_t wcounts[] = { 15, 16, 64, 100 };
    for (size_t i = 0; i < sizeof wcounts / sizeof *wcounts; i++)
        wrap_line("MPI_UINT8_T", MPI_UINT8_T, BRAID_KT_UINT8, 200, wcounts[i]);
    for (size_t i = 0; i < sizeof wcounts / sizeof *wcounts; i++)
        wrap_line("MPI_INT8_T", MPI_INT8_T, BRAID_KT_INT8, 100, wcounts[i]);
    wrap_line("MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, BRAID_KT_UINT8, 200, 64);
    wrap_line("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, BRAID_KT_INT8, 100, 64);

    MPI_Finalize();
    return 0;
}
