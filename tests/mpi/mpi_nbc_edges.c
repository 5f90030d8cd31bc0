/*
 * mpi_nbc_edges.c - legal MPI programs at the edges of the nonblocking
 * engine, each checked value by value against references computed from the
 * known inputs (every case runs under the runner's timeout: a hang fails).
 *
 *   mpi_nbc_edges fallback [threads]
 *       a non-commutative MPI_Iallreduce (which the forced hierarchical
 *       allreduce refuses, so braid hands it on) posted behind an earlier
 *       commutative one that is still pending on every rank but the last,
 *       which waits for it before it posts the second; "threads": under
 *       MPI_THREAD_MULTIPLE, and every rank posts both before it waits
 *   mpi_nbc_edges pseq
 *       a persistent allreduce A, 32,767 more made and freed, a second one
 *       B: ranks start A and B in opposite orders (MPI-4 matches persistent
 *       requests at init), then the same with every number held but one
 *   mpi_nbc_edges comm_free
 *       MPI_Comm_free with a nonblocking (and a started persistent)
 *       collective pending on the communicator, then MPI_Wait: the pending
 *       operations complete normally (MPI_Comm_free)
 *   mpi_nbc_edges big_op KIB
 *       MPI_Iallreduce with a user op that puts KIB KiB of automatic
 *       arrays on its stack, as a thread's stack would hold them
 *   mpi_nbc_edges op_thread
 *       MPI_THREAD_SINGLE: every call of the user op happens on the
 *       application's thread, while it computes without MPI calls between
 *       post and wait (run with coll_braid_progress_thread=1)
 *   mpi_nbc_edges finalize
 *       MPI_Finalize with an inactive persistent collective still allocated
 *   mpi_nbc_edges done_at_post
 *       nonblocking calls that may complete inside their post (a user op
 *       on a derived type among them) handed to every completion function: MPI_Test, MPI_Request_get_status,
 *       MPI_Waitall / Testall / Waitany / Waitsome mixed with pending calls,
 *       a Fortran handle; the request is a valid one until completed, then
 *       MPI_REQUEST_NULL (MPI_Request_free of a nonblocking collective's
 *       request is erroneous)
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test_common.h"
#include "mpi_persistent.h"
#include "mpi_affine.h"

static int wrank, wsize;

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* busy for ms milliseconds without any MPI call */
static void compute_ms(int ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

/* the affine maps' reduction over P ranks, element by element */
static void affine_check(const affine_t *got, int n, int P, const char *what)
{
    long bad = 0;
    for (int i = 0; i < n; i++) {
        affine_t want = affine_ref(P, (size_t)i, 0);
        bad += got[i].a != want.a || got[i].b != want.b;
    }
    mt_check(0 == bad, "%s: %ld of %d wrong", what, bad, n);
}

static void isum_check(const int *got, int n, int P, int k, const char *what)
{
    long bad = 0;
    for (int i = 0; i < n; i++) {
        long want = 0;
        for (int r = 0; r < P; r++) want += (long)i * 3 + r * 7 + k;
        bad += got[i] != (int)want;
    }
    mt_check(0 == bad, "%s: %ld of %d wrong", what, bad, n);
}

static void isum_fill(int *v, int n, int r, int k)
{
    for (int i = 0; i < n; i++) v[i] = i * 3 + r * 7 + k;
}

/* ------------------------------------------------------------------ */
/* fallback                                                            */
/* ------------------------------------------------------------------ */

static void fallback(bool all_queued)
{
    enum { NA = 3000, NB = 1001 };
    static int a_in[NA], a_out[NA];
    static affine_t b_in[NB], b_out[NB];
    /* blocking calls first: the communicator's segments are set up at its
     * first few (coll_braid_shm_after) */
    for (int i = 0; i < 4; i++) MPI_Allreduce(MPI_IN_PLACE, a_in, NA, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int round = 0; round < 4; round++) {
        isum_fill(a_in, NA, wrank, round);
        for (int i = 0; i < NB; i++) b_in[i] = affine_of(wrank, (size_t)i, 0);
        MPI_Request q[2];
        bool last = wrank == wsize - 1;
        /* the last rank comes late: every other rank's first call stays
         * pending, so its second queues behind it */
        if (last) sleep_ms(50);
        MPI_Iallreduce(a_in, a_out, NA, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]);
        if (last && !all_queued) MPI_Wait(&q[0], MPI_STATUS_IGNORE);
        MPI_Iallreduce(b_in, b_out, NB, affine_type, affine_op, MPI_COMM_WORLD, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        isum_check(a_out, NA, wsize, round, "fallback: commutative Iallreduce");
        affine_check(b_out, NB, wsize, "fallback: non-commutative Iallreduce fell back");
    }
}

/* ------------------------------------------------------------------ */
/* pseq                                                                */
/* ------------------------------------------------------------------ */

#define PSEQ_SPACE 32768

/* new inputs, then A and B started in one order on even ranks, the other
 * on odd ones */
static void start_pair(MPI_Request *a, MPI_Request *b, int *ain, int *bin, int n, int k)
{
    isum_fill(ain, n, wrank, k);
    isum_fill(bin, n, wrank, k + 1000);
    MPI_Request first = 0 == wrank % 2 ? *a : *b, second = 0 == wrank % 2 ? *b : *a;
    MPI_Start(&first);
    MPI_Start(&second);
    MPI_Wait(&first, MPI_STATUS_IGNORE);
    MPI_Wait(&second, MPI_STATUS_IGNORE);
}

static void pseq(void)
{
    enum { N = 37 };
    int ain[N], aout[N], bin[N], bout[N], tin = 0, tout = 0;
    MPI_Request a, b, t;
    Allreduce_init(ain, aout, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &a);
    for (int i = 1; i < PSEQ_SPACE; i++) {
        Allreduce_init(&tin, &tout, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &t);
        MPI_Request_free(&t);
    }
    Allreduce_init(bin, bout, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &b);
    for (int k = 0; k < 3; k++) {
        start_pair(&a, &b, ain, bin, N, k);
        isum_check(aout, N, wsize, k, "pseq: A after 32,767 made and freed");
        isum_check(bout, N, wsize, k + 1000, "pseq: B after 32,767 made and freed");
    }
    MPI_Request_free(&b);
    /* hold every number but the one B had (and A's) */
    enum { HOLD = PSEQ_SPACE - 2 };
    MPI_Request *held = malloc(HOLD * sizeof(*held));
    int *hin = calloc(HOLD, sizeof(int)), *hout = calloc(HOLD, sizeof(int));
    mt_check(NULL != held && NULL != hin && NULL != hout, "pseq: memory");
    if (NULL == held || NULL == hin || NULL == hout) return;
    int made = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (; made < HOLD; made++) {
        if (MPI_SUCCESS != Allreduce_init(&hin[made], &hout[made], 1, MPI_INT, MPI_SUM,
                                          MPI_COMM_WORLD, MPI_INFO_NULL, &held[made]))
            break;
    }
    mt_check(HOLD == made, "pseq: %d of %d held persistent requests made", made, HOLD);
    Allreduce_init(bin, bout, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &b);
    start_pair(&a, &b, ain, bin, N, 7);
    isum_check(aout, N, wsize, 7, "pseq: A with every number held");
    isum_check(bout, N, wsize, 1007, "pseq: B with every number held");
    /* one more: none is free - a clear error, the same on every rank */
    MPI_Request extra = MPI_REQUEST_NULL;
    int rc = Allreduce_init(&tin, &tout, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                            &extra);
    mt_check(MPI_SUCCESS != rc, "pseq: an init with every number held must fail");
    if (MPI_SUCCESS == rc) MPI_Request_free(&extra);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    for (int i = 0; i < made; i++) MPI_Request_free(&held[i]);
    MPI_Request_free(&a);
    MPI_Request_free(&b);
    /* and the numbers are free again */
    Allreduce_init(ain, aout, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &a);
    Allreduce_init(bin, bout, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &b);
    start_pair(&a, &b, ain, bin, N, 9);
    isum_check(aout, N, wsize, 9, "pseq: A after the held ones were freed");
    isum_check(bout, N, wsize, 1009, "pseq: B after the held ones were freed");
    MPI_Request_free(&a);
    MPI_Request_free(&b);
    free(held);
    free(hin);
    free(hout);
}

/* ------------------------------------------------------------------ */
/* comm_free                                                           */
/* ------------------------------------------------------------------ */

static void comm_free(void)
{
    enum { N = 20011 };
    static int in[N], out[N];
    for (int round = 0; round < 4; round++) {
        /* rounds 0-1: nonblocking calls; 2-3: a started persistent
         * request too (which holds the communicator until it is freed) */
        bool persistent = round >= 2;
        MPI_Comm c;
        MPI_Request q[2], p = MPI_REQUEST_NULL;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        isum_fill(in, N, wrank, round);
        if (persistent) Allreduce_init(in, out, N, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &p);
        /* the last rank comes late: the others' requests are pending */
        if (wrank == wsize - 1) sleep_ms(30);
        if (persistent) {
            MPI_Start(&p);
            q[0] = p;
        } else {
            MPI_Iallreduce(in, out, N, MPI_INT, MPI_SUM, c, &q[0]);
        }
        MPI_Ibarrier(c, &q[1]);
        MPI_Comm_free(&c);
        mt_check(MPI_COMM_NULL == c, "comm_free: handle not nulled");
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        isum_check(out, N, wsize, round, persistent ? "comm_free: persistent start pending at free"
                                                    : "comm_free: Iallreduce pending at free");
        if (persistent) MPI_Request_free(&p);
    }
}

/* ------------------------------------------------------------------ */
/* done_at_post                                                        */
/* ------------------------------------------------------------------ */

static long done_at_once;   /* calls complete at MPI_Request_get_status right after their post */

static void single_calls(MPI_Comm c, int round)
{
    enum { N = 5 };
    affine_t a[N], got[N];
    int v[N], s[N], flag = 0;
    MPI_Request q = MPI_REQUEST_NULL;
    for (int i = 0; i < N; i++) {
        a[i] = affine_of(wrank, (size_t)i, round);
        v[i] = i + round;
    }
    /* a user op on a derived type: the MPI layer's retain must leave a
     * completed request alone, and a pending one keeps both */
    MPI_Iallreduce(a, got, N, affine_type, affine_op, c, &q);
    mt_check(MPI_REQUEST_NULL != q, "done_at_post: affine Iallreduce returned MPI_REQUEST_NULL");
    while (!flag) MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    mt_check(MPI_REQUEST_NULL == q, "done_at_post: MPI_Test left the request");
    long bad = 0;
    for (int i = 0; i < N; i++) {
        affine_t want = affine_ref(wsize, (size_t)i, round);
        bad += got[i].a != want.a || got[i].b != want.b;
    }
    mt_check(0 == bad, "done_at_post: affine Iallreduce: %ld of %d wrong", bad, N);

    MPI_Iallreduce(v, s, N, MPI_INT, MPI_SUM, c, &q);
    flag = 0;
    MPI_Request_get_status(q, &flag, MPI_STATUS_IGNORE);
    mt_check(MPI_REQUEST_NULL != q, "done_at_post: get_status freed the request");
    done_at_once += flag;
    MPI_Fint fq = MPI_Request_c2f(q);
    MPI_Request back = MPI_Request_f2c(fq);
    mt_check(back == q, "done_at_post: Fortran handle does not convert back");
    MPI_Status st;
    MPI_Wait(&back, &st);
    mt_check(MPI_REQUEST_NULL == back, "done_at_post: MPI_Wait left the request");
    bad = 0;
    for (int i = 0; i < N; i++) bad += s[i] != wsize * v[i];
    mt_check(0 == bad, "done_at_post: Iallreduce: %ld of %d wrong", bad, N);
}

/* 8 calls on c, some done at their post, some pending (the last rank
 * comes late), completed by one of the multiple-completion functions */
static void mixed_calls(MPI_Comm c, int round)
{
    enum { N = 4, BIG = 20011, Q = 8 };
    static int big_in[BIG], big_out[BIG];
    int in[Q][N], out[Q][N];
    MPI_Request q[Q];
    isum_fill(big_in, BIG, wrank, round);
    if (wrank == wsize - 1 && 0 == round % 2) sleep_ms(5);
    for (int k = 0; k < Q; k++) {
        isum_fill(in[k], N, wrank, round + k);
        if (3 == k) MPI_Iallreduce(big_in, big_out, BIG, MPI_INT, MPI_SUM, c, &q[k]);
        else if (5 == k) MPI_Ibarrier(c, &q[k]);
        else if (k % 2) MPI_Ibcast(in[k], N, MPI_INT, k % wsize, c, &q[k]);
        else MPI_Iallreduce(in[k], out[k], N, MPI_INT, MPI_SUM, c, &q[k]);
        mt_check(MPI_REQUEST_NULL != q[k], "done_at_post: call %d returned MPI_REQUEST_NULL", k);
    }
    int left = Q, flag = 0, idx, outs[Q], n;
    switch (round % 4) {
    case 0:
        MPI_Waitall(Q, q, MPI_STATUSES_IGNORE);
        break;
    case 1:
        while (!flag) MPI_Testall(Q, q, &flag, MPI_STATUSES_IGNORE);
        break;
    case 2:
        while (left > 0) {
            MPI_Waitany(Q, q, &idx, MPI_STATUS_IGNORE);
            mt_check(MPI_UNDEFINED != idx && MPI_REQUEST_NULL == q[idx], "done_at_post: Waitany");
            left--;
        }
        break;
    default:
        while (left > 0) {
            MPI_Waitsome(Q, q, &n, outs, MPI_STATUSES_IGNORE);
            mt_check(n > 0, "done_at_post: Waitsome completed %d", n);
            left -= n > 0 ? n : left;
        }
    }
    for (int k = 0; k < Q; k++) mt_check(MPI_REQUEST_NULL == q[k], "done_at_post: request %d left", k);
    for (int k = 0; k < Q; k++) {
        char what[64];
        snprintf(what, sizeof(what), "done_at_post: round %d call %d", round, k);
        if (3 == k || 5 == k) continue;
        if (k % 2) {
            int want[N];
            isum_fill(want, N, k % wsize, round + k);
            mt_check(0 == memcmp(in[k], want, sizeof(want)), "%s: Ibcast wrong", what);
        } else {
            isum_check(out[k], N, wsize, round + k, what);
        }
    }
    isum_check(big_out, BIG, wsize, round, "done_at_post: big Iallreduce");
}

static void done_at_post(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    /* blocking calls first: the shared-memory segment is set up after a
     * few (coll_braid_shm_after) */
    for (int i = 0; i < 4; i++) MPI_Barrier(c);
    for (int round = 0; round < 40; round++) {
        single_calls(c, round);
        mixed_calls(c, round);
    }
    MPI_Comm_free(&c);
    if (0 == wrank) printf("done_at_post: %ld of 40 Iallreduce calls complete right after their post\n",
                           done_at_once);
}

/* ------------------------------------------------------------------ */
/* big_op                                                              */
/* ------------------------------------------------------------------ */

static size_t big_op_bytes;
static MPI_Op big_op;

/* a commutative double sum that first copies its input to an automatic
 * array of big_op_bytes (a Fortran op's tmp(len), say) */
static void big_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    size_t n = big_op_bytes / sizeof(double);
    volatile double tmp[n];
    const double *a = in;
    double *b = inout;
    for (size_t i = 0; i < n; i++) tmp[i] = a[(size_t)i % (size_t)*len];
    for (int i = 0; i < *len; i++) b[i] += tmp[i];
}

static void big_op_case(long kib)
{
    enum { N = 4096 };
    static double in[N], out[N];
    big_op_bytes = (size_t)kib << 10;
    if (big_op_bytes < N * sizeof(double)) big_op_bytes = N * sizeof(double);
    MPI_Op_create(big_fn, 1, &big_op);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) in[i] = i + wrank * 0.5 + round;
        MPI_Request q;
        if (wrank == wsize - 1) sleep_ms(20);
        MPI_Iallreduce(in, out, N, MPI_DOUBLE, big_op, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        long bad = 0;
        for (int i = 0; i < N; i++) {
            double want = 0;
            for (int r = 0; r < wsize; r++) want += i + r * 0.5 + round;
            bad += out[i] != want;
        }
        mt_check(0 == bad, "big_op: %ld of %d wrong with %ld KiB on the op's stack", bad, N, kib);
    }
    MPI_Op_free(&big_op);
}

/* ------------------------------------------------------------------ */
/* op_thread                                                           */
/* ------------------------------------------------------------------ */

static pthread_t app_thread;
static long calls_elsewhere, calls_total;

static void where_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    calls_total++;
    if (!pthread_equal(pthread_self(), app_thread)) calls_elsewhere++;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++) b[i] += a[i];
}

static void op_thread(void)
{
    enum { N = 3000 };
    static int in[N], out[N];
    MPI_Op op;
    app_thread = pthread_self();
    MPI_Op_create(where_fn, 1, &op);
    for (int round = 0; round < 4; round++) {
        isum_fill(in, N, wrank, round);
        MPI_Request q;
        if (wrank == wsize - 1) sleep_ms(20);
        MPI_Iallreduce(in, out, N, MPI_INT, op, MPI_COMM_WORLD, &q);
        compute_ms(60);   /* no MPI call: only another thread could run the op now */
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        isum_check(out, N, wsize, round, "op_thread: Iallreduce");
    }
    mt_check(0 == calls_elsewhere, "op_thread: %ld of %ld calls of the user op ran on another "
             "thread in an MPI_THREAD_SINGLE job", calls_elsewhere, calls_total);
    MPI_Op_free(&op);
}

/* ------------------------------------------------------------------ */
/* finalize                                                            */
/* ------------------------------------------------------------------ */

static void finalize_case(void)
{
    enum { N = 100 };
    static int in[N], out[N];
    MPI_Request p;
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    Allreduce_init(in, out, N, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &p);
    isum_fill(in, N, wrank, 3);
    MPI_Start(&p);
    MPI_Wait(&p, MPI_STATUS_IGNORE);
    isum_check(out, N, wsize, 3, "finalize: persistent allreduce");
    MPI_Comm_free(&c);
    /* p stays allocated (inactive) through MPI_Finalize */
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "fallback";
    bool threads = argc > 2 && 0 == strcmp(argv[2], "threads");
    int provided = MPI_THREAD_SINGLE;
    if (threads) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    affine_setup();
    if (threads && provided < MPI_THREAD_MULTIPLE) {
        if (0 == wrank) printf("SKIP: no MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 0;
    }
    if (0 == strcmp(mode, "fallback")) {
        fallback(threads);
    } else if (0 == strcmp(mode, "pseq")) {
        pseq();
    } else if (0 == strcmp(mode, "comm_free")) {
        comm_free();
    } else if (0 == strcmp(mode, "big_op")) {
        big_op_case(argc > 2 ? atol(argv[2]) : 2048);
    } else if (0 == strcmp(mode, "op_thread")) {
        op_thread();
    } else if (0 == strcmp(mode, "finalize")) {
        finalize_case();
    } else if (0 == strcmp(mode, "done_at_post")) {
        done_at_post();
    } else {
        if (0 == wrank) fprintf(stderr, "mpi_nbc_edges: unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    affine_free();
    char name[64];
    snprintf(name, sizeof(name), "mpi_nbc_edges %s", mode);
    return mt_finish(name);
}
