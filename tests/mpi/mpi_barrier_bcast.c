/*
 * mpi_barrier_bcast.c - MPI_Barrier and MPI_Bcast under braid, whichever
 * algorithms the coll_braid_*_algorithm parameters force: values checked
 * for every root and sizes 0, 1, odd and 1 MiB + 3, a strided datatype, a
 * communicator with reversed rank order, communicator dup/free cycles, and
 * barrier semantics with a late rank.
 *
 * usage: mpi_barrier_bcast [cycles]   (default 1000 dup/collective/free cycles)
 */
#include "mpi_test_common.h"

#include <time.h>
#include <unistd.h>

static double now_realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_bcast_bytes(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const size_t sizes[] = { 0, 1, 2, 1001, 65537, (1 << 20) + 3 };
    size_t maxn = (1 << 20) + 3;
    unsigned char *buf = malloc(maxn);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        for (int root = 0; root < size; root++) {
            /* large sizes: a few roots are enough */
            if (n > 70000 && root != 0 && root != size - 1) continue;
            long seed = (long)(root * 31 + k);
            for (size_t i = 0; i < n; i++) buf[i] = rank == root ? mt_byte(seed, i) : 0xEE;
            MPI_Bcast(buf, (int)n, MPI_BYTE, root, comm);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++) bad += buf[i] != mt_byte(seed, i);
            mt_check(0 == bad, "%s bcast bytes n=%zu root=%d: %zu wrong", what, n, root, bad);
        }
    }
    free(buf);
}

static void test_bcast_types(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    /* doubles, odd count, every root */
    enum { ND = 333 };
    double d[ND];
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < ND; i++) d[i] = rank == root ? root * 1000.5 + i : -1.0;
        MPI_Bcast(d, ND, MPI_DOUBLE, root, comm);
        int bad = 0;
        for (int i = 0; i < ND; i++) bad += d[i] != root * 1000.5 + i;
        mt_check(0 == bad, "%s bcast double root=%d: %d wrong", what, root, bad);
    }
    /* strided vector: every 3rd int of 3*NV; the holes must stay untouched */
    enum { NV = 1000 };
    int v[3 * NV];
    MPI_Datatype vec;
    MPI_Type_vector(NV, 1, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < 3 * NV; i++) v[i] = (rank == root && i % 3 == 0) ? i * 7 + root : -5;
        MPI_Bcast(v, 1, vec, root, comm);
        int bad = 0;
        for (int i = 0; i < 3 * NV; i++) bad += v[i] != (i % 3 == 0 ? i * 7 + root : -5);
        mt_check(0 == bad, "%s bcast vector root=%d: %d wrong (holes must be kept)", what, root, bad);
    }
    /* root sends the vector type, others receive plain ints: same signature */
    int plain[NV];
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < 3 * NV; i++) v[i] = i * 5 + root;
        for (int i = 0; i < NV; i++) plain[i] = -1;
        if (rank == root) MPI_Bcast(v, 1, vec, root, comm);
        else MPI_Bcast(plain, NV, MPI_INT, root, comm);
        int bad = 0;
        if (rank != root)
            for (int i = 0; i < NV; i++) bad += plain[i] != (3 * i) * 5 + root;
        mt_check(0 == bad, "%s bcast vector->int root=%d: %d wrong", what, root, bad);
    }
    MPI_Type_free(&vec);
}

static void test_barrier_late_rank(MPI_Comm comm, const char *what)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (size < 2) return;
    for (int late = 0; late < size; late += (size > 3 ? size - 1 : 1)) {
        MPI_Barrier(comm);
        double enter = 0;
        if (rank == late) {
            usleep(200000);
            enter = now_realtime();
        }
        MPI_Barrier(comm);
        double leave = now_realtime();
        /* everyone learns when the late rank entered (bcast is tested above) */
        MPI_Bcast(&enter, 1, MPI_DOUBLE, late, comm);
        mt_check(leave >= enter, "%s barrier left %.3f s before late rank %d arrived", what,
                 enter - leave, late);
    }
}

static void test_dup_cycles(MPI_Comm comm, int cycles)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    long bad = 0;
    for (int c = 0; c < cycles; c++) {
        MPI_Comm dup;
        MPI_Comm_dup(comm, &dup);
        int x = rank == 0 ? c : -1;
        MPI_Bcast(&x, 1, MPI_INT, 0, dup);
        MPI_Barrier(dup);
        bad += x != c;
        MPI_Comm_free(&dup);
    }
    mt_check(0 == bad, "dup/bcast/free cycles: %ld wrong", bad);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int cycles = argc > 1 ? atoi(argv[1]) : 1000;

    test_bcast_bytes(MPI_COMM_WORLD, "world");
    test_bcast_types(MPI_COMM_WORLD, "world");
    test_barrier_late_rank(MPI_COMM_WORLD, "world");

    MPI_Comm rev = mt_reversed_comm(MPI_COMM_WORLD);
    test_bcast_bytes(rev, "reversed");
    test_bcast_types(rev, "reversed");
    test_barrier_late_rank(rev, "reversed");
    MPI_Comm_free(&rev);

    /* a sub-communicator of the odd world ranks, reordered */
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm odd;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &odd);
    test_bcast_types(odd, "split");
    MPI_Comm_free(&odd);

    test_dup_cycles(MPI_COMM_WORLD, cycles);
    return mt_finish("mpi_barrier_bcast");
}
