/*
 * mpi_prof.c - a known sequence of collectives for the profile library
 * (contrib/profile/libbraidprof.c), run with it preloaded
 * (tests/mpi/prof_preload.sh) and BRAIDPROF_OUT set. After MPI_Finalize,
 * where the library has written its table, rank 0 reads the CSV back and
 * checks every row's calls and bytes against the sequence at this np, and
 * that no other row is there: "mpi_prof: csv ok" or FAIL lines and exit
 * status 1. With BRAIDPROF_ALGORITHMS=1 (braid's algorithm per call), each
 * row's calls on rank 0 of MPI_COMM_WORLD are braid's (the algorithms'
 * counts add up to them) and MPI_COMM_SELF's reduces are on a one-rank
 * communicator (which braid declines): the census counts each call once,
 * on its communicator's rank 0. The rows the library prints to stderr are
 * checked by the regexes of tests/mpi/mpi_tests.list.
 *
 * Per rank, P ranks (class of the call's bytes, bytes as the library
 * counts them):
 *   10 allreduce of 1 double                     allreduce  <=64B    8 B
 *    3 bcast of 64 KiB                           bcast      <=256KiB 65536 B
 *    2 iallreduce of 128 doubles (Wait, Waitall) iallreduce <=1KiB   1024 B
 *    1 barrier, rank 0 300 ms late               barrier    <=64B    0 B
 *    1 ibarrier completed by an MPI_Test loop    ibarrier   <=64B    0 B
 *    2 reduce of 25 ints on MPI_COMM_SELF        reduce     <=1KiB   100 B
 *    3 starts of one persistent allreduce of     allreduce_init <=16KiB 4096 B
 *      512 doubles (where the MPI has them)
 *    1 allgatherv, rank r gives 100 (r+1) ints   allgatherv <=1KiB   200 (P+1) B (mean block)
 *    1 alltoall of 3 ints per peer               alltoall   <=64B    12 B
 *    1 ialltoallv of 2 doubles per peer, waited  ialltoallv <=64B    16 B
 *      by a Waitall beside a point-to-point pair
 *    1 scan of 1 int                             scan       <=64B    4 B
 *    1 reduce_scatter_block of 500 doubles each  reduce_scatter_block <=16KiB 4000 P B
 * and an MPI_Comm_dup and MPI_Comm_free, whose set-up allreduce on
 * MPI_COMM_WORLD braid runs inside them: no row, a census row
 * "inside_mpi" at most.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_persistent.h"

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)                   \
    || (defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define HAVE_PERSISTENT 1
#else
#define HAVE_PERSISTENT 0
#endif

static int failures;

/* rank 0 enters the barrier this late (us) */
#define LATE_US 300000

static void check(int cond, const char *what)
{
    if (cond) return;
    failures++;
    fprintf(stderr, "FAIL mpi_prof: %s\n", what);
}

typedef struct row {
    const char *name, *cls;
    unsigned long long calls, bytes;
    int seen;
} row_t;

/* the CSV against the expected rows */
/* split a CSV line (no quoting) into at most n fields; the count */
static int split(char *line, char **f, int n)
{
    int k = 0;
    for (char *p = line; k < n && p; k++) {
        f[k] = p;
        p = strchr(p, ',');
        if (p) *p++ = '\0';
    }
    return k;
}

static int check_csv(const char *path, int np, int census)
{
    unsigned long long P = (unsigned long long)np;
    row_t want[] = {
        { "allreduce", "<=64B", 10 * P, 80 * P, 0 },
        { "bcast", "<=256KiB", 3 * P, 3 * 65536 * P, 0 },
        { "iallreduce", "<=1KiB", 2 * P, 2048 * P, 0 },
        { "barrier", "<=64B", P, 0, 0 },
        { "ibarrier", "<=64B", P, 0, 0 },
        { "reduce", "<=1KiB", 2 * P, 200 * P, 0 },
#if HAVE_PERSISTENT
        { "allreduce_init", "<=16KiB", 3 * P, 3 * 4096 * P, 0 },
#endif
        { "allgatherv", "<=1KiB", P, P * 200 * (P + 1), 0 },
        { "alltoall", "<=64B", P, 12 * P, 0 },
        { "ialltoallv", "<=64B", P, 16 * P, 0 },
        { "scan", "<=64B", P, 4 * P, 0 },
        { "reduce_scatter_block", "<=16KiB", P, 4000 * P * P, 0 },
    };
    int nwant = (int)(sizeof(want) / sizeof(want[0]));
    unsigned long long calls_sum = 0, bytes_sum = 0;
    for (int i = 0; i < nwant; i++) {
        calls_sum += want[i].calls;
        bytes_sum += want[i].bytes;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "FAIL mpi_prof: no file %s (is libbraidprof.so preloaded?)\n", path);
        return 1;
    }
    char line[4096];
    int rows = 0, header = 0, comment = 0, total = 0, uncounted = 0;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if ('#' == line[0]) {
            comment += NULL != strstr(line, "# braidprof: np=") && NULL != strstr(line, "mpi_prof");
            continue;
        }
        static const char head[] = "collective,size_class,calls,bytes,time_sum_max_rank_us,"
                                   "time_per_call_us,component";
        if (0 == strncmp(line, head, sizeof(head) - 1)) {
            header = 1;
            continue;
        }
        /* collective,size_class,calls,bytes,time_sum_max_rank_us,time_per_call_us,component,
         * algorithms,not_braid,one_rank,after_arrival_max_rank_us */
        char copy[4096], *f[11];
        snprintf(copy, sizeof(copy), "%s", line);
        if (11 != split(copy, f, 11)) {
            fprintf(stderr, "FAIL mpi_prof: a line not understood: %s\n", line);
            failures++;
            continue;
        }
        const char *name = f[0], *cls = f[1], *comp = f[6], *algs = f[7];
        unsigned long long calls = strtoull(f[2], NULL, 10), bytes = strtoull(f[3], NULL, 10);
        unsigned long long not_braid = strtoull(f[8], NULL, 10),
                           one_rank = strtoull(f[9], NULL, 10);
        double t_sum = atof(f[4]), t_call = atof(f[5]), after = atof(f[10]);
        int blocking = 'i' != name[0] && NULL == strstr(name, "_init");
        rows++;
        /* the split: every blocking row has one, no other row; the
         * barrier that rank 0 entered LATE_US late: its waiting is not in
         * "after" */
        if (0 != strcmp(cls, "inside_mpi"))
            check(blocking == ('\0' != f[10][0]), "an after-arrival time on the blocking rows");
        /* (its clock reads bracket the call's: a few tens of ns more a call) */
        check(after >= 0 && after <= t_sum * 1.1 + 20.0, "after-arrival time within the call's time");
        if (0 == strcmp(name, "barrier")) {
            check(t_sum >= LATE_US, "the late barrier's time holds the wait");
            if (after >= LATE_US / 2)
                fprintf(stderr, "FAIL mpi_prof: barrier: %.1f us of %.1f after the last arrival\n",
                        after, t_sum), failures++;
        }
        check(0 == strcmp(comp, "braid") || 0 == strcmp(comp, "tuned"), "component braid or tuned");
        check(t_sum >= 0 && t_call >= 0, "times not negative");
        if (0 == strcmp(cls, "inside_mpi")) {
            check(census && 0 == calls, "inside_mpi rows only with the census, without calls");
            rows--;
            continue;
        }
        if (0 == strcmp(name, "total")) {
            total = 1;
            if (calls != calls_sum || bytes != bytes_sum) {
                fprintf(stderr, "FAIL mpi_prof: total: %llu calls, %llu bytes; want %llu, %llu\n",
                        calls, bytes, calls_sum, bytes_sum);
                failures++;
            }
            check(t_sum > 0, "total time above 0");
            continue;
        }
        int found = 0;
        for (int i = 0; i < nwant; i++)
            if (0 == strcmp(want[i].name, name) && 0 == strcmp(want[i].cls, cls)) {
                found = 1;
                want[i].seen++;
                if (calls != want[i].calls || bytes != want[i].bytes) {
                    fprintf(stderr,
                            "FAIL mpi_prof: %s %s: %llu calls, %llu bytes; want %llu, %llu\n", name,
                            cls, calls, bytes, want[i].calls, want[i].bytes);
                    failures++;
                }
                if (0 == strcmp(name, "allreduce")) check(t_sum > 0, "allreduce time above 0");
                /* (an Open MPI whose output the library cannot read:
                 * no census, the library said why) */
                if (census && '\0' == f[8][0]) uncounted++;
                if (census && '\0' != f[8][0]) {
                    /* "shm:8 recursive_doubling:2" */
                    unsigned long long run = 0;
                    for (const char *a = strchr(algs, ':'); a; a = strchr(a + 1, ':'))
                        run += strtoull(a + 1, NULL, 10);
                    int self = 0 == strcmp(name, "reduce");
                    unsigned long long want_run = self ? 0 : calls / P;
                    unsigned long long want_one = self ? calls : 0;
                    if (run != want_run || not_braid != 0 || one_rank != want_one) {
                        fprintf(stderr,
                                "FAIL mpi_prof: %s %s: braid ran %llu (%s), not braid's %llu, "
                                "one-rank %llu; want %llu, 0, %llu\n",
                                name, cls, run, algs, not_braid, one_rank, want_run, want_one);
                        failures++;
                    }
                }
            }
        if (!found) {
            fprintf(stderr, "FAIL mpi_prof: a row not in the sequence: %s\n", line);
            failures++;
        }
    }
    fclose(f);
    check(header, "the CSV's header line");
    check(comment, "the comment line naming the command");
    check(total, "the total row");
    for (int i = 0; i < nwant; i++)
        if (1 != want[i].seen) {
            fprintf(stderr, "FAIL mpi_prof: row %s %s seen %d times\n", want[i].name, want[i].cls,
                    want[i].seen);
            failures++;
        }
    if (uncounted) printf("mpi_prof: %d rows without braid's algorithms\n", uncounted);
    if (0 == failures) printf("mpi_prof: csv ok (%d rows, np=%d)\n", rows, np);
    return failures != 0;
}

int main(int argc, char **argv)
{
    /* "multiple": MPI_THREAD_MULTIPLE, the library's atomic counters and
     * its census's queue for every call */
    int provided;
    if (argc > 1 && 0 == strcmp(argv[1], "multiple"))
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *out = getenv("BRAIDPROF_OUT");
    /* the last run's file must not pass for this one's */
    if (0 == rank && out) remove(out);

    double one = rank + 1.0, sum = 0;
    for (int i = 0; i < 10; i++) MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check(sum == np * (np + 1) / 2.0, "allreduce value");

    char *big = malloc(65536);
    memset(big, rank ? 0 : 7, 65536);
    for (int i = 0; i < 3; i++) MPI_Bcast(big, 65536, MPI_BYTE, 0, MPI_COMM_WORLD);
    check(7 == big[65535], "bcast value");
    free(big);

    double v[128], w[128];
    for (int i = 0; i < 128; i++) v[i] = i;
    MPI_Request req[2];
    MPI_Iallreduce(v, w, 128, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Iallreduce(v, w, 128, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[0]);
    MPI_Waitall(1, req, MPI_STATUSES_IGNORE);
    check(w[127] == 127.0 * np, "iallreduce value");

    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_free(&dup);

    if (0 == rank) usleep(LATE_US);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Ibarrier(MPI_COMM_WORLD, &req[0]);
    for (int flag = 0; !flag;) MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);

    int a[25], b[25];
    for (int i = 0; i < 25; i++) a[i] = i;
    for (int i = 0; i < 2; i++) MPI_Reduce(a, b, 25, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF);
    check(b[24] == 24, "reduce on MPI_COMM_SELF");

#if HAVE_PERSISTENT
    double *p = malloc(512 * sizeof(double)), *q = malloc(512 * sizeof(double));
    for (int i = 0; i < 512; i++) p[i] = 1.0;
    MPI_Request preq;
    Allreduce_init(p, q, 512, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &preq);
    for (int i = 0; i < 3; i++) {
        MPI_Start(&preq);
        MPI_Wait(&preq, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&preq);
    check(q[511] == np, "persistent allreduce value");
    free(p);
    free(q);
#endif

    int *counts = malloc(np * sizeof(int)), *displs = malloc(np * sizeof(int)), total = 0;
    for (int r = 0; r < np; r++) {
        counts[r] = 100 * (r + 1);
        displs[r] = total;
        total += counts[r];
    }
    int *mine = malloc(counts[rank] * sizeof(int)), *all = malloc(total * sizeof(int));
    for (int i = 0; i < counts[rank]; i++) mine[i] = rank;
    MPI_Allgatherv(mine, counts[rank], MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    check(all[total - 1] == np - 1, "allgatherv value");
    free(mine);
    free(all);

    int *s3 = malloc(3 * np * sizeof(int)), *r3 = malloc(3 * np * sizeof(int));
    for (int i = 0; i < 3 * np; i++) s3[i] = rank;
    MPI_Alltoall(s3, 3, MPI_INT, r3, 3, MPI_INT, MPI_COMM_WORLD);
    check(r3[3 * np - 1] == np - 1, "alltoall value");
    free(s3);
    free(r3);

    double *s2 = malloc(2 * np * sizeof(double)), *r2 = malloc(2 * np * sizeof(double));
    for (int r = 0; r < np; r++) {
        counts[r] = 2;
        displs[r] = 2 * r;
        s2[2 * r] = s2[2 * r + 1] = rank;
    }
    /* the collective request beside a point-to-point pair in one Waitall */
    MPI_Request four[3];
    int token = rank, got = -1;
    MPI_Ialltoallv(s2, counts, displs, MPI_DOUBLE, r2, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD,
                   &four[0]);
    MPI_Irecv(&got, 1, MPI_INT, (rank + np - 1) % np, 5, MPI_COMM_WORLD, &four[1]);
    MPI_Isend(&token, 1, MPI_INT, (rank + 1) % np, 5, MPI_COMM_WORLD, &four[2]);
    MPI_Waitall(3, four, MPI_STATUSES_IGNORE);
    check(r2[2 * np - 1] == np - 1 && got == (rank + np - 1) % np, "ialltoallv and the pair");
    free(s2);
    free(r2);
    free(counts);
    free(displs);

    int x = 1, y = 0;
    MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(y == rank + 1, "scan value");

    double *rs = malloc(500 * np * sizeof(double)), rr[500];
    for (int i = 0; i < 500 * np; i++) rs[i] = 1.0;
    MPI_Reduce_scatter_block(rs, rr, 500, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    check(rr[499] == np, "reduce_scatter_block value");
    free(rs);

    MPI_Finalize();
    if (0 != rank) return failures != 0;
    if (!out) {
        printf("mpi_prof: BRAIDPROF_OUT not set: the CSV is not checked\n");
        return failures != 0;
    }
    const char *census = getenv("BRAIDPROF_ALGORITHMS");
    return check_csv(out, np, census && atoi(census) > 0) || failures != 0;
}
