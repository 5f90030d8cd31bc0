/*
 * braid_bench.c - MPI collective benchmark with OSU-style options and
 * nccl-tests bandwidth figures. A plain MPI program: it knows nothing about
 * braid and measures whatever coll component Open MPI selects.
 *
 * Collectives (-c): allreduce, bcast, barrier, reduce, reduce_scatter
 * (MPI_Reduce_scatter_block), allgather, alltoall, scan, exscan, gather,
 * scatter, allgatherv, alltoallv, gatherv, scatterv; plus
 *   pairwise_exchange  Gloo's benchmark pattern: C steps (--steps, default
 *                      lg P'), in step s rank r exchanges S/C bytes with
 *                      r XOR 2^s (the pairs of halving-doubling reduce-scatter;
 *                      a rank whose partner is >= P sits the step out). Also
 *                      fits t(m) = alpha + m/beta over the sizes.
 *   memcpy             each rank copies S bytes (all ranks at once): the
 *                      memory-bandwidth reference.
 *   reduce_local       each rank computes a[i] += b[i] over S bytes of doubles
 *                      (all ranks at once): the reduction-bandwidth reference.
 *   iprobe             one iteration = IPROBE_CALLS (1000) MPI_Iprobe calls
 *                      on an empty queue (a tag nobody sends), so the time
 *                      in us is ns per call: what the loaded components'
 *                      progress hooks cost every MPI call that progresses
 *                      (one row, size 0).
 *
 * Message size S (the "size" column, -b/-e) follows nccl-tests: it is the size
 * of the full vector, in bytes:
 *   allreduce, reduce, bcast,  S = count * typesize (the whole buffer of a rank)
 *   scan, exscan
 *   reduce_scatter             S = recvcount * P * typesize (the send buffer;
 *                              each rank receives S/P)
 *   allgather                  S = sendcount * P * typesize (the receive buffer;
 *                              each rank contributes S/P)
 *   alltoall                   S = sendcount * P * typesize (the send buffer:
 *                              a block of S/P to every rank)
 *   gather                     S = sendcount * P * typesize (the root's receive
 *                              buffer; each rank contributes S/P)
 *   scatter                    S = recvcount * P * typesize (the root's send
 *                              buffer; each rank receives S/P)
 *   allgatherv, alltoallv,     as allgather, alltoall, gather, scatter: every
 *   gatherv, scatterv          count equal (one block = S/P), displacements
 *                              i * block, so each moves the bytes of its
 *                              non-v form
 *   pairwise_exchange          S = C * (bytes per step)
 *   memcpy, reduce_local       S = bytes written per rank
 * Counts are rounded down to whole elements (and to whole blocks of P for
 * reduce_scatter / allgather / alltoall / gather / scatter and the v forms, at
 * least one element); the printed size is the S actually moved, and a size
 * that rounds to the previous one is skipped. The root of bcast, reduce,
 * gather(v) and scatter(v) is -r (default 0).
 *
 * Timing: before every iteration an (untimed) MPI_Barrier; each rank times
 * the call alone with MPI_Wtime. After the size's iterations one MPI_Reduce
 * (MAX) over the array of iteration times gives, per iteration, the slowest
 * rank's time t_i. Reported: p50, min and max of t_i in microseconds,
 *   algbw = S / p50            (GB/s, 1 GB = 1e9 bytes)
 *   busbw = algbw * factor     allreduce 2(P-1)/P; reduce_scatter,
 *                              allgather, alltoall, gather, scatter and the
 *                              v forms (P-1)/P; bcast, reduce,
 *                              pairwise_exchange, memcpy, reduce_local 1.
 * Iterations per size: -i N, or -t SECONDS (a time budget per size: the
 * slowest rank's elapsed time decides, checked between batches of iterations;
 * at least 10 iterations, at most -i if given, else 100000).
 *
 * --validate: inputs are deterministic functions of (rank, element) with
 * small integer values, chosen per op and type so no result overflows and
 * float sums are exact; after the timed loop one more call on fresh inputs is
 * checked element by element against a reference computed locally (gather,
 * gatherv: the root checks every rank's block; scatter, scatterv: every rank
 * its block; allgatherv: every rank every block; alltoallv: as alltoall).
 *
 * --inplace: MPI_IN_PLACE where MPI allows it (gather(v): the root's sendbuf,
 * scatter(v): the root's recvbuf, allgatherv, alltoallv: sendbuf); bcast and
 * barrier ignore it.
 *
 * Nonblocking and persistent forms of every collective above up to scatterv
 * (the same S, inputs and validation):
 *   -c iallreduce ...   one iteration = post (MPI_Iallreduce ...) + MPI_Wait
 *   -c allreduce_init   one iteration = MPI_Start + MPI_Wait; the request is
 *                       made once per size, before the warm-up, and freed after
 *                       the validation (MPIX_*_init on Open MPI 4.1)
 *   --overlap           (nonblocking forms) OSU's overlap test: after the
 *                       post+wait loop (t_pure = its p50), every iteration is
 *                       post, compute for t_pure (a busy loop that reads
 *                       the clock, no MPI call), wait; reported t_total and
 *                       t_compute (p50s) and
 *                       overlap = max(0, 100 (1 - (t_total - t_compute) / t_pure)).
 *                       --tests N calls MPI_Test N times spread over the compute
 *                       (their time is part of t_compute, as in OSU).
 *   -c async_iallreduce, async_ibcast: rank 0 posts, sleeps (--sleep-ms, default
 *                       200, usleep: no MPI call), waits; the other ranks post
 *                       and time their MPI_Wait alone. Reported: the slowest
 *                       other rank's wait (p50, min, max over iterations), in
 *                       ms. Without progress in rank 0 while it sleeps, the
 *                       others wait about the whole sleep.
 * --rank-mean: each iteration's time is the mean over ranks (OSU's
 * aggregation) instead of the slowest rank's; the barrier before every call
 * stays as it is. --per-rank: after each size's row, a line "# per rank
 * p50 us:" with every rank's own p50 (who waits for whom: a reduce root that
 * folds while the others have left, or others held until the root read
 * their buffers). --touch: before every call (warm-up included, untimed,
 * ahead of the barrier) each rank writes its inputs again, so that the call
 * meets freshly written data, as in an application's step, not the lines
 * the previous call left in the caches.
 *
 * line_ns (last column): before each size, ranks 0 and 1 (when they share a
 * node) pass one cache line of a shared window back and forth LINE_TRIPS
 * times; the column is the mean round trip in ns (-1: not on one node). It
 * states the machine's state with every row: where a line moves between
 * the two cores in about 100 ns or about 500 ns (two vCPUs of a virtual
 * machine, or two sockets), small and mid-size results differ more than
 * most code changes make them, and a virtual machine can switch between the
 * two within a run.
 */
#include <mpi.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* MPI-4's persistent collectives: Open MPI 5.0 has them (its MPI_VERSION is
 * still 3), 4.1 as MPIX_ in its pcollreq extension */
#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define HAVE_PERSISTENT_COLLS 1
#define Allreduce_init MPIX_Allreduce_init
#define Bcast_init MPIX_Bcast_init
#define Reduce_init MPIX_Reduce_init
#define Allgather_init MPIX_Allgather_init
#define Alltoall_init MPIX_Alltoall_init
#define Scan_init MPIX_Scan_init
#define Exscan_init MPIX_Exscan_init
#define Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define Barrier_init MPIX_Barrier_init
#define Gather_init MPIX_Gather_init
#define Scatter_init MPIX_Scatter_init
#define Allgatherv_init MPIX_Allgatherv_init
#define Alltoallv_init MPIX_Alltoallv_init
#define Gatherv_init MPIX_Gatherv_init
#define Scatterv_init MPIX_Scatterv_init
#endif
#else
#define HAVE_PERSISTENT_COLLS 1
#define Allreduce_init MPI_Allreduce_init
#define Bcast_init MPI_Bcast_init
#define Reduce_init MPI_Reduce_init
#define Allgather_init MPI_Allgather_init
#define Alltoall_init MPI_Alltoall_init
#define Scan_init MPI_Scan_init
#define Exscan_init MPI_Exscan_init
#define Reduce_scatter_block_init MPI_Reduce_scatter_block_init
#define Barrier_init MPI_Barrier_init
#define Gather_init MPI_Gather_init
#define Scatter_init MPI_Scatter_init
#define Allgatherv_init MPI_Allgatherv_init
#define Alltoallv_init MPI_Alltoallv_init
#define Gatherv_init MPI_Gatherv_init
#define Scatterv_init MPI_Scatterv_init
#endif

/* ------------------------------------------------------------------ */
/* collectives                                                         */
/* ------------------------------------------------------------------ */

typedef enum {
    B_ALLREDUCE,
    B_BCAST,
    B_BARRIER,
    B_REDUCE,
    B_REDUCE_SCATTER,
    B_ALLGATHER,
    B_ALLTOALL,
    B_SCAN,
    B_EXSCAN,
    B_GATHER,
    B_SCATTER,
    B_ALLGATHERV,
    B_ALLTOALLV,
    B_GATHERV,
    B_SCATTERV,
    B_PAIRWISE,
    B_MEMCPY,
    B_REDUCE_LOCAL,
    B_IPROBE,
    B_NCOLLS
} bench_coll_t;

static const char *const coll_names[B_NCOLLS] = {
    "allreduce", "bcast", "barrier", "reduce", "reduce_scatter", "allgather", "alltoall",
    "scan", "exscan", "gather", "scatter", "allgatherv", "alltoallv", "gatherv", "scatterv",
    "pairwise_exchange", "memcpy", "reduce_local", "iprobe",
};

/* one row, no message size */
static int coll_sizeless(bench_coll_t c) { return B_BARRIER == c || B_IPROBE == c; }

#define IPROBE_CALLS 1000
#define IPROBE_TAG 32000

static double busbw_factor(bench_coll_t coll, int P)
{
    switch (coll) {
    case B_ALLREDUCE: return 2.0 * (P - 1) / P;
    case B_REDUCE_SCATTER:
    case B_ALLGATHER:
    case B_ALLTOALL:
    case B_GATHER:
    case B_SCATTER:
    case B_ALLGATHERV:
    case B_ALLTOALLV:
    case B_GATHERV:
    case B_SCATTERV: return (double)(P - 1) / P;
    case B_BARRIER:
    case B_IPROBE: return 0.0;
    default: return 1.0;
    }
}

static const char *busbw_factor_text(bench_coll_t coll)
{
    switch (coll) {
    case B_ALLREDUCE: return "2(P-1)/P";
    case B_REDUCE_SCATTER:
    case B_ALLGATHER:
    case B_ALLTOALL:
    case B_GATHER:
    case B_SCATTER:
    case B_ALLGATHERV:
    case B_ALLTOALLV:
    case B_GATHERV:
    case B_SCATTERV: return "(P-1)/P";
    case B_BARRIER:
    case B_IPROBE: return "-";
    default: return "1";
    }
}

/* how an iteration calls the collective */
typedef enum { M_BLOCKING, M_NONBLOCKING, M_PERSISTENT, M_ASYNC } bench_mode_t;

static int coll_has_forms(bench_coll_t c) { return c <= B_SCATTERV; }

/* the collectives with a root (-r) */
static int coll_has_root(bench_coll_t c)
{
    return B_BCAST == c || B_REDUCE == c || B_GATHER == c || B_SCATTER == c || B_GATHERV == c ||
           B_SCATTERV == c;
}

/* the v forms: counts and displacements in bench_t's vcounts, vdispls */
static int coll_is_v(bench_coll_t c)
{
    return B_ALLGATHERV == c || B_ALLTOALLV == c || B_GATHERV == c || B_SCATTERV == c;
}

static int coll_has_op(bench_coll_t c)
{
    return B_ALLREDUCE == c || B_REDUCE == c || B_REDUCE_SCATTER == c || B_SCAN == c || B_EXSCAN == c;
}

/* ------------------------------------------------------------------ */
/* datatypes and ops                                                   */
/* ------------------------------------------------------------------ */

typedef enum { T_INT8, T_UINT8, T_INT16, T_UINT16, T_INT32, T_UINT32, T_INT64, T_UINT64,
               T_FLOAT, T_DOUBLE, T_NTYPES } dtype_id_t;

typedef struct {
    const char *name;
    size_t size;
    int is_float;
    int64_t exact_max; /* largest value the type holds exactly (capped at 2^53) */
} dtype_info_t;

static const dtype_info_t dtypes[T_NTYPES] = {
    { "int8", 1, 0, INT8_MAX },        { "uint8", 1, 0, UINT8_MAX },
    { "int16", 2, 0, INT16_MAX },      { "uint16", 2, 0, UINT16_MAX },
    { "int32", 4, 0, INT32_MAX },      { "uint32", 4, 0, UINT32_MAX },
    { "int64", 8, 0, INT64_MAX },      { "uint64", 8, 0, INT64_MAX },
    { "float", 4, 1, (int64_t)1 << 24 }, { "double", 8, 1, (int64_t)1 << 53 },
};

static MPI_Datatype mpi_type(dtype_id_t t)
{
    switch (t) {
    case T_INT8: return MPI_INT8_T;
    case T_UINT8: return MPI_UINT8_T;
    case T_INT16: return MPI_INT16_T;
    case T_UINT16: return MPI_UINT16_T;
    case T_INT32: return MPI_INT32_T;
    case T_UINT32: return MPI_UINT32_T;
    case T_INT64: return MPI_INT64_T;
    case T_UINT64: return MPI_UINT64_T;
    case T_FLOAT: return MPI_FLOAT;
    default: return MPI_DOUBLE;
    }
}

static int dtype_lookup(const char *name)
{
    static const struct { const char *alias; dtype_id_t id; } aliases[] = {
        { "char", T_INT8 }, { "byte", T_UINT8 }, { "short", T_INT16 }, { "int", T_INT32 },
        { "long", T_INT64 }, { "float32", T_FLOAT }, { "float64", T_DOUBLE },
    };
    for (int t = 0; t < T_NTYPES; t++)
        if (0 == strcmp(name, dtypes[t].name)) return t;
    for (size_t k = 0; k < sizeof(aliases) / sizeof(aliases[0]); k++)
        if (0 == strcmp(name, aliases[k].alias)) return aliases[k].id;
    return -1;
}

typedef enum { O_SUM, O_PROD, O_MAX, O_MIN, O_BAND, O_BOR, O_BXOR, O_LAND, O_LOR, O_NOPS } op_id_t;

static const char *const op_names[O_NOPS] = { "sum", "prod", "max", "min", "band",
                                              "bor", "bxor", "land", "lor" };

static MPI_Op mpi_op(op_id_t o)
{
    switch (o) {
    case O_SUM: return MPI_SUM;
    case O_PROD: return MPI_PROD;
    case O_MAX: return MPI_MAX;
    case O_MIN: return MPI_MIN;
    case O_BAND: return MPI_BAND;
    case O_BOR: return MPI_BOR;
    case O_BXOR: return MPI_BXOR;
    case O_LAND: return MPI_LAND;
    default: return MPI_LOR;
    }
}

static int op_is_bitwise_or_logical(op_id_t o) { return o >= O_BAND; }

/* ------------------------------------------------------------------ */
/* deterministic inputs and local reference                            */
/* ------------------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static uint64_t hash2(int rank, size_t i)
{
    return mix((uint64_t)i * 0x9e3779b97f4a7c15ULL + (uint64_t)(rank + 1) * 0xc2b2ae3d27d4eb4fULL);
}

typedef struct {
    op_id_t op;     /* for copy-only collectives: O_MAX (any small value) */
    int P;
    int64_t range;  /* values in [0, range) for sum / max / min */
} value_rule_t;

static value_rule_t value_rule(op_id_t op, dtype_id_t t, int P)
{
    value_rule_t r = { op, P, 1 };
    int64_t cap = dtypes[t].exact_max / P; /* P * (range-1) must stay exact */
    if (O_SUM == op) r.range = (cap < 100 ? cap : 100) + 1;
    else r.range = (dtypes[t].exact_max < 1000 ? dtypes[t].exact_max : 1000) + 1;
    return r;
}

/* input value of element i (index in the full vector) on rank r */
static int64_t input_value(const value_rule_t *vr, int r, size_t i)
{
    uint64_t h = hash2(r, i);
    switch (vr->op) {
    case O_PROD: /* one rank per element contributes 1..3, the rest 1 */
        return (int)(i % (size_t)vr->P) == r ? 1 + (int64_t)(h % 3) : 1;
    case O_BAND:
    case O_BOR:
    case O_BXOR: return (int64_t)(h & 0x7f);
    case O_LAND: return (h % (uint64_t)(2 * vr->P)) != 0;
    case O_LOR: return (h % (uint64_t)(2 * vr->P)) == 0;
    default: return (int64_t)(h % (uint64_t)vr->range);
    }
}

static int64_t combine(op_id_t op, int64_t a, int64_t b)
{
    switch (op) {
    case O_SUM: return a + b;
    case O_PROD: return a * b;
    case O_MAX: return a > b ? a : b;
    case O_MIN: return a < b ? a : b;
    case O_BAND: return a & b;
    case O_BOR: return a | b;
    case O_BXOR: return a ^ b;
    case O_LAND: return a && b;
    default: return a || b;
    }
}

/* the reduction of ranks 0..upto-1 (upto >= 1) */
static int64_t prefix_value(const value_rule_t *vr, int upto, size_t i)
{
    int64_t acc = input_value(vr, 0, i);
    for (int r = 1; r < upto; r++) acc = combine(vr->op, acc, input_value(vr, r, i));
    return acc;
}

static int64_t reduced_value(const value_rule_t *vr, size_t i)
{
    int64_t acc = input_value(vr, 0, i);
    for (int r = 1; r < vr->P; r++) acc = combine(vr->op, acc, input_value(vr, r, i));
    return acc;
}

static void store(dtype_id_t t, void *buf, size_t i, int64_t v)
{
    switch (t) {
    case T_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case T_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case T_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case T_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case T_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case T_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case T_INT64: ((int64_t *)buf)[i] = v; break;
    case T_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case T_FLOAT: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = (double)v; break;
    }
}

static int equals(dtype_id_t t, const void *buf, size_t i, int64_t v)
{
    switch (t) {
    case T_INT8: return ((const int8_t *)buf)[i] == v;
    case T_UINT8: return ((const uint8_t *)buf)[i] == v;
    case T_INT16: return ((const int16_t *)buf)[i] == v;
    case T_UINT16: return ((const uint16_t *)buf)[i] == v;
    case T_INT32: return ((const int32_t *)buf)[i] == v;
    case T_UINT32: return ((const uint32_t *)buf)[i] == v;
    case T_INT64: return ((const int64_t *)buf)[i] == v;
    case T_UINT64: return ((const uint64_t *)buf)[i] == (uint64_t)v;
    case T_FLOAT: return ((const float *)buf)[i] == (float)v;
    default: return ((const double *)buf)[i] == (double)v;
    }
}

/* ------------------------------------------------------------------ */
/* options                                                             */
/* ------------------------------------------------------------------ */

typedef struct {
    bench_coll_t coll;
    size_t min_size, max_size;
    long iters;       /* -i; 0 = not given */
    double budget_s;  /* -t; 0 = not given */
    long warmup;
    dtype_id_t dtype;
    op_id_t op;
    int inplace, validate, root, csv, steps;
    bench_mode_t mode;
    int overlap, tests, rank_mean, per_rank, touch;
    long sleep_ms;
    char label[48]; /* -c as given (without the _block alias) */
} options_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: braid_bench [options]\n"
            "  -c COLL      allreduce (default) | bcast | barrier | reduce | reduce_scatter |\n"
            "               allgather | alltoall | scan | exscan | gather | scatter |\n"
            "               allgatherv | alltoallv | gatherv | scatterv | pairwise_exchange |\n"
            "               memcpy | reduce_local | iprobe\n"
            "               nonblocking (post + wait): iallreduce ibcast ibarrier ireduce\n"
            "               ireduce_scatter iallgather ialltoall iscan iexscan igather\n"
            "               iscatter iallgatherv ialltoallv igatherv iscatterv; persistent\n"
            "               (start + wait): allreduce_init bcast_init barrier_init reduce_init\n"
            "               reduce_scatter_init allgather_init alltoall_init scan_init\n"
            "               exscan_init gather_init scatter_init allgatherv_init\n"
            "               alltoallv_init gatherv_init scatterv_init; asynchronous progress:\n"
            "               async_iallreduce async_ibcast\n"
            "  -b MIN       smallest message size S in bytes, K/M/G suffix (default 8)\n"
            "  -e MAX       largest message size, sizes double from MIN (default 32M)\n"
            "  -i ITERS     timed iterations per size (default 100; with -t: the cap)\n"
            "  -t SECONDS   time budget per size instead of a fixed count\n"
            "  -w WARMUP    untimed iterations per size (default 10)\n"
            "  -d TYPE      int8 uint8 int16 uint16 int32 uint32 int64 uint64 float double\n"
            "               (default float)\n"
            "  -o OP        sum (default) prod max min band bor bxor land lor\n"
            "  -r, --root R root of bcast / reduce / gather(v) / scatter(v) (default 0)\n"
            "  --inplace    MPI_IN_PLACE where the collective allows it\n"
            "  --validate   check results against a locally computed reference\n"
            "  --steps C    pairwise_exchange: steps (1..lg P, default lg P)\n"
            "  --csv        comma-separated output\n"
            "  --overlap    nonblocking forms: post, compute for t_pure, wait (OSU overlap)\n"
            "  --tests N    with --overlap: N MPI_Test calls spread over the compute\n"
            "  --sleep-ms T async_*: rank 0 sleeps T ms between post and wait (default 200;\n"
            "               async_* default to -i 10 -w 1)\n"
            "  --rank-mean  an iteration's time is the mean over ranks (OSU), not the max\n"
            "  --per-rank   also each rank's own p50, on a line after the size's row\n"
            "  --touch      rewrite the inputs before every call, untimed (fresh data, as an\n"
            "               application's step writes them)\n"
            "S is the full vector (nccl-tests): reduce_scatter sends S, allgather receives S,\n"
            "gather: the root receives S, scatter: the root sends S; the v forms: equal\n"
            "counts, the bytes of their non-v forms.\n"
            "environment: BRAID_BENCH_THREAD_MULTIPLE=1 initialises with MPI_THREAD_MULTIPLE\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if ('B' == *end || 'b' == *end) end++;
    if (*end) return -1;
    *out = (size_t)v;
    return 0;
}

static int lookup(const char *const *names, int n, const char *s)
{
    for (int k = 0; k < n; k++)
        if (0 == strcmp(names[k], s)) return k;
    return -1;
}

/* -c NAME: a collective, its nonblocking form (i prefix), its persistent form
 * (_init suffix) or an asynchronous-progress test (async_ prefix) */
static int parse_coll(const char *arg, options_t *o)
{
    char name[48];
    bench_mode_t mode = M_BLOCKING;
    if (strlen(arg) >= sizeof(name)) return -1;
    snprintf(o->label, sizeof(o->label), "%s", arg);
    snprintf(name, sizeof(name), "%s", arg);
    size_t len = strlen(name);
    if (0 == strncmp(name, "async_i", 7)) {
        memmove(name, name + 7, len - 6);
        mode = M_ASYNC;
    } else if (len > 5 && 0 == strcmp(name + len - 5, "_init")) {
        name[len - 5] = 0;
        mode = M_PERSISTENT;
    } else if ('i' == name[0] && lookup(coll_names, B_NCOLLS, name) < 0) {
        memmove(name, name + 1, len);
        mode = M_NONBLOCKING;
    }
    len = strlen(name);
    if (len > 6 && 0 == strcmp(name + len - 6, "_block")) name[len - 6] = 0;
    int k = lookup(coll_names, B_NCOLLS, name);
    if (k < 0 || (M_BLOCKING != mode && !coll_has_forms((bench_coll_t)k))) return -1;
    if (M_ASYNC == mode && B_ALLREDUCE != k && B_BCAST != k) return -1;
#ifndef HAVE_PERSISTENT_COLLS
    if (M_PERSISTENT == mode) return -1;
#endif
    o->coll = (bench_coll_t)k;
    o->mode = mode;
    return 0;
}

/* returns 0 ok, 1 help printed, -1 error (message printed by rank 0) */
static int parse_options(int argc, char **argv, options_t *o, int rank)
{
    enum { OPT_INPLACE = 256, OPT_VALIDATE, OPT_CSV, OPT_STEPS, OPT_OVERLAP, OPT_TESTS, OPT_SLEEP,
           OPT_RANK_MEAN, OPT_PER_RANK, OPT_TOUCH };
    static const struct option longopts[] = {
        { "coll", required_argument, NULL, 'c' },   { "min", required_argument, NULL, 'b' },
        { "max", required_argument, NULL, 'e' },    { "iters", required_argument, NULL, 'i' },
        { "time", required_argument, NULL, 't' },   { "warmup", required_argument, NULL, 'w' },
        { "type", required_argument, NULL, 'd' },   { "op", required_argument, NULL, 'o' },
        { "root", required_argument, NULL, 'r' },   { "inplace", no_argument, NULL, OPT_INPLACE },
        { "validate", no_argument, NULL, OPT_VALIDATE }, { "csv", no_argument, NULL, OPT_CSV },
        { "steps", required_argument, NULL, OPT_STEPS }, { "help", no_argument, NULL, 'h' },
        { "overlap", no_argument, NULL, OPT_OVERLAP }, { "tests", required_argument, NULL, OPT_TESTS },
        { "sleep-ms", required_argument, NULL, OPT_SLEEP },
        { "rank-mean", no_argument, NULL, OPT_RANK_MEAN },
        { "per-rank", no_argument, NULL, OPT_PER_RANK },
        { "touch", no_argument, NULL, OPT_TOUCH },
        { NULL, 0, NULL, 0 },
    };
    *o = (options_t){ .coll = B_ALLREDUCE, .min_size = 8, .max_size = 32u << 20, .warmup = 10,
                      .dtype = T_FLOAT, .op = O_SUM, .sleep_ms = 200, .label = "allreduce" };
    const char *bad = NULL;
    int ch, k, warmup_given = 0;
    opterr = 0;
    while (!bad && -1 != (ch = getopt_long(argc, argv, "c:b:e:i:t:w:d:o:r:h", longopts, NULL))) {
        switch (ch) {
        case 'c':
            if (parse_coll(optarg, o)) bad = "unknown collective";
            break;
        case 'b': if (parse_size(optarg, &o->min_size)) bad = "bad -b size"; break;
        case 'e': if (parse_size(optarg, &o->max_size)) bad = "bad -e size"; break;
        case 'i': if ((o->iters = atol(optarg)) < 1) bad = "-i needs a count >= 1"; break;
        case 't': if ((o->budget_s = atof(optarg)) <= 0) bad = "-t needs seconds > 0"; break;
        case 'w':
            if ((o->warmup = atol(optarg)) < 0) bad = "-w needs a count >= 0";
            warmup_given = 1;
            break;
        case 'd':
            if ((k = dtype_lookup(optarg)) < 0) bad = "unknown datatype";
            else o->dtype = (dtype_id_t)k;
            break;
        case 'o':
            if ((k = lookup(op_names, O_NOPS, optarg)) < 0) bad = "unknown op";
            else o->op = (op_id_t)k;
            break;
        case 'r': o->root = atoi(optarg); break;
        case OPT_INPLACE: o->inplace = 1; break;
        case OPT_VALIDATE: o->validate = 1; break;
        case OPT_CSV: o->csv = 1; break;
        case OPT_STEPS: if ((o->steps = atoi(optarg)) < 1) bad = "--steps needs C >= 1"; break;
        case OPT_OVERLAP: o->overlap = 1; break;
        case OPT_TESTS: if ((o->tests = atoi(optarg)) < 0) bad = "--tests needs N >= 0"; break;
        case OPT_SLEEP: if ((o->sleep_ms = atol(optarg)) < 0) bad = "--sleep-ms needs T >= 0"; break;
        case OPT_RANK_MEAN: o->rank_mean = 1; break;
        case OPT_PER_RANK: o->per_rank = 1; break;
        case OPT_TOUCH: o->touch = 1; break;
        case 'h': if (0 == rank) usage(stdout); return 1;
        default: bad = "unknown option or missing argument"; break;
        }
    }
    if (!bad && optind < argc) bad = "unexpected argument";
    if (!bad && 0 == o->min_size) o->min_size = 1;
    if (!bad && o->min_size > o->max_size) bad = "-b is larger than -e";
    if (!bad && o->overlap && M_NONBLOCKING != o->mode) bad = "--overlap needs a nonblocking form (-c iallreduce ...)";
    if (!bad && o->tests && !o->overlap) bad = "--tests needs --overlap";
    if (!bad && coll_has_op(o->coll) && dtypes[o->dtype].is_float && op_is_bitwise_or_logical(o->op))
        bad = "bitwise and logical ops need an integer type";
    if (bad) {
        if (0 == rank) {
            fprintf(stderr, "braid_bench: %s\n", bad);
            usage(stderr);
        }
        return -1;
    }
    if (B_REDUCE_LOCAL == o->coll) o->dtype = T_DOUBLE;
    if (M_ASYNC == o->mode) { /* an iteration takes the sleep */
        if (!o->iters && o->budget_s <= 0) o->iters = 10;
        if (!warmup_given) o->warmup = 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* one size                                                            */
/* ------------------------------------------------------------------ */

typedef struct {
    const options_t *o;
    MPI_Comm comm;
    int rank, P;
    int steps;           /* pairwise_exchange */
    size_t es;           /* element size */
    MPI_Datatype type;
    value_rule_t vr;
    char *sbuf, *rbuf;
    int *vcounts, *vdispls; /* v forms: P counts (all the block) and displacements */
    MPI_Request preq;    /* persistent forms: the request of the current size */
    double spin_per_s;   /* busy-loop turns per second (--overlap) */
} bench_t;

typedef struct {
    size_t S;     /* bytes, nccl-tests convention */
    size_t count; /* elements: per call (allreduce...), per block (rs/ag/a2a/gather/scatter and
                     the v forms), per step (pairwise) */
} shape_t;

static shape_t shape_for(const bench_t *b, size_t want)
{
    shape_t s = { 0, 0 };
    size_t es = b->es;
    switch (b->o->coll) {
    case B_BARRIER:
    case B_IPROBE: break;
    case B_REDUCE_SCATTER:
    case B_ALLGATHER:
    case B_ALLTOALL:
    case B_GATHER:
    case B_SCATTER:
    case B_ALLGATHERV:
    case B_ALLTOALLV:
    case B_GATHERV:
    case B_SCATTERV:
        s.count = want / (es * (size_t)b->P);
        if (0 == s.count) s.count = 1;
        s.S = s.count * es * (size_t)b->P;
        break;
    case B_PAIRWISE:
        s.count = want / (es * (size_t)b->steps);
        if (0 == s.count) s.count = 1;
        s.S = s.count * es * (size_t)b->steps;
        break;
    default:
        s.count = want / es;
        if (0 == s.count) s.count = 1;
        s.S = s.count * es;
        break;
    }
    return s;
}

static void reduce_local_kernel(double *restrict a, const double *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) a[i] += x[i];
}

static int pairwise_exchange(const bench_t *b, size_t count)
{
    int rc = MPI_SUCCESS;
    for (int s = 0; s < b->steps && MPI_SUCCESS == rc; s++) {
        int peer = b->rank ^ (1 << s);
        if (peer >= b->P) continue;
        rc = MPI_Sendrecv(b->sbuf, (int)count, b->type, peer, s, b->rbuf, (int)count, b->type, peer, s,
                          b->comm, MPI_STATUS_IGNORE);
    }
    return rc;
}

/* post the nonblocking form of the collective */
static int post_nonblocking(const bench_t *b, size_t count, MPI_Request *req)
{
    const options_t *o = b->o;
    int n = (int)count, root = o->root;
    MPI_Op op = mpi_op(o->op);
    void *in_place_or_sbuf = o->inplace ? MPI_IN_PLACE : (void *)b->sbuf;
    int root_in_place = o->inplace && b->rank == root; /* gather(v), scatter(v) */
    const int *cnt = b->vcounts, *dsp = b->vdispls;    /* the v forms */
    switch (o->coll) {
    case B_ALLREDUCE: return MPI_Iallreduce(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm, req);
    case B_BCAST: return MPI_Ibcast(b->rbuf, n, b->type, root, b->comm, req);
    case B_BARRIER: return MPI_Ibarrier(b->comm, req);
    case B_REDUCE: {
        const void *sb = (o->inplace && b->rank == root) ? MPI_IN_PLACE : (void *)b->sbuf;
        return MPI_Ireduce(sb, b->rbuf, n, b->type, op, root, b->comm, req);
    }
    case B_REDUCE_SCATTER:
        return MPI_Ireduce_scatter_block(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm, req);
    case B_ALLGATHER:
        if (o->inplace)
            return MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, n, b->type, b->comm, req);
        return MPI_Iallgather(b->sbuf, n, b->type, b->rbuf, n, b->type, b->comm, req);
    case B_ALLTOALL:
        if (o->inplace)
            return MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, n, b->type, b->comm, req);
        return MPI_Ialltoall(b->sbuf, n, b->type, b->rbuf, n, b->type, b->comm, req);
    case B_SCAN: return MPI_Iscan(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm, req);
    case B_EXSCAN: return MPI_Iexscan(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm, req);
    case B_GATHER:
        if (root_in_place)
            return MPI_Igather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, n, b->type, root,
                               b->comm, req);
        return MPI_Igather(b->sbuf, n, b->type, b->rbuf, n, b->type, root, b->comm, req);
    case B_SCATTER:
        if (root_in_place)
            return MPI_Iscatter(b->sbuf, n, b->type, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root,
                                b->comm, req);
        return MPI_Iscatter(b->sbuf, n, b->type, b->rbuf, n, b->type, root, b->comm, req);
    case B_ALLGATHERV:
        if (o->inplace)
            return MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, cnt, dsp, b->type,
                                   b->comm, req);
        return MPI_Iallgatherv(b->sbuf, n, b->type, b->rbuf, cnt, dsp, b->type, b->comm, req);
    case B_ALLTOALLV:
        if (o->inplace)
            return MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, b->rbuf, cnt, dsp,
                                  b->type, b->comm, req);
        return MPI_Ialltoallv(b->sbuf, cnt, dsp, b->type, b->rbuf, cnt, dsp, b->type, b->comm, req);
    case B_GATHERV:
        if (root_in_place)
            return MPI_Igatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, cnt, dsp, b->type,
                                root, b->comm, req);
        return MPI_Igatherv(b->sbuf, n, b->type, b->rbuf, cnt, dsp, b->type, root, b->comm, req);
    case B_SCATTERV:
        if (root_in_place)
            return MPI_Iscatterv(b->sbuf, cnt, dsp, b->type, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
                                 root, b->comm, req);
        return MPI_Iscatterv(b->sbuf, cnt, dsp, b->type, b->rbuf, n, b->type, root, b->comm, req);
    default: return MPI_ERR_OTHER;
    }
}

/* make the persistent request of the collective for this count */
static int init_persistent(const bench_t *b, size_t count, MPI_Request *req)
{
#ifdef HAVE_PERSISTENT_COLLS
    const options_t *o = b->o;
    int n = (int)count, root = o->root;
    MPI_Op op = mpi_op(o->op);
    MPI_Info info = MPI_INFO_NULL;
    void *in_place_or_sbuf = o->inplace ? MPI_IN_PLACE : (void *)b->sbuf;
    int root_in_place = o->inplace && b->rank == root; /* gather(v), scatter(v) */
    const int *cnt = b->vcounts, *dsp = b->vdispls;    /* the v forms */
    switch (o->coll) {
    case B_ALLREDUCE: return Allreduce_init(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm, info, req);
    case B_BCAST: return Bcast_init(b->rbuf, n, b->type, root, b->comm, info, req);
    case B_BARRIER: return Barrier_init(b->comm, info, req);
    case B_REDUCE: {
        const void *sb = (o->inplace && b->rank == root) ? MPI_IN_PLACE : (void *)b->sbuf;
        return Reduce_init(sb, b->rbuf, n, b->type, op, root, b->comm, info, req);
    }
    case B_REDUCE_SCATTER:
        return Reduce_scatter_block_init(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm, info, req);
    case B_ALLGATHER:
        if (o->inplace)
            return Allgather_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, n, b->type, b->comm, info, req);
        return Allgather_init(b->sbuf, n, b->type, b->rbuf, n, b->type, b->comm, info, req);
    case B_ALLTOALL:
        if (o->inplace)
            return Alltoall_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, n, b->type, b->comm, info, req);
        return Alltoall_init(b->sbuf, n, b->type, b->rbuf, n, b->type, b->comm, info, req);
    case B_SCAN: return Scan_init(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm, info, req);
    case B_EXSCAN:
        return Exscan_init(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm, info, req);
    case B_GATHER:
        if (root_in_place)
            return Gather_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, n, b->type, root,
                               b->comm, info, req);
        return Gather_init(b->sbuf, n, b->type, b->rbuf, n, b->type, root, b->comm, info, req);
    case B_SCATTER:
        if (root_in_place)
            return Scatter_init(b->sbuf, n, b->type, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root,
                                b->comm, info, req);
        return Scatter_init(b->sbuf, n, b->type, b->rbuf, n, b->type, root, b->comm, info, req);
    case B_ALLGATHERV:
        if (o->inplace)
            return Allgatherv_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, cnt, dsp, b->type,
                                   b->comm, info, req);
        return Allgatherv_init(b->sbuf, n, b->type, b->rbuf, cnt, dsp, b->type, b->comm, info, req);
    case B_ALLTOALLV:
        if (o->inplace)
            return Alltoallv_init(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, b->rbuf, cnt, dsp,
                                  b->type, b->comm, info, req);
        return Alltoallv_init(b->sbuf, cnt, dsp, b->type, b->rbuf, cnt, dsp, b->type, b->comm, info,
                              req);
    case B_GATHERV:
        if (root_in_place)
            return Gatherv_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, cnt, dsp, b->type,
                                root, b->comm, info, req);
        return Gatherv_init(b->sbuf, n, b->type, b->rbuf, cnt, dsp, b->type, root, b->comm, info,
                            req);
    case B_SCATTERV:
        if (root_in_place)
            return Scatterv_init(b->sbuf, cnt, dsp, b->type, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
                                 root, b->comm, info, req);
        return Scatterv_init(b->sbuf, cnt, dsp, b->type, b->rbuf, n, b->type, root, b->comm, info,
                             req);
    default: return MPI_ERR_OTHER;
    }
#else
    (void)b, (void)count, (void)req;
    return MPI_ERR_OTHER;
#endif
}

static int run_blocking(const bench_t *b, size_t count);

/* one call of the benchmarked operation (blocking, post + wait, start + wait) */
static int run_once(const bench_t *b, size_t count)
{
    MPI_Request req;
    int rc;
    switch (b->o->mode) {
    case M_NONBLOCKING:
    case M_ASYNC:
        if (MPI_SUCCESS != (rc = post_nonblocking(b, count, &req))) return rc;
        return MPI_Wait(&req, MPI_STATUS_IGNORE);
    case M_PERSISTENT:
        req = b->preq;
        if (MPI_SUCCESS != (rc = MPI_Start(&req))) return rc;
        return MPI_Wait(&req, MPI_STATUS_IGNORE);
    default: return run_blocking(b, count);
    }
}

/* one call of the blocking collective (or the reference kernels) */
static int run_blocking(const bench_t *b, size_t count)
{
    const options_t *o = b->o;
    int n = (int)count, root = o->root;
    MPI_Op op = mpi_op(o->op);
    void *in_place_or_sbuf = o->inplace ? MPI_IN_PLACE : (void *)b->sbuf;
    int root_in_place = o->inplace && b->rank == root; /* gather(v), scatter(v) */
    const int *cnt = b->vcounts, *dsp = b->vdispls;    /* the v forms */
    switch (o->coll) {
    case B_ALLREDUCE: return MPI_Allreduce(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm);
    case B_BCAST: return MPI_Bcast(b->rbuf, n, b->type, root, b->comm);
    case B_BARRIER: return MPI_Barrier(b->comm);
    case B_REDUCE: {
        const void *sb = (o->inplace && b->rank == root) ? MPI_IN_PLACE : (void *)b->sbuf;
        return MPI_Reduce(sb, b->rbuf, n, b->type, op, root, b->comm);
    }
    case B_REDUCE_SCATTER:
        if (o->inplace) return MPI_Reduce_scatter_block(MPI_IN_PLACE, b->rbuf, n, b->type, op, b->comm);
        return MPI_Reduce_scatter_block(b->sbuf, b->rbuf, n, b->type, op, b->comm);
    case B_ALLGATHER:
        if (o->inplace)
            return MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, n, b->type, b->comm);
        return MPI_Allgather(b->sbuf, n, b->type, b->rbuf, n, b->type, b->comm);
    case B_ALLTOALL:
        if (o->inplace)
            return MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, n, b->type, b->comm);
        return MPI_Alltoall(b->sbuf, n, b->type, b->rbuf, n, b->type, b->comm);
    case B_SCAN: return MPI_Scan(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm);
    case B_EXSCAN: return MPI_Exscan(in_place_or_sbuf, b->rbuf, n, b->type, op, b->comm);
    case B_GATHER:
        if (root_in_place)
            return MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, n, b->type, root,
                              b->comm);
        return MPI_Gather(b->sbuf, n, b->type, b->rbuf, n, b->type, root, b->comm);
    case B_SCATTER:
        if (root_in_place)
            return MPI_Scatter(b->sbuf, n, b->type, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root,
                               b->comm);
        return MPI_Scatter(b->sbuf, n, b->type, b->rbuf, n, b->type, root, b->comm);
    case B_ALLGATHERV:
        if (o->inplace)
            return MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, cnt, dsp, b->type,
                                  b->comm);
        return MPI_Allgatherv(b->sbuf, n, b->type, b->rbuf, cnt, dsp, b->type, b->comm);
    case B_ALLTOALLV:
        if (o->inplace)
            return MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, b->rbuf, cnt, dsp,
                                 b->type, b->comm);
        return MPI_Alltoallv(b->sbuf, cnt, dsp, b->type, b->rbuf, cnt, dsp, b->type, b->comm);
    case B_GATHERV:
        if (root_in_place)
            return MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->rbuf, cnt, dsp, b->type, root,
                               b->comm);
        return MPI_Gatherv(b->sbuf, n, b->type, b->rbuf, cnt, dsp, b->type, root, b->comm);
    case B_SCATTERV:
        if (root_in_place)
            return MPI_Scatterv(b->sbuf, cnt, dsp, b->type, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
                                root, b->comm);
        return MPI_Scatterv(b->sbuf, cnt, dsp, b->type, b->rbuf, n, b->type, root, b->comm);
    case B_PAIRWISE: return pairwise_exchange(b, count);
    case B_MEMCPY: memcpy(b->rbuf, b->sbuf, count); return MPI_SUCCESS;
    case B_IPROBE:
        for (int k = 0; k < IPROBE_CALLS; k++) {
            int flag;
            int rc = MPI_Iprobe(MPI_ANY_SOURCE, IPROBE_TAG, b->comm, &flag, MPI_STATUS_IGNORE);
            if (MPI_SUCCESS != rc || flag) return MPI_ERR_OTHER;
        }
        return MPI_SUCCESS;
    case B_REDUCE_LOCAL:
        reduce_local_kernel((double *)b->rbuf, (const double *)b->sbuf, count);
        return MPI_SUCCESS;
    default: return MPI_ERR_OTHER;
    }
}

/* Put the deterministic inputs where the next call reads them. */
static void fill_inputs(const bench_t *b, size_t count)
{
    const options_t *o = b->o;
    dtype_id_t t = o->dtype;
    size_t P = (size_t)b->P, r = (size_t)b->rank;
    switch (o->coll) {
    case B_ALLREDUCE:
    case B_SCAN:
    case B_EXSCAN:
    case B_REDUCE: {
        char *in = (o->inplace && (B_REDUCE != o->coll || b->rank == o->root)) ? b->rbuf : b->sbuf;
        for (size_t i = 0; i < count; i++) store(t, in, i, input_value(&b->vr, b->rank, i));
        break;
    }
    case B_REDUCE_SCATTER: {
        char *in = o->inplace ? b->rbuf : b->sbuf;
        for (size_t i = 0; i < count * P; i++) store(t, in, i, input_value(&b->vr, b->rank, i));
        break;
    }
    case B_ALLTOALL:
    case B_ALLTOALLV: {
        /* element d*count + j goes to rank d */
        char *in = o->inplace ? b->rbuf : b->sbuf;
        for (size_t i = 0; i < count * P; i++) store(t, in, i, input_value(&b->vr, b->rank, i));
        break;
    }
    case B_ALLGATHER:
    case B_ALLGATHERV:
    case B_GATHER:
    case B_GATHERV: {
        /* element g = r*count + j of the result comes from rank r; in place:
         * every rank of allgather(v), the root of gather(v) */
        int ip = o->inplace && (B_ALLGATHER == o->coll || B_ALLGATHERV == o->coll || b->rank == o->root);
        char *in = ip ? b->rbuf + r * count * b->es : b->sbuf;
        for (size_t j = 0; j < count; j++) store(t, in, j, input_value(&b->vr, b->rank, r * count + j));
        break;
    }
    case B_SCATTER:
    case B_SCATTERV:
        /* the root's element g goes to rank g / count (in place, the root's
         * own block stays in its send buffer) */
        if (b->rank == o->root)
            for (size_t g = 0; g < count * P; g++) store(t, b->sbuf, g, input_value(&b->vr, o->root, g));
        break;
    case B_BCAST:
        if (b->rank == o->root)
            for (size_t i = 0; i < count; i++) store(t, b->rbuf, i, input_value(&b->vr, o->root, i));
        break;
    default: break;
    }
}

/* Clear what the next call must write (so a missing write is caught). */
static void poison_outputs(const bench_t *b, size_t count)
{
    const options_t *o = b->o;
    size_t P = (size_t)b->P, r = (size_t)b->rank, es = b->es;
    switch (o->coll) {
    case B_ALLREDUCE:
    case B_SCAN:
    case B_EXSCAN:
        if (!o->inplace) memset(b->rbuf, 0xa5, count * es);
        break;
    case B_REDUCE:
        if (b->rank == o->root && !o->inplace) memset(b->rbuf, 0xa5, count * es);
        break;
    case B_REDUCE_SCATTER:
        if (!o->inplace) memset(b->rbuf, 0xa5, count * es);
        break;
    case B_ALLGATHER:
    case B_ALLGATHERV:
        for (size_t q = 0; q < P; q++)
            if (!o->inplace || q != r) memset(b->rbuf + q * count * es, 0xa5, count * es);
        break;
    case B_GATHER:
    case B_GATHERV:
        if (b->rank == o->root)
            for (size_t q = 0; q < P; q++)
                if (!o->inplace || q != r) memset(b->rbuf + q * count * es, 0xa5, count * es);
        break;
    case B_SCATTER:
    case B_SCATTERV:
        if (!o->inplace || b->rank != o->root) memset(b->rbuf, 0xa5, count * es);
        break;
    case B_ALLTOALL:
    case B_ALLTOALLV:
        if (!o->inplace) memset(b->rbuf, 0xa5, count * P * es);
        break;
    case B_BCAST:
        if (b->rank != o->root) memset(b->rbuf, 0xa5, count * es);
        break;
    default: break;
    }
}

/* number of wrong elements in the result of the last call */
static size_t count_errors(const bench_t *b, size_t count)
{
    const options_t *o = b->o;
    dtype_id_t t = o->dtype;
    size_t P = (size_t)b->P, r = (size_t)b->rank, bad = 0;
    switch (o->coll) {
    case B_ALLREDUCE:
        for (size_t i = 0; i < count; i++) bad += !equals(t, b->rbuf, i, reduced_value(&b->vr, i));
        break;
    case B_REDUCE:
        if (b->rank == o->root)
            for (size_t i = 0; i < count; i++) bad += !equals(t, b->rbuf, i, reduced_value(&b->vr, i));
        break;
    case B_SCAN:
    case B_EXSCAN: {
        /* exscan's rank 0 result is undefined */
        int upto = B_SCAN == o->coll ? b->rank + 1 : b->rank;
        for (size_t i = 0; i < count && upto > 0; i++)
            bad += !equals(t, b->rbuf, i, prefix_value(&b->vr, upto, i));
        break;
    }
    case B_REDUCE_SCATTER:
        for (size_t j = 0; j < count; j++)
            bad += !equals(t, b->rbuf, j, reduced_value(&b->vr, r * count + j));
        break;
    case B_ALLGATHER:
    case B_ALLGATHERV:
        for (size_t g = 0; g < count * P; g++)
            bad += !equals(t, b->rbuf, g, input_value(&b->vr, (int)(g / count), g));
        break;
    case B_GATHER:
    case B_GATHERV:
        if (b->rank == o->root)
            for (size_t g = 0; g < count * P; g++)
                bad += !equals(t, b->rbuf, g, input_value(&b->vr, (int)(g / count), g));
        break;
    case B_SCATTER:
    case B_SCATTERV: {
        /* block r of the root's vector; the root's own block stays in its
         * send buffer in place */
        const char *out = (o->inplace && b->rank == o->root) ? b->sbuf + r * count * b->es : b->rbuf;
        for (size_t j = 0; j < count; j++)
            bad += !equals(t, out, j, input_value(&b->vr, o->root, r * count + j));
        break;
    }
    case B_ALLTOALL:
    case B_ALLTOALLV:
        /* block s came from rank s: its elements r*count + j */
        for (size_t g = 0; g < count * P; g++)
            bad += !equals(t, b->rbuf, g, input_value(&b->vr, (int)(g / count), r * count + g % count));
        break;
    case B_BCAST:
        for (size_t i = 0; i < count; i++) bad += !equals(t, b->rbuf, i, input_value(&b->vr, o->root, i));
        break;
    default: break;
    }
    return bad;
}

/* -1: not validated; otherwise the number of wrong elements over all ranks */
static long validate_size(const bench_t *b, size_t count)
{
    if (!b->o->validate || b->o->coll >= B_PAIRWISE || coll_sizeless(b->o->coll)) return -1;
    fill_inputs(b, count);
    poison_outputs(b, count);
    MPI_Barrier(b->comm);
    if (MPI_SUCCESS != run_once(b, count)) return LONG_MAX;
    long bad = (long)count_errors(b, count), total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, b->comm);
    return total;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

typedef struct {
    long iters;
    double p50, min, max; /* seconds */
    /* --overlap: p50s of post+compute+wait and of the compute alone, seconds */
    double total, compute, overlap_pct;
    double *rank_p50;     /* --per-rank, rank 0: every rank's own p50, seconds */
    double line_ns;       /* line_probe before the size (rank 0) */
} timing_t;

/* --overlap's computation: a dependent multiply-add chain (no memory
 * traffic, no MPI call) in slices of about 0.1 us, run until the clock
 * (clock_gettime, not MPI_Wtime) says the compute time is up; with --tests N,
 * MPI_Test at N evenly spaced times. */
static volatile double spin_sink;

static void spin(long turns)
{
    double x = 1.0;
    for (long k = 0; k < turns; k++) x = x * 0.9999999 + 1e-9;
    spin_sink = x;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* turns per second: the fastest of a few 20 ms runs */
static double calibrate_spin(void)
{
    double best = 0;
    long turns = 1 << 16;
    for (int rep = 0; rep < 5; rep++) {
        double t0, dt;
        for (;;) {
            t0 = now_s();
            spin(turns);
            dt = now_s() - t0;
            if (dt >= 0.02) break;
            turns *= 2;
        }
        if (turns / dt > best) best = turns / dt;
    }
    return best;
}

static void compute_with_tests(const bench_t *b, double seconds, MPI_Request *req, int *done)
{
    int tests = b->o->tests;
    long slice = (long)(1e-7 * b->spin_per_s) + 1;
    double t0 = now_s();
    for (int k = 1; k <= tests + 1; k++) {
        double until = t0 + seconds * k / (tests + 1);
        while (now_s() < until) spin(slice);
        if (k <= tests && !*done) MPI_Test(req, done, MPI_STATUS_IGNORE);
    }
}

enum { MIN_BUDGET_ITERS = 10 };

/*
 * One iteration: an untimed barrier, then the timed part. compute_s > 0
 * (--overlap): post, compute, wait, and *tc gets the compute's time. Async
 * test: rank 0 posts, sleeps, waits and returns 0; the others time the wait.
 */
static double one_iteration(const bench_t *b, size_t count, double compute_s, double *tc, int *err)
{
    const options_t *o = b->o;
    MPI_Request req;
    /* --touch: the inputs written now, by this rank's core, as an
     * application writes the data it sends (without it the send buffer's
     * lines stay where the last call left them: a single-copy reader may
     * find them in its own cache) */
    if (o->touch && !coll_sizeless(o->coll) && B_PAIRWISE != o->coll) fill_inputs(b, count);
    MPI_Barrier(b->comm);
    if (M_ASYNC == o->mode) {
        if (MPI_SUCCESS != post_nonblocking(b, count, &req)) *err = 1;
        double t0 = MPI_Wtime();
        if (0 == b->rank) usleep((useconds_t)(o->sleep_ms * 1000));
        if (MPI_SUCCESS != MPI_Wait(&req, MPI_STATUS_IGNORE)) *err = 1;
        return 0 == b->rank ? 0 : MPI_Wtime() - t0;
    }
    if (compute_s > 0) {
        int done = 0;
        double t0 = MPI_Wtime();
        if (MPI_SUCCESS != post_nonblocking(b, count, &req)) *err = 1;
        double c0 = MPI_Wtime();
        compute_with_tests(b, compute_s, &req, &done);
        *tc = MPI_Wtime() - c0;
        if (!done && MPI_SUCCESS != MPI_Wait(&req, MPI_STATUS_IGNORE)) *err = 1;
        return MPI_Wtime() - t0;
    }
    double t0 = MPI_Wtime();
    if (MPI_SUCCESS != run_once(b, count)) *err = 1;
    return MPI_Wtime() - t0;
}

static void warm_up(const bench_t *b, size_t count, double compute_s, int *err)
{
    double tc;
    for (long k = 0; k < b->o->warmup; k++) one_iteration(b, count, compute_s, &tc, err);
}

/*
 * Iterations in batches. With a time budget, after each batch the slowest
 * rank's elapsed time (one MPI_Allreduce, between iterations) decides whether
 * to go on and how large the next batch is, so every rank runs the same number
 * of iterations.
 */
static long timed_loop(const bench_t *b, size_t count, double *t, double *tc, double compute_s, long cap,
                       int *err)
{
    double budget = b->o->budget_s, start = MPI_Wtime();
    long n = 0, batch = budget > 0 ? 1 : cap;
    for (;;) {
        for (long k = 0; k < batch && n < cap; k++, n++) t[n] = one_iteration(b, count, compute_s, &tc[n], err);
        if (n >= cap) return n;
        double elapsed = MPI_Wtime() - start, slowest = 0;
        MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, b->comm);
        if (slowest >= budget && n >= MIN_BUDGET_ITERS) return n;
        /* aim at half the remaining time, 1..1024 iterations */
        double per = slowest / (double)n, want = (budget - slowest) / per / 2;
        batch = want < 1 ? 1 : (want > 1024 ? 1024 : (long)want);
    }
}

/* per iteration, the slowest rank's time (or with --rank-mean the mean over
 * ranks), to rank 0; returns its p50 there, and min and max in *mn, *mx */
static double gather_times(const bench_t *b, const double *t, double *tall, long n, double *mn, double *mx)
{
    MPI_Reduce(t, tall, (int)n, MPI_DOUBLE, b->o->rank_mean ? MPI_SUM : MPI_MAX, 0, b->comm);
    if (0 != b->rank) return 0;
    if (b->o->rank_mean)
        for (long k = 0; k < n; k++) tall[k] /= b->P;
    qsort(tall, (size_t)n, sizeof(double), cmp_double);
    if (mn) *mn = tall[0];
    if (mx) *mx = tall[n - 1];
    return (n & 1) ? tall[n / 2] : 0.5 * (tall[n / 2 - 1] + tall[n / 2]);
}

static int time_size(const bench_t *b, size_t count, timing_t *tm)
{
    const options_t *o = b->o;
    int err = 0;
    long cap = o->iters ? o->iters : (o->budget_s > 0 ? 100000 : 100);
    double *t = malloc((size_t)cap * sizeof(double)), *tc = malloc((size_t)cap * sizeof(double)),
           *tall = malloc((size_t)cap * sizeof(double));
    if (NULL == t || NULL == tc || NULL == tall) MPI_Abort(b->comm, 2);
    warm_up(b, count, 0, &err);
    long n = timed_loop(b, count, t, tc, 0, cap, &err);
    if (o->per_rank) {
        /* this rank's own p50 (tall is scratch until gather_times) */
        memcpy(tall, t, (size_t)n * sizeof(double));
        qsort(tall, (size_t)n, sizeof(double), cmp_double);
        double mine = (n & 1) ? tall[n / 2] : 0.5 * (tall[n / 2 - 1] + tall[n / 2]);
        MPI_Gather(&mine, 1, MPI_DOUBLE, tm->rank_p50, 1, MPI_DOUBLE, 0, b->comm);
    }
    double p50 = gather_times(b, t, tall, n, &tm->min, &tm->max);
    if (0 == b->rank) tm->iters = n, tm->p50 = p50;
    if (o->overlap) {
        /* compute for t_pure on every rank: rank 0's p50 */
        MPI_Bcast(&p50, 1, MPI_DOUBLE, 0, b->comm);
        warm_up(b, count, p50, &err);
        long m = timed_loop(b, count, t, tc, p50, n, &err);
        double total = gather_times(b, t, tall, m, NULL, NULL);
        double compute = gather_times(b, tc, tall, m, NULL, NULL);
        if (0 == b->rank) {
            tm->total = total;
            tm->compute = compute;
            double ov = p50 > 0 ? 100.0 * (1.0 - (total - compute) / p50) : 0;
            tm->overlap_pct = ov < 0 ? 0 : ov;
        }
    }
    free(t);
    free(tc);
    free(tall);
    int any = 0;
    MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, b->comm);
    return any;
}

/* ------------------------------------------------------------------ */
/* output                                                              */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* line_ns: a cache line's round trip between ranks 0 and 1            */
/* ------------------------------------------------------------------ */

enum { LINE_TRIPS = 2000 };
#define LINE_BUDGET_S 0.005 /* stop earlier on an oversubscribed node */
#define LINE_STOP (-1L)

typedef struct {
    MPI_Comm node; /* MPI_COMM_WORLD's ranks on this rank's node */
    MPI_Win win;
    long *line;    /* node rank 0's word; NULL: this rank does not play */
    int role;      /* 0: pings and times, 1: answers */
} line_probe_t;

static long line_wait(long *w, long a, long b)
{
    long v;
    for (unsigned spins = 0; (v = __atomic_load_n(w, __ATOMIC_ACQUIRE)) != a && v != b; spins++)
        if (spins > 1000) sched_yield();
    return v;
}

/* collective over MPI_COMM_WORLD */
static void line_open(line_probe_t *lp)
{
    memset(lp, 0, sizeof(*lp));
    int wrank, nrank, nsize, zero_node;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &lp->node);
    MPI_Comm_rank(lp->node, &nrank);
    MPI_Comm_size(lp->node, &nsize);
    zero_node = 0 == wrank;
    MPI_Bcast(&zero_node, 1, MPI_INT, 0, lp->node);
    long *base;
    if (MPI_SUCCESS != MPI_Win_allocate_shared(0 == nrank ? 128 : 0, 1, MPI_INFO_NULL, lp->node, &base,
                                               &lp->win)) {
        lp->win = MPI_WIN_NULL;
        return;
    }
    MPI_Aint bytes;
    int disp;
    MPI_Win_shared_query(lp->win, 0, &bytes, &disp, &base);
    if (zero_node && nsize > 1 && nrank < 2) lp->line = base, lp->role = nrank;
}

/* collective over the node; the mean round trip in ns at rank 0, -1 elsewhere
 * or where ranks 0 and 1 are on different nodes */
static double line_probe(line_probe_t *lp)
{
    if (MPI_WIN_NULL == lp->win) return -1;
    if (NULL != lp->line && 0 == lp->role) __atomic_store_n(lp->line, 0L, __ATOMIC_RELEASE);
    MPI_Win_sync(lp->win);
    MPI_Barrier(lp->node);
    double ns = -1;
    if (NULL != lp->line && 0 == lp->role) {
        long trips = 0;
        double t0 = MPI_Wtime(), t = t0;
        for (; trips < LINE_TRIPS && t - t0 < LINE_BUDGET_S; trips++) {
            __atomic_store_n(lp->line, 2 * trips + 1, __ATOMIC_RELEASE);
            line_wait(lp->line, 2 * trips + 2, 2 * trips + 2);
            if (0 == (trips & 7)) t = MPI_Wtime();   /* a few ns a trip; at most 8 time slices over */
        }
        t = MPI_Wtime();
        __atomic_store_n(lp->line, LINE_STOP, __ATOMIC_RELEASE);
        ns = trips ? (t - t0) * 1e9 / (double)trips : -1;
    } else if (NULL != lp->line) {
        for (long v = 0; (v = line_wait(lp->line, v + 1, LINE_STOP)) != LINE_STOP; v++)
            __atomic_store_n(lp->line, v + 1, __ATOMIC_RELEASE);
    }
    MPI_Barrier(lp->node);
    return ns;
}

static void line_close(line_probe_t *lp)
{
    if (MPI_WIN_NULL != lp->win) MPI_Win_free(&lp->win);
    MPI_Comm_free(&lp->node);
}

static void print_header(const bench_t *b)
{
    const options_t *o = b->o;
    const char *col = o->label;
    if (o->csv) {
        printf("coll,np,dtype,op,inplace,size_bytes,count,iters,p50_us,min_us,max_us,"
               "algbw_GBps,busbw_GBps,valid%s,line_ns\n", o->overlap ? ",total_us,compute_us,overlap_pct,tests" : "");
        return;
    }
    printf("# braid_bench %s  P=%d  type=%s (%zu B)", col, b->P, dtypes[o->dtype].name, b->es);
    if (coll_has_op(o->coll)) printf("  op=%s", op_names[o->op]);
    if (coll_has_root(o->coll)) printf("  root=%d", o->root);
    if (B_PAIRWISE == o->coll) printf("  steps=%d", b->steps);
    printf("  in-place=%s  validate=%s\n", o->inplace ? "yes" : "no", o->validate ? "yes" : "no");
    if (o->budget_s > 0)
        printf("# iterations: %.3g s budget per size (%d..%ld), warm-up %ld\n", o->budget_s, MIN_BUDGET_ITERS,
               o->iters ? o->iters : 100000L, o->warmup);
    else
        printf("# iterations: %ld per size, warm-up %ld\n", o->iters ? o->iters : 100L, o->warmup);
    if (M_ASYNC == o->mode) {
        printf("# rank 0 posts, sleeps %ld ms (no MPI call), waits; t = the slowest other rank's MPI_Wait\n",
               o->sleep_ms);
        printf("# %12s %12s %8s %10s %10s %10s %6s %8s\n", "size(B)", "count", "iters", "p50(ms)", "min(ms)",
               "max(ms)", "valid", "line_ns");
        return;
    }
    printf("# t = per-iteration %s over ranks (barrier before each, untimed); algbw = S/t_p50;"
           " busbw = algbw * %s; GB/s = 1e9 B/s\n", o->rank_mean ? "mean" : "max", busbw_factor_text(o->coll));
    if (o->overlap) {
        printf("# overlap: post, compute t_pure (busy loop, %d MPI_Test), wait; pure = post+wait p50;"
               " overlap%% = max(0, 100(1 - (total - compute)/pure))\n", o->tests);
        printf("# %12s %12s %8s %10s %10s %10s %8s %6s %8s\n", "size(B)", "count", "iters", "pure(us)",
               "total(us)", "comp(us)", "overlap%", "valid", "line_ns");
        return;
    }
    printf("# line_ns: a cache line's round trip between ranks 0 and 1 before the size (-1: not on one node)\n");
    printf("# %12s %12s %8s %10s %10s %10s %12s %12s %6s %8s\n", "size(B)", "count", "iters", "p50(us)",
           "min(us)", "max(us)", "algbw(GB/s)", "busbw(GB/s)", "valid", "line_ns");
}

static void format_valid(long bad, char *out, size_t len)
{
    if (bad < 0) snprintf(out, len, "-");
    else if (0 == bad) snprintf(out, len, "ok");
    else snprintf(out, len, "FAIL");
}

static void print_row(const bench_t *b, const shape_t *s, const timing_t *tm, long bad)
{
    const options_t *o = b->o;
    double algbw = (s->S && tm->p50 > 0) ? (double)s->S / tm->p50 / 1e9 : 0;
    double busbw = algbw * busbw_factor(o->coll, b->P);
    char valid[16];
    format_valid(bad, valid, sizeof(valid));
    if (o->csv) {
        printf("%s,%d,%s,%s,%d,%zu,%zu,%ld,%.3f,%.3f,%.3f,%.4f,%.4f,%s", o->label, b->P,
               dtypes[o->dtype].name, coll_has_op(o->coll) ? op_names[o->op] : "-", o->inplace, s->S,
               s->count, tm->iters, tm->p50 * 1e6, tm->min * 1e6, tm->max * 1e6, algbw, busbw,
               bad < 0 ? "-" : (bad ? "fail" : "ok"));
        if (o->overlap)
            printf(",%.3f,%.3f,%.1f,%d", tm->total * 1e6, tm->compute * 1e6, tm->overlap_pct, o->tests);
        printf(",%.0f\n", tm->line_ns);
    } else if (M_ASYNC == o->mode)
        printf("  %12zu %12zu %8ld %10.2f %10.2f %10.2f %6s %8.0f\n", s->S, s->count, tm->iters, tm->p50 * 1e3,
               tm->min * 1e3, tm->max * 1e3, valid, tm->line_ns);
    else if (o->overlap)
        printf("  %12zu %12zu %8ld %10.2f %10.2f %10.2f %8.1f %6s %8.0f\n", s->S, s->count, tm->iters,
               tm->p50 * 1e6, tm->total * 1e6, tm->compute * 1e6, tm->overlap_pct, valid, tm->line_ns);
    else
        printf("  %12zu %12zu %8ld %10.2f %10.2f %10.2f %12.3f %12.3f %6s %8.0f\n", s->S, s->count, tm->iters,
               tm->p50 * 1e6, tm->min * 1e6, tm->max * 1e6, algbw, busbw, valid, tm->line_ns);
    if (o->per_rank && !o->csv) {
        printf("# per rank p50 us:");
        for (int r = 0; r < b->P; r++) printf(" %d:%.2f", r, tm->rank_p50[r] * 1e6);
        printf("\n");
    }
    if (bad > 0) fprintf(stderr, "braid_bench: %s size %zu: %ld wrong elements\n", o->label, s->S, bad);
    fflush(stdout);
}

/* Weighted least squares fit of t(m) = alpha + m / beta, weights 1/t^2 (relative error). */
static void print_alpha_beta(const double *m, const double *t, int n, int steps)
{
    double sw = 0, swm = 0, swmm = 0, swt = 0, swmt = 0;
    for (int k = 0; k < n; k++) {
        double w = 1.0 / (t[k] * t[k]);
        sw += w, swm += w * m[k], swmm += w * m[k] * m[k], swt += w * t[k], swmt += w * m[k] * t[k];
    }
    double det = sw * swmm - swm * swm;
    if (n < 2 || det <= 0) {
        printf("# fit: need at least 2 distinct sizes\n");
        return;
    }
    double alpha = (swmm * swt - swm * swmt) / det, slope = (sw * swmt - swm * swt) / det, worst = 0;
    for (int k = 0; k < n; k++) {
        double rel = fabs(alpha + slope * m[k] - t[k]) / t[k];
        if (rel > worst) worst = rel;
    }
    double beta = slope > 0 ? 1.0 / slope : 0;
    printf("# fit t(m) = alpha + m/beta over %d sizes (m = S/%d bytes per step, weights 1/t^2):\n", n, steps);
    if (slope > 0)
        printf("#   alpha = %.3f us  beta = %.3f GB/s  (max relative residual %.0f%%)\n", alpha * 1e6,
               beta / 1e9, worst * 100);
    else
        printf("#   alpha = %.3f us  beta = n/a (no size-dependent term)\n", alpha * 1e6);
    /* one line for scripts (the tuner, the cost model); beta 0 = not measured */
    printf("# alpha_beta,alpha_us=%.4f,beta_GBps=%.4f,sizes=%d,steps=%d,max_rel_residual=%.3f\n",
           alpha * 1e6, beta / 1e9, n, steps, worst);
}

/* ------------------------------------------------------------------ */

static int ilog2_floor(int x)
{
    int l = 0;
    while ((2 << l) <= x) l++;
    return l;
}

/* BRAID_BENCH_THREAD_MULTIPLE=1 asks for MPI_THREAD_MULTIPLE (one thread
 * still makes every call): what the thread level alone costs a call, as
 * in an mpi4py program, which asks for it by default. */
static void init_mpi(int *argc, char ***argv)
{
    const char *mt = getenv("BRAID_BENCH_THREAD_MULTIPLE");
    if (NULL == mt || 0 == strcmp(mt, "0")) {
        MPI_Init(argc, argv);
        return;
    }
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (0 == rank && MPI_THREAD_MULTIPLE != provided)
        fprintf(stderr, "braid_bench: MPI_THREAD_MULTIPLE asked, %d provided\n", provided);
}

int main(int argc, char **argv)
{
    init_mpi(&argc, &argv);
    bench_t b = { .comm = MPI_COMM_WORLD };
    MPI_Comm_rank(b.comm, &b.rank);
    MPI_Comm_size(b.comm, &b.P);
    options_t o;
    int prc = parse_options(argc, argv, &o, b.rank);
    if (prc) {
        MPI_Finalize();
        return prc > 0 ? 0 : 2;
    }
    if (o.root < 0 || o.root >= b.P) {
        if (0 == b.rank) fprintf(stderr, "braid_bench: root %d out of range (P = %d)\n", o.root, b.P);
        MPI_Finalize();
        return 2;
    }
    int max_steps = b.P > 1 ? ilog2_floor(b.P) : 1;
    b.steps = o.steps ? o.steps : max_steps;
    if (b.steps > max_steps) {
        if (0 == b.rank) fprintf(stderr, "braid_bench: --steps %d > lg P = %d\n", b.steps, max_steps);
        MPI_Finalize();
        return 2;
    }
    b.o = &o;
    b.es = dtypes[o.dtype].size;
    b.type = mpi_type(o.dtype);
    b.vr = value_rule(coll_has_op(o.coll) ? o.op : O_MAX, o.dtype, b.P);
    if (B_MEMCPY == o.coll) b.es = 1, b.type = MPI_BYTE;

    /* buffers: room for the largest S (and at least one element per rank) */
    size_t cap = o.max_size + (size_t)b.P * b.es * (size_t)b.steps + 64;
    if (posix_memalign((void **)&b.sbuf, 4096, cap) || posix_memalign((void **)&b.rbuf, 4096, cap)) {
        fprintf(stderr, "braid_bench: cannot allocate 2 x %zu bytes\n", cap);
        MPI_Abort(b.comm, 2);
    }
    memset(b.sbuf, 0, cap);
    memset(b.rbuf, 0, cap);
    if (B_REDUCE_LOCAL == o.coll)
        for (size_t i = 0; i < cap / sizeof(double); i++) ((double *)b.sbuf)[i] = 1.0;

    if (o.overlap) b.spin_per_s = calibrate_spin();
    line_probe_t lp;
    line_open(&lp);
    if (0 == b.rank) print_header(&b);
    int failed = 0, nfit = 0;
    double *fit_m = calloc(64, sizeof(double)), *fit_t = calloc(64, sizeof(double));
    size_t prev_S = (size_t)-1;
    double *rank_p50 = calloc((size_t)b.P, sizeof(double));
    if (NULL == rank_p50) MPI_Abort(MPI_COMM_WORLD, 2);
    b.vcounts = calloc((size_t)b.P, sizeof(int));
    b.vdispls = calloc((size_t)b.P, sizeof(int));
    if (NULL == b.vcounts || NULL == b.vdispls) MPI_Abort(MPI_COMM_WORLD, 2);
    for (size_t want = o.min_size; want <= o.max_size; want *= 2) {
        shape_t s = shape_for(&b, want);
        if (s.S == prev_S && !coll_sizeless(o.coll)) continue;
        prev_S = s.S;
        if (s.count > INT_MAX) {
            if (0 == b.rank) fprintf(stderr, "braid_bench: count %zu exceeds INT_MAX, stopping\n", s.count);
            break;
        }
        if (coll_is_v(o.coll)) {
            /* every count the block, displacements i * block */
            if (s.count * (size_t)(b.P - 1) > INT_MAX) {
                if (0 == b.rank)
                    fprintf(stderr, "braid_bench: displacement %zu exceeds INT_MAX, stopping\n",
                            s.count * (size_t)(b.P - 1));
                break;
            }
            for (int q = 0; q < b.P; q++) b.vcounts[q] = (int)s.count, b.vdispls[q] = q * (int)s.count;
        }
        if (!coll_sizeless(o.coll) && B_PAIRWISE != o.coll) fill_inputs(&b, s.count);
        timing_t tm = { .rank_p50 = rank_p50, .line_ns = line_probe(&lp) };
        if (M_PERSISTENT == o.mode && MPI_SUCCESS != init_persistent(&b, s.count, &b.preq)) {
            if (0 == b.rank) fprintf(stderr, "braid_bench: %s failed at size %zu\n", o.label, s.S);
            failed = 1;
            break;
        }
        if (time_size(&b, s.count, &tm)) {
            if (0 == b.rank) fprintf(stderr, "braid_bench: %s returned an error at size %zu\n", o.label, s.S);
            failed = 1;
        }
        long bad = validate_size(&b, s.count);
        if (M_PERSISTENT == o.mode) MPI_Request_free(&b.preq);
        if (bad > 0) failed = 1;
        if (0 == b.rank) {
            print_row(&b, &s, &tm, bad);
            if (B_PAIRWISE == o.coll && nfit < 64 && tm.p50 > 0) {
                fit_m[nfit] = (double)(s.count * b.es);
                fit_t[nfit] = tm.p50 / b.steps;
                nfit++;
            }
        }
        if (coll_sizeless(o.coll) || want > SIZE_MAX / 2) break;
    }
    if (0 == b.rank && B_PAIRWISE == o.coll) print_alpha_beta(fit_m, fit_t, nfit, b.steps);
    line_close(&lp);
    free(fit_m);
    free(fit_t);
    free(b.sbuf);
    free(b.rbuf);
    free(rank_p50);
    free(b.vcounts);
    free(b.vdispls);
    MPI_Finalize();
    return failed ? 1 : 0;
}
