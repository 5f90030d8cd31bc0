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
 *   threads T [R [C [K]]]
 *               MPI_THREAD_MULTIPLE: T threads, each with its own two
 *               communicators (a dup and a reversed split), run R rounds
 *               (default 1) of 16 collectives (barrier, bcast, allreduce,
 *               reduce, reduce_scatter_block, reduce_scatter, allgather,
 *               alltoall, alltoallv, allgatherv, gatherv, gather, scatter,
 *               scatterv, scan, exscan) at 8 B to 1 MiB concurrently,
 *               while K more threads (default 1) each make, use and free C
 *               communicators (default 20; 0 = none)
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

/* element counts of int64 per collective: 8 B to 1 MiB */
static const int thread_sizes[] = { 1, 3, 1000, 32768, 131072 };
#define THREAD_NSIZES ((int)(sizeof(thread_sizes) / sizeof(thread_sizes[0])))
#define THREAD_MAX_REPORTS 5

typedef struct thread_arg {
    MPI_Comm comm[2];   /* collective threads: a dup and its reversed split; churn: its parent */
    int id, rounds;
    long checks, bad;
} thread_arg_t;

/* The value rank q contributes at index i of collective `key`: distinct per
 * thread, round, communicator, size and collective, so a message crossing
 * to another communicator or thread shows as a wrong value. */
static inline int64_t tval(long key, int q, size_t i)
{
    return (int64_t)key * 1000003 + (int64_t)q * 7919 + (int64_t)i;
}

/* sum over the P ranks of tval(key, q, i) */
static inline int64_t tsum(long key, int P, size_t i)
{
    return (int64_t)P * ((int64_t)key * 1000003 + (int64_t)i) + (int64_t)7919 * P * (P - 1) / 2;
}

static void tcheck(thread_arg_t *t, int ok, const char *what, long key, size_t i)
{
    t->checks++;
    if (ok) return;
    if (t->bad++ < THREAD_MAX_REPORTS) {
        int wr;
        MPI_Comm_rank(MPI_COMM_WORLD, &wr);
        fprintf(stderr, "FAIL [world rank %d thread %d] %s key %ld index %zu\n", wr, t->id, what,
                key, i);
    }
}

/* block - 1 or block elements by the sum of two ranks' parity: uneven,
 * zero where block is 1, the same on both ends of a pair */
static int tcount(size_t block, int a, int b) { return (int)block - (a + b) % 2; }

/* displacements of counts laid out in reverse rank order, one element of
 * gap before each block; returns the elements spanned */
static size_t tdispls(const int *counts, int *displs, int P)
{
    size_t at = 0;
    for (int q = P - 1; q >= 0; q--) {
        displs[q] = (int)(at + 1);
        at += 1 + (size_t)counts[q];
    }
    return at;
}

/* alltoall(v), allgatherv, gather(v), scatter(v), scan and exscan: block
 * (or about block) int64 elements per rank and block */
static void thread_rest(thread_arg_t *t, MPI_Comm comm, long key, size_t block)
{
    int r, P;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &P);
    size_t total = (block + 1) * (size_t)P;
    int64_t *in = malloc(total * sizeof(int64_t)), *out = malloc(total * sizeof(int64_t));
    int *sc = malloc(4 * (size_t)P * sizeof(int)), *sd = sc + P, *rc = sd + P, *rd = rc + P;

    for (int q = 0; q < P; q++)                               /* alltoall */
        for (size_t j = 0; j < block; j++) in[(size_t)q * block + j] = tval(key, r, (size_t)q * block + j);
    MPI_Alltoall(in, (int)block, MPI_INT64_T, out, (int)block, MPI_INT64_T, comm);
    for (int q = 0; q < P; q++)
        for (size_t j = 0; j < block; j++)
            tcheck(t, out[(size_t)q * block + j] == tval(key, q, (size_t)r * block + j), "alltoall",
                   key, j);

    for (int q = 0; q < P; q++) sc[q] = rc[q] = tcount(block, r, q);   /* alltoallv */
    tdispls(sc, sd, P);
    tdispls(rc, rd, P);
    for (int q = 0; q < P; q++)
        for (int j = 0; j < sc[q]; j++) in[sd[q] + j] = tval(key + 1, r, (size_t)q * block + (size_t)j);
    MPI_Alltoallv(in, sc, sd, MPI_INT64_T, out, rc, rd, MPI_INT64_T, comm);
    for (int q = 0; q < P; q++)
        for (int j = 0; j < rc[q]; j++)
            tcheck(t, out[rd[q] + j] == tval(key + 1, q, (size_t)r * block + (size_t)j), "alltoallv",
                   key, (size_t)j);

    for (int q = 0; q < P; q++) rc[q] = tcount(block, q, 0);  /* allgatherv */
    tdispls(rc, rd, P);
    for (int j = 0; j < rc[r]; j++) in[j] = tval(key + 2, r, (size_t)j);
    MPI_Allgatherv(in, rc[r], MPI_INT64_T, out, rc, rd, MPI_INT64_T, comm);
    for (int q = 0; q < P; q++)
        for (int j = 0; j < rc[q]; j++)
            tcheck(t, out[rd[q] + j] == tval(key + 2, q, (size_t)j), "allgatherv", key, (size_t)j);

    int root = (int)(key % P);                                /* gatherv, gather */
    MPI_Gatherv(in, rc[r], MPI_INT64_T, out, rc, rd, MPI_INT64_T, root, comm);
    if (r == root)
        for (int q = 0; q < P; q++)
            for (int j = 0; j < rc[q]; j++)
                tcheck(t, out[rd[q] + j] == tval(key + 2, q, (size_t)j), "gatherv", key, (size_t)j);
    for (size_t j = 0; j < block; j++) in[j] = tval(key + 6, r, j);
    MPI_Gather(in, (int)block, MPI_INT64_T, out, (int)block, MPI_INT64_T, root, comm);
    if (r == root)
        for (int q = 0; q < P; q++)
            for (size_t j = 0; j < block; j++)
                tcheck(t, out[(size_t)q * block + j] == tval(key + 6, q, j), "gather", key, j);

    root = (int)((key + 1) % P);                              /* scatter, scatterv */
    for (size_t i = 0; i < block * (size_t)P; i++) in[i] = tval(key + 3, root, i);
    MPI_Scatter(in, (int)block, MPI_INT64_T, out, (int)block, MPI_INT64_T, root, comm);
    for (size_t j = 0; j < block; j++)
        tcheck(t, out[j] == tval(key + 3, root, (size_t)r * block + j), "scatter", key, j);
    for (int q = 0; q < P; q++)
        for (int j = 0; j < rc[q]; j++) in[rd[q] + j] = tval(key + 4, q, (size_t)j);
    MPI_Scatterv(in, rc, rd, MPI_INT64_T, out, rc[r], MPI_INT64_T, root, comm);
    for (int j = 0; j < rc[r]; j++)
        tcheck(t, out[j] == tval(key + 4, r, (size_t)j), "scatterv", key, (size_t)j);

    for (size_t i = 0; i < block; i++) in[i] = tval(key + 5, r, i);   /* scan, exscan */
    MPI_Scan(in, out, (int)block, MPI_INT64_T, MPI_SUM, comm);
    for (size_t i = 0; i < block; i++) tcheck(t, out[i] == tsum(key + 5, r + 1, i), "scan", key, i);
    MPI_Exscan(in, out, (int)block, MPI_INT64_T, MPI_SUM, comm);
    for (size_t i = 0; i < block && r > 0; i++)
        tcheck(t, out[i] == tsum(key + 5, r, i), "exscan", key, i);
    free(in);
    free(out);
    free(sc);
}

/* the seven collectives that reduce, broadcast, gather to all or wait, n
 * int64 elements each, on comm; then the rest (thread_rest) */
static void thread_collectives(thread_arg_t *t, MPI_Comm comm, long key, size_t n)
{
    int r, P;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &P);
    size_t block = n / (size_t)P > 0 ? n / (size_t)P : 1, total = block * (size_t)P + (size_t)P;
    int64_t *in = malloc(total * sizeof(int64_t)), *out = malloc(total * sizeof(int64_t));
    int *counts = malloc((size_t)P * sizeof(int));

    MPI_Barrier(comm);

    int root = (int)(key % P);                                /* bcast */
    for (size_t i = 0; i < n; i++) out[i] = r == root ? tval(key, root, i) : -1;
    MPI_Bcast(out, (int)n, MPI_INT64_T, root, comm);
    for (size_t i = 0; i < n; i++) tcheck(t, out[i] == tval(key, root, i), "bcast", key, i);

    for (size_t i = 0; i < n; i++) in[i] = tval(key, r, i);   /* allreduce */
    MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, comm);
    for (size_t i = 0; i < n; i++) tcheck(t, out[i] == tsum(key, P, i), "allreduce", key, i);

    root = (int)((key + 1) % P);                              /* reduce */
    MPI_Reduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, root, comm);
    if (r == root)
        for (size_t i = 0; i < n; i++) tcheck(t, out[i] == tsum(key, P, i), "reduce", key, i);

    for (size_t i = 0; i < block * (size_t)P; i++) in[i] = tval(key, r, i);
    MPI_Reduce_scatter_block(in, out, (int)block, MPI_INT64_T, MPI_SUM, comm);
    for (size_t j = 0; j < block; j++)
        tcheck(t, out[j] == tsum(key, P, (size_t)r * block + j), "reduce_scatter_block", key, j);

    size_t first = 0, sum = 0;                                /* reduce_scatter, uneven */
    for (int q = 0; q < P; q++) {
        counts[q] = (int)block + q % 2;
        if (q < r) first += (size_t)counts[q];
        sum += (size_t)counts[q];
    }
    for (size_t i = 0; i < sum; i++) in[i] = tval(key, r, i);
    MPI_Reduce_scatter(in, out, counts, MPI_INT64_T, MPI_SUM, comm);
    for (int j = 0; j < counts[r]; j++)
        tcheck(t, out[j] == tsum(key, P, first + (size_t)j), "reduce_scatter", key, (size_t)j);

    for (size_t j = 0; j < block; j++) in[j] = tval(key, r, j);   /* allgather */
    MPI_Allgather(in, (int)block, MPI_INT64_T, out, (int)block, MPI_INT64_T, comm);
    for (int q = 0; q < P; q++)
        for (size_t j = 0; j < block; j++)
            tcheck(t, out[(size_t)q * block + j] == tval(key, q, j), "allgather", key, j);
    free(in);
    free(out);
    free(counts);
    thread_rest(t, comm, key + 500000000L, block);
}

static void *collective_thread(void *p)
{
    thread_arg_t *t = p;
    t->comm[1] = mt_reversed_comm(t->comm[0]);
    for (int round = 0; round < t->rounds; round++)
        for (int s = 0; s < THREAD_NSIZES; s++)
            for (int c = 0; c < 2; c++) {
                long key = ((long)t->id * 1000 + round) * 100 + s * 2 + c;
                thread_collectives(t, t->comm[c], key, (size_t)thread_sizes[s]);
            }
    return NULL;
}

/* Communicators made and freed (dups and reversed splits of this thread's
 * own parent) while the other threads run collectives: braid enables and
 * destroys modules under them. Each new communicator is used once. */
static void *churn_thread(void *p)
{
    thread_arg_t *t = p;
    for (int c = 0; c < t->rounds; c++) {
        MPI_Comm comm;
        if (c % 2) comm = mt_reversed_comm(t->comm[0]);
        else MPI_Comm_dup(t->comm[0], &comm);
        int r, P;
        MPI_Comm_rank(comm, &r);
        MPI_Comm_size(comm, &P);
        long key = 900000 + c, v[2] = { key, r }, s[2];
        MPI_Allreduce(v, s, 2, MPI_LONG, MPI_SUM, comm);
        tcheck(t, s[0] == key * P && s[1] == (long)P * (P - 1) / 2, "churn allreduce", key, 0);
        long b = r == c % P ? key : -1;
        MPI_Bcast(&b, 1, MPI_LONG, c % P, comm);
        tcheck(t, b == key, "churn bcast", key, 0);
        MPI_Comm_free(&comm);
    }
    return NULL;
}

/* T collective threads (each on its own dup and reversed split) and K
 * churn threads, all at once. The main thread makes one dup per thread, in
 * the same order on every rank; MPI_Comm_dup agrees point to point, so no
 * braid collective has run yet. Each collective thread then splits its dup
 * in reversed order (braid's allgather on the dup): the threads' first
 * messages make braid's endpoints, concurrently. Each churn thread makes
 * its communicators from its own dup. */
static void run_threads(int nthreads, int rounds, int churn, int nchurn)
{
    int provided, rank;
    MPI_Query_thread(&provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mt_check(MPI_THREAD_MULTIPLE == provided, "threads: MPI_THREAD_MULTIPLE not provided (%d)",
             provided);
    if (MPI_THREAD_MULTIPLE != provided) return;
    int n = nthreads + (churn > 0 ? nchurn : 0);
    thread_arg_t *args = calloc((size_t)n, sizeof(*args));
    pthread_t *tids = calloc((size_t)n, sizeof(*tids));
    for (int i = 0; i < n; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &args[i].comm[0]);
        args[i].comm[1] = MPI_COMM_NULL;   /* collective threads split their own */
        args[i].id = i;
        args[i].rounds = i < nthreads ? rounds : churn;
    }
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        pthread_create(&tids[i], NULL, i < nthreads ? collective_thread : churn_thread, &args[i]);
    long bad = 0, checks = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(tids[i], NULL);
        bad += args[i].bad;
        checks += args[i].checks;
        for (int c = 0; c < 2; c++)
            if (MPI_COMM_NULL != args[i].comm[c]) MPI_Comm_free(&args[i].comm[c]);
    }
    double t = now_s() - t0;
    mt_check(0 == bad && checks > 0, "threads: %ld wrong values in %ld checks", bad, checks);
    if (0 == rank)
        printf("stress threads: %d threads x %d rounds x 16 collectives x %d sizes (8 B..1 MiB) x 2 "
               "communicators, %d x %d communicators made and freed meanwhile; rank 0: %ld values "
               "checked, %ld wrong; %.1f s\n", nthreads, rounds, THREAD_NSIZES,
               churn > 0 ? nchurn : 0, churn, checks, bad, t);
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
        run_threads(n > 0 ? (int)n : 4, argc > 3 ? atoi(argv[3]) : 1, argc > 4 ? atoi(argv[4]) : 20,
                    argc > 5 ? atoi(argv[5]) : 1);
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
