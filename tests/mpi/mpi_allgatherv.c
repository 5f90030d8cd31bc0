/*
 * mpi_allgatherv.c - MPI_Allgatherv, MPI_Iallgatherv and MPI_Allgatherv_init
 * against the blocks every rank knows each rank holds.
 *
 * Rank s's block holds value(s, i, salt) = s * 1000003 + i + salt, the salt
 * new per call. Per communicator (MPI_COMM_WORLD, its reverse, and a split
 * of the even and odd ranks), per base n {0, 1, 3, P + 1, 1000, 40000} and
 * per count pattern (every rank n; rank i (n * (i % 3)) / 2, so some ranks
 * give nothing; only the last rank n), the blocks lie in the receive buffer
 * in reverse rank order with gaps: rank P - 1's at 0, then each rank i's
 * (i % 3) + 1 elements past the end of rank i + 1's. Checked:
 *   - MPI_Allgatherv of MPI_INT both sides, and with MPI_IN_PLACE (each
 *     rank's own block already at its displacement);
 *   - contiguous ints against a strided receive type (an int, extent two
 *     ints: displacements count pairs of ints) whose holes must keep their
 *     values, and a strided send type against contiguous ints;
 *   - the receive buffer argument in the middle of the layout and the
 *     displacements counted from there, the lower ones below 0 (MPI_INT,
 *     the strided receive type, and in place; blocking and nonblocking);
 *   - three MPI_Iallgatherv outstanding at once, waited for in reverse
 *     order;
 *   - MPI_Allgatherv_init started three times with new values, freed.
 * Every block is checked at its displacement, every gap and hole keeps -7,
 * and the send buffers are checked untouched.
 */
#include "mpi_test_common.h"
#include "mpi_persistent.h"

#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define Allgatherv_init MPIX_Allgatherv_init
#else
#define Allgatherv_init MPI_Allgatherv_init
#endif

static int value(int s, int i, int salt) { return s * 1000003 + i + salt; }

static const char *pattern_name[] = { "all n", "n*(i%3)/2", "last only" };

typedef struct {
    MPI_Comm comm;
    int P, me, n, pattern;
    int *counts, *displs;     /* every rank's block: its count and displacement */
    int shift, *below;        /* the layout's middle, and displs less it (some below 0) */
    size_t span;              /* elements from 0 to the end of the last block, at least 1 */
    MPI_Datatype every_other; /* an int, extent two ints */
} run_t;

/* the counts of the pattern, the blocks in reverse rank order with gaps */
static void layout(run_t *t)
{
    for (int i = 0; i < t->P; i++) {
        if (0 == t->pattern) t->counts[i] = t->n;
        else if (1 == t->pattern) t->counts[i] = (t->n * (i % 3)) / 2;
        else t->counts[i] = i == t->P - 1 ? t->n : 0;
    }
    t->displs[t->P - 1] = 0;
    for (int i = t->P - 2; i >= 0; i--) t->displs[i] = t->displs[i + 1] + t->counts[i + 1] + i % 3 + 1;
    t->span = 1;
    for (int i = 0; i < t->P; i++)
        if ((size_t)t->displs[i] + (size_t)t->counts[i] > t->span)
            t->span = (size_t)t->displs[i] + (size_t)t->counts[i];
    t->shift = (int)(t->span / 2);
    for (int i = 0; i < t->P; i++) t->below[i] = t->displs[i] - t->shift;
}

/* rank s's block, its elements stride ints apart */
static void fill_block(int *b, int s, int n, int stride, int salt)
{
    for (int i = 0; i < n; i++) b[(size_t)i * stride] = value(s, i, salt);
}

static void clear(int *b, size_t len)
{
    for (size_t i = 0; i < len; i++) b[i] = -7;
}

/* rbuf (elements stride ints apart, displacements in units of stride ints)
 * holds every rank's block at its displacement, and -7 everywhere else */
static void check_all(const run_t *t, const int *r, int stride, int salt, const char *what)
{
    size_t len = (size_t)stride * t->span;
    char *in_block = calloc(len, 1);
    long bad = 0, written = 0;
    for (int s = 0; s < t->P; s++)
        for (int i = 0; i < t->counts[s]; i++) {
            size_t j = ((size_t)t->displs[s] + (size_t)i) * (size_t)stride;
            in_block[j] = 1;
            bad += r[j] != value(s, i, salt);
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
    int mine = t->counts[t->me];
    size_t blk = (size_t)(mine > 0 ? mine : 1);

    /* plain */
    fill_block(s, t->me, mine, 1, 0);
    memcpy(s0, s, blk * sizeof(int));
    clear(r, t->span);
    MPI_Allgatherv(s, mine, MPI_INT, r, t->counts, t->displs, MPI_INT, t->comm);
    check_all(t, r, 1, 0, "allgatherv");
    unchanged(t, s, s0, blk, "allgatherv");

    /* in place: the own block already at its displacement */
    clear(r, t->span);
    fill_block(r + t->displs[t->me], t->me, mine, 1, 1);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, t->counts, t->displs, MPI_INT, t->comm);
    check_all(t, r, 1, 1, "allgatherv in place");

    /* contiguous ints against a strided receive type with holes */
    fill_block(s, t->me, mine, 1, 2);
    memcpy(s0, s, blk * sizeof(int));
    clear(r, 2 * t->span);
    MPI_Allgatherv(s, mine, MPI_INT, r, t->counts, t->displs, t->every_other, t->comm);
    check_all(t, r, 2, 2, "allgatherv, strided receive type");
    unchanged(t, s, s0, blk, "allgatherv, strided receive type");

    /* a strided send type against contiguous ints */
    clear(s, 2 * blk);
    fill_block(s, t->me, mine, 2, 3);
    memcpy(s0, s, 2 * blk * sizeof(int));
    clear(r, t->span);
    MPI_Allgatherv(s, mine, t->every_other, r, t->counts, t->displs, MPI_INT, t->comm);
    check_all(t, r, 1, 3, "allgatherv, strided send type");
    unchanged(t, s, s0, 2 * blk, "allgatherv, strided send type");

    /* the receive buffer argument in the middle: displacements below 0 */
    for (int stride = 1; stride <= 2; stride++) {
        fill_block(s, t->me, mine, 1, 30 + stride);
        memcpy(s0, s, blk * sizeof(int));
        clear(r, (size_t)stride * t->span);
        MPI_Allgatherv(s, mine, MPI_INT, r + stride * t->shift, t->counts, t->below,
                       1 == stride ? MPI_INT : t->every_other, t->comm);
        check_all(t, r, stride, 30 + stride, "allgatherv, displacements below 0");
        unchanged(t, s, s0, blk, "allgatherv, displacements below 0");
    }
    clear(r, t->span);
    fill_block(r + t->displs[t->me], t->me, mine, 1, 33);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r + t->shift, t->counts, t->below, MPI_INT,
                   t->comm);
    check_all(t, r, 1, 33, "allgatherv in place, displacements below 0");
}

static void requests(const run_t *t)
{
    int mine = t->counts[t->me];
    size_t blk = (size_t)(mine > 0 ? mine : 1);
    int *sb[3], *rb[3];
    MPI_Request req[3];
    for (int k = 0; k < 3; k++) {
        sb[k] = malloc(blk * sizeof(int));
        rb[k] = malloc(t->span * sizeof(int));
    }

    /* three outstanding, waited for in reverse */
    for (int k = 0; k < 3; k++) {
        fill_block(sb[k], t->me, mine, 1, 10 + k);
        clear(rb[k], t->span);
        MPI_Iallgatherv(sb[k], mine, MPI_INT, rb[k], t->counts, t->displs, MPI_INT, t->comm, &req[k]);
    }
    for (int k = 2; k >= 0; k--) {
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        check_all(t, rb[k], 1, 10 + k, "iallgatherv");
    }

    /* displacements below 0 */
    fill_block(sb[0], t->me, mine, 1, 34);
    clear(rb[0], t->span);
    MPI_Iallgatherv(sb[0], mine, MPI_INT, rb[0] + t->shift, t->counts, t->below, MPI_INT, t->comm,
                    &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    check_all(t, rb[0], 1, 34, "iallgatherv, displacements below 0");

    /* persistent, started three times with new values */
    MPI_Request preq;
    Allgatherv_init(sb[0], mine, MPI_INT, rb[0], t->counts, t->displs, MPI_INT, t->comm, MPI_INFO_NULL,
                    &preq);
    for (int round = 0; round < 3; round++) {
        fill_block(sb[0], t->me, mine, 1, 20 + round);
        clear(rb[0], t->span);
        MPI_Start(&preq);
        MPI_Wait(&preq, MPI_STATUS_IGNORE);
        check_all(t, rb[0], 1, 20 + round, "allgatherv_init");
    }
    MPI_Request_free(&preq);
    for (int k = 0; k < 3; k++) {
        free(sb[k]);
        free(rb[k]);
    }
}

static void run(MPI_Comm comm, int n, MPI_Datatype every_other)
{
    run_t t = { comm, 0, 0, n, 0, NULL, NULL, 0, NULL, 0, every_other };
    MPI_Comm_size(comm, &t.P);
    MPI_Comm_rank(comm, &t.me);
    t.counts = malloc((size_t)t.P * sizeof(int));
    t.displs = malloc((size_t)t.P * sizeof(int));
    t.below = malloc((size_t)t.P * sizeof(int));
    for (t.pattern = 0; t.pattern < 3; t.pattern++) {
        layout(&t);
        /* twice over for the strided types */
        size_t blk = (size_t)(t.counts[t.me] > 0 ? t.counts[t.me] : 1);
        int *s = malloc(2 * blk * sizeof(int)), *s0 = malloc(2 * blk * sizeof(int));
        int *r = malloc(2 * t.span * sizeof(int));
        blocking(&t, s, r, s0);
        requests(&t);
        free(s);
        free(s0);
        free(r);
    }
    free(t.counts);
    free(t.displs);
    free(t.below);
}

int main(int argc, char **argv) { return mt_block_main(&argc, &argv, "mpi_allgatherv", run); }
