/*
 * mpi_alltoall.c - MPI_Alltoall, MPI_Ialltoall and MPI_Alltoall_init
 * against the block every rank knows its peers sent it.
 *
 * Block d of rank s holds value(s, d, i) = s * 1000003 + d * 1009 + i. Per
 * communicator (MPI_COMM_WORLD, its reverse, and a split of the even and
 * odd ranks) and per block count {0, 1, 3, P + 1, 1000, 40000}:
 *   - MPI_INT both sides, not in place and in place;
 *   - a strided send type (every other int of a vector) against
 *     contiguous ints, and contiguous ints against a strided receive type
 *     whose holes must keep their values;
 *   - MPI_Ialltoall: three outstanding at once on one communicator (the
 *     middle one in place), waited for in reverse order;
 *   - MPI_Alltoall_init, not in place and in place: each started three
 *     times with new values, freed.
 * Every element of every receive buffer is checked, and the send buffers
 * are checked untouched.
 */
#include "mpi_test_common.h"
#include "mpi_persistent.h"

static int value(int s, int d, int i) { return s * 1000003 + d * 1009 + i; }

static void fill(int *buf, int P, int me, int n, int stride, int salt)
{
    for (int d = 0; d < P; d++)
        for (int i = 0; i < n; i++) buf[((size_t)d * n + i) * stride] = value(me, d, i) + salt;
}

/* rbuf (stride ints apart) holds the block each rank sent this one */
static void check(const int *rbuf, int P, int me, int n, int stride, int salt, const char *what)
{
    long bad = 0;
    for (int s = 0; s < P; s++)
        for (int i = 0; i < n; i++) bad += rbuf[((size_t)s * n + i) * stride] != value(s, me, i) + salt;
    mt_check(0 == bad, "%s: P=%d n=%d: %ld wrong elements", what, P, n, bad);
}

static void holes_kept(const int *rbuf, size_t len, const char *what, int n)
{
    long bad = 0;
    for (size_t i = 1; i < len; i += 2) bad += rbuf[i] != -7;
    mt_check(0 == bad, "%s: n=%d: %ld holes written", what, n, bad);
}

/* Start a persistent request three times, the input (in) filled with new
 * values each time, and free it. */
static void start_three(MPI_Request *preq, int *in, const int *out, int P, int me, int n, int salt,
                        const char *what)
{
    for (int round = 0; round < 3; round++) {
        fill(in, P, me, n, 1, salt + round);
        MPI_Start(preq);
        MPI_Wait(preq, MPI_STATUS_IGNORE);
        check(out, P, me, n, 1, salt + round, what);
    }
    MPI_Request_free(preq);
}

static void run(MPI_Comm comm, int n)
{
    int P, me;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    size_t len = (size_t)P * (size_t)(n > 0 ? n : 1);
    int *s = malloc(2 * len * sizeof(int)), *r = malloc(2 * len * sizeof(int));
    int *s0 = malloc(len * sizeof(int));

    /* plain, then in place */
    fill(s, P, me, n, 1, 0);
    memcpy(s0, s, len * sizeof(int));
    MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, comm);
    check(r, P, me, n, 1, 0, "alltoall");
    mt_check(0 == memcmp(s, s0, len * sizeof(int)), "alltoall: send buffer changed");
    fill(r, P, me, n, 1, 1);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, MPI_INT, comm);
    check(r, P, me, n, 1, 1, "alltoall in place");

    /* a strided send type, then a strided receive type with holes */
    MPI_Datatype strided;
    MPI_Type_vector(1, 1, 2, MPI_INT, &strided);
    MPI_Datatype every_other;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &every_other);
    MPI_Type_commit(&every_other);
    MPI_Type_free(&strided);
    fill(s, P, me, n, 2, 2);
    MPI_Alltoall(s, n, every_other, r, n, MPI_INT, comm);
    check(r, P, me, n, 1, 2, "alltoall, strided send type");
    fill(s, P, me, n, 1, 3);
    for (size_t i = 0; i < 2 * len; i++) r[i] = -7;
    MPI_Alltoall(s, n, MPI_INT, r, n, every_other, comm);
    check(r, P, me, n, 2, 3, "alltoall, strided receive type");
    holes_kept(r, 2 * len, "alltoall, strided receive type", n);
    MPI_Type_free(&every_other);

    /* three outstanding at once, waited for in reverse */
    int *sb[3], *rb[3];
    MPI_Request req[3];
    for (int k = 0; k < 3; k++) {
        sb[k] = malloc(len * sizeof(int));
        rb[k] = malloc(len * sizeof(int));
        fill(sb[k], P, me, n, 1, 10 + k);
        if (1 == k) fill(rb[k], P, me, n, 1, 10 + k);   /* the middle one in place */
        MPI_Ialltoall(1 == k ? MPI_IN_PLACE : sb[k], 1 == k ? 0 : n, 1 == k ? MPI_DATATYPE_NULL : MPI_INT,
                      rb[k], n, MPI_INT, comm, &req[k]);
    }
    for (int k = 2; k >= 0; k--) {
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        check(rb[k], P, me, n, 1, 10 + k, "ialltoall");
    }

    /* persistent, not in place and in place */
    MPI_Request preq;
    Alltoall_init(sb[0], n, MPI_INT, rb[0], n, MPI_INT, comm, MPI_INFO_NULL, &preq);
    start_three(&preq, sb[0], rb[0], P, me, n, 20, "alltoall_init");
    Alltoall_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb[1], n, MPI_INT, comm, MPI_INFO_NULL, &preq);
    start_three(&preq, rb[1], rb[1], P, me, n, 30, "alltoall_init in place");
    for (int k = 0; k < 3; k++) {
        free(sb[k]);
        free(rb[k]);
    }
    free(s);
    free(r);
    free(s0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm comms[MT_NCOMMS];
    mt_comms(comms);
    int counts[] = { 0, 1, 3, P + 1, 1000, 40000 };
    for (int c = 0; c < MT_NCOMMS; c++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) run(comms[c], counts[k]);
    mt_comms_free(comms);
    return mt_finish("mpi_alltoall");
}
