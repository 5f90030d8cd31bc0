/*
 * mpi_shm.c - the shared-memory tier (coll_braid_shm_*) through MPI, on
 * what the per-collective value tests (mpi_reductions, mpi_barrier_bcast)
 * do not reach:
 *
 *   cycles N   N times: dup, K calls of every shm collective (enough to
 *              set the segment up), values checked, free; the job's
 *              entries in /dev/shm and the process's VmRSS must not grow
 *              (sampled after the first tenth, compared at the end)
 *   mixed N    N rounds on one communicator of allreduce / reduce / bcast /
 *              allgather / barrier with the root and the size rotating, so
 *              cells are reused by different collectives and slow readers
 *              (a bcast root runs ahead) meet fast writers; every value
 *              checked; a reversed-order communicator with a
 *              non-commutative user op (2x2 matrix product) too
 *   threads T  MPI_THREAD_MULTIPLE: T threads, each on its own dup, run
 *              `mixed` at once
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "mpi_test_common.h"

/* entries of /dev/shm that braid's segments would use (one user's) */
static int shm_entries(void)
{
    DIR *d = opendir("/dev/shm");
    if (NULL == d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (0 == strncmp(e->d_name, "braid-", 6)) n++;
    closedir(d);
    return n;
}

static long vmrss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (1 == sscanf(line, "VmRSS: %ld", &kb)) break;
    if (f) fclose(f);
    return kb;
}

/* 2x2 integer matrices: an associative, non-commutative user op */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int64_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        int64_t r[4] = { a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                         a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3] };
        memcpy(b, r, sizeof r);
    }
}

static void rank_matrix(int r, int64_t m[4])
{
    m[0] = 1; m[1] = r + 1; m[2] = (r % 3) - 1; m[3] = 1 + (r & 1);
}

/* one round of every collective on comm; n elements, root and seed vary */
static void round_on(MPI_Comm comm, int n, int root, int seed, const char *what)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    int64_t *in = malloc((size_t)n * sizeof *in), *out = malloc((size_t)n * P * sizeof *out);
    for (int i = 0; i < n; i++) in[i] = (int64_t)(rank + 1) * (i + seed);
    int64_t want_sum_factor = (int64_t)P * (P + 1) / 2;

    MPI_Allreduce(in, out, n, MPI_INT64_T, MPI_SUM, comm);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += out[i] != want_sum_factor * (i + seed);
    mt_check(!bad, "%s allreduce n=%d seed=%d: %d wrong", what, n, seed, bad);

    memcpy(out, in, (size_t)n * sizeof *in);
    MPI_Allreduce(MPI_IN_PLACE, out, n, MPI_INT64_T, MPI_MAX, comm);
    bad = 0;
    for (int i = 0; i < n; i++) bad += out[i] != (int64_t)P * (i + seed);
    mt_check(!bad, "%s allreduce in place n=%d: %d wrong", what, n, bad);

    for (int i = 0; i < n; i++) out[i] = -7;
    MPI_Reduce(in, out, n, MPI_INT64_T, MPI_SUM, root, comm);
    bad = 0;
    for (int i = 0; i < n; i++) bad += out[i] != (rank == root ? want_sum_factor * (i + seed) : -7);
    mt_check(!bad, "%s reduce root=%d n=%d: %d wrong", what, root, n, bad);

    for (int i = 0; i < n; i++) out[i] = rank == root ? 3 * i + seed : -1;
    MPI_Bcast(out, n, MPI_INT64_T, root, comm);
    bad = 0;
    for (int i = 0; i < n; i++) bad += out[i] != 3 * i + seed;
    mt_check(!bad, "%s bcast root=%d n=%d: %d wrong", what, root, n, bad);

    MPI_Allgather(in, n, MPI_INT64_T, out, n, MPI_INT64_T, comm);
    bad = 0;
    for (int r = 0; r < P; r++)
        for (int i = 0; i < n; i++) bad += out[(size_t)r * n + i] != (int64_t)(r + 1) * (i + seed);
    mt_check(!bad, "%s allgather n=%d: %d wrong", what, n, bad);

    MPI_Barrier(comm);
    free(in);
    free(out);
}

/* the non-commutative product in rank order on comm */
static void matmul_round(MPI_Comm comm, MPI_Op op, MPI_Datatype mat, const char *what)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    int64_t mine[4], got[4], want[4] = { 1, 0, 0, 1 };
    rank_matrix(rank, mine);
    for (int r = 0; r < P; r++) {
        int64_t m[4];
        rank_matrix(r, m);
        int len = 1;
        MPI_Datatype dt = mat;
        matmul(want, m, &len, &dt);   /* m = want * m */
        memcpy(want, m, sizeof m);
    }
    MPI_Allreduce(mine, got, 1, mat, op, comm);
    mt_check(0 == memcmp(got, want, sizeof got), "%s non-commutative allreduce: wrong order", what);
    MPI_Reduce(mine, got, 1, mat, op, P - 1, comm);
    if (rank == P - 1)
        mt_check(0 == memcmp(got, want, sizeof got), "%s non-commutative reduce: wrong order", what);
}

static void mixed(MPI_Comm comm, int rounds, const char *what)
{
    int P;
    MPI_Comm_size(comm, &P);
    static const int sizes[] = { 1, 3, 17, 128, 1000 };
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT64_T, &mat);
    MPI_Type_commit(&mat);
    MPI_Op op;
    MPI_Op_create(matmul, 0, &op);
    MPI_Comm rev = mt_reversed_comm(comm);
    for (int k = 0; k < rounds; k++) {
        round_on(comm, sizes[k % 5], k % P, k, what);
        round_on(rev, sizes[(k + 2) % 5], (k + 1) % P, k, what);
        matmul_round(comm, op, mat, what);
        matmul_round(rev, op, mat, what);
    }
    MPI_Comm_free(&rev);
    MPI_Op_free(&op);
    MPI_Type_free(&mat);
}

/* A name as a job killed inside a segment's set-up leaves it: this
 * user's, from a process that is gone (a child that exited). */
static void make_orphan(void)
{
    pid_t child = fork();
    if (0 == child) _exit(0);
    waitpid(child, NULL, 0);
    char name[64];
    snprintf(name, sizeof name, "/braid-%u-%ld-0", (unsigned)getuid(), (long)child);
    int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
    if (fd >= 0) close(fd);
}

/* shm0: the entries rank 0 counted after making its orphan, before
 * MPI_Init (whose MPI_COMM_WORLD set-up may already create a segment and
 * sweep) */
static void cycles(int n, int shm0)
{
    int rank0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank0);
    MPI_Barrier(MPI_COMM_WORLD);
    long rss_mid = 0;
    for (int k = 0; k < n; k++) {
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        round_on(dup, 1 + k % 7, k % 2, k, "cycles");
        MPI_Comm_free(&dup);
        if (k == n / 10) rss_mid = vmrss_kb();
    }
    int shm1 = shm_entries();
    long rss_end = vmrss_kb();
    /* segments are unlinked once mapped, and the orphan made above (and
     * any other job's) is swept by the first segment created */
    mt_check((0 != rank0 || shm0 >= 1) && 0 == shm1, "cycles: /dev/shm braid entries %d before (an orphan "
             "among them), %d after", shm0, shm1);
    /* a leak of one segment (> 1 KiB) or one module per cycle shows;
     * under AddressSanitizer freed memory waits in its quarantine (up to
     * 256 MiB) and RSS grows without a leak - LeakSanitizer checks there */
#if defined(__SANITIZE_ADDRESS__)
    const long rss_bound = 1L << 30;
#else
    const long rss_bound = 8192;
#endif
    mt_check(rss_end - rss_mid < rss_bound, "cycles: VmRSS grew %ld kB over %d cycles",
             rss_end - rss_mid, n - n / 10);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (0 == rank)
        printf("shm cycles: %d cycles, /dev/shm braid entries %d -> %d, VmRSS %ld -> %ld kB\n", n,
               shm0, shm1, rss_mid, rss_end);
}

typedef struct { MPI_Comm comm; int rounds; } thread_arg_t;

static void *thread_main(void *p)
{
    thread_arg_t *t = p;
    mixed(t->comm, t->rounds, "threads");
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "mixed";
    int n = argc > 2 ? atoi(argv[2]) : 50;
    int provided = MPI_THREAD_SINGLE, shm0 = 0;
    /* cycles: an orphan for the sweep, made before any segment exists
     * (by the launcher's rank 0: mpirun names it in the environment) */
    const char *wr = getenv("OMPI_COMM_WORLD_RANK");
    if (0 == strcmp(mode, "cycles") && (NULL == wr || 0 == strcmp(wr, "0"))) {
        make_orphan();
        shm0 = shm_entries();
    }
    if (0 == strcmp(mode, "threads"))
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    if (0 == strcmp(mode, "cycles")) {
        cycles(n, shm0);
    } else if (0 == strcmp(mode, "threads")) {
        mt_check(provided == MPI_THREAD_MULTIPLE, "threads: MPI_THREAD_MULTIPLE not provided");
        enum { T = 4 };
        thread_arg_t args[T];
        pthread_t th[T];
        for (int i = 0; i < T; i++) {
            MPI_Comm_dup(MPI_COMM_WORLD, &args[i].comm);
            args[i].rounds = n;
        }
        for (int i = 0; i < T; i++) pthread_create(&th[i], NULL, thread_main, &args[i]);
        for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < T; i++) MPI_Comm_free(&args[i].comm);
    } else {
        mixed(MPI_COMM_WORLD, n, "mixed");
    }
    return mt_finish("mpi_shm");
}
