/*
 * mpi_order.c - legal MPI programs in which ranks reach a communicator's
 * calls in orders that differ in time, each value checked against a
 * reference computed from the known inputs (every case runs under the
 * runner's timeout: a hang fails).
 *
 *   mpi_order idup COLL [test]
 *       MPI_Comm_idup of a communicator, then blocking COLL calls
 *       (allreduce, bcast or alltoall, small and large) on that
 *       communicator before the idup is waited for, then a collective on
 *       the new one. Open MPI posts the idup's context-id agreement (an
 *       iallreduce on the parent) from its progress loop, so each rank
 *       posts it at its own point around the blocking calls, also inside
 *       their waits. "test": rank 0 alone calls MPI_Test on the idup
 *       request before the blocking calls. 12 rounds, ranks offset by a
 *       rank-dependent pause.
 *   mpi_order pair COLL [nb] [spin]
 *       a 16 KiB COLL (reduce to root 1, scan or exscan; "nb": its
 *       nonblocking form) followed by 12 small calls in which rank 0 never
 *       waits for the last rank (bcasts from 0, gathers to the last rank,
 *       exscans), 300 rounds: at two ranks the large call goes the shm
 *       tier's pair way, whose status word the other rank may overwrite
 *       ncells calls later. The communicator returns errors
 *       (MPI_ERRORS_RETURN), and every return code is checked. "spin":
 *       world rank 0 forks a process that keeps a core busy, so that the
 *       ranks are descheduled in the middle of their calls.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test_common.h"

static int wrank, wsize;

static void sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ */
/* idup beside blocking calls                                          */
/* ------------------------------------------------------------------ */

static int val(int r, int i, int k) { return (r + 1) * 1000 + i * 7 + k; }

static void blocking_calls(MPI_Comm c, const char *coll, int k)
{
    int P, me;
    MPI_Comm_size(c, &P);
    MPI_Comm_rank(c, &me);
    /* one size a slot holds, one above it (single copy or messages) */
    static const int sizes[] = { 4, 6000 };
    for (int s = 0; s < 2; s++) {
        int n = sizes[s];
        if (0 == strcmp(coll, "allreduce")) {
            int *in = malloc((size_t)n * sizeof(int)), *out = malloc((size_t)n * sizeof(int));
            for (int i = 0; i < n; i++) in[i] = val(me, i, k);
            int rc = MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, c);
            long bad = 0;
            for (int i = 0; i < n; i++) {
                long want = 0;
                for (int q = 0; q < P; q++) want += val(q, i, k);
                bad += out[i] != want;
            }
            mt_check(MPI_SUCCESS == rc && 0 == bad, "idup allreduce n=%d round %d: rc %d, %ld wrong", n, k,
                     rc, bad);
            free(in);
            free(out);
        } else if (0 == strcmp(coll, "bcast")) {
            int root = k % P;
            int *buf = malloc((size_t)n * sizeof(int));
            for (int i = 0; i < n; i++) buf[i] = me == root ? val(root, i, k) : -1;
            int rc = MPI_Bcast(buf, n, MPI_INT, root, c);
            long bad = 0;
            for (int i = 0; i < n; i++) bad += buf[i] != val(root, i, k);
            mt_check(MPI_SUCCESS == rc && 0 == bad, "idup bcast n=%d round %d: rc %d, %ld wrong", n, k, rc,
                     bad);
            free(buf);
        } else {
            int *in = malloc((size_t)n * P * sizeof(int)), *out = malloc((size_t)n * P * sizeof(int));
            for (int q = 0; q < P; q++)
                for (int i = 0; i < n; i++) in[q * n + i] = val(me, i, k) * 31 + q;
            int rc = MPI_Alltoall(in, n, MPI_INT, out, n, MPI_INT, c);
            long bad = 0;
            for (int q = 0; q < P; q++)
                for (int i = 0; i < n; i++) bad += out[q * n + i] != val(q, i, k) * 31 + me;
            mt_check(MPI_SUCCESS == rc && 0 == bad, "idup alltoall n=%d round %d: rc %d, %ld wrong", n, k,
                     rc, bad);
            free(in);
            free(out);
        }
    }
}

static void idup_case(const char *coll, bool test_one)
{
    enum { ROUNDS = 12 };
    MPI_Comm parent;
    MPI_Comm_dup(MPI_COMM_WORLD, &parent);
    for (int k = 0; k < ROUNDS; k++) {
        MPI_Comm dup;
        MPI_Request req;
        int rc = MPI_Comm_idup(parent, &dup, &req);
        mt_check(MPI_SUCCESS == rc, "MPI_Comm_idup round %d: rc %d", k, rc);
        /* each rank reaches the blocking calls at its own moment */
        sleep_us((long)((wrank + k) % wsize) * 300);
        if (test_one && 0 == wrank) {
            int flag = 0;
            for (int t = 0; t < 3 && !flag; t++) MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
            if (flag) req = MPI_REQUEST_NULL;
        }
        blocking_calls(parent, coll, k);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        int one = 1, all = 0;
        rc = MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, dup);
        mt_check(MPI_SUCCESS == rc && all == wsize, "allreduce on the idup'd communicator round %d: %d", k,
                 all);
        MPI_Comm_free(&dup);
    }
    MPI_Comm_free(&parent);
}

/* ------------------------------------------------------------------ */
/* a large pair-way call, then calls in which rank 0 runs ahead        */
/* ------------------------------------------------------------------ */

static pid_t spinner = -1;

/* a process that keeps a core busy until its parent ends (or 300 s) */
static void start_spinner(void)
{
    pid_t parent = getpid();
    spinner = fork();
    if (0 != spinner) return;
    time_t t0 = time(NULL);
    volatile unsigned long x = 0;
    while (getppid() == parent && time(NULL) - t0 < 300)
        for (int i = 0; i < 1000000; i++) x += (unsigned long)i;
    _exit(0);
}

static void stop_spinner(void)
{
    if (spinner <= 0) return;
    kill(spinner, SIGKILL);
    waitpid(spinner, NULL, 0);
    spinner = -1;
}

/* the reference of element i, round k, on rank me of P */
static long pair_want(const char *coll, int me, int P, int i, int k)
{
    int hi = 0 == strcmp(coll, "reduce") ? P - 1 : 0 == strcmp(coll, "scan") ? me : me - 1;
    long want = 0;
    for (int q = 0; q <= hi; q++) want += val(q, i, k);
    return want;
}

static int big_call(const char *coll, bool nb, const int *in, int *out, int n, MPI_Comm c)
{
    int P, rc;
    MPI_Comm_size(c, &P);
    MPI_Request req = MPI_REQUEST_NULL;
    if (0 == strcmp(coll, "reduce")) {
        rc = nb ? MPI_Ireduce(in, out, n, MPI_INT, MPI_SUM, P - 1, c, &req)
                : MPI_Reduce(in, out, n, MPI_INT, MPI_SUM, P - 1, c);
    } else if (0 == strcmp(coll, "scan")) {
        rc = nb ? MPI_Iscan(in, out, n, MPI_INT, MPI_SUM, c, &req) : MPI_Scan(in, out, n, MPI_INT, MPI_SUM, c);
    } else {
        rc = nb ? MPI_Iexscan(in, out, n, MPI_INT, MPI_SUM, c, &req)
                : MPI_Exscan(in, out, n, MPI_INT, MPI_SUM, c);
    }
    if (nb && MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    return rc;
}

/* four ints each: a small call's data cover the words after a slot's
 * first (the pair way's status word among them) */
enum { SMALL = 4 };

static void small_calls(MPI_Comm c, int k)
{
    int P, me;
    MPI_Comm_size(c, &P);
    MPI_Comm_rank(c, &me);
    int last = P - 1, *all = malloc((size_t)P * SMALL * sizeof(int));
    for (int j = 0; j < 12; j++) {
        int v[SMALL], b[SMALL], e[SMALL], rc, bad = 0;
        for (int i = 0; i < SMALL; i++) v[i] = me * 100 + j + k + i;
        switch (j % 3) {
        case 0: /* bcast from 0: rank 0 waits for nobody */
            for (int i = 0; i < SMALL; i++) b[i] = 0 == me ? v[i] : -1;
            rc = MPI_Bcast(b, SMALL, MPI_INT, 0, c);
            for (int i = 0; i < SMALL; i++) bad += b[i] != j + k + i;
            break;
        case 1: /* gather to the last rank: the others leave once written */
            rc = MPI_Gather(v, SMALL, MPI_INT, all, SMALL, MPI_INT, last, c);
            if (me == last)
                for (int q = 0; q < P; q++)
                    for (int i = 0; i < SMALL; i++) bad += all[q * SMALL + i] != q * 100 + j + k + i;
            break;
        default: /* exscan: rank 0 waits for nobody */
            rc = MPI_Exscan(v, e, SMALL, MPI_INT, MPI_SUM, c);
            for (int i = 0; me > 0 && i < SMALL; i++) {
                int want = 0;
                for (int q = 0; q < me; q++) want += q * 100 + j + k + i;
                bad += e[i] != want;
            }
            break;
        }
        mt_check(MPI_SUCCESS == rc && 0 == bad, "small call %d of round %d: rc %d, %d wrong", j, k, rc, bad);
    }
    free(all);
}

static void pair_case(const char *coll, bool nb)
{
    enum { ROUNDS = 300, N = 4096 };   /* 16 KiB of int */
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int P, me;
    MPI_Comm_size(c, &P);
    MPI_Comm_rank(c, &me);
    int *in = malloc(N * sizeof(int)), *out = malloc(N * sizeof(int));
    long wrong_rounds = 0;
    for (int k = 0; k < ROUNDS; k++) {
        for (int i = 0; i < N; i++) {
            in[i] = val(me, i, k);
            out[i] = -7;
        }
        int rc = big_call(coll, nb, in, out, N, c);
        bool checked = 0 == strcmp(coll, "reduce") ? me == P - 1 : 0 == strcmp(coll, "scan") || me > 0;
        long bad = 0, first = -1;
        for (int i = 0; checked && i < N; i++)
            if (out[i] != pair_want(coll, me, P, i, k) && bad++ == 0) first = i;
        if (MPI_SUCCESS != rc || bad) {
            if (wrong_rounds++ < 5)
                mt_check(0, "%s%s round %d: rc %d, %ld wrong (first at %ld: %d, want %ld)", nb ? "i" : "",
                         coll, k, rc, bad, first, first >= 0 ? out[first] : 0,
                         first >= 0 ? pair_want(coll, me, P, (int)first, k) : 0);
        } else {
            mt_check(1, "");
        }
        small_calls(c, k);
    }
    mt_check(0 == wrong_rounds, "%s%s: %ld of %d rounds wrong", nb ? "i" : "", coll, wrong_rounds, ROUNDS);
    free(in);
    free(out);
    MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "idup";
    const char *coll = argc > 2 ? argv[2] : "allreduce";
    bool opt[2] = { false, false };   /* test / nb, spin */
    for (int i = 3; i < argc; i++) {
        if (0 == strcmp(argv[i], "test") || 0 == strcmp(argv[i], "nb")) opt[0] = true;
        if (0 == strcmp(argv[i], "spin")) opt[1] = true;
    }
    /* before MPI_Init: no fork of a process with UCX's resources */
    const char *wr = getenv("OMPI_COMM_WORLD_RANK");
    if (opt[1] && NULL != wr && 0 == strcmp(wr, "0")) start_spinner();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (0 == strcmp(mode, "idup")) {
        idup_case(coll, opt[0]);
    } else if (0 == strcmp(mode, "pair")) {
        pair_case(coll, opt[0]);
    } else {
        if (0 == wrank) fprintf(stderr, "mpi_order: unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    stop_spinner();
    char name[96];
    snprintf(name, sizeof(name), "mpi_order %s %s", mode, coll);
    return mt_finish(name);
}
