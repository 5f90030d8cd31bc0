/*
 * mpi_nonblocking.c - nonblocking and persistent collectives, checked
 * element by element against references computed from the known inputs.
 *
 *   mpi_nonblocking [multiple] [mixed|overlap|persistent|order|channels|wrap|threads|async] ...
 *
 *   mixed       every nonblocking collective (allreduce, bcast, reduce,
 *               allgather, reduce_scatter_block, reduce_scatter, barrier)
 *               outstanding at once on two communicators (the world and a
 *               reversed one), with blocking collectives between the posts,
 *               completed by Waitall / Wait in reverse / Waitany / Waitsome /
 *               Test / Testall in turn; int sum, in place, MPI_DOUBLE_INT
 *               maxloc, a vector type, a non-commutative user op; counts
 *               0, 1, below P, not divisible by P, 64 Ki ints; every root
 *   overlap     rank 0 posts an Ibcast and enters a blocking allreduce
 *               before it waits; the others wait first (no deadlock: the
 *               blocking call's waits advance the outstanding request)
 *   persistent  every *_init collective, started 12 times with new inputs,
 *               by MPI_Start and MPI_Startall, freed while inactive
 *   order       persistent requests started in a different order on
 *               each rank (MPI-4 matches them at init)
 *   channels    more persistent requests than the segment has channels,
 *               freed in rank-dependent orders and made again (run with
 *               coll_braid_shm_persistent=3)
 *   wrap        a persistent allreduce started after 70,000 other
 *               collectives on its communicator
 *   multiple    (no test) MPI_Init_thread with MPI_THREAD_MULTIPLE, for
 *               the tests that follow it
 *   threads     MPI_THREAD_MULTIPLE: 4 threads, each on its own
 *               communicator, post and complete nonblocking collectives;
 *               then 4 threads start and complete persistent requests of
 *               one communicator at once
 *   async       rank 0 makes no MPI call between its posts and its waits
 *               until the others' requests are complete (test_async)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test_common.h"
#include "mpi_persistent.h"
#include "mpi_affine.h"

static int wrank, wsize;

/* input of rank r, element i, call k */
static int val(int r, size_t i, int k) { return (int)((i * 7 + (size_t)r * 13 + (size_t)k * 5) % 101); }

/* a commutative user op for the vector type with holes (predefined ops
 * take predefined types only): int sum over the first int of each element */
static MPI_Op vsum_op;
static void vsum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) b[2 * i] += a[2 * i];
}

/* ------------------------------------------------------------------ */
/* completion in six ways                                              */
/* ------------------------------------------------------------------ */

static const char *complete_name[] = { "Waitall", "Wait-reverse", "Waitany", "Waitsome", "Test",
                                       "Testall" };

/* persistent: the requests stay allocated (inactive) */
static void complete_all(int how, int n, MPI_Request *req, int persistent)
{
    int left = n, idx, outc, flag, *ids = malloc((size_t)n * sizeof(int));
    switch (how % 6) {
    case 0:
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        break;
    case 1:
        for (int i = n - 1; i >= 0; i--) MPI_Wait(&req[i], MPI_STATUS_IGNORE);
        break;
    case 2:
        while (left > 0) {
            MPI_Waitany(n, req, &idx, MPI_STATUS_IGNORE);
            if (MPI_UNDEFINED == idx) break;
            left--;
        }
        break;
    case 3:
        while (left > 0) {
            MPI_Waitsome(n, req, &outc, ids, MPI_STATUSES_IGNORE);
            if (MPI_UNDEFINED == outc) break;
            left -= outc;
        }
        break;
    case 4:
        for (int i = 0; i < n; i++) {
            do MPI_Test(&req[(i * 5 + 3) % n], &flag, MPI_STATUS_IGNORE);
            while (!flag);
        }
        break;
    default:
        do MPI_Testall(n, req, &flag, MPI_STATUSES_IGNORE);
        while (!flag);
        break;
    }
    for (int i = 0; i < n; i++)
        mt_check(persistent ? MPI_REQUEST_NULL != req[i] : MPI_REQUEST_NULL == req[i],
                 "%s: request %d %s", complete_name[how % 6], i,
                 persistent ? "nulled (persistent)" : "left");
    free(ids);
}

/* ------------------------------------------------------------------ */
/* one round of every nonblocking collective on comm                   */
/* ------------------------------------------------------------------ */

typedef struct {
    int *ar_in, *ar_out, *ip, *bc, *ag_in, *ag_out, *rsb_in, *rsb_out, *rs_in, *rs_out, *rcounts;
    double *rd_in, *rd_out;
    struct { double v; int i; } *ml_in, *ml_out;
    int *vec_in, *vec_out;   /* every other int: a vector type with holes */
    affine_t *af_in, *af_out;
} bufs_t;

static void *xmalloc(size_t n) { void *p = malloc(n ? n : 1); if (!p) abort(); return p; }

static void round_nonblocking(MPI_Comm comm, size_t n, int k, int how)
{
    int P, me;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    int root = (k + (int)n) % P, total = 0;
    bufs_t b;
    b.ar_in = xmalloc(n * sizeof(int));
    b.ar_out = xmalloc(n * sizeof(int));
    b.ip = xmalloc(n * sizeof(int));
    b.bc = xmalloc(n * sizeof(int));
    b.ag_in = xmalloc(n * sizeof(int));
    b.ag_out = xmalloc(n * (size_t)P * sizeof(int));
    b.rsb_in = xmalloc(n * (size_t)P * sizeof(int));
    b.rsb_out = xmalloc(n * sizeof(int));
    b.rcounts = xmalloc((size_t)P * sizeof(int));
    for (int r = 0; r < P; r++) total += b.rcounts[r] = (int)((n + (size_t)r) % ((size_t)P + 2));
    b.rs_in = xmalloc((size_t)total * sizeof(int));
    b.rs_out = xmalloc((size_t)b.rcounts[me] * sizeof(int));
    b.rd_in = xmalloc(n * sizeof(double));
    b.rd_out = xmalloc(n * sizeof(double));
    b.ml_in = xmalloc(n * sizeof(*b.ml_in));
    b.ml_out = xmalloc(n * sizeof(*b.ml_out));
    b.vec_in = xmalloc(2 * n * sizeof(int));
    b.vec_out = xmalloc(2 * n * sizeof(int));
    b.af_in = xmalloc(n * sizeof(affine_t));
    b.af_out = xmalloc(n * sizeof(affine_t));
    for (size_t i = 0; i < n; i++) {
        b.ar_in[i] = val(me, i, k);
        b.ip[i] = val(me, i, k + 1);
        b.bc[i] = me == root ? val(root, i, k + 2) : -1;
        b.ag_in[i] = val(me, i, k + 3);
        b.rd_in[i] = val(me, i, k + 4);
        b.ml_in[i].v = (double)val(me, i, k + 5);
        b.ml_in[i].i = me;
        b.vec_in[2 * i] = val(me, i, k + 6);
        b.vec_in[2 * i + 1] = -7;
        b.vec_out[2 * i] = -1;
        b.vec_out[2 * i + 1] = -9;   /* a hole: must stay */
        b.af_in[i] = affine_of(me, i, k);
    }
    for (size_t i = 0; i < n * (size_t)P; i++) b.rsb_in[i] = val(me, i, k + 7);
    for (int i = 0; i < total; i++) b.rs_in[i] = val(me, (size_t)i, k + 8);
    MPI_Datatype vec;
    MPI_Type_vector(1, 1, 2, MPI_INT, &vec);
    MPI_Datatype vec2;
    MPI_Type_create_resized(vec, 0, 2 * sizeof(int), &vec2);
    MPI_Type_commit(&vec2);

    MPI_Request req[11];
    int c = (int)n, blocking_in = me + k, blocking_out = -1;
    MPI_Iallreduce(b.ar_in, b.ar_out, c, MPI_INT, MPI_SUM, comm, &req[0]);
    MPI_Ibcast(b.bc, c, MPI_INT, root, comm, &req[1]);
    MPI_Ireduce(b.rd_in, b.rd_out, c, MPI_DOUBLE, MPI_MAX, root, comm, &req[2]);
    /* a blocking collective between the posts */
    MPI_Allreduce(&blocking_in, &blocking_out, 1, MPI_INT, MPI_SUM, comm);
    MPI_Iallgather(b.ag_in, c, MPI_INT, b.ag_out, c, MPI_INT, comm, &req[3]);
    MPI_Ireduce_scatter_block(b.rsb_in, b.rsb_out, c, MPI_INT, MPI_SUM, comm, &req[4]);
    MPI_Ireduce_scatter(b.rs_in, b.rs_out, b.rcounts, MPI_INT, MPI_SUM, comm, &req[5]);
    MPI_Ibarrier(comm, &req[6]);
    MPI_Iallreduce(MPI_IN_PLACE, b.ip, c, MPI_INT, MPI_SUM, comm, &req[7]);
    MPI_Iallreduce(b.ml_in, b.ml_out, c, MPI_DOUBLE_INT, MPI_MAXLOC, comm, &req[8]);
    MPI_Iallreduce(b.vec_in, b.vec_out, c, vec2, vsum_op, comm, &req[9]);
    MPI_Iallreduce(b.af_in, b.af_out, c, affine_type, affine_op, comm, &req[10]);
    complete_all(how, 11, req, 0);

    int want_blocking = 0;
    for (int r = 0; r < P; r++) want_blocking += r + k;
    mt_check(blocking_out == want_blocking, "blocking allreduce between posts: %d, want %d",
             blocking_out, want_blocking);
    long bad[11] = { 0 };
    for (size_t i = 0; i < n; i++) {
        int s = 0, si = 0, sv = 0, sa = 0;
        double mx = -1;
        int mxi = -1;
        for (int r = 0; r < P; r++) {
            s += val(r, i, k);
            si += val(r, i, k + 1);
            sv += val(r, i, k + 6);
            double v = (double)val(r, i, k + 4);
            if (v > mx) mx = v;
            double mv = (double)val(r, i, k + 5);
            if (mxi < 0 || mv > (double)val(mxi, i, k + 5)) mxi = r;
        }
        (void)sa;
        if (b.ar_out[i] != s) bad[0]++;
        if (b.bc[i] != val(root, i, k + 2)) bad[1]++;
        if (me == root && b.rd_out[i] != mx) bad[2]++;
        if (b.ip[i] != si) bad[7]++;
        if (b.ml_out[i].v != (double)val(mxi, i, k + 5) || b.ml_out[i].i != mxi) bad[8]++;
        if (b.vec_out[2 * i] != sv || b.vec_out[2 * i + 1] != -9) bad[9]++;
        affine_t want = affine_ref(P, i, k);
        if (b.af_out[i].a != want.a || b.af_out[i].b != want.b) bad[10]++;
    }
    for (int r = 0; r < P; r++)
        for (size_t i = 0; i < n; i++)
            if (b.ag_out[(size_t)r * n + i] != val(r, i, k + 3)) bad[3]++;
    for (size_t i = 0; i < n; i++) {
        int s = 0;
        for (int r = 0; r < P; r++) s += val(r, (size_t)me * n + i, k + 7);
        if (b.rsb_out[i] != s) bad[4]++;
    }
    int off = 0;
    for (int r = 0; r < me; r++) off += b.rcounts[r];
    for (int i = 0; i < b.rcounts[me]; i++) {
        int s = 0;
        for (int r = 0; r < P; r++) s += val(r, (size_t)(off + i), k + 8);
        if (b.rs_out[i] != s) bad[5]++;
    }
    static const char *names[] = { "iallreduce", "ibcast", "ireduce", "iallgather",
                                   "ireduce_scatter_block", "ireduce_scatter", "ibarrier",
                                   "iallreduce in place", "iallreduce double_int maxloc",
                                   "iallreduce vector type", "iallreduce non-commutative" };
    for (int j = 0; j < 11; j++)
        mt_check(0 == bad[j], "%s: %ld wrong of %zu (np=%d, k=%d, root=%d, %s)", names[j],
                 bad[j], n, P, k, root, complete_name[how % 6]);
    MPI_Type_free(&vec2);
    MPI_Type_free(&vec);
    free(b.ar_in); free(b.ar_out); free(b.ip); free(b.bc); free(b.ag_in); free(b.ag_out);
    free(b.rsb_in); free(b.rsb_out); free(b.rcounts); free(b.rs_in); free(b.rs_out);
    free(b.rd_in); free(b.rd_out); free(b.ml_in); free(b.ml_out); free(b.vec_in);
    free(b.vec_out); free(b.af_in); free(b.af_out);
}

static void test_mixed(void)
{
    MPI_Comm rev = mt_reversed_comm(MPI_COMM_WORLD);
    size_t counts[] = { 0, 1, (size_t)wsize - 1 > 0 ? (size_t)wsize - 1 : 2, 1000, 1003, 65536 };
    int k = 0;
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
        for (int rep = 0; rep < 2; rep++, k++) {
            round_nonblocking(MPI_COMM_WORLD, counts[ci], k, k);
            round_nonblocking(rev, counts[ci], k + 1, k + 3);
        }
    /* both communicators outstanding at once */
    int a = wrank, b = 2 * wrank, ra = -1, rb = -1, want = 0;
    MPI_Request req[2];
    MPI_Iallreduce(&a, &ra, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[0]);
    MPI_Iallreduce(&b, &rb, 1, MPI_INT, MPI_SUM, rev, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    for (int r = 0; r < wsize; r++) want += r;
    mt_check(ra == want && rb == 2 * want, "two communicators: %d %d, want %d %d", ra, rb, want,
             2 * want);
    MPI_Comm_free(&rev);
}

/* ------------------------------------------------------------------ */
/* a blocking collective while an Ibcast is outstanding                */
/* ------------------------------------------------------------------ */

static void test_overlap(void)
{
    size_t n = 1 << 18;   /* 1 MiB of ints: more than one message round */
    int *buf = xmalloc(n * sizeof(int));
    for (int rep = 0; rep < 4; rep++) {
        int root = rep % wsize, x = wrank + rep, sum = -1, want = 0;
        for (size_t i = 0; i < n; i++) buf[i] = wrank == root ? val(root, i, rep) : -1;
        MPI_Request req;
        MPI_Ibcast(buf, (int)n, MPI_INT, root, MPI_COMM_WORLD, &req);
        if (wrank == root) {
            MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        }
        for (int r = 0; r < wsize; r++) want += r + rep;
        long bad = 0;
        for (size_t i = 0; i < n; i++) bad += buf[i] != val(root, i, rep);
        mt_check(0 == bad && sum == want, "ibcast + blocking allreduce: %ld wrong, sum %d want %d",
                 bad, sum, want);
    }
    free(buf);
}

/* ------------------------------------------------------------------ */
/* asynchronous progress: the others finish while rank 0 makes no call */
/* ------------------------------------------------------------------ */

/* Rank 0 posts an Iallreduce, an Ibcast (its root) and an Ialltoall of
 * 1 MiB each, which need its part in more than one step, and then makes
 * no MPI call until the others have completed theirs: they say so by
 * appending a byte each to a file rank 0 named, which it watches (the
 * ranks share a node). Only a progress thread can advance rank 0's
 * request meanwhile (run with coll_braid_progress_thread=1 under
 * "multiple"); without one, rank 0 gives up after ASYNC_LIMIT_S seconds
 * and the case fails. Every value is checked. */
#define ASYNC_LIMIT_S 20

static long file_size(const char *path)
{
    struct stat st;
    return 0 == stat(path, &st) ? (long)st.st_size : -1;
}

static void test_async(void)
{
    const char *names[] = { "iallreduce", "ibcast", "ialltoall" };
    size_t n = 1 << 18;   /* 1 MiB of ints */
    char path[64] = "/tmp/braid-async-XXXXXX";
    if (0 == wrank) {
        int fd = mkstemp(path);
        if (fd >= 0) close(fd);
    }
    MPI_Bcast(path, (int)sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);
    int *in = xmalloc(n * sizeof(int)), *out = xmalloc(n * sizeof(int));
    for (int k = 0; k < 3; k++) {
        size_t block = n / (size_t)wsize;
        for (size_t i = 0; i < n; i++) {
            in[i] = 1 == k && 0 != wrank ? -1 : val(wrank, i, k);
            out[i] = -1;
        }
        MPI_Request req;
        if (0 == k) MPI_Iallreduce(in, out, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
        else if (1 == k) MPI_Ibcast(in, (int)n, MPI_INT, 0, MPI_COMM_WORLD, &req);
        else MPI_Ialltoall(in, (int)block, MPI_INT, out, (int)block, MPI_INT, MPI_COMM_WORLD, &req);
        int ended = 1;
        if (0 == wrank) {
            /* no MPI call until the others' requests are complete */
            double t0 = MPI_Wtime();
            while (file_size(path) < (long)(k + 1) * (wsize - 1) &&
                   (ended = MPI_Wtime() - t0 < ASYNC_LIMIT_S))
                nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            int fd = open(path, O_WRONLY | O_APPEND);
            ended = fd >= 0 && 1 == write(fd, "x", 1);
            if (fd >= 0) close(fd);
        }
        long bad = 0;
        for (size_t i = 0; i < n; i++) {
            long want;
            if (0 == k) {
                want = 0;
                for (int r = 0; r < wsize; r++) want += val(r, i, k);
                bad += out[i] != want;
            } else if (1 == k) {
                bad += in[i] != val(0, i, k);
            } else if (i < block * (size_t)wsize) {
                /* block r of the result is rank r's block wrank */
                size_t r = i / block;
                bad += out[i] != val((int)r, (size_t)wrank * block + i % block, k);
            }
        }
        mt_check(ended, "async %s: the others' requests not complete after %d s while rank 0 "
                 "made no MPI call", names[k], ASYNC_LIMIT_S);
        mt_check(0 == bad, "async %s: %ld wrong values", names[k], bad);
        if (0 == wrank && ended)
            printf("async %s: the others completed while rank 0 made no MPI call\n", names[k]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == wrank) unlink(path);
    free(in);
    free(out);
}

/* ------------------------------------------------------------------ */
/* persistent                                                          */
/* ------------------------------------------------------------------ */

typedef struct {
    MPI_Request req[7];
    int n, P, me, root, total;
    int *ar_in, *ar_out, *bc, *rd_in, *rd_out, *ag_in, *ag_out, *rsb_in, *rsb_out, *rs_in,
        *rs_out, *rcounts;
} pers_t;

static void pers_init(pers_t *p, MPI_Comm comm, int n, int root)
{
    MPI_Comm_size(comm, &p->P);
    MPI_Comm_rank(comm, &p->me);
    p->n = n;
    p->root = root;
    p->ar_in = xmalloc((size_t)n * sizeof(int));
    p->ar_out = xmalloc((size_t)n * sizeof(int));
    p->bc = xmalloc((size_t)n * sizeof(int));
    p->rd_in = xmalloc((size_t)n * sizeof(int));
    p->rd_out = xmalloc((size_t)n * sizeof(int));
    p->ag_in = xmalloc((size_t)n * sizeof(int));
    p->ag_out = xmalloc((size_t)n * (size_t)p->P * sizeof(int));
    p->rsb_in = xmalloc((size_t)n * (size_t)p->P * sizeof(int));
    p->rsb_out = xmalloc((size_t)n * sizeof(int));
    p->rcounts = xmalloc((size_t)p->P * sizeof(int));
    p->total = 0;
    for (int r = 0; r < p->P; r++) p->total += p->rcounts[r] = (n + r) % (p->P + 1);
    p->rs_in = xmalloc((size_t)p->total * sizeof(int));
    p->rs_out = xmalloc((size_t)p->rcounts[p->me] * sizeof(int) + 1);
    MPI_Info info = MPI_INFO_NULL;
    Allreduce_init(p->ar_in, p->ar_out, n, MPI_INT, MPI_SUM, comm, info, &p->req[0]);
    Bcast_init(p->bc, n, MPI_INT, root, comm, info, &p->req[1]);
    Reduce_init(p->rd_in, p->rd_out, n, MPI_INT, MPI_MIN, root, comm, info, &p->req[2]);
    Allgather_init(p->ag_in, n, MPI_INT, p->ag_out, n, MPI_INT, comm, info, &p->req[3]);
    Reduce_scatter_block_init(p->rsb_in, p->rsb_out, n, MPI_INT, MPI_SUM, comm, info, &p->req[4]);
    Reduce_scatter_init(p->rs_in, p->rs_out, p->rcounts, MPI_INT, MPI_SUM, comm, info, &p->req[5]);
    Barrier_init(comm, info, &p->req[6]);
}

static void pers_fill(pers_t *p, int k)
{
    int n = p->n, P = p->P, me = p->me;
    for (int i = 0; i < n; i++) {
        p->ar_in[i] = val(me, (size_t)i, k);
        p->bc[i] = me == p->root ? val(p->root, (size_t)i, k + 1) : -1;
        p->rd_in[i] = val(me, (size_t)i, k + 2);
        p->ag_in[i] = val(me, (size_t)i, k + 3);
        p->ar_out[i] = p->rd_out[i] = p->rsb_out[i] = -1;
    }
    for (int i = 0; i < n * P; i++) p->rsb_in[i] = val(me, (size_t)i, k + 4);
    for (int i = 0; i < p->total; i++) p->rs_in[i] = val(me, (size_t)i, k + 5);
}

static void pers_check(pers_t *p, int k, const char *how)
{
    int n = p->n, P = p->P, me = p->me;
    long bad[6] = { 0 };
    for (int i = 0; i < n; i++) {
        int s = 0, mn = 1 << 30, s4 = 0;
        for (int r = 0; r < P; r++) {
            s += val(r, (size_t)i, k);
            int v = val(r, (size_t)i, k + 2);
            if (v < mn) mn = v;
            s4 += val(r, (size_t)(me * n + i), k + 4);
        }
        bad[0] += p->ar_out[i] != s;
        bad[1] += p->bc[i] != val(p->root, (size_t)i, k + 1);
        bad[2] += me == p->root && p->rd_out[i] != mn;
        bad[4] += p->rsb_out[i] != s4;
        for (int r = 0; r < P; r++) bad[3] += p->ag_out[r * n + i] != val(r, (size_t)i, k + 3);
    }
    int off = 0;
    for (int r = 0; r < me; r++) off += p->rcounts[r];
    for (int i = 0; i < p->rcounts[me]; i++) {
        int s = 0;
        for (int r = 0; r < P; r++) s += val(r, (size_t)(off + i), k + 5);
        bad[5] += p->rs_out[i] != s;
    }
    static const char *names[] = { "allreduce_init", "bcast_init", "reduce_init",
                                   "allgather_init", "reduce_scatter_block_init",
                                   "reduce_scatter_init" };
    for (int j = 0; j < 6; j++)
        mt_check(0 == bad[j], "%s start %d (%s, n=%d, np=%d): %ld wrong", names[j], k, how, n, P,
                 bad[j]);
}

static void pers_free(pers_t *p)
{
    for (int j = 0; j < 7; j++) {
        MPI_Request_free(&p->req[j]);
        mt_check(MPI_REQUEST_NULL == p->req[j], "request %d not freed", j);
    }
    free(p->ar_in); free(p->ar_out); free(p->bc); free(p->rd_in); free(p->rd_out);
    free(p->ag_in); free(p->ag_out); free(p->rsb_in); free(p->rsb_out); free(p->rcounts);
    free(p->rs_in); free(p->rs_out);
}

static void test_persistent(void)
{
    int sizes[] = { 1, 5, 1000, 40000 };
    for (int si = 0; si < 4; si++) {
        pers_t p;
        pers_init(&p, MPI_COMM_WORLD, sizes[si], si % wsize);
        for (int k = 0; k < 12; k++) {
            pers_fill(&p, k);
            if (k % 2) {
                MPI_Startall(7, p.req);
            } else {
                for (int j = 0; j < 7; j++) MPI_Start(&p.req[j]);
            }
            /* a blocking collective while they run */
            int x = 1, y = 0;
            MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            mt_check(y == wsize, "blocking allreduce among persistent starts: %d", y);
            complete_all(k, 7, p.req, 1);
            pers_check(&p, k, k % 2 ? "Startall" : "Start");
        }
        pers_free(&p);
    }
}

/* persistent requests started in a rank-dependent order */
static void test_order(void)
{
    enum { NREQ = 5, N = 777 };
    MPI_Request req[NREQ];
    int *in[NREQ], *out[NREQ];
    for (int j = 0; j < NREQ; j++) {
        in[j] = xmalloc(N * sizeof(int));
        out[j] = xmalloc(N * sizeof(int));
        Allreduce_init(in[j], out[j], N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[j]);
    }
    for (int k = 0; k < 8; k++) {
        for (int j = 0; j < NREQ; j++)
            for (int i = 0; i < N; i++) in[j][i] = val(wrank, (size_t)i, k * NREQ + j);
        for (int t = 0; t < NREQ; t++) {
            int j = (t * (wrank % 2 ? NREQ - 1 : 1) + wrank + k) % NREQ;  /* differs per rank */
            MPI_Start(&req[j]);
        }
        MPI_Waitall(NREQ, req, MPI_STATUSES_IGNORE);
        for (int j = 0; j < NREQ; j++) {
            long bad = 0;
            for (int i = 0; i < N; i++) {
                int s = 0;
                for (int r = 0; r < wsize; r++) s += val(r, (size_t)i, k * NREQ + j);
                bad += out[j][i] != s;
            }
            mt_check(0 == bad, "start order: request %d round %d: %ld wrong", j, k, bad);
        }
    }
    for (int j = 0; j < NREQ; j++) {
        MPI_Request_free(&req[j]);
        free(in[j]);
        free(out[j]);
    }
}

/* More persistent requests than the segment has channels (run with
 * coll_braid_shm_persistent=3): the first three take channels, the others
 * run on braid's UCX algorithms. Each round the ranks start them in a
 * rank-dependent order, then free three of them - odd ranks before a
 * barrier, even ranks after it, in a rank-dependent order - and make them
 * again in another order: a new request takes a channel every rank has
 * freed, and goes on with its call numbers. Sizes from 1 int to above a
 * slot (single copy on the channel). */
static void test_channels(void)
{
    enum { NREQ = 6, ROUNDS = 4, STARTS = 3 };
    static const int len[NREQ] = { 33, 777, 5000, 1, 33, 40000 };
    static const int freed[3] = { 0, 2, 4 }, remade[3] = { 4, 0, 2 };
    MPI_Request req[NREQ];
    int *in[NREQ], *out[NREQ];
    for (int j = 0; j < NREQ; j++) {
        in[j] = xmalloc((size_t)len[j] * sizeof(int));
        out[j] = xmalloc((size_t)len[j] * sizeof(int));
        Allreduce_init(in[j], out[j], len[j], MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                       &req[j]);
    }
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < STARTS; k++) {
            int tag = (round * STARTS + k) * NREQ;
            for (int j = 0; j < NREQ; j++)
                for (int i = 0; i < len[j]; i++) in[j][i] = val(wrank, (size_t)i, tag + j);
            for (int t = 0; t < NREQ; t++)
                MPI_Start(&req[(t * (wrank % 2 ? NREQ - 1 : 1) + wrank + k) % NREQ]);
            MPI_Waitall(NREQ, req, MPI_STATUSES_IGNORE);
            for (int j = 0; j < NREQ; j++) {
                long bad = 0;
                for (int i = 0; i < len[j]; i++) {
                    int s = 0;
                    for (int r = 0; r < wsize; r++) s += val(r, (size_t)i, tag + j);
                    bad += out[j][i] != s;
                }
                mt_check(0 == bad, "channels: request %d (%d ints) round %d start %d: %ld wrong",
                         j, len[j], round, k, bad);
            }
        }
        for (int t = 0; t < 3; t++) {
            if (0 == t && 0 == wrank % 2) MPI_Barrier(MPI_COMM_WORLD);
            MPI_Request_free(&req[freed[(t + wrank) % 3]]);
        }
        if (1 == wrank % 2) MPI_Barrier(MPI_COMM_WORLD);
        for (int t = 0; t < 3; t++) {
            int j = remade[t];
            Allreduce_init(in[j], out[j], len[j], MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                           &req[j]);
        }
    }
    for (int j = 0; j < NREQ; j++) {
        MPI_Request_free(&req[j]);
        free(in[j]);
        free(out[j]);
    }
}

/* a persistent allreduce after more collectives than the seq field holds */
static void test_wrap(void)
{
    int in = wrank + 1, out = 0, want = 0;
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Request req;
    Allreduce_init(&in, &out, 1, MPI_INT, MPI_SUM, dup, MPI_INFO_NULL, &req);
    for (int r = 0; r < wsize; r++) want += r + 1;
    for (int i = 0; i < 70000; i++) {
        if (0 == i % 10000) {
            MPI_Start(&req);
            MPI_Barrier(dup);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            mt_check(out == want, "persistent start after %d barriers: %d want %d", i, out, want);
            out = 0;
        }
        MPI_Barrier(dup);
    }
    MPI_Start(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    mt_check(out == want, "persistent start after 70000 barriers: %d want %d", out, want);
    MPI_Request_free(&req);
    MPI_Comm_free(&dup);
}

/* ------------------------------------------------------------------ */
/* threads                                                             */
/* ------------------------------------------------------------------ */

enum { NTHREADS = 4 };
static MPI_Comm thread_comm[NTHREADS];
static long thread_bad[NTHREADS];

static void *thread_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    MPI_Comm comm = thread_comm[t];
    int n = 500 + 100 * t;
    int *a = xmalloc((size_t)n * sizeof(int)), *b = xmalloc((size_t)n * sizeof(int));
    int *c = xmalloc((size_t)n * sizeof(int));
    for (int k = 0; k < 30; k++) {
        int root = (k + t) % wsize;
        for (int i = 0; i < n; i++) {
            a[i] = val(wrank, (size_t)i, k + t);
            c[i] = wrank == root ? val(root, (size_t)i, k) : -1;
        }
        MPI_Request req[3];
        MPI_Iallreduce(a, b, n, MPI_INT, MPI_SUM, comm, &req[0]);
        MPI_Ibcast(c, n, MPI_INT, root, comm, &req[1]);
        MPI_Ibarrier(comm, &req[2]);
        if (k % 2) MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
        else {
            int flag = 0;
            while (!flag) MPI_Testall(3, req, &flag, MPI_STATUSES_IGNORE);
        }
        for (int i = 0; i < n; i++) {
            int s = 0;
            for (int r = 0; r < wsize; r++) s += val(r, (size_t)i, k + t);
            thread_bad[t] += b[i] != s || c[i] != val(root, (size_t)i, k);
        }
    }
    free(a);
    free(b);
    free(c);
    return NULL;
}

/* Persistent requests of one communicator, each started and completed by
 * its own thread: MPI-4 matches them at init, so the threads' starts
 * interleave differently on every rank. Ops differ per thread (the
 * binding each request keeps), sizes from the cells to single copy. */
static MPI_Request thread_preq[NTHREADS];
static int *thread_pin[NTHREADS], *thread_pout[NTHREADS];
static const int thread_plen[NTHREADS] = { 7, 300, 2100, 9000 };

/* int sum as a user op declared non-commutative (braid's ordered path) */
static MPI_Op isum_op;
static void isum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) b[i] += a[i];
}

static int pexpect(int t, size_t i, int k)
{
    int r0 = val(0, i, k + t), acc = r0;
    for (int r = 1; r < wsize; r++) {
        int v = val(r, i, k + t);
        acc = 1 == t % 2 ? (v > acc ? v : acc) : acc + v;
    }
    return acc;
}

static void *thread_persistent(void *arg)
{
    int t = (int)(intptr_t)arg, n = thread_plen[t];
    for (int k = 0; k < 40; k++) {
        for (int i = 0; i < n; i++) thread_pin[t][i] = val(wrank, (size_t)i, k + t);
        MPI_Start(&thread_preq[t]);
        MPI_Wait(&thread_preq[t], MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) thread_bad[t] += thread_pout[t][i] != pexpect(t, (size_t)i, k);
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) MPI_Comm_dup(MPI_COMM_WORLD, &thread_comm[t]);
    for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, thread_main, (void *)(intptr_t)t);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NTHREADS; t++) {
        mt_check(0 == thread_bad[t], "thread %d: %ld wrong values", t, thread_bad[t]);
        MPI_Comm_free(&thread_comm[t]);
        thread_bad[t] = 0;
    }
    for (int t = 0; t < NTHREADS; t++) {
        thread_pin[t] = xmalloc((size_t)thread_plen[t] * sizeof(int));
        thread_pout[t] = xmalloc((size_t)thread_plen[t] * sizeof(int));
        MPI_Op op = 1 == t % 2 ? MPI_MAX : 2 == t ? isum_op : MPI_SUM;
        Allreduce_init(thread_pin[t], thread_pout[t], thread_plen[t], MPI_INT, op,
                       MPI_COMM_WORLD, MPI_INFO_NULL, &thread_preq[t]);
    }
    for (int t = 0; t < NTHREADS; t++)
        pthread_create(&th[t], NULL, thread_persistent, (void *)(intptr_t)t);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NTHREADS; t++) {
        mt_check(0 == thread_bad[t], "thread %d, persistent (%d ints): %ld wrong values", t,
                 thread_plen[t], thread_bad[t]);
        MPI_Request_free(&thread_preq[t]);
        free(thread_pin[t]);
        free(thread_pout[t]);
    }
}

int main(int argc, char **argv)
{
    int threads = 0;
    for (int i = 1; i < argc; i++)
        threads |= 0 == strcmp(argv[i], "threads") || 0 == strcmp(argv[i], "multiple");
    if (threads) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "MPI_THREAD_MULTIPLE not provided\n");
            MPI_Abort(MPI_COMM_WORLD, 77);
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    affine_setup();
    MPI_Op_create(vsum_fn, 1, &vsum_op);
    MPI_Op_create(isum_fn, 0, &isum_op);
    int all = argc < 2;
    for (int i = 1; i < argc || all; i++) {
        const char *t = all ? "all" : argv[i];
        int every = 0 == strcmp(t, "all");
        if (every || 0 == strcmp(t, "mixed")) test_mixed();
        if (every || 0 == strcmp(t, "overlap")) test_overlap();
        if (every || 0 == strcmp(t, "persistent")) test_persistent();
        if (every || 0 == strcmp(t, "order")) test_order();
        if (0 == strcmp(t, "channels")) test_channels();
        if (0 == strcmp(t, "wrap")) test_wrap();
        if (0 == strcmp(t, "threads")) test_threads();
        if (0 == strcmp(t, "async")) test_async();
        if (all) break;
    }
    MPI_Op_free(&vsum_op);
    MPI_Op_free(&isum_op);
    affine_free();
    return mt_finish("mpi_nonblocking");
}
