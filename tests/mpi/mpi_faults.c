/*
 * mpi_faults.c - braid when things go wrong.
 *
 * usage: mpi_faults MODE [N]
 *   kill        rank 1 raises SIGKILL in the middle of a loop of 8 MiB
 *               allreduces while the others are inside the collective; the
 *               job must end (non-zero) promptly - the list runs it with a
 *               30 s limit - and must never print "survived"
 *   nomem N     run with coll_braid_inject_alloc_failure=N (and the ring
 *               allreduce, binomial bcast forced) on every rank: the first
 *               N scratch allocations of each communicator succeed, later
 *               ones fail. With MPI_ERRORS_RETURN, collectives that need new
 *               scratch return MPI_ERR_NO_MEM on every rank and leave the
 *               receive buffer untouched; collectives that need none (or
 *               reuse cached scratch) keep giving correct values, and the
 *               job ends cleanly.
 *   inomem N    the same allowance (N = 0) for nonblocking and persistent
 *               requests, which take scratch of their own: MPI_Iallreduce
 *               and a started persistent allreduce that need scratch
 *               complete with MPI_ERR_NO_MEM in MPI_Wait's status on every
 *               rank, leave the receive buffer untouched, and later
 *               collectives (blocking and nonblocking) give correct
 *               values.
 */
#include "mpi_test_common.h"
#include "mpi_persistent.h"

#include <signal.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* a rank killed mid-collective                                          */
/* ------------------------------------------------------------------ */

static void run_kill(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = 1 << 20;   /* 8 MiB of doubles */
    double *in = malloc(sizeof(double) * (size_t)n), *out = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) in[i] = rank + i % 7;
    for (int it = 0; it < 1000; it++) {
        if (1 == rank && 3 == it) {
            fprintf(stderr, "mpi_faults: rank 1 raising SIGKILL at iteration %d\n", it);
            fflush(stderr);
            raise(SIGKILL);
        }
        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    /* unreachable when rank 1 died: the job must not get here */
    printf("mpi_faults: rank %d survived the loop\n", rank);
    free(in);
    free(out);
}

/* ------------------------------------------------------------------ */
/* scratch allocation failure                                            */
/* ------------------------------------------------------------------ */

static void expect_nomem(int rc, const char *what)
{
    int cls = MPI_SUCCESS;
    if (MPI_SUCCESS != rc) MPI_Error_class(rc, &cls);
    mt_check(MPI_ERR_NO_MEM == cls, "%s: error class %d, expected MPI_ERR_NO_MEM (%d)", what, cls,
             MPI_ERR_NO_MEM);
}

/* allreduce of n longs: value i of rank r is r + i; checks the sum */
static int allreduce_longs(long *in, long *out, int n, int size)
{
    for (int i = 0; i < n; i++) out[i] = -7;
    int rc = MPI_Allreduce(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (MPI_SUCCESS != rc) return rc;
    long bad = 0;
    for (int i = 0; i < n; i++) bad += out[i] != (long)size * (size - 1) / 2 + (long)size * i;
    mt_check(0 == bad, "allreduce n=%d: %ld wrong values", n, bad);
    return rc;
}

static long count_not(const long *v, int n, long value)
{
    long k = 0;
    for (int i = 0; i < n; i++) k += v[i] != value;
    return k;
}

/* collectives that need no scratch still work and give correct values */
static void check_scratch_free_collectives(int rank, const char *when)
{
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    mt_check(MPI_SUCCESS == rc, "%s: barrier returned %d", when, rc);
    int b[100];
    for (int i = 0; i < 100; i++) b[i] = 0 == rank ? 3 * i + 1 : -1;
    rc = MPI_Bcast(b, 100, MPI_INT, 0, MPI_COMM_WORLD);
    long bad = 0;
    for (int i = 0; i < 100; i++) bad += b[i] != 3 * i + 1;
    mt_check(MPI_SUCCESS == rc && 0 == bad, "%s: bcast rc %d, %ld wrong", when, rc, bad);
}

static void run_nomem(int allowed)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int big = 100000;
    long *in = malloc(sizeof(long) * big), *out = malloc(sizeof(long) * big);
    for (int i = 0; i < big; i++) in[i] = rank + i;

    check_scratch_free_collectives(rank, "before");
    /* the ring allreduce takes one scratch block; with one allocation
     * allowed the first call gets it and a smaller one reuses it */
    if (allowed >= 1) {
        mt_check(MPI_SUCCESS == allreduce_longs(in, out, 1000, size), "allreduce 1000 failed");
        mt_check(MPI_SUCCESS == allreduce_longs(in, out, 500, size), "allreduce 500 failed");
    }
    /* a larger one must grow the scratch: fails on every rank */
    int rc = allreduce_longs(in, out, allowed >= 1 ? big : 1000, size);
    expect_nomem(rc, "allreduce needing new scratch");
    mt_check(0 == count_not(out, allowed >= 1 ? big : 1000, -7),
             "failed allreduce wrote into the receive buffer");

    /* staged datatype (MPI_LONG_INT has holes): scratch for staging */
    struct { long v; int i; } li[64], lo[64];
    for (int i = 0; i < 64; i++) { li[i].v = rank * i; li[i].i = rank; lo[i].v = -7; lo[i].i = -7; }
    rc = MPI_Allreduce(li, lo, 64, MPI_LONG_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    expect_nomem(rc, "staged allreduce (MPI_LONG_INT)");
    long touched = 0;
    for (int i = 0; i < 64; i++) touched += lo[i].v != -7 || lo[i].i != -7;
    mt_check(0 == touched, "failed staged allreduce wrote %ld elements", touched);

    /* non-contiguous bcast: packed through scratch */
    int v[300];
    MPI_Datatype vec;
    MPI_Type_vector(100, 1, 3, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int i = 0; i < 300; i++) v[i] = 0 == rank ? i : -7;
    rc = MPI_Bcast(v, 1, vec, 0, MPI_COMM_WORLD);
    expect_nomem(rc, "non-contiguous bcast");
    if (0 != rank) {
        long k = 0;
        for (int i = 0; i < 300; i++) k += v[i] != -7;
        mt_check(0 == k, "failed bcast wrote %ld ints", k);
    }
    MPI_Type_free(&vec);

    /* no corruption: braid's state is still aligned across ranks */
    check_scratch_free_collectives(rank, "after the failures");
    if (allowed >= 1)
        mt_check(MPI_SUCCESS == allreduce_longs(in, out, 500, size),
                 "allreduce reusing cached scratch failed after the failures");
    if (0 == rank) printf("mpi_faults nomem: failures reported as MPI_ERR_NO_MEM on every rank\n");
    free(in);
    free(out);
}

static void run_inomem(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const int n = 100000;
    long *in = malloc(sizeof(long) * n), *out = malloc(sizeof(long) * n);
    for (int i = 0; i < n; i++) in[i] = rank + i;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < n; i++) out[i] = -7;
        MPI_Request q;
        MPI_Status st;
        int rc = MPI_Iallreduce(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &q);
        if (MPI_SUCCESS == rc) rc = MPI_Wait(&q, &st);
        expect_nomem(rc, "Iallreduce needing scratch");
        mt_check(0 == count_not(out, n, -7), "failed Iallreduce wrote into the receive buffer");
        check_scratch_free_collectives(rank, "after a failed Iallreduce");
    }
    /* a failed wait frees the request (Open MPI's rule for a request that
     * completed in error, persistent ones included) */
    MPI_Request p;
    int rc = Allreduce_init(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &p);
    mt_check(MPI_SUCCESS == rc, "persistent allreduce init: %d", rc);
    if (MPI_SUCCESS == rc) {
        for (int i = 0; i < n; i++) out[i] = -7;
        int src = MPI_Start(&p);
        if (MPI_SUCCESS == src) src = MPI_Wait(&p, MPI_STATUS_IGNORE);
        expect_nomem(src, "started persistent allreduce needing scratch");
        mt_check(0 == count_not(out, n, -7), "failed persistent start wrote into the receive buffer");
        if (MPI_REQUEST_NULL != p) MPI_Request_free(&p);
    }
    /* what needs no scratch still runs, nonblocking too (no new
     * communicator: Open MPI agrees on its id with MPI_Iallreduce, which
     * fails here) */
    int b = 0 == rank ? 1234 : -1;
    MPI_Request q;
    rc = MPI_Ibcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD, &q);
    if (MPI_SUCCESS == rc) rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    mt_check(MPI_SUCCESS == rc && 1234 == b, "Ibcast after the failures: rc %d, value %d", rc, b);
    rc = MPI_Ibarrier(MPI_COMM_WORLD, &q);
    if (MPI_SUCCESS == rc) rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    mt_check(MPI_SUCCESS == rc, "Ibarrier after the failures: rc %d", rc);
    check_scratch_free_collectives(rank, "at the end");
    if (0 == rank) printf("mpi_faults inomem: request failures reported as MPI_ERR_NO_MEM on every rank\n");
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "";
    if (0 == strcmp(mode, "kill")) run_kill();
    else if (0 == strcmp(mode, "nomem")) run_nomem(argc > 2 ? atoi(argv[2]) : 0);
    else if (0 == strcmp(mode, "inomem")) run_inomem();
    else mt_check(0, "unknown mode '%s'", mode);
    char name[64];
    snprintf(name, sizeof(name), "mpi_faults %s", mode);
    return mt_finish(name);
}
