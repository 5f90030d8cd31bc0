/*
 * startup.c - what MPI_Init, a first collective and MPI_Finalize cost a
 * process: the time each takes on rank 0, in milliseconds (the first
 * call in microseconds), as one CSV line: init_ms,first_us,finalize_ms.
 * startup.sh runs it under braid and under tuned. An allreduce of one int
 * on MPI_COMM_WORLD is the first call: every job makes one, and it is the
 * first to find what the components set up (or did not) in MPI_Init.
 * "startup multiple": MPI_Init_thread with MPI_THREAD_MULTIPLE instead.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int multiple = argc > 1 && 0 == strcmp(argv[1], "multiple"), provided;
    double t0 = now_ms();
    if (multiple)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    double t1 = now_ms();
    int rank, one = 1, sum = 0, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double t2 = now_ms();
    MPI_Finalize();
    double t3 = now_ms();
    if (sum != size) {
        fprintf(stderr, "startup: allreduce gave %d, expected %d\n", sum, size);
        return 1;
    }
    if (0 == rank) printf("%.3f,%.1f,%.3f\n", t1 - t0, (t2 - t1) * 1e3, t3 - t2);
    return 0;
}
