/*
 * mpi_stress.c - braid under load: every value checked against a locally
 * computed reference.
 *
 * usage: mpi_stress MODE [N]
 *   cycles N    N MPI_Comm_dup / collectives / MPI_Comm_free cycles; the
 *               resident set (/proc/self/statm) after warm-up must not grow
 *               beyond RSS_BOUND_KB; prints the time per cycle (a
 *               benchmark: compare a run with --mca coll ^braid)
 *   live N      256 live communicators (dups, reversed splits, halves) used
 *               round-robin for N rounds of mixed collectives (allreduce,
 *               bcast, barrier, allgather, reduce_scatter)
 *   small N     N back-to-back one-int allreduces, checked every call and
 *               as a running total at the end; prints the time per call
 *   threads T N MPI_THREAD_MULTIPLE: T threads, each on its own
 *               communicator, run N rounds of allreduce/bcast/allgather/
 *               barrier concurrently (braid declines such communicators;
 *               the list checks that its verbose output says so)
 */
#include "mpi_test_common.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* growth of the resident set allowed between warm-up and the end; not
 * checked under AddressSanitizer, whose quarantine keeps freed memory */
#define RSS_BOUND_KB 2048
#if defined(__SANITIZE_ADDRESS__)
#define RSS_CHECKED 0
#else
#define RSS_CHECKED 1
#endif
#define LIVE_COMMS 256

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* resident set size in KiB, from /proc/self/statm; -1 if unreadable */
static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = -1;
    if (NULL == f) return -1;
    if (2 != fscanf(f, "%ld %ld", &size, &resident)) resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* ------------------------------------------------------------------ */
/* communicator create / collective / free cycles                       */
/* ------------------------------------------------------------------ */

static long one_cycle(int c, int rank, int size)
{
    long bad = 0;
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    long v[4] = { rank, c, 1, (long)rank * c }, s[4];
    MPI_Allreduce(v, s, 4, MPI_LONG, MPI_SUM, dup);
    long rsum = (long)size * (size - 1) / 2;
    bad += s[0] != rsum || s[1] != (long)c * size || s[2] != size || s[3] != rsum * c;
    int b = rank == c % size ? c : -1;
    MPI_Bcast(&b, 1, MPI_INT, c % size, dup);
    bad += b != c;
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    return bad;
}

static void run_cycles(int cycles)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int warm = cycles / 5 > 100 ? cycles / 5 : (cycles > 100 ? 100 : cycles / 2);
    long bad = 0, rss_warm = 0, rss_peak = 0;
    double t0 = 0;
    for (int c = 0; c < cycles; c++) {
        if (c == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            rss_warm = rss_kb();
            t0 = now_s();
        }
        bad += one_cycle(c, rank, size);
        if (c > warm && 0 == c % 100) {
            long r = rss_kb();
            if (r > rss_peak) rss_peak = r;
        }
    }
    double per = (now_s() - t0) / (cycles - warm);
    long rss_end = rss_kb();
    if (rss_end > rss_peak) rss_peak = rss_end;
    mt_check(0 == bad, "cycles: %ld wrong values", bad);
    mt_check(!RSS_CHECKED || (rss_warm > 0 && rss_peak - rss_warm <= RSS_BOUND_KB),
             "cycles: resident set grew from %ld KiB to %ld KiB over %d cycles (bound %d KiB)",
             rss_warm, rss_peak, cycles - warm, RSS_BOUND_KB);
    if (0 == rank)
        printf("stress cycles: %d cycles, %.1f us per cycle, rank 0 RSS %ld KiB after warm-up, "
               "peak %ld KiB (+%ld)%s\n", cycles, per * 1e6, rss_warm, rss_peak, rss_peak - rss_warm,
               RSS_CHECKED ? "" : " (not checked under ASan)");
}

/* ------------------------------------------------------------------ */
/* 256 live communicators, mixed collectives round-robin                 */
/* ------------------------------------------------------------------ */

static MPI_Comm make_comm(int k)
{
    MPI_Comm out;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    switch (k % 3) {
    case 0: MPI_Comm_dup(MPI_COMM_WORLD, &out); break;
    case 1: out = mt_reversed_comm(MPI_COMM_WORLD); break;
    default:  /* halves (for np >= 4, else a rotated order) */
        if (size >= 4) MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &out);
        else MPI_Comm_split(MPI_COMM_WORLD, 0, (rank + 1) % size, &out);
    }
    return out;
}

/* One round on comm: each collective with a value derived from (k, round). */
static long mixed_round(MPI_Comm comm, int k, int round)
{
    int r, P;
    long bad = 0;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &P);
    long key = (long)k * 1000 + round;
    switch ((k + round) % 5) {
    case 0: {           /* allreduce, 37 longs */
        long v[37], s[37];
        for (int i = 0; i < 37; i++) v[i] = key + r * i;
        MPI_Allreduce(v, s, 37, MPI_LONG, MPI_SUM, comm);
        for (int i = 0; i < 37; i++) bad += s[i] != key * P + (long)P * (P - 1) / 2 * i;
        break;
    }
    case 1: {           /* bcast, 300 bytes, root rotating */
        unsigned char b[300];
        int root = (int)(key % P);
        for (int i = 0; i < 300; i++) b[i] = r == root ? mt_byte(key, (size_t)i) : 0;
        MPI_Bcast(b, 300, MPI_BYTE, root, comm);
        for (int i = 0; i < 300; i++) bad += b[i] != mt_byte(key, (size_t)i);
        break;
    }
    case 2:
        MPI_Barrier(comm);
        break;
    case 3: {           /* allgather, 5 ints per rank */
        int v[5], *all = malloc(sizeof(int) * 5 * (size_t)P);
        for (int i = 0; i < 5; i++) v[i] = (int)key + 10 * r + i;
        MPI_Allgather(v, 5, MPI_INT, all, 5, MPI_INT, comm);
        for (int q = 0; q < P; q++)
            for (int i = 0; i < 5; i++) bad += all[q * 5 + i] != (int)key + 10 * q + i;
        free(all);
        break;
    }
    default: {          /* reduce_scatter with uneven counts: rank q gets q+1 */
        int *counts = malloc(sizeof(int) * (size_t)P), total = 0;
        for (int q = 0; q < P; q++) total += (counts[q] = q + 1);
        double *in = malloc(sizeof(double) * (size_t)total), out[64];
        for (int i = 0; i < total; i++) in[i] = (double)(key % 97) + r + i;
        MPI_Reduce_scatter(in, out, counts, MPI_DOUBLE, MPI_SUM, comm);
        int first = r * (r + 1) / 2;   /* sum of counts of ranks < r */
        for (int i = 0; i < counts[r]; i++)
            bad += out[i] != P * ((double)(key % 97) + first + i) + (double)P * (P - 1) / 2;
        free(in);
        free(counts);
        break;
    }
    }
    return bad;
}

static void run_live(int rounds)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm *comms = malloc(sizeof(MPI_Comm) * LIVE_COMMS);
    for (int k = 0; k < LIVE_COMMS; k++) comms[k] = make_comm(k);
    long bad = 0;
    double t0 = now_s();
    for (int round = 0; round < rounds; round++)
        for (int k = 0; k < LIVE_COMMS; k++) bad += mixed_round(comms[k], k, round);
    double t = now_s() - t0;
    for (int k = 0; k < LIVE_COMMS; k++) MPI_Comm_free(&comms[k]);
    free(comms);
    mt_check(0 == bad, "live: %ld wrong values over %d communicators x %d rounds", bad,
             LIVE_COMMS, rounds);
    if (0 == rank)
        printf("stress live: %d communicators x %d rounds, %.1f us per collective\n", LIVE_COMMS,
               rounds, t / ((double)rounds * LIVE_COMMS) * 1e6);
}

/* ------------------------------------------------------------------ */
/* back-to-back small allreduces                                         */
/* ------------------------------------------------------------------ */

static void run_small(long n)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *note = "";
#if defined(__SANITIZE_ADDRESS__)
    if (n > 100000) {   /* ~10x slower under ASan: keep within the case's time limit */
        n = 100000;
        note = " (capped under ASan)";
    }
#endif
    long bad = 0;
    int64_t total = 0, expect = 0;
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        int v = (int)(i % 1000) + rank, s = 0;
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        int ref = (int)(i % 1000) * size + size * (size - 1) / 2;
        bad += s != ref;
        total += s;
        expect += ref;
    }
    double t = now_s() - t0;
    mt_check(0 == bad && total == expect, "small: %ld wrong results, total %lld expected %lld",
             bad, (long long)total, (long long)expect);
    if (0 == rank)
        printf("stress small: %ld allreduces of one int, %.2f us each%s\n", n, t / (double)n * 1e6,
               note);
}

/* ------------------------------------------------------------------ */
/* MPI_THREAD_MULTIPLE: concurrent collectives on distinct communicators */
/* ------------------------------------------------------------------ */

typedef struct thread_arg {
    MPI_Comm comm;
    int id, rounds;
    long checks, bad;
} thread_arg_t;

static void *thread_body(void *p)
{
    thread_arg_t *t = p;
    int r, P;
    MPI_Comm_rank(t->comm, &r);
    MPI_Comm_size(t->comm, &P);
    int *all = malloc(sizeof(int) * 2 * (size_t)P);
    for (int round = 0; round < t->rounds; round++) {
        long key = (long)t->id * 100000 + round;
        long v[3] = { key, r, 1 }, s[3];
        MPI_Allreduce(v, s, 3, MPI_LONG, MPI_SUM, t->comm);
        t->bad += s[0] != key * P || s[1] != (long)P * (P - 1) / 2 || s[2] != P;
        long b = r == round % P ? key : -1;
        MPI_Bcast(&b, 1, MPI_LONG, round % P, t->comm);
        t->bad += b != key;
        int mine[2] = { t->id, r * 7 + round };
        MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, t->comm);
        for (int q = 0; q < P; q++) t->bad += all[2 * q] != t->id || all[2 * q + 1] != q * 7 + round;
        if (0 == round % 16) MPI_Barrier(t->comm);
        t->checks += 3;
    }
    free(all);
    return NULL;
}

static void run_threads(int nthreads, int rounds)
{
    int provided, rank;
    MPI_Query_thread(&provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mt_check(MPI_THREAD_MULTIPLE == provided, "threads: MPI_THREAD_MULTIPLE not provided (%d)",
             provided);
    if (MPI_THREAD_MULTIPLE != provided) return;
    thread_arg_t *args = calloc((size_t)nthreads, sizeof(*args));
    pthread_t *tids = calloc((size_t)nthreads, sizeof(*tids));
    /* communicators are created by the main thread, in the same order everywhere */
    for (int i = 0; i < nthreads; i++) {
        args[i].comm = (i % 2) ? mt_reversed_comm(MPI_COMM_WORLD) : MPI_COMM_NULL;
        if (0 == i % 2) MPI_Comm_dup(MPI_COMM_WORLD, &args[i].comm);
        args[i].id = i;
        args[i].rounds = rounds;
    }
    for (int i = 0; i < nthreads; i++) pthread_create(&tids[i], NULL, thread_body, &args[i]);
    long bad = 0, checks = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(tids[i], NULL);
        bad += args[i].bad;
        checks += args[i].checks;
        MPI_Comm_free(&args[i].comm);
    }
    mt_check(0 == bad && checks == 3L * nthreads * rounds,
             "threads: %ld wrong values in %ld checked rounds", bad, checks);
    if (0 == rank) printf("stress threads: %d threads x %d rounds, all values checked\n", nthreads,
                          rounds);
    free(args);
    free(tids);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "cycles";
    long n = argc > 2 ? atol(argv[2]) : 0;
    if (0 == strcmp(mode, "threads")) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        run_threads(n > 0 ? (int)n : 4, argc > 3 ? atoi(argv[3]) : 200);
        return mt_finish("mpi_stress threads");
    }
    MPI_Init(&argc, &argv);
    if (0 == strcmp(mode, "cycles")) run_cycles(n > 0 ? (int)n : 2000);
    else if (0 == strcmp(mode, "live")) run_live(n > 0 ? (int)n : 4);
    else if (0 == strcmp(mode, "small")) run_small(n > 0 ? n : 200000);
    else mt_check(0, "unknown mode '%s'", mode);
    char name[64];
    snprintf(name, sizeof(name), "mpi_stress %s", mode);
    return mt_finish(name);
}
