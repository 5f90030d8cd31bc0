/*
 * mpi_alltoallv.c - MPI_Alltoallv, MPI_Ialltoallv and MPI_Alltoallv_init
 * against the blocks every rank knows each rank sends it.
 *
 * The block rank s sends rank d holds value(s, d, i, salt) = s * 1000003 +
 * d * 1009 + i + salt, cnt(s, d) elements. Per communicator
 * (MPI_COMM_WORLD, its reverse, and a split of the even and odd ranks),
 * per base n {0, 1, 3, P + 1, 1000, 40000} and per count pattern (every
 * pair n; ((7 s + 3 d) % 4) n / 2, one pair in four empty and not
 * symmetric), the blocks a rank sends lie in reverse destination order
 * with gaps of (d % 3) + 1 elements, those it receives in source order
 * with gaps of ((s + 1) % 2) + 1. Checked:
 *   - MPI_Alltoallv of MPI_INT both sides;
 *   - MPI_IN_PLACE (the input in the receive layout, with the symmetric
 *     counts ((s + d) % 4) n / 2 that in place needs);
 *   - contiguous ints against a strided receive type (an int, extent two
 *     ints: displacements count pairs of ints) whose holes must keep
 *     their values, and a strided send type against contiguous ints;
 *   - the buffer arguments in the middle of their layouts and the
 *     displacements counted from there, the lower ones below 0 (MPI_INT,
 *     the strided receive type, in place; blocking and nonblocking);
 *   - three MPI_Ialltoallv outstanding at once, waited for in reverse;
 *   - MPI_Alltoallv_init started three times with new values, freed;
 *   the last two also in place (every request of the symmetric counts).
 * Every block is checked at its displacement, every gap and hole keeps -7,
 * and the send buffers are checked untouched.
 */
#include <stdbool.h>

#include "mpi_test_common.h"
#include "mpi_persistent.h"

#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define Alltoallv_init MPIX_Alltoallv_init
#else
#define Alltoallv_init MPI_Alltoallv_init
#endif

static int value(int s, int d, int i, int salt) { return s * 1000003 + d * 1009 + i + salt; }

static const char *pattern_name[] = { "all n", "(7s+3d)%4*n/2", "symmetric (s+d)%4*n/2" };

typedef struct {
    MPI_Comm comm;
    int P, me, n, pattern;
    int *sc, *sd, *rc, *rd;   /* this rank's send and receive counts and displacements */
    size_t sspan, rspan;      /* elements of the send and receive layouts, at least 1 */
    int sshift, rshift;       /* the layouts' middles */
    int *sbelow, *rbelow;     /* sd and rd less them (some below 0) */
    MPI_Datatype every_other; /* an int, extent two ints */
} run_t;

static int cnt(const run_t *t, int s, int d)
{
    if (0 == t->pattern) return t->n;
    if (1 == t->pattern) return ((7 * s + 3 * d) % 4) * t->n / 2;
    return ((s + d) % 4) * t->n / 2;
}

static void layout(run_t *t)
{
    size_t at = 0;
    for (int d = t->P - 1; d >= 0; d--) {
        t->sc[d] = cnt(t, t->me, d);
        t->sd[d] = (int)at;
        at += (size_t)t->sc[d] + (size_t)(d % 3) + 1;
    }
    t->sspan = at ? at : 1;
    at = 0;
    for (int s = 0; s < t->P; s++) {
        t->rc[s] = cnt(t, s, t->me);
        t->rd[s] = (int)at;
        at += (size_t)t->rc[s] + (size_t)((s + 1) % 2) + 1;
    }
    t->rspan = at ? at : 1;
    t->sshift = (int)(t->sspan / 2);
    t->rshift = (int)(t->rspan / 2);
    for (int q = 0; q < t->P; q++) {
        t->sbelow[q] = t->sd[q] - t->sshift;
        t->rbelow[q] = t->rd[q] - t->rshift;
    }
}

static void clear(int *b, size_t len)
{
    for (size_t i = 0; i < len; i++) b[i] = -7;
}

/* the blocks for every rank at their displacements (stride ints apart) */
static void fill(const run_t *t, int *b, const int *counts, const int *displs, int stride, int salt)
{
    for (int d = 0; d < t->P; d++)
        for (int i = 0; i < counts[d]; i++)
            b[((size_t)displs[d] + (size_t)i) * (size_t)stride] = value(t->me, d, i, salt);
}

/* r holds each rank's block at its displacement, -7 everywhere else */
static void check_all(const run_t *t, const int *r, int stride, int salt, const char *what)
{
    size_t len = (size_t)stride * t->rspan;
    char *in_block = calloc(len, 1);
    long bad = 0, written = 0;
    for (int s = 0; s < t->P; s++)
        for (int i = 0; i < t->rc[s]; i++) {
            size_t j = ((size_t)t->rd[s] + (size_t)i) * (size_t)stride;
            in_block[j] = 1;
            bad += r[j] != value(s, t->me, i, salt);
        }
    for (size_t j = 0; j < len; j++) written += !in_block[j] && r[j] != -7;
    free(in_block);
    mt_check(0 == bad && 0 == written,
             "%s: P=%d rank=%d n=%d counts %s: %ld wrong elements, %ld gaps or holes written", what,
             t->P, t->me, t->n, pattern_name[t->pattern], bad, written);
}

static void unchanged(const run_t *t, const int *b, const int *b0, size_t len, const char *what)
{
    mt_check(0 == memcmp(b, b0, len * sizeof(int)), "%s: P=%d rank=%d n=%d counts %s: send buffer changed",
             what, t->P, t->me, t->n, pattern_name[t->pattern]);
}

static void blocking(const run_t *t, int *s, int *r, int *s0)
{
    if (2 == t->pattern) {
        /* in place: the input in the receive layout */
        clear(r, t->rspan);
        fill(t, r, t->rc, t->rd, 1, 1);
        MPI_Alltoallv(MPI_IN_PLACE, t->rc, t->rd, MPI_DATATYPE_NULL, r, t->rc, t->rd, MPI_INT, t->comm);
        check_all(t, r, 1, 1, "alltoallv in place");
        /* the buffer argument in the middle: displacements below 0 */
        clear(r, t->rspan);
        fill(t, r, t->rc, t->rd, 1, 30);
        MPI_Alltoallv(MPI_IN_PLACE, t->rc, t->rbelow, MPI_DATATYPE_NULL, r + t->rshift, t->rc, t->rbelow,
                      MPI_INT, t->comm);
        check_all(t, r, 1, 30, "alltoallv in place, displacements below 0");
        return;
    }
    clear(s, t->sspan);
    fill(t, s, t->sc, t->sd, 1, 0);
    memcpy(s0, s, t->sspan * sizeof(int));
    clear(r, t->rspan);
    MPI_Alltoallv(s, t->sc, t->sd, MPI_INT, r, t->rc, t->rd, MPI_INT, t->comm);
    check_all(t, r, 1, 0, "alltoallv");
    unchanged(t, s, s0, t->sspan, "alltoallv");

    /* contiguous ints against a strided receive type with holes */
    clear(r, 2 * t->rspan);
    fill(t, s, t->sc, t->sd, 1, 2);
    memcpy(s0, s, t->sspan * sizeof(int));
    MPI_Alltoallv(s, t->sc, t->sd, MPI_INT, r, t->rc, t->rd, t->every_other, t->comm);
    check_all(t, r, 2, 2, "alltoallv, strided receive type");
    unchanged(t, s, s0, t->sspan, "alltoallv, strided receive type");

    /* a strided send type against contiguous ints */
    clear(s, 2 * t->sspan);
    fill(t, s, t->sc, t->sd, 2, 3);
    memcpy(s0, s, 2 * t->sspan * sizeof(int));
    clear(r, t->rspan);
    MPI_Alltoallv(s, t->sc, t->sd, t->every_other, r, t->rc, t->rd, MPI_INT, t->comm);
    check_all(t, r, 1, 3, "alltoallv, strided send type");
    unchanged(t, s, s0, 2 * t->sspan, "alltoallv, strided send type");

    /* the buffer arguments in the middle: displacements below 0 */
    for (int stride = 1; stride <= 2; stride++) {
        clear(s, t->sspan);
        fill(t, s, t->sc, t->sd, 1, 30 + stride);
        memcpy(s0, s, t->sspan * sizeof(int));
        clear(r, (size_t)stride * t->rspan);
        MPI_Alltoallv(s + t->sshift, t->sc, t->sbelow, MPI_INT, r + stride * t->rshift, t->rc, t->rbelow,
                      1 == stride ? MPI_INT : t->every_other, t->comm);
        check_all(t, r, stride, 30 + stride, "alltoallv, displacements below 0");
        unchanged(t, s, s0, t->sspan, "alltoallv, displacements below 0");
    }
}

/* this request's input: sb, or (in place, the symmetric counts) rb in
 * the receive layout */
static void input(const run_t *t, int *sb, int *rb, int salt)
{
    clear(rb, t->rspan);
    if (2 == t->pattern) {
        fill(t, rb, t->rc, t->rd, 1, salt);
        return;
    }
    clear(sb, t->sspan);
    fill(t, sb, t->sc, t->sd, 1, salt);
}

static void requests(const run_t *t)
{
    int *sb[3], *rb[3];
    MPI_Request req[3];
    bool ip = 2 == t->pattern;
    const void *in[3];
    for (int k = 0; k < 3; k++) {
        sb[k] = malloc(t->sspan * sizeof(int));
        rb[k] = malloc(t->rspan * sizeof(int));
        in[k] = ip ? MPI_IN_PLACE : sb[k];
    }
    MPI_Datatype stype = ip ? MPI_DATATYPE_NULL : MPI_INT;
    for (int k = 0; k < 3; k++) {
        input(t, sb[k], rb[k], 10 + k);
        MPI_Ialltoallv(in[k], t->sc, t->sd, stype, rb[k], t->rc, t->rd, MPI_INT, t->comm, &req[k]);
    }
    for (int k = 2; k >= 0; k--) {
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        check_all(t, rb[k], 1, 10 + k, ip ? "ialltoallv in place" : "ialltoallv");
    }
    /* displacements below 0 */
    input(t, sb[0], rb[0], 33);
    MPI_Ialltoallv(ip ? MPI_IN_PLACE : (const void *)(sb[0] + t->sshift), t->sc, t->sbelow, stype,
                   rb[0] + t->rshift, t->rc, t->rbelow, MPI_INT, t->comm, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    check_all(t, rb[0], 1, 33,
              ip ? "ialltoallv in place, displacements below 0" : "ialltoallv, displacements below 0");
    MPI_Request preq;
    Alltoallv_init(in[0], t->sc, t->sd, stype, rb[0], t->rc, t->rd, MPI_INT, t->comm, MPI_INFO_NULL, &preq);
    for (int round = 0; round < 3; round++) {
        input(t, sb[0], rb[0], 20 + round);
        MPI_Start(&preq);
        MPI_Wait(&preq, MPI_STATUS_IGNORE);
        check_all(t, rb[0], 1, 20 + round, ip ? "alltoallv_init in place" : "alltoallv_init");
    }
    MPI_Request_free(&preq);
    for (int k = 0; k < 3; k++) {
        free(sb[k]);
        free(rb[k]);
    }
}

static void run(MPI_Comm comm, int n, MPI_Datatype every_other)
{
    run_t t = { comm, 0, 0, n, 0, NULL, NULL, NULL, NULL, 0, 0, 0, 0, NULL, NULL, every_other };
    MPI_Comm_size(comm, &t.P);
    MPI_Comm_rank(comm, &t.me);
    int **arrays[] = { &t.sc, &t.sd, &t.rc, &t.rd, &t.sbelow, &t.rbelow };
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        *arrays[k] = malloc((size_t)t.P * sizeof(int));
    for (t.pattern = 0; t.pattern < 3; t.pattern++) {
        layout(&t);
        /* twice over for the strided types */
        int *s = malloc(2 * t.sspan * sizeof(int)), *s0 = malloc(2 * t.sspan * sizeof(int));
        int *r = malloc(2 * t.rspan * sizeof(int));
        blocking(&t, s, r, s0);
        requests(&t);
        free(s);
        free(s0);
        free(r);
    }
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++) free(*arrays[k]);
}

int main(int argc, char **argv) { return mt_block_main(&argc, &argv, "mpi_alltoallv", run); }
