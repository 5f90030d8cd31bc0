/*
 * probes.c - small-message latency measured the ways other benchmarks
 * measure it, so that braid vs tuned can be compared by more than one
 * method (braid_bench's is a fourth: an untimed barrier before every call,
 * the slowest rank's p50):
 *
 *   loop   back-to-back calls, root 0, no synchronisation between them:
 *          the time of N calls / N on every rank, the slowest rank's
 *          figure (what an application's tight loop of small collectives
 *          sees; pipelining across calls counts)
 *   osu    OSU micro-benchmarks 7 (osu_bcast, osu_reduce, osu_allreduce):
 *          root 0, each call timed alone with an untimed barrier after it,
 *          each rank's mean; reported: the mean over ranks (osu_barrier:
 *          back-to-back barriers, as loop but averaged over ranks)
 *   imb    Intel MPI Benchmarks: the root rotates every call
 *          (root = i mod P), N calls timed without barriers, t_avg over
 *          ranks (IMB-MPI1 Bcast/Reduce); for allreduce and barrier as osu
 *          without the per-batch barrier
 *
 * Each figure is the median of 5 batches of N calls, every batch after a
 * barrier; output: one line per (collective, size):
 *   method coll bytes microseconds
 * usage: mpirun -np P probes [-n N] [-e MAXBYTES] [-c coll,coll,...]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { BATCHES = 5 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef enum { LOOP, OSU, IMB } method_t;
static const char *method_name[] = { "loop", "osu", "imb" };

static void call(const char *coll, char *buf, char *out, int count, int root)
{
    if (!strcmp(coll, "allreduce"))
        MPI_Allreduce(buf, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "reduce"))
        MPI_Reduce(buf, out, count, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD);
    else if (!strcmp(coll, "bcast"))
        MPI_Bcast(buf, count * 4, MPI_BYTE, root, MPI_COMM_WORLD);
    else
        MPI_Barrier(MPI_COMM_WORLD);
}

/* one batch of n calls: this rank's microseconds per call */
static double batch(method_t m, const char *coll, char *buf, char *out, int count, int n, int P)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (OSU == m && strcmp(coll, "barrier")) {
        double sum = 0;
        for (int i = 0; i < n; i++) {
            double t0 = MPI_Wtime();
            call(coll, buf, out, count, 0);
            sum += MPI_Wtime() - t0;
            MPI_Barrier(MPI_COMM_WORLD);
        }
        return sum * 1e6 / n;
    }
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) call(coll, buf, out, count, IMB == m ? i % P : 0);
    return (MPI_Wtime() - t0) * 1e6 / n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P, n = 20000, opt;
    long maxb = 1024;
    char colls[256] = "allreduce,bcast,reduce,barrier";
    while ((opt = getopt(argc, argv, "n:e:c:")) != -1) {
        if ('n' == opt) n = atoi(optarg);
        else if ('e' == opt) maxb = atol(optarg);
        else if ('c' == opt) snprintf(colls, sizeof colls, "%s", optarg);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    char *buf = calloc(1, (size_t)maxb + 4), *out = calloc(1, (size_t)maxb + 4);
    for (char *coll = strtok(colls, ","); coll; coll = strtok(NULL, ",")) {
        int barrier = !strcmp(coll, "barrier");
        for (long bytes = barrier ? 0 : 8; bytes <= (barrier ? 0 : maxb); bytes = bytes ? bytes * 2 : 8) {
            int count = (int)(bytes / 4);
            for (method_t m = LOOP; m <= IMB; m++) {
                if (barrier && IMB == m) continue;        /* no root to rotate */
                (void)batch(m, coll, buf, out, count, n / 10 + 1, P);   /* warm-up */
                double t[BATCHES];
                for (int b = 0; b < BATCHES; b++) {
                    double mine = batch(m, coll, buf, out, count, n, P), agg;
                    /* loop: the slowest rank; osu / imb: the average over ranks */
                    MPI_Reduce(&mine, &agg, 1, MPI_DOUBLE, LOOP == m ? MPI_MAX : MPI_SUM, 0,
                               MPI_COMM_WORLD);
                    t[b] = LOOP == m ? agg : agg / P;
                }
                qsort(t, BATCHES, sizeof *t, cmp_double);
                if (0 == rank) printf("%s %s %ld %.3f\n", method_name[m], coll, bytes, t[BATCHES / 2]);
            }
        }
    }
    free(buf);
    free(out);
    MPI_Finalize();
    return 0;
}
