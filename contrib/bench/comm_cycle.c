/*
 * comm_cycle.c - what a communicator and a first call cost: a plain MPI
 * program (it knows nothing about braid and measures whichever coll
 * component Open MPI selects), run by comm_cycle.sh under braid and tuned.
 *
 *   comm_cycle [-n CYCLES] [-f FRESH] [-k STEADY] [-r ROUNDS] [--csv]
 *
 * Sections, in the order they run:
 *
 *  init           MPI_Init itself (CLOCK_MONOTONIC around it, slowest
 *                 rank): where a component's set-up costs go when they are
 *                 moved out of the first call.
 *  process_first  the very first collective calls of the process, on
 *                 MPI_COMM_WORLD: an 8-byte allreduce first (the first
 *                 message braid sends to any peer), then the first call of
 *                 every other kind. Nothing collective runs before them:
 *                 the ranks meet in a point-to-point barrier (pml
 *                 messages, which touch no coll component).
 *  fresh_first    on a communicator just made by MPI_Comm_dup: the first
 *                 and the second call of each kind, median over FRESH
 *                 communicators (each freed after its calls).
 *  steady         the same calls on MPI_COMM_WORLD after warm-up: median
 *                 over STEADY calls.
 *  cycle          ROUNDS rounds of CYCLES times MPI_Comm_dup + one 8-byte
 *                 MPI_Allreduce + MPI_Comm_free, each followed by a round
 *                 of CYCLES times MPI_Comm_dup + MPI_Comm_free alone: time
 *                 per cycle, the median round and the best round (on a
 *                 shared machine the best round is the cost with the least
 *                 interference; the median shows the interference too).
 *
 * Every timed call is preceded by the point-to-point barrier; a sample is
 * the slowest rank's time (each rank times its own call). Kinds: barrier,
 * bcast (8 B, root rotating over the ranks), allreduce (8 B: one double,
 * sum), reduce (8 B, root rotating), allgather (8 B per rank),
 * reduce_scatter (MPI_Reduce_scatter_block, 8 B per rank).
 *
 * Allocations: when malloc_count.so (built by comm_cycle.sh from
 * malloc_count.c) is preloaded, the program also reports the calls to
 * malloc, calloc, realloc and the aligned allocators the whole process made
 * (MPI library, UCX and coll component together): per steady-state call of
 * each kind, per dup+allreduce+free cycle, and per dup+free. It finds the
 * counter with dlsym, so the same binary runs without the shim ("-" then).
 *
 * Output: a human table, or with --csv lines
 *   section,kind,value_us,allocs   (allocs: -1 without the shim)
 * Every value is in microseconds. With COMM_CYCLE_THREAD_MULTIPLE=1 in the
 * environment MPI is initialised with MPI_THREAD_MULTIPLE (one thread still
 * makes every call), as mpi4py does.
 */
#include <mpi.h>

#include <dlfcn.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { K_BARRIER, K_BCAST, K_ALLREDUCE, K_REDUCE, K_ALLGATHER, K_REDUCE_SCATTER, K_N };
static const char *kind_name[K_N] = { "barrier", "bcast", "allreduce", "reduce", "allgather",
                                      "reduce_scatter" };

static int rank, nprocs;
static double *gbuf_in, *gbuf_out;   /* nprocs doubles each */
static unsigned long long (*alloc_count)(void);   /* from malloc_count.so, or NULL */

static unsigned long long allocs(void) { return alloc_count ? alloc_count() : 0; }

/* A barrier of point-to-point messages (fan-in to rank 0, fan-out): goes
 * through the pml only, so it neither warms up nor disturbs the coll
 * component measured. */
static void p2p_barrier(void)
{
    char b = 0;
    if (0 == rank) {
        for (int i = 1; i < nprocs; i++)
            MPI_Recv(&b, 0, MPI_CHAR, i, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 1; i < nprocs; i++) MPI_Send(&b, 0, MPI_CHAR, i, 78, MPI_COMM_WORLD);
    } else {
        MPI_Send(&b, 0, MPI_CHAR, 0, 77, MPI_COMM_WORLD);
        MPI_Recv(&b, 0, MPI_CHAR, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* The slowest rank's value, known to every rank (point-to-point too). */
static double max_over_ranks(double v)
{
    double r = v;
    if (0 == rank) {
        for (int i = 1; i < nprocs; i++) {
            double x;
            MPI_Recv(&x, 1, MPI_DOUBLE, i, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (x > r) r = x;
        }
        for (int i = 1; i < nprocs; i++) MPI_Send(&r, 1, MPI_DOUBLE, i, 80, MPI_COMM_WORLD);
    } else {
        MPI_Send(&v, 1, MPI_DOUBLE, 0, 79, MPI_COMM_WORLD);
        MPI_Recv(&r, 1, MPI_DOUBLE, 0, 80, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return r;
}

static int call(int kind, MPI_Comm comm, int iter)
{
    int root = iter % nprocs;
    switch (kind) {
    case K_BARRIER: return MPI_Barrier(comm);
    case K_BCAST: return MPI_Bcast(gbuf_out, 1, MPI_DOUBLE, root, comm);
    case K_ALLREDUCE: return MPI_Allreduce(gbuf_in, gbuf_out, 1, MPI_DOUBLE, MPI_SUM, comm);
    case K_REDUCE: return MPI_Reduce(gbuf_in, gbuf_out, 1, MPI_DOUBLE, MPI_SUM, root, comm);
    case K_ALLGATHER: return MPI_Allgather(gbuf_in, 1, MPI_DOUBLE, gbuf_out, 1, MPI_DOUBLE, comm);
    default:
        return MPI_Reduce_scatter_block(gbuf_in, gbuf_out, 1, MPI_DOUBLE, MPI_SUM, comm);
    }
}

/* one timed call after the p2p barrier: the slowest rank's seconds */
static double timed_call(int kind, MPI_Comm comm, int iter)
{
    p2p_barrier();
    double t0 = MPI_Wtime();
    if (MPI_SUCCESS != call(kind, comm, iter)) MPI_Abort(MPI_COMM_WORLD, 2);
    return max_over_ranks(MPI_Wtime() - t0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int csv;

static void report(const char *section, const char *kind, double us, double alloc_per)
{
    if (csv) {
        if (alloc_count) printf("%s,%s,%.3f,%.2f\n", section, kind, us, alloc_per);
        else printf("%s,%s,%.3f,-1\n", section, kind, us);
    } else if (alloc_count) {
        printf("  %-15s %-24s %10.2f us %10.2f allocs\n", section, kind, us, alloc_per);
    } else {
        printf("  %-15s %-24s %10.2f us\n", section, kind, us);
    }
}

int main(int argc, char **argv)
{
    long cycles = 200;
    int fresh = 50, steady = 200, rounds = 20;
    static const struct option longopts[] = { { "csv", no_argument, NULL, 'C' },
                                              { NULL, 0, NULL, 0 } };
    int opt;
    while ((opt = getopt_long(argc, argv, "n:f:k:r:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'n': cycles = atol(optarg); break;
        case 'f': fresh = atoi(optarg); break;
        case 'k': steady = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        case 'C': csv = 1; break;
        default:
            fprintf(stderr, "usage: comm_cycle [-n CYCLES] [-f FRESH] [-k STEADY] [-r ROUNDS] [--csv]\n");
            return 2;
        }
    }
    if (cycles < 1 || fresh < 1 || steady < 1 || rounds < 1) {
        fprintf(stderr, "comm_cycle: counts must be >= 1\n");
        return 2;
    }
    struct timespec i0, i1;
    clock_gettime(CLOCK_MONOTONIC, &i0);
    const char *mt = getenv("COMM_CYCLE_THREAD_MULTIPLE");
    int provided = MPI_THREAD_SINGLE;
    if (mt && '1' == mt[0]) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else MPI_Init(&argc, &argv);
    clock_gettime(CLOCK_MONOTONIC, &i1);
    double init_s = (double)(i1.tv_sec - i0.tv_sec) + 1e-9 * (double)(i1.tv_nsec - i0.tv_nsec);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    alloc_count = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, "malloc_count_calls");
    gbuf_in = calloc((size_t)nprocs, sizeof(double));
    gbuf_out = calloc((size_t)nprocs, sizeof(double));
    for (int i = 0; i < nprocs; i++) gbuf_in[i] = rank + i;
    double *s = malloc((size_t)(fresh > steady ? fresh : steady) * 2 * sizeof(double));
    if (!gbuf_in || !gbuf_out || !s) MPI_Abort(MPI_COMM_WORLD, 1);
    if (0 == rank && !csv)
        printf("# comm_cycle: np=%d%s, %ld cycles x %d rounds, %d fresh communicators, %d steady calls%s\n",
               nprocs, MPI_THREAD_MULTIPLE == provided ? " (MPI_THREAD_MULTIPLE)" : "", cycles, rounds, fresh, steady,
               alloc_count ? ", allocations counted (malloc_count.so)" : "");

    init_s = max_over_ranks(init_s);

    /* the process's first calls: allreduce first, then the other kinds */
    static const int first_order[K_N] = { K_ALLREDUCE, K_BARRIER, K_BCAST, K_REDUCE,
                                          K_ALLGATHER, K_REDUCE_SCATTER };
    double pfirst[K_N];
    for (int i = 0; i < K_N; i++) pfirst[first_order[i]] = timed_call(first_order[i], MPI_COMM_WORLD, 0);
    double psecond = timed_call(K_ALLREDUCE, MPI_COMM_WORLD, 1);

    /* steady state on MPI_COMM_WORLD (warm-up: the calls above + 20) */
    double steady_us[K_N], steady_allocs[K_N];
    for (int k = 0; k < K_N; k++) {
        for (int i = 0; i < 20; i++) call(k, MPI_COMM_WORLD, i);
        for (int i = 0; i < steady; i++) s[i] = timed_call(k, MPI_COMM_WORLD, i);
        steady_us[k] = median(s, steady) * 1e6;
        /* allocations: untimed loop of calls alone */
        p2p_barrier();
        unsigned long long a0 = allocs();
        for (int i = 0; i < steady; i++) call(k, MPI_COMM_WORLD, i);
        steady_allocs[k] = (double)(allocs() - a0) / steady;
    }

    /* first and second call of each kind on fresh communicators */
    double first_us[K_N], second_us[K_N];
    for (int k = 0; k < K_N; k++) {
        for (int f = 0; f < fresh; f++) {
            MPI_Comm c;
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
            s[f] = timed_call(k, c, f);
            s[fresh + f] = timed_call(k, c, f + 1);
            MPI_Comm_free(&c);
        }
        first_us[k] = median(s, fresh) * 1e6;
        second_us[k] = median(s + fresh, fresh) * 1e6;
    }

    /* dup + allreduce + free, and dup + free */
    double cyc[2][256];
    unsigned long long cyc_alloc[2] = { 0, 0 };
    if (rounds > 256) rounds = 256;
    for (int r = 0; r < rounds; r++) {
        for (int w = 0; w < 2; w++) {
            p2p_barrier();
            unsigned long long a0 = allocs();
            double t0 = MPI_Wtime();
            for (long i = 0; i < cycles; i++) {
                MPI_Comm c;
                MPI_Comm_dup(MPI_COMM_WORLD, &c);
                if (0 == w) {
                    double in = 1.0 + rank, out = 0;
                    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, c);
                    if (out != 0.5 * nprocs * (nprocs + 1)) {
                        fprintf(stderr, "comm_cycle: rank %d: allreduce gave %g\n", rank, out);
                        MPI_Abort(MPI_COMM_WORLD, 3);
                    }
                }
                MPI_Comm_free(&c);
            }
            cyc[w][r] = max_over_ranks(MPI_Wtime() - t0) / (double)cycles * 1e6;
            cyc_alloc[w] = allocs() - a0;   /* the last round's */
        }
    }
    double cycle_us = median(cyc[0], rounds), dupfree_us = median(cyc[1], rounds);
    double cycle_best = cyc[0][0], dupfree_best = cyc[1][0];   /* sorted by median() */

    if (0 == rank) {
        char name[64];
        if (!csv) printf("# section         kind                         time    (allocs: malloc-family calls of the process, per call)\n");
        report("init", "MPI_Init", init_s * 1e6, -1);
        for (int i = 0; i < K_N; i++) {
            snprintf(name, sizeof(name), "%s%s", kind_name[first_order[i]], 0 == i ? " (first ever)" : "");
            report("process_first", name, pfirst[first_order[i]] * 1e6, -1);
        }
        report("process_first", "allreduce (second)", psecond * 1e6, -1);
        for (int k = 0; k < K_N; k++) {
            report("fresh_first", kind_name[k], first_us[k], -1);
            snprintf(name, sizeof(name), "%s (second)", kind_name[k]);
            report("fresh_second", name, second_us[k], -1);
            report("steady", kind_name[k], steady_us[k], steady_allocs[k]);
        }
        report("cycle", "dup+allreduce+free", cycle_us, (double)cyc_alloc[0] / cycles);
        report("cycle", "dup+free", dupfree_us, (double)cyc_alloc[1] / cycles);
        report("cycle_best", "dup+allreduce+free", cycle_best, -1);
        report("cycle_best", "dup+free", dupfree_best, -1);
    }
    free(s);
    free(gbuf_in);
    free(gbuf_out);
    MPI_Finalize();
    return 0;
}
