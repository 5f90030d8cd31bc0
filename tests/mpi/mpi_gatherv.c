/*
 * mpi_gatherv.c - MPI_Gatherv and MPI_Scatterv, their MPI_I* and _init
 * forms, against the blocks every rank knows each rank holds.
 *
 * Rank s's block holds value(s, i, salt) = s * 1000003 + i + salt, the salt
 * new per call, count(s) = ((7 s + 3) % 4) n / 2 elements (3n/2, n, n/2, 0:
 * one rank in four gives nothing). At the root the blocks lie in reverse
 * rank order with gaps: rank s's block follows a gap of s % 3 elements,
 * rank P - 1's first, and TAIL elements follow the last block. Per
 * communicator (MPI_COMM_WORLD, its reverse, and a split of the even and
 * odd ranks), per base n {0, 1, 3, P + 1, 1000, 40000}, and per root
 * (every rank when P <= 4, else 0, P / 2 and P - 1):
 *   - MPI_Gatherv of MPI_INT both sides, the non-roots passing NULL
 *     receive buffer, counts and displacements, and with MPI_IN_PLACE at
 *     the root (its own block already at its displacement);
 *   - MPI_Gatherv with a strided send type (an int, extent two ints)
 *     against contiguous ints, and contiguous ints against a strided
 *     receive type at the root (displacements count pairs of ints) whose
 *     holes must keep their values;
 *   - MPI_Scatterv of MPI_INT both sides, the non-roots passing NULL send
 *     buffer, counts and displacements, and with MPI_IN_PLACE as the
 *     root's receive buffer (its block stays in the send buffer,
 *     unmodified);
 *   - MPI_Scatterv with a strided receive type (holes kept) and with a
 *     strided send type at the root;
 *   - both with the root's buffer argument in the middle of its layout
 *     and the displacements counted from there, the lower ones below 0
 *     (MPI_INT, and the strided type at the root), blocking and
 *     nonblocking;
 *   - three MPI_Igatherv and three MPI_Iscatterv outstanding at once, the
 *     middle one without the root-only arguments at the non-roots, waited
 *     for in reverse order;
 *   - MPI_Gatherv_init and MPI_Scatterv_init started three times with new
 *     values, freed.
 * Every element of every receive buffer is checked: the blocks at their
 * displacements, and -7 in every gap, hole and element past the blocks.
 * The send buffers are checked untouched after every call.
 */
#include "mpi_test_common.h"
#include "mpi_persistent.h"

#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define Gatherv_init MPIX_Gatherv_init
#define Scatterv_init MPIX_Scatterv_init
#else
#define Gatherv_init MPI_Gatherv_init
#define Scatterv_init MPI_Scatterv_init
#endif

/* elements past the last block at the root, never written */
#define TAIL 3

static int value(int s, int i, int salt) { return s * 1000003 + i + salt; }

typedef struct {
    MPI_Comm comm;
    int P, me, n, root;
    int *counts, *displs;     /* every rank's block: its count and displacement at the root */
    int shift, *below;        /* the layout's middle, and displs less it (some below 0) */
    size_t span;              /* elements of the root's layout, TAIL included; covers any one block too */
    MPI_Datatype every_other; /* an int, extent two ints */
} run_t;

/* the counts, the blocks in reverse rank order with gaps of s % 3 */
static void layout(run_t *t)
{
    size_t at = 0;
    for (int s = t->P - 1; s >= 0; s--) {
        t->counts[s] = ((s * 7 + 3) % 4) * t->n / 2;
        at += (size_t)(s % 3);
        t->displs[s] = (int)at;
        at += (size_t)t->counts[s];
    }
    t->span = at + TAIL;
    t->shift = (int)(t->span / 2);
    for (int s = 0; s < t->P; s++) t->below[s] = t->displs[s] - t->shift;
}

static void clear(int *b, size_t len)
{
    for (size_t i = 0; i < len; i++) b[i] = -7;
}

/* rank s's block, its elements stride ints apart */
static void fill_block(int *b, int s, int cnt, int stride, int salt)
{
    for (int i = 0; i < cnt; i++) b[(size_t)i * (size_t)stride] = value(s, i, salt);
}

/* every rank's block at its displacement (in units of stride ints) */
static void fill_layout(const run_t *t, int *b, int stride, int salt)
{
    for (int s = 0; s < t->P; s++)
        fill_block(b + (size_t)t->displs[s] * (size_t)stride, s, t->counts[s], stride, salt);
}

/* the root's buffer (elements stride ints apart, displacements in units of
 * stride ints) holds every rank's block at its displacement, and -7
 * everywhere else */
static void check_layout(const run_t *t, const int *r, int stride, int salt, const char *what)
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
             "%s: P=%d root=%d n=%d: %ld wrong elements, %ld gaps or holes written", what, t->P,
             t->root, t->n, bad, written);
}

/* this rank's buffer (elements stride ints apart) holds its own block
 * first, and -7 everywhere else */
static void check_mine(const run_t *t, const int *r, int stride, int salt, const char *what)
{
    size_t len = (size_t)stride * t->span;
    long bad = 0, written = 0;
    for (size_t j = 0; j < len; j++) {
        int i = (int)(j / (size_t)stride);
        if (0 == j % (size_t)stride && i < t->counts[t->me]) bad += r[j] != value(t->me, i, salt);
        else written += r[j] != -7;
    }
    mt_check(0 == bad && 0 == written,
             "%s: P=%d root=%d rank=%d n=%d: %ld wrong elements, %ld holes or elements past written",
             what, t->P, t->root, t->me, t->n, bad, written);
}

static void unchanged(const run_t *t, const int *b, const int *b0, size_t len, const char *what)
{
    mt_check(0 == memcmp(b, b0, len * sizeof(int)), "%s: P=%d root=%d rank=%d n=%d: send buffer changed",
             what, t->P, t->root, t->me, t->n);
}

static void gatherv(const run_t *t, int *s, int *r, int *s0)
{
    int am_root = t->me == t->root, mine = t->counts[t->me];
    size_t len = t->span;

    /* plain: non-roots pass no receive buffer, counts or displacements */
    clear(s, len);
    fill_block(s, t->me, mine, 1, 0);
    memcpy(s0, s, len * sizeof(int));
    if (am_root) clear(r, len);
    MPI_Gatherv(s, mine, MPI_INT, am_root ? r : NULL, am_root ? t->counts : NULL,
                am_root ? t->displs : NULL, MPI_INT, t->root, t->comm);
    if (am_root) check_layout(t, r, 1, 0, "gatherv");
    unchanged(t, s, s0, len, "gatherv");

    /* in place at the root: its own block already at its displacement */
    if (am_root) {
        clear(r, len);
        fill_block(r + t->displs[t->root], t->root, mine, 1, 1);
        MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, t->counts, t->displs, MPI_INT, t->root,
                    t->comm);
        check_layout(t, r, 1, 1, "gatherv in place");
    } else {
        clear(s, len);
        fill_block(s, t->me, mine, 1, 1);
        memcpy(s0, s, len * sizeof(int));
        MPI_Gatherv(s, mine, MPI_INT, NULL, NULL, NULL, MPI_DATATYPE_NULL, t->root, t->comm);
        unchanged(t, s, s0, len, "gatherv in place");
    }

    /* a strided send type against contiguous ints */
    clear(s, 2 * len);
    fill_block(s, t->me, mine, 2, 2);
    memcpy(s0, s, 2 * len * sizeof(int));
    if (am_root) clear(r, len);
    MPI_Gatherv(s, mine, t->every_other, r, t->counts, t->displs, MPI_INT, t->root, t->comm);
    if (am_root) check_layout(t, r, 1, 2, "gatherv, strided send type");
    unchanged(t, s, s0, 2 * len, "gatherv, strided send type");

    /* contiguous ints against a strided receive type with holes */
    clear(s, len);
    fill_block(s, t->me, mine, 1, 3);
    memcpy(s0, s, len * sizeof(int));
    if (am_root) clear(r, 2 * len);
    MPI_Gatherv(s, mine, MPI_INT, r, t->counts, t->displs, t->every_other, t->root, t->comm);
    if (am_root) check_layout(t, r, 2, 3, "gatherv, strided receive type");
    unchanged(t, s, s0, len, "gatherv, strided receive type");

    /* the root's buffer argument in the middle: displacements below 0 */
    for (int stride = 1; stride <= 2; stride++) {
        clear(s, len);
        fill_block(s, t->me, mine, 1, 30 + stride);
        memcpy(s0, s, len * sizeof(int));
        if (am_root) clear(r, (size_t)stride * len);
        MPI_Gatherv(s, mine, MPI_INT, r + stride * t->shift, t->counts, t->below,
                    1 == stride ? MPI_INT : t->every_other, t->root, t->comm);
        if (am_root) check_layout(t, r, stride, 30 + stride, "gatherv, displacements below 0");
        unchanged(t, s, s0, len, "gatherv, displacements below 0");
    }
}

static void scatterv(const run_t *t, int *s, int *r, int *s0)
{
    int am_root = t->me == t->root, mine = t->counts[t->me];
    size_t len = t->span;

    /* plain: non-roots pass no send buffer, counts or displacements */
    if (am_root) {
        clear(s, len);
        fill_layout(t, s, 1, 4);
        memcpy(s0, s, len * sizeof(int));
    }
    clear(r, len);
    MPI_Scatterv(am_root ? s : NULL, am_root ? t->counts : NULL, am_root ? t->displs : NULL, MPI_INT, r,
                 mine, MPI_INT, t->root, t->comm);
    check_mine(t, r, 1, 4, "scatterv");
    if (am_root) unchanged(t, s, s0, len, "scatterv");

    /* in place at the root: its block stays in the send buffer */
    if (am_root) {
        clear(s, len);
        fill_layout(t, s, 1, 5);
        memcpy(s0, s, len * sizeof(int));
        MPI_Scatterv(s, t->counts, t->displs, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, t->root,
                     t->comm);
        check_layout(t, s, 1, 5, "scatterv in place");
        unchanged(t, s, s0, len, "scatterv in place");
    } else {
        clear(r, len);
        MPI_Scatterv(NULL, NULL, NULL, MPI_DATATYPE_NULL, r, mine, MPI_INT, t->root, t->comm);
        check_mine(t, r, 1, 5, "scatterv in place");
    }

    /* contiguous ints against a strided receive type with holes */
    if (am_root) {
        clear(s, len);
        fill_layout(t, s, 1, 6);
        memcpy(s0, s, len * sizeof(int));
    }
    clear(r, 2 * len);
    MPI_Scatterv(s, t->counts, t->displs, MPI_INT, r, mine, t->every_other, t->root, t->comm);
    check_mine(t, r, 2, 6, "scatterv, strided receive type");
    if (am_root) unchanged(t, s, s0, len, "scatterv, strided receive type");

    /* a strided send type at the root against contiguous ints */
    if (am_root) {
        clear(s, 2 * len);
        fill_layout(t, s, 2, 7);
        memcpy(s0, s, 2 * len * sizeof(int));
    }
    clear(r, len);
    MPI_Scatterv(s, t->counts, t->displs, t->every_other, r, mine, MPI_INT, t->root, t->comm);
    check_mine(t, r, 1, 7, "scatterv, strided send type");
    if (am_root) unchanged(t, s, s0, 2 * len, "scatterv, strided send type");

    /* the root's buffer argument in the middle: displacements below 0 */
    for (int stride = 1; stride <= 2; stride++) {
        if (am_root) {
            clear(s, (size_t)stride * len);
            fill_layout(t, s, stride, 32 + stride);
            memcpy(s0, s, (size_t)stride * len * sizeof(int));
        }
        clear(r, len);
        MPI_Scatterv(s + stride * t->shift, t->counts, t->below, 1 == stride ? MPI_INT : t->every_other,
                     r, mine, MPI_INT, t->root, t->comm);
        check_mine(t, r, 1, 32 + stride, "scatterv, displacements below 0");
        if (am_root) unchanged(t, s, s0, (size_t)stride * len, "scatterv, displacements below 0");
    }
}

static void requests(const run_t *t)
{
    int am_root = t->me == t->root, mine = t->counts[t->me];
    size_t len = t->span;
    int *sb[3], *rb[3], *s0[3];
    MPI_Request req[3];
    for (int k = 0; k < 3; k++) {
        sb[k] = malloc(len * sizeof(int));
        rb[k] = malloc(len * sizeof(int));
        s0[k] = malloc(len * sizeof(int));
    }

    /* three igathervs outstanding, waited for in reverse; the middle one
     * without the root-only arguments at the non-roots */
    for (int k = 0; k < 3; k++) {
        int full = am_root || 1 != k;
        clear(sb[k], len);
        fill_block(sb[k], t->me, mine, 1, 10 + k);
        memcpy(s0[k], sb[k], len * sizeof(int));
        if (am_root) clear(rb[k], len);
        MPI_Igatherv(sb[k], mine, MPI_INT, full ? rb[k] : NULL, full ? t->counts : NULL,
                     full ? t->displs : NULL, MPI_INT, t->root, t->comm, &req[k]);
    }
    for (int k = 2; k >= 0; k--) {
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        if (am_root) check_layout(t, rb[k], 1, 10 + k, "igatherv");
        unchanged(t, sb[k], s0[k], len, "igatherv");
    }

    /* three iscattervs likewise */
    for (int k = 0; k < 3; k++) {
        int full = am_root || 1 != k;
        if (am_root) {
            clear(sb[k], len);
            fill_layout(t, sb[k], 1, 13 + k);
            memcpy(s0[k], sb[k], len * sizeof(int));
        }
        clear(rb[k], len);
        MPI_Iscatterv(full ? sb[k] : NULL, full ? t->counts : NULL, full ? t->displs : NULL, MPI_INT,
                      rb[k], mine, MPI_INT, t->root, t->comm, &req[k]);
    }
    for (int k = 2; k >= 0; k--) {
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        check_mine(t, rb[k], 1, 13 + k, "iscatterv");
        if (am_root) unchanged(t, sb[k], s0[k], len, "iscatterv");
    }

    /* one of each with displacements below 0 (the root's buffer argument
     * in the middle of its layout), outstanding together */
    clear(sb[0], len);
    fill_block(sb[0], t->me, mine, 1, 36);
    if (am_root) {
        clear(rb[0], len);
        clear(sb[1], len);
        fill_layout(t, sb[1], 1, 37);
        memcpy(s0[1], sb[1], len * sizeof(int));
    }
    clear(rb[1], len);
    MPI_Igatherv(sb[0], mine, MPI_INT, rb[0] + t->shift, t->counts, t->below, MPI_INT, t->root, t->comm,
                 &req[0]);
    MPI_Iscatterv(sb[1] + t->shift, t->counts, t->below, MPI_INT, rb[1], mine, MPI_INT, t->root,
                  t->comm, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    if (am_root) check_layout(t, rb[0], 1, 36, "igatherv, displacements below 0");
    check_mine(t, rb[1], 1, 37, "iscatterv, displacements below 0");
    if (am_root) unchanged(t, sb[1], s0[1], len, "iscatterv, displacements below 0");

    /* persistent, each started three times with new values */
    MPI_Request preq;
    Gatherv_init(sb[0], mine, MPI_INT, rb[0], t->counts, t->displs, MPI_INT, t->root, t->comm,
                 MPI_INFO_NULL, &preq);
    for (int round = 0; round < 3; round++) {
        clear(sb[0], len);
        fill_block(sb[0], t->me, mine, 1, 20 + round);
        memcpy(s0[0], sb[0], len * sizeof(int));
        if (am_root) clear(rb[0], len);
        MPI_Start(&preq);
        MPI_Wait(&preq, MPI_STATUS_IGNORE);
        if (am_root) check_layout(t, rb[0], 1, 20 + round, "gatherv_init");
        unchanged(t, sb[0], s0[0], len, "gatherv_init");
    }
    MPI_Request_free(&preq);
    Scatterv_init(sb[1], t->counts, t->displs, MPI_INT, rb[1], mine, MPI_INT, t->root, t->comm,
                  MPI_INFO_NULL, &preq);
    for (int round = 0; round < 3; round++) {
        if (am_root) {
            clear(sb[1], len);
            fill_layout(t, sb[1], 1, 23 + round);
            memcpy(s0[1], sb[1], len * sizeof(int));
        }
        clear(rb[1], len);
        MPI_Start(&preq);
        MPI_Wait(&preq, MPI_STATUS_IGNORE);
        check_mine(t, rb[1], 1, 23 + round, "scatterv_init");
        if (am_root) unchanged(t, sb[1], s0[1], len, "scatterv_init");
    }
    MPI_Request_free(&preq);
    for (int k = 0; k < 3; k++) {
        free(sb[k]);
        free(rb[k]);
        free(s0[k]);
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
    layout(&t);
    /* twice over for the strided types */
    int *s = malloc(2 * t.span * sizeof(int)), *r = malloc(2 * t.span * sizeof(int));
    int *s0 = malloc(2 * t.span * sizeof(int));
    int roots[4], nroots = 0;
    if (t.P <= 4)
        for (int q = 0; q < t.P; q++) roots[nroots++] = q;
    else {
        roots[nroots++] = 0;
        roots[nroots++] = t.P / 2;
        roots[nroots++] = t.P - 1;
    }
    for (int q = 0; q < nroots; q++) {
        t.root = roots[q];
        gatherv(&t, s, r, s0);
        scatterv(&t, s, r, s0);
        requests(&t);
    }
    free(s);
    free(r);
    free(s0);
    free(t.counts);
    free(t.displs);
    free(t.below);
}

int main(int argc, char **argv) { return mt_block_main(&argc, &argv, "mpi_gatherv", run); }
