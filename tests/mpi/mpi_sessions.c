/*
 * mpi_sessions.c - collectives on communicators made from MPI-4 session
 * groups (MPI_Session_init, MPI_Group_from_session_pset "mpi://WORLD",
 * MPI_Comm_create_from_group), Open MPI 5 and later; prints "SKIP:" on 4.1.
 *
 *   mpi_sessions          no MPI_Init: two communicators of every process
 *                         (rank order and reversed) and one of the even
 *                         ranks, all made from groups
 *   mpi_sessions mixed    MPI_Init first, then a session: MPI_COMM_WORLD,
 *                         a split of it and the session's communicators
 *   mpi_sessions late     a session's communicator first, then MPI_Init
 *   mpi_sessions inter    no MPI_Init: an intercommunicator from two groups
 *                         (MPI_Intercomm_create_from_groups) and its merge
 *   mpi_sessions again    no MPI_Init: a session made, used and finalized,
 *                         then a second one
 *
 * On each: allreduce, bcast, allgather, alltoall, scan and reduce,
 * blocking, nonblocking (posted on two communicators at once, so their
 * messages are in flight together) and persistent (started twice), every
 * value checked against what the known inputs give. The counts of checks
 * and failures are summed at rank 0 point to point; exit status 1 on any
 * failure.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5) && MPI_VERSION < 4
int main(void)
{
    printf("SKIP: MPI-4 sessions need Open MPI 5 or later\n");
    return 0;
}
#else

static long checks, failures;

static void check(int cond, const char *what, int rank, long i, long got, long want)
{
    checks++;
    if (cond) return;
    if (failures++ < 20)
        fprintf(stderr, "FAIL rank %d: %s [%ld] = %ld, want %ld\n", rank, what, i, got, want);
}

#define NCOUNTS 3
static const int counts[NCOUNTS] = { 1, 7, 3000 };

/* value i of rank r's input */
static int in(int r, int i) { return r * 1000 + i; }

typedef struct {
    MPI_Comm comm;
    int rank, size, n;
    int *sbuf, *rbuf, *big_s, *big_r;   /* n; n * size */
    MPI_Request req[6];
    int op;                             /* 0..4: which family is posted */
} job_t;

static void job_init(job_t *j, MPI_Comm comm, int n)
{
    memset(j, 0, sizeof(*j));
    j->comm = comm;
    j->n = n;
    MPI_Comm_rank(comm, &j->rank);
    MPI_Comm_size(comm, &j->size);
    j->sbuf = malloc(sizeof(int) * (size_t)n);
    j->rbuf = malloc(sizeof(int) * (size_t)n);
    j->big_s = malloc(sizeof(int) * (size_t)n * (size_t)j->size);
    j->big_r = malloc(sizeof(int) * (size_t)n * (size_t)j->size);
}

static void job_free(job_t *j)
{
    free(j->sbuf); free(j->rbuf); free(j->big_s); free(j->big_r);
}

/* fill the inputs of family f; root of bcast: the last rank */
static void fill(job_t *j, int f)
{
    int n = j->n, P = j->size, me = j->rank;
    for (int i = 0; i < n; i++) {
        j->sbuf[i] = in(me, i);
        j->rbuf[i] = -1;
    }
    for (long k = 0; k < (long)n * P; k++) j->big_r[k] = -1;
    if (1 == f && me == P - 1)
        for (int i = 0; i < n; i++) j->rbuf[i] = in(P - 1, i) + 5;
    if (3 == f)
        for (int d = 0; d < P; d++)
            for (int i = 0; i < n; i++) j->big_s[(long)d * n + i] = me * 10000 + d * 100 + i % 100;
}

/* check the outputs of family f */
static void verify(job_t *j, int f, const char *form)
{
    int n = j->n, P = j->size, me = j->rank;
    char what[96];
    static const char *names[] = { "allreduce", "bcast", "allgather", "alltoall", "scan", "reduce" };
    snprintf(what, sizeof what, "%s %s n=%d np=%d", form, names[f], n, P);
    long sumr = (long)P * (P - 1) / 2;
    for (int i = 0; i < n; i++) {
        long want;
        switch (f) {
        case 0: want = sumr * 1000 + (long)P * i; check(j->rbuf[i] == want, what, me, i, j->rbuf[i], want); break;
        case 1: want = in(P - 1, i) + 5; check(j->rbuf[i] == want, what, me, i, j->rbuf[i], want); break;
        case 2:
            for (int r = 0; r < P; r++) {
                want = in(r, i);
                check(j->big_r[(long)r * n + i] == want, what, me, (long)r * n + i, j->big_r[(long)r * n + i], want);
            }
            break;
        case 3:
            for (int s = 0; s < P; s++) {
                want = s * 10000 + me * 100 + i % 100;
                check(j->big_r[(long)s * n + i] == want, what, me, (long)s * n + i, j->big_r[(long)s * n + i], want);
            }
            break;
        case 4: want = (long)me * (me + 1) / 2 * 1000 + (long)(me + 1) * i; check(j->rbuf[i] == want, what, me, i, j->rbuf[i], want); break;
        case 5:
            if (0 == me) { want = sumr * 1000 + (long)P * i; check(j->rbuf[i] == want, what, me, i, j->rbuf[i], want); }
            break;
        }
    }
}

static void blocking(job_t *j, int f)
{
    int n = j->n;
    fill(j, f);
    switch (f) {
    case 0: MPI_Allreduce(j->sbuf, j->rbuf, n, MPI_INT, MPI_SUM, j->comm); break;
    case 1: MPI_Bcast(j->rbuf, n, MPI_INT, j->size - 1, j->comm); break;
    case 2: MPI_Allgather(j->sbuf, n, MPI_INT, j->big_r, n, MPI_INT, j->comm); break;
    case 3: MPI_Alltoall(j->big_s, n, MPI_INT, j->big_r, n, MPI_INT, j->comm); break;
    case 4: MPI_Scan(j->sbuf, j->rbuf, n, MPI_INT, MPI_SUM, j->comm); break;
    case 5: MPI_Reduce(j->sbuf, j->rbuf, n, MPI_INT, MPI_SUM, 0, j->comm); break;
    }
    verify(j, f, "blocking");
}

static void post(job_t *j, int f, MPI_Request *r)
{
    int n = j->n;
    fill(j, f);
    switch (f) {
    case 0: MPI_Iallreduce(j->sbuf, j->rbuf, n, MPI_INT, MPI_SUM, j->comm, r); break;
    case 1: MPI_Ibcast(j->rbuf, n, MPI_INT, j->size - 1, j->comm, r); break;
    case 2: MPI_Iallgather(j->sbuf, n, MPI_INT, j->big_r, n, MPI_INT, j->comm, r); break;
    case 3: MPI_Ialltoall(j->big_s, n, MPI_INT, j->big_r, n, MPI_INT, j->comm, r); break;
    case 4: MPI_Iscan(j->sbuf, j->rbuf, n, MPI_INT, MPI_SUM, j->comm, r); break;
    case 5: MPI_Ireduce(j->sbuf, j->rbuf, n, MPI_INT, MPI_SUM, 0, j->comm, r); break;
    }
}

static void persistent_init(job_t *j, int f, MPI_Request *r)
{
    int n = j->n;
    switch (f) {
    case 0: MPI_Allreduce_init(j->sbuf, j->rbuf, n, MPI_INT, MPI_SUM, j->comm, MPI_INFO_NULL, r); break;
    case 1: MPI_Bcast_init(j->rbuf, n, MPI_INT, j->size - 1, j->comm, MPI_INFO_NULL, r); break;
    case 2: MPI_Allgather_init(j->sbuf, n, MPI_INT, j->big_r, n, MPI_INT, j->comm, MPI_INFO_NULL, r); break;
    case 3: MPI_Alltoall_init(j->big_s, n, MPI_INT, j->big_r, n, MPI_INT, j->comm, MPI_INFO_NULL, r); break;
    case 4: MPI_Scan_init(j->sbuf, j->rbuf, n, MPI_INT, MPI_SUM, j->comm, MPI_INFO_NULL, r); break;
    case 5: MPI_Reduce_init(j->sbuf, j->rbuf, n, MPI_INT, MPI_SUM, 0, j->comm, MPI_INFO_NULL, r); break;
    }
}

/* every family and count on comms[0..nc-1]: blocking on each in turn,
 * nonblocking and persistent posted on all of them before any is waited */
static void run_all(MPI_Comm *comms, int nc)
{
    job_t jobs[8];
    for (int k = 0; k < NCOUNTS; k++) {
        for (int c = 0; c < nc; c++) job_init(&jobs[c], comms[c], counts[k]);
        for (int f = 0; f < 6; f++) {
            for (int c = 0; c < nc; c++) blocking(&jobs[c], f);
            MPI_Request r[8];
            for (int c = 0; c < nc; c++) post(&jobs[c], f, &r[c]);
            MPI_Waitall(nc, r, MPI_STATUSES_IGNORE);
            for (int c = 0; c < nc; c++) verify(&jobs[c], f, "nonblocking");
            for (int c = 0; c < nc; c++) persistent_init(&jobs[c], f, &r[c]);
            for (int round = 0; round < 2; round++) {
                for (int c = 0; c < nc; c++) fill(&jobs[c], f);
                MPI_Startall(nc, r);
                MPI_Waitall(nc, r, MPI_STATUSES_IGNORE);
                for (int c = 0; c < nc; c++) verify(&jobs[c], f, "persistent");
            }
            for (int c = 0; c < nc; c++) MPI_Request_free(&r[c]);
        }
        for (int c = 0; c < nc; c++) job_free(&jobs[c]);
    }
}

/* the session's communicators: of every process in rank order (the tag
 * names it), reversed, and of the even ranks (NULL elsewhere) */
static void session_comms(MPI_Session *s, MPI_Comm out[3], const char *prefix)
{
    MPI_Group world, rev, even;
    char tag[64];
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, s);
    MPI_Group_from_session_pset(*s, "mpi://WORLD", &world);
    snprintf(tag, sizeof tag, "braid.%s.world", prefix);
    MPI_Comm_create_from_group(world, tag, MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &out[0]);
    int P, me;
    MPI_Group_size(world, &P);
    MPI_Group_rank(world, &me);
    int *ranks = malloc(sizeof(int) * (size_t)P);
    for (int i = 0; i < P; i++) ranks[i] = P - 1 - i;
    MPI_Group_incl(world, P, ranks, &rev);
    snprintf(tag, sizeof tag, "braid.%s.reversed", prefix);
    MPI_Comm_create_from_group(rev, tag, MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &out[1]);
    int ne = 0;
    for (int i = 0; i < P; i += 2) ranks[ne++] = i;
    MPI_Group_incl(world, ne, ranks, &even);
    out[2] = MPI_COMM_NULL;
    snprintf(tag, sizeof tag, "braid.%s.even", prefix);
    if (0 == me % 2) MPI_Comm_create_from_group(even, tag, MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &out[2]);
    free(ranks);
    MPI_Group_free(&world);
    MPI_Group_free(&rev);
    MPI_Group_free(&even);
}

/* failures summed at rank 0 of comm point to point; 1 if any */
static int finish(MPI_Comm comm, const char *mode)
{
    int me, P;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &P);
    long t[2] = { checks, failures };
    if (0 == me) {
        for (int r = 1; r < P; r++) {
            long o[2];
            MPI_Recv(o, 2, MPI_LONG, r, 77, comm, MPI_STATUS_IGNORE);
            t[0] += o[0];
            t[1] += o[1];
        }
        printf("mpi_sessions %s: np=%d checks=%ld failures=%ld %s\n", mode, P, t[0], t[1],
               t[1] ? "FAILED" : "ok");
        fflush(stdout);
    } else {
        MPI_Send(t, 2, MPI_LONG, 0, 77, comm);
    }
    int bad = 0 == me && t[1] != 0;
    if (0 == me) for (int r = 1; r < P; r++) MPI_Send(&bad, 1, MPI_INT, r, 78, comm);
    else MPI_Recv(&bad, 1, MPI_INT, 0, 78, comm, MPI_STATUS_IGNORE);
    return bad;
}

static void comms_free(MPI_Comm *c, int n)
{
    for (int i = 0; i < n; i++)
        if (MPI_COMM_NULL != c[i]) MPI_Comm_free(&c[i]);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "sessions";
    MPI_Session s;
    MPI_Comm sc[3], wc[2];
    int bad;
    if (0 == strcmp(mode, "sessions")) {
        session_comms(&s, sc, "s");
        MPI_Comm on[3] = { sc[0], sc[1], sc[2] };
        run_all(on, MPI_COMM_NULL != sc[2] ? 3 : 2);
        /* a duplicate of a session's communicator: Open MPI's context id
         * agreement, not a group's */
        MPI_Comm d;
        MPI_Comm_dup(sc[1], &d);
        MPI_Comm two[2] = { d, sc[0] };
        run_all(two, 2);
        MPI_Comm_free(&d);
        bad = finish(sc[0], mode);
        comms_free(sc, 3);
        MPI_Session_finalize(&s);
    } else if (0 == strcmp(mode, "again")) {
        bad = 0;
        for (int round = 0; round < 2; round++) {
            session_comms(&s, sc, round ? "again2" : "again1");
            MPI_Comm on[2] = { sc[0], sc[1] };
            run_all(on, 2);
            if (round) bad = finish(sc[0], mode);
            comms_free(sc, 3);
            MPI_Session_finalize(&s);
        }
    } else if (0 == strcmp(mode, "mixed") || 0 == strcmp(mode, "late")) {
        bool late = 0 == strcmp(mode, "late");
        if (late) session_comms(&s, sc, "late");
        MPI_Init(&argc, &argv);
        if (!late) session_comms(&s, sc, "mixed");
        int me;
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        wc[0] = MPI_COMM_WORLD;
        MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &wc[1]);
        /* the world's and the session's communicators, the same processes
         * in the same order, posted together */
        MPI_Comm on[4] = { wc[0], sc[0], sc[1], wc[1] };
        run_all(on, 4);
        bad = finish(MPI_COMM_WORLD, mode);
        comms_free(&wc[1], 1);
        comms_free(sc, 3);
        MPI_Session_finalize(&s);
        MPI_Finalize();
    } else if (0 == strcmp(mode, "inter")) {
        MPI_Group world, lo, hi;
        MPI_Comm all, inter, merged;
        MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &s);
        MPI_Group_from_session_pset(s, "mpi://WORLD", &world);
        MPI_Comm_create_from_group(world, "braid.inter.world", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &all);
        int P, me;
        MPI_Group_size(world, &P);
        MPI_Group_rank(world, &me);
        if (P < 2) {
            bad = finish(all, mode);
        } else {
            int h = P / 2;
            int range_lo[1][3] = { { 0, h - 1, 1 } }, range_hi[1][3] = { { h, P - 1, 1 } };
            MPI_Group_range_incl(world, 1, range_lo, &lo);
            MPI_Group_range_incl(world, 1, range_hi, &hi);
            MPI_Intercomm_create_from_groups(me < h ? lo : hi, 0, me < h ? hi : lo, 0,
                                             "braid.inter.pair", MPI_INFO_NULL,
                                             MPI_ERRORS_ARE_FATAL, &inter);
            /* a collective on the intercommunicator (Open MPI's component) */
            int x = me + 1, sum = 0;
            MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, inter);
            long want = 0;
            for (int q = (me < h ? h : 0); q < (me < h ? P : h); q++) want += q + 1;
            check(sum == want, "intercommunicator allreduce", me, 0, sum, want);
            MPI_Intercomm_merge(inter, me >= h, &merged);
            MPI_Comm on[2] = { merged, all };
            run_all(on, 2);
            MPI_Comm_free(&merged);
            MPI_Comm_free(&inter);
            MPI_Group_free(&lo);
            MPI_Group_free(&hi);
            bad = finish(all, mode);
        }
        MPI_Comm_free(&all);
        MPI_Group_free(&world);
        MPI_Session_finalize(&s);
    } else {
        fprintf(stderr, "mpi_sessions: unknown mode %s\n", mode);
        return 2;
    }
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
#endif
