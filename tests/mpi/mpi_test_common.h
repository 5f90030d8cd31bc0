/*
 * mpi_test_common.h - tiny harness for braid's MPI integration tests.
 * Every rank counts its checks and failures; mt_finish() sums them over
 * MPI_COMM_WORLD (with the point-to-point layer only, so a broken
 * collective cannot hide a failure), rank 0 prints a summary, and the exit
 * status is non-zero when any rank failed.
 */
#ifndef MPI_TEST_COMMON_H
#define MPI_TEST_COMMON_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long mt_checks, mt_failures;
static int mt_max_reports = 20;

static void mt_check(int cond, const char *fmt, ...)
{
    mt_checks++;
    if (cond) return;
    mt_failures++;
    if (mt_max_reports-- > 0) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        fprintf(stderr, "FAIL [world rank %d] %s\n", rank, msg);
    }
}

/* Sum the counters at rank 0 with sends and receives only. */
static int mt_finish(const char *name)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long mine[2] = { mt_checks, mt_failures }, total[2] = { mt_checks, mt_failures };
    if (0 == rank) {
        for (int r = 1; r < size; r++) {
            long other[2];
            MPI_Recv(other, 2, MPI_LONG, r, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total[0] += other[0];
            total[1] += other[1];
        }
        printf("%s: np=%d checks=%ld failures=%ld %s\n", name, size, total[0], total[1],
               total[1] ? "FAILED" : "ok");
        fflush(stdout);
    } else {
        MPI_Send(mine, 2, MPI_LONG, 0, 999, MPI_COMM_WORLD);
    }
    int failed = 0;
    if (0 == rank) failed = total[1] != 0;
    /* tell everyone, point to point */
    if (0 == rank) {
        for (int r = 1; r < size; r++) MPI_Send(&failed, 1, MPI_INT, r, 998, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&failed, 1, MPI_INT, 0, 998, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* The communicators the collective tests run on: MPI_COMM_WORLD, its
 * reverse (mt_reversed_comm, below), and a split of the even and odd
 * ranks; mt_comms_free frees the two made here. */
#define MT_NCOMMS 3
static inline MPI_Comm mt_reversed_comm(MPI_Comm comm);
static inline void mt_comms(MPI_Comm comms[MT_NCOMMS])
{
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    comms[0] = MPI_COMM_WORLD;
    comms[1] = mt_reversed_comm(MPI_COMM_WORLD);
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &comms[2]);
}

static inline void mt_comms_free(MPI_Comm comms[MT_NCOMMS])
{
    MPI_Comm_free(&comms[1]);
    MPI_Comm_free(&comms[2]);
}

/* A block collective's whole run (gather and scatter, their v forms,
 * allgatherv, alltoallv): run_case(comm, n, every_other) on each
 * communicator of mt_comms for each of the block sizes n below (0, 1, 3,
 * P + 1, 1000, 40000), every_other an int whose extent is two ints (a
 * non-contiguous receive or send type); then the verdict (mt_finish). */
static inline int mt_block_main(int *argc, char ***argv, const char *name,
                                void (*run_case)(MPI_Comm comm, int n, MPI_Datatype every_other))
{
    MPI_Init(argc, argv);
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Datatype every_other;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &every_other);
    MPI_Type_commit(&every_other);
    MPI_Comm comms[MT_NCOMMS];
    mt_comms(comms);
    int counts[] = { 0, 1, 3, P + 1, 1000, 40000 };
    for (int c = 0; c < MT_NCOMMS; c++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) run_case(comms[c], counts[k], every_other);
    MPI_Type_free(&every_other);
    mt_comms_free(comms);
    return mt_finish(name);
}

/* A communicator over the same processes in reversed rank order. */
static inline MPI_Comm mt_reversed_comm(MPI_Comm comm)
{
    int rank, size;
    MPI_Comm out;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_split(comm, 0, size - 1 - rank, &out);
    return out;
}

/* Deterministic byte pattern per (seed, index). */
static inline unsigned char mt_byte(long seed, size_t i)
{
    return (unsigned char)((i * 2654435761u + (size_t)seed * 97u + 13u) >> 7);
}

#endif
