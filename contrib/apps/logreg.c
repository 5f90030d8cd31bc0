/*
 * logreg.c - data-parallel logistic regression, a plain MPI program.
 *
 * Every rank holds a shard of a synthetic data set (generated
 * deterministically from the global sample index, so the data set depends
 * only on P x samples-per-rank), computes the gradient of the mean logistic
 * loss on its shard, and averages it with one in-place MPI_Allreduce (SUM) per
 * step; then every rank applies the same plain gradient-descent update. The
 * loss of the current weights rides along in the same allreduce buffer.
 *
 * Two shapes:
 *   default   64 dense features: compute-bound, the allreduce is tiny (528 B)
 *   --large   2^20 hashed sparse features (32 non-zeros per sample): the
 *             gradient is 1M+ doubles (8 MiB), so the allreduce dominates -
 *             the data-parallel case that motivates ring allreduce.
 *
 * Prints (rank 0) the final loss (%.10g), the median time per step (slowest
 * rank per step) and the allreduce's share of it, and a checksum of the
 * weights, plus whether the weights are bit-identical on all ranks. The last
 * line, "RESULT key=value ...", is for scripts.
 *
 * It knows nothing about the coll component underneath: run it under any.
 */
#include <mpi.h>

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    long features;    /* model size (weights), bias extra */
    long nnz;         /* non-zeros per sample; 0 or >= features: dense */
    long samples;     /* per rank */
    long steps;
    double lr;
    int quiet;
} config_t;

typedef struct {
    long n, nnz;      /* samples, non-zeros per sample */
    int32_t *idx;     /* n * nnz feature indexes */
    double *val;      /* n * nnz values */
    double *label;    /* n labels in {0, 1} */
} shard_t;

/* ------------------------------------------------------------------ */
/* deterministic synthetic data                                        */
/* ------------------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* uniform in [-1, 1) from a key */
static double uniform_pm1(uint64_t key) { return (double)(mix(key) >> 11) * 0x1p-52 - 1.0; }

static double true_weight(long f) { return uniform_pm1((0x7e57ULL << 40) ^ (uint64_t)f); }

static void make_shard(const config_t *cfg, int rank, shard_t *s)
{
    int dense = 0 == cfg->nnz || cfg->nnz >= cfg->features;
    s->n = cfg->samples;
    s->nnz = dense ? cfg->features : cfg->nnz;
    s->idx = malloc((size_t)(s->n * s->nnz) * sizeof(int32_t));
    s->val = malloc((size_t)(s->n * s->nnz) * sizeof(double));
    s->label = malloc((size_t)s->n * sizeof(double));
    if (!s->idx || !s->val || !s->label) {
        fprintf(stderr, "logreg: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long j = 0; j < s->n; j++) {
        uint64_t g = (uint64_t)rank * (uint64_t)cfg->samples + (uint64_t)j; /* global sample id */
        double margin = 0.25; /* true bias */
        for (long k = 0; k < s->nnz; k++) {
            uint64_t key = (g << 20) ^ (uint64_t)k;
            long f = dense ? k : (long)(mix(key ^ (0x1dULL << 56)) % (uint64_t)cfg->features);
            double x = uniform_pm1(key ^ (0x2eULL << 56));
            s->idx[j * s->nnz + k] = (int32_t)f;
            s->val[j * s->nnz + k] = x;
            margin += true_weight(f) * x;
        }
        double noise = 0.5 * uniform_pm1(g ^ (0x3fULL << 56));
        s->label[j] = margin + noise > 0 ? 1.0 : 0.0;
    }
}

/* ------------------------------------------------------------------ */
/* model                                                               */
/* ------------------------------------------------------------------ */

/* log(1 + exp(z)), stable */
static double softplus(double z) { return z > 0 ? z + log1p(exp(-z)) : log1p(exp(z)); }

/*
 * grad[0..F) += sum over samples of (p - y) x, grad[F] += sum (p - y) (bias),
 * grad[F+1] += sum of the logistic loss. grad must be zeroed by the caller.
 */
static void local_gradient(const shard_t *s, long F, const double *w, double *grad)
{
    double bias = w[F], loss = 0, dbias = 0;
    for (long j = 0; j < s->n; j++) {
        const int32_t *idx = s->idx + j * s->nnz;
        const double *x = s->val + j * s->nnz;
        double z = bias;
        for (long k = 0; k < s->nnz; k++) z += w[idx[k]] * x[k];
        double y = s->label[j], p = 1.0 / (1.0 + exp(-z)), d = p - y;
        loss += softplus(z) - y * z; /* -[y log p + (1-y) log(1-p)] */
        for (long k = 0; k < s->nnz; k++) grad[idx[k]] += d * x[k];
        dbias += d;
    }
    grad[F] += dbias;
    grad[F + 1] += loss;
}

static double local_loss(const shard_t *s, long F, const double *w)
{
    double loss = 0;
    for (long j = 0; j < s->n; j++) {
        const int32_t *idx = s->idx + j * s->nnz;
        const double *x = s->val + j * s->nnz;
        double z = w[F];
        for (long k = 0; k < s->nnz; k++) z += w[idx[k]] * x[k];
        loss += softplus(z) - s->label[j] * z;
    }
    return loss;
}

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return (n & 1) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: logreg [--large] [-f FEATURES] [-z NNZ (0 = dense)] [-n SAMPLES_PER_RANK] [-s STEPS] [-l LR] [-q]\n"
               "  default: 64 dense features, 4096 samples/rank, 200 steps, lr 0.5\n"
               "  --large: 1048576 sparse features, 32 non-zeros/sample, 2048 samples/rank, 30 steps, lr 8\n"
               "  -q: print only the RESULT line\n");
}

static int parse(int argc, char **argv, config_t *c, int rank)
{
    static const struct option longopts[] = {
        { "large", no_argument, NULL, 'L' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    *c = (config_t){ .features = 64, .nnz = 0, .samples = 4096, .steps = 200, .lr = 0.5 };
    config_t large = { .features = 1L << 20, .nnz = 32, .samples = 2048, .steps = 30, .lr = 8 };
    /* --large first, so explicit options override its values */
    for (int k = 1; k < argc; k++)
        if (0 == strcmp(argv[k], "--large")) *c = large;
    int ch;
    opterr = 0;
    while (-1 != (ch = getopt_long(argc, argv, "f:z:n:s:l:qh", longopts, NULL))) {
        switch (ch) {
        case 'f': c->features = atol(optarg); break;
        case 'z': c->nnz = atol(optarg); break;
        case 'n': c->samples = atol(optarg); break;
        case 's': c->steps = atol(optarg); break;
        case 'l': c->lr = atof(optarg); break;
        case 'q': c->quiet = 1; break;
        case 'L': break;
        case 'h': if (0 == rank) usage(stdout); return 1;
        default: if (0 == rank) usage(stderr); return -1;
        }
    }
    if (c->features < 1 || c->features > INT32_MAX - 2 || c->nnz < 0 || c->samples < 1 || c->steps < 1) {
        if (0 == rank) fprintf(stderr, "logreg: sizes and steps must be >= 1\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    config_t cfg;
    int prc = parse(argc, argv, &cfg, rank);
    if (prc) {
        MPI_Finalize();
        return prc > 0 ? 0 : 2;
    }
    long F = cfg.features, nparams = F + 1, nbuf = F + 2; /* weights, bias, loss */
    double ntotal = (double)cfg.samples * P;
    shard_t shard;
    make_shard(&cfg, rank, &shard);
    double *w = calloc((size_t)nparams, sizeof(double)), *grad = malloc((size_t)nbuf * sizeof(double));
    double *t_step = malloc((size_t)cfg.steps * sizeof(double)), *t_ar = malloc((size_t)cfg.steps * sizeof(double));
    double *t_step_max = malloc((size_t)cfg.steps * sizeof(double)), *t_ar_max = malloc((size_t)cfg.steps * sizeof(double));
    if (!w || !grad || !t_step || !t_ar || !t_step_max || !t_ar_max) MPI_Abort(MPI_COMM_WORLD, 2);

    double loss0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long step = 0; step < cfg.steps; step++) {
        double t0 = MPI_Wtime();
        memset(grad, 0, (size_t)nbuf * sizeof(double));
        local_gradient(&shard, F, w, grad);
        double t1 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, grad, (int)nbuf, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double t2 = MPI_Wtime();
        double scale = cfg.lr / ntotal;
        for (long f = 0; f < nparams; f++) w[f] -= scale * grad[f];
        if (0 == step) loss0 = grad[F + 1] / ntotal;
        t_step[step] = MPI_Wtime() - t0;
        t_ar[step] = t2 - t1;
    }

    double loss_local = local_loss(&shard, F, w), loss_sum = 0;
    MPI_Allreduce(&loss_local, &loss_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double loss = loss_sum / ntotal, checksum = 0;
    for (long f = 0; f < nparams; f++) checksum += w[f];
    uint64_t hash = fnv1a(w, (size_t)nparams * sizeof(double)), hmin = 0, hmax = 0;
    MPI_Allreduce(&hash, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&hash, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    MPI_Reduce(t_step, t_step_max, (int)cfg.steps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(t_ar, t_ar_max, (int)cfg.steps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    if (0 == rank) {
        double step_us = median(t_step_max, cfg.steps) * 1e6, ar_us = median(t_ar_max, cfg.steps) * 1e6;
        int identical = hmin == hmax;
        if (!cfg.quiet) {
            printf("logreg: P=%d, %ld %s features, %ld samples/rank, %ld steps, lr %g; "
                   "allreduce of %ld doubles (%.1f KiB) per step\n",
                   P, F, shard.nnz >= F ? "dense" : "sparse", cfg.samples, cfg.steps, cfg.lr, nbuf,
                   (double)nbuf * 8 / 1024);
            printf("loss: initial %.10g  final %.10g\n", loss0, loss);
            printf("weights: checksum %.10g  hash %016" PRIx64 " (%s on all ranks)\n", checksum, hash,
                   identical ? "identical" : "DIFFERENT");
            printf("time/step: median %.1f us, allreduce %.1f us (%.0f%%)\n", step_us, ar_us,
                   step_us > 0 ? 100 * ar_us / step_us : 0);
        }
        printf("RESULT loss=%.10g loss0=%.10g checksum=%.10g hash=%016" PRIx64 " identical=%d step_us=%.2f "
               "allreduce_us=%.2f np=%d params=%ld\n",
               loss, loss0, checksum, hash, identical, step_us, ar_us, P, nparams);
        fflush(stdout);
    }
    int rc = hmin == hmax ? 0 : 1;
    free(w), free(grad), free(t_step), free(t_ar), free(t_step_max), free(t_ar_max);
    free(shard.idx), free(shard.val), free(shard.label);
    MPI_Finalize();
    return rc;
}
