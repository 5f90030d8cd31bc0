/*
 * mpi_gather.c - MPI_Gather and MPI_Scatter, their MPI_I* and _init forms,
 * against the blocks every rank knows each rank holds.
 *
 * Rank s's block holds value(s, i) = s * 1000003 + i (plus a salt per
 * call). Per communicator (MPI_COMM_WORLD, its reverse, and a split of the
 * even and odd ranks), per block count {0, 1, 3, P + 1, 1000, 40000}, and
 * per root (every rank when P <= 4, else 0, P / 2 and P - 1):
 *   - MPI_Gather of MPI_INT both sides, the non-roots passing a NULL
 *     receive buffer, and with MPI_IN_PLACE at the root (its own block
 *     already at rbuf + root * n);
 *   - MPI_Gather with a strided send type (every other int) against
 *     contiguous ints, and contiguous ints against a strided receive type
 *     at the root whose holes must keep their values;
 *   - MPI_Scatter of MPI_INT both sides, the non-roots passing a NULL send
 *     buffer, and with MPI_IN_PLACE as the root's receive buffer (its
 *     block stays in the send buffer, unmodified);
 *   - MPI_Scatter with a strided receive type (holes kept) and with a
 *     strided send type at the root;
 *   - three MPI_Igather and three MPI_Iscatter outstanding at once, waited
 *     for in reverse order;
 *   - MPI_Gather_init and MPI_Scatter_init started three times with new
 *     values, freed.
 * Every element of every receive buffer is checked, and the send buffers
 * are checked untouched.
 */
#include "mpi_test_common.h"
#include "mpi_persistent.h"

#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define Gather_init MPIX_Gather_init
#define Scatter_init MPIX_Scatter_init
#else
#define Gather_init MPI_Gather_init
#define Scatter_init MPI_Scatter_init
#endif

static int value(int s, int i) { return s * 1000003 + i; }

typedef struct {
    MPI_Comm comm;
    int P, me, n, root;
    MPI_Datatype every_other; /* an int, extent two ints */
} run_t;

/* rank s's block, its elements stride ints apart */
static void fill_block(int *b, int s, int n, int stride, int salt)
{
    for (int i = 0; i < n; i++) b[(size_t)i * stride] = value(s, i) + salt;
}

/* the P blocks, block d for (or from) rank d */
static void fill_all(const run_t *t, int *b, int stride, int salt)
{
    for (int d = 0; d < t->P; d++) fill_block(b + (size_t)d * t->n * stride, d, t->n, stride, salt);
}

static long bad_block(const int *b, int s, int n, int stride, int salt)
{
    long bad = 0;
    for (int i = 0; i < n; i++) bad += b[(size_t)i * stride] != value(s, i) + salt;
    return bad;
}

/* the root's rbuf (stride ints apart) holds the block of every rank */
static void check_all(const run_t *t, const int *r, int stride, int salt, const char *what)
{
    long bad = 0;
    for (int s = 0; s < t->P; s++) bad += bad_block(r + (size_t)s * t->n * stride, s, t->n, stride, salt);
    mt_check(0 == bad, "%s: P=%d root=%d n=%d: %ld wrong elements", what, t->P, t->root, t->n, bad);
}

/* this rank's rbuf (stride ints apart) holds its own block */
static void check_mine(const run_t *t, const int *r, int stride, int salt, const char *what)
{
    long bad = bad_block(r, t->me, t->n, stride, salt);
    mt_check(0 == bad, "%s: P=%d root=%d rank=%d n=%d: %ld wrong elements", what, t->P, t->root,
             t->me, t->n, bad);
}

static void holes_kept(const run_t *t, const int *r, size_t len, const char *what)
{
    long bad = 0;
    for (size_t i = 1; i < len; i += 2) bad += r[i] != -7;
    mt_check(0 == bad, "%s: P=%d root=%d n=%d: %ld holes written", what, t->P, t->root, t->n, bad);
}

static void unchanged(const run_t *t, const int *b, const int *b0, size_t len, const char *what)
{
    mt_check(0 == memcmp(b, b0, len * sizeof(int)), "%s: P=%d root=%d rank=%d n=%d: send buffer changed",
             what, t->P, t->root, t->me, t->n);
}

static void gather(const run_t *t, size_t len, int *s, int *r, int *s0)
{
    int am_root = t->me == t->root, n = t->n;
    size_t blk = (size_t)(n > 0 ? n : 1);

    /* plain: non-roots pass no receive buffer */
    fill_block(s, t->me, n, 1, 0);
    memcpy(s0, s, blk * sizeof(int));
    MPI_Gather(s, n, MPI_INT, am_root ? r : NULL, n, MPI_INT, t->root, t->comm);
    if (am_root) check_all(t, r, 1, 0, "gather");
    unchanged(t, s, s0, blk, "gather");

    /* in place at the root */
    if (am_root) {
        for (size_t i = 0; i < len; i++) r[i] = -7;
        fill_block(r + (size_t)t->root * n, t->root, n, 1, 1);
        MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, MPI_INT, t->root, t->comm);
        check_all(t, r, 1, 1, "gather in place");
    } else {
        fill_block(s, t->me, n, 1, 1);
        MPI_Gather(s, n, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, t->root, t->comm);
    }

    /* a strided send type against contiguous ints */
    for (size_t i = 0; i < 2 * blk; i++) s[i] = -7;
    fill_block(s, t->me, n, 2, 2);
    memcpy(s0, s, 2 * blk * sizeof(int));
    MPI_Gather(s, n, t->every_other, r, n, MPI_INT, t->root, t->comm);
    if (am_root) check_all(t, r, 1, 2, "gather, strided send type");
    unchanged(t, s, s0, 2 * blk, "gather, strided send type");

    /* contiguous ints against a strided receive type with holes */
    fill_block(s, t->me, n, 1, 3);
    if (am_root)
        for (size_t i = 0; i < 2 * len; i++) r[i] = -7;
    MPI_Gather(s, n, MPI_INT, r, n, t->every_other, t->root, t->comm);
    if (am_root) {
        check_all(t, r, 2, 3, "gather, strided receive type");
        holes_kept(t, r, 2 * len, "gather, strided receive type");
    }
}

static void scatter(const run_t *t, size_t len, int *s, int *r, int *s0)
{
    int am_root = t->me == t->root, n = t->n;
    size_t blk = (size_t)(n > 0 ? n : 1);

    /* plain: non-roots pass no send buffer */
    if (am_root) {
        fill_all(t, s, 1, 4);
        memcpy(s0, s, len * sizeof(int));
    }
    MPI_Scatter(am_root ? s : NULL, n, MPI_INT, r, n, MPI_INT, t->root, t->comm);
    check_mine(t, r, 1, 4, "scatter");
    if (am_root) unchanged(t, s, s0, len, "scatter");

    /* in place at the root: its block stays in the send buffer */
    if (am_root) {
        fill_all(t, s, 1, 5);
        memcpy(s0, s, len * sizeof(int));
        MPI_Scatter(s, n, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, t->root, t->comm);
        check_all(t, s, 1, 5, "scatter in place");
        unchanged(t, s, s0, len, "scatter in place");
    } else {
        for (size_t i = 0; i < blk; i++) r[i] = -7;
        MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, r, n, MPI_INT, t->root, t->comm);
        check_mine(t, r, 1, 5, "scatter in place");
    }

    /* contiguous ints against a strided receive type with holes */
    if (am_root) fill_all(t, s, 1, 6);
    for (size_t i = 0; i < 2 * blk; i++) r[i] = -7;
    MPI_Scatter(s, n, MPI_INT, r, n, t->every_other, t->root, t->comm);
    check_mine(t, r, 2, 6, "scatter, strided receive type");
    holes_kept(t, r, 2 * blk, "scatter, strided receive type");

    /* a strided send type at the root against contiguous ints */
    if (am_root) {
        for (size_t i = 0; i < 2 * len; i++) s[i] = -7;
        fill_all(t, s, 2, 7);
        memcpy(s0, s, 2 * len * sizeof(int));
    }
    MPI_Scatter(s, n, t->every_other, r, n, MPI_INT, t->root, t->comm);
    check_mine(t, r, 1, 7, "scatter, strided send type");
    if (am_root) unchanged(t, s, s0, 2 * len, "scatter, strided send type");
}

static void requests(const run_t *t, size_t len)
{
    int am_root = t->me == t->root, n = t->n;
    int *sb[3], *rb[3];
    MPI_Request req[3];
    for (int k = 0; k < 3; k++) {
        sb[k] = malloc(len * sizeof(int));
        rb[k] = malloc(len * sizeof(int));
    }

    /* three igathers outstanding, waited for in reverse; the middle one
     * without a receive buffer at the non-roots */
    for (int k = 0; k < 3; k++) {
        fill_block(sb[k], t->me, n, 1, 10 + k);
        MPI_Igather(sb[k], n, MPI_INT, am_root || 1 != k ? rb[k] : NULL, n, MPI_INT, t->root, t->comm,
                    &req[k]);
    }
    for (int k = 2; k >= 0; k--) {
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        if (am_root) check_all(t, rb[k], 1, 10 + k, "igather");
    }

    /* three iscatters likewise, the middle one without a send buffer at
     * the non-roots */
    for (int k = 0; k < 3; k++) {
        if (am_root) fill_all(t, sb[k], 1, 13 + k);
        MPI_Iscatter(am_root || 1 != k ? sb[k] : NULL, n, MPI_INT, rb[k], n, MPI_INT, t->root, t->comm,
                     &req[k]);
    }
    for (int k = 2; k >= 0; k--) {
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        check_mine(t, rb[k], 1, 13 + k, "iscatter");
    }

    /* persistent, each started three times with new values */
    MPI_Request preq;
    Gather_init(sb[0], n, MPI_INT, rb[0], n, MPI_INT, t->root, t->comm, MPI_INFO_NULL, &preq);
    for (int round = 0; round < 3; round++) {
        fill_block(sb[0], t->me, n, 1, 20 + round);
        MPI_Start(&preq);
        MPI_Wait(&preq, MPI_STATUS_IGNORE);
        if (am_root) check_all(t, rb[0], 1, 20 + round, "gather_init");
    }
    MPI_Request_free(&preq);
    Scatter_init(sb[1], n, MPI_INT, rb[1], n, MPI_INT, t->root, t->comm, MPI_INFO_NULL, &preq);
    for (int round = 0; round < 3; round++) {
        if (am_root) fill_all(t, sb[1], 1, 23 + round);
        MPI_Start(&preq);
        MPI_Wait(&preq, MPI_STATUS_IGNORE);
        check_mine(t, rb[1], 1, 23 + round, "scatter_init");
    }
    MPI_Request_free(&preq);
    for (int k = 0; k < 3; k++) {
        free(sb[k]);
        free(rb[k]);
    }
}

static void run(MPI_Comm comm, int n, MPI_Datatype every_other)
{
    run_t t = { comm, 0, 0, n, 0, every_other };
    MPI_Comm_size(comm, &t.P);
    MPI_Comm_rank(comm, &t.me);
    /* P blocks; the buffers hold them twice over for the strided types */
    size_t len = (size_t)t.P * (size_t)(n > 0 ? n : 1);
    int *s = malloc(2 * len * sizeof(int)), *r = malloc(2 * len * sizeof(int));
    int *s0 = malloc(2 * len * sizeof(int));
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
        gather(&t, len, s, r, s0);
        scatter(&t, len, s, r, s0);
        requests(&t, len);
    }
    free(s);
    free(r);
    free(s0);
}

int main(int argc, char **argv) { return mt_block_main(&argc, &argv, "mpi_gather", run); }
