/*
 * mpi_bigcount.c - more than INT_MAX elements of MPI_BYTE in one call,
 * through a derived type: 2049 elements of a contiguous type of 2^20
 * MPI_BYTEs (2 GiB + 1 MiB per rank), MPI_Allreduce in place with a
 * commutative user op that XORs the bytes (Open MPI takes MPI_BXOR on
 * predefined types only) and MPI_Bcast from the last rank, every byte checked against what
 * the known inputs give. Prints "SKIP:" where the machine has less memory
 * available than the job needs (about 5 GiB a rank).
 */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TYPE_BYTES ((size_t)1 << 20)
#define COUNT 2049

static unsigned char in(int rank, size_t i) { return (unsigned char)((i * 7 + (i >> 20) + (size_t)rank * 13) & 0xff); }

/* MemAvailable in /proc/meminfo, bytes; 0 when unknown */
static size_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    size_t kb = 0;
    if (NULL == f) return 0;
    while (fgets(line, sizeof line, f))
        if (1 == sscanf(line, "MemAvailable: %zu kB", &kb)) break;
    fclose(f);
    return kb * 1024;
}

/* the bytes of *len elements of 2^20 bytes XORed */
static void xor_bytes(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    const uint64_t *a = invec;
    uint64_t *b = inoutvec;
    (void)dt;
    for (size_t i = 0; i < (size_t)*len * (TYPE_BYTES / 8); i++) b[i] ^= a[i];
}

int main(int argc, char **argv)
{
    int me, P;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    const size_t bytes = TYPE_BYTES * COUNT;
    /* the buffer, and as much again for the transport's and the
     * algorithm's staging, per rank; one rank decides for all */
    int enough = mem_available() >= (size_t)P * (2 * bytes + ((size_t)1 << 29));
    MPI_Bcast(&enough, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!enough) {
        if (0 == me) printf("SKIP: less than %zu MiB of memory available\n", (size_t)P * (2 * bytes) >> 20);
        MPI_Finalize();
        return 0;
    }
    MPI_Datatype mib;
    MPI_Type_contiguous((int)TYPE_BYTES, MPI_BYTE, &mib);
    MPI_Type_commit(&mib);
    unsigned char *buf = malloc(bytes);
    if (NULL == buf) {
        fprintf(stderr, "mpi_bigcount: no memory for %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long failures = 0, first = -1;

    for (size_t i = 0; i < bytes; i++) buf[i] = in(me, i);
    MPI_Op bxor;
    MPI_Op_create(xor_bytes, 1, &bxor);
    MPI_Allreduce(MPI_IN_PLACE, buf, COUNT, mib, bxor, MPI_COMM_WORLD);
    MPI_Op_free(&bxor);
    for (size_t i = 0; i < bytes; i++) {
        unsigned char want = 0;
        for (int r = 0; r < P; r++) want ^= in(r, i);
        if (buf[i] != want && failures++ == 0) first = (long)i;
    }
    if (failures)
        fprintf(stderr, "FAIL rank %d: allreduce XOR: %ld bytes wrong, the first at %ld\n", me,
                failures, first);

    long bf = 0;
    for (size_t i = 0; i < bytes; i++) buf[i] = me == P - 1 ? in(me + 3, i) : 0;
    MPI_Bcast(buf, COUNT, mib, P - 1, MPI_COMM_WORLD);
    for (size_t i = 0; i < bytes; i++)
        if (buf[i] != in(P + 2, i) && bf++ == 0) first = (long)i;
    if (bf) fprintf(stderr, "FAIL rank %d: bcast: %ld bytes wrong, the first at %ld\n", me, bf, first);
    failures += bf;

    long total = 0;
    /* point to point, so that a broken collective cannot hide a failure */
    if (0 == me) {
        total = failures;
        for (int r = 1; r < P; r++) {
            long o;
            MPI_Recv(&o, 1, MPI_LONG, r, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += o;
        }
        printf("mpi_bigcount: np=%d count=%d of %zu bytes (%zu bytes, INT_MAX %d) failures=%ld %s\n",
               P, COUNT, TYPE_BYTES, bytes, INT_MAX, total, total ? "FAILED" : "ok");
    } else {
        MPI_Send(&failures, 1, MPI_LONG, 0, 5, MPI_COMM_WORLD);
    }
    free(buf);
    MPI_Type_free(&mib);
    MPI_Finalize();
    return 0 == me && total ? EXIT_FAILURE : EXIT_SUCCESS;
}
