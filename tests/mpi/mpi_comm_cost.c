/*
 * mpi_comm_cost.c - what braid costs per communicator and per call, checked:
 *
 *  - endpoints (MPI_T coll_braid_endpoints, the UCX endpoints this process
 *    has made): with MODE preconnect (the default coll_braid_preconnect),
 *    P-1 right after MPI_Init, before the program's first collective, and
 *    unchanged by every collective and communicator after it - no
 *    collective makes an endpoint, so none pays for one; with MODE lazy
 *    (run with coll_braid_preconnect=0) none after MPI_Init, made by the
 *    first messages, at most P-1 in all; with MODE first_need (a job on
 *    one node, where UCX starts on a communicator's first need of it) none
 *    after MPI_Init nor after 101 8-byte allreduces on MPI_COMM_WORLD
 *    (the shared-memory tier's), at most P-1 after 64 KiB calls;
 *  - CYCLES MPI_Comm_dup + MPI_Allreduce + MPI_Comm_free cycles (a dup or a
 *    reversed split of MPI_COMM_WORLD in turn, one 8-byte and one 4-long
 *    allreduce each, values checked): the endpoint count does not move and
 *    the resident set (VmRSS, /proc/self/status) grows less than
 *    RSS_BOUND_KB after warm-up;
 *  - no allocation per call: this program counts the calls to malloc,
 *    calloc, realloc and the aligned allocators of the whole process (it
 *    defines them over glibc's __libc_* entry points); after warm-up,
 *    STEADY calls of each collective braid implements (8 B and 64 KiB)
 *    may allocate at most STEADY / 50 times (room for UCX's memory pools
 *    growing a few chunks when a rank runs ahead; one allocation per call
 *    is STEADY). Rank 0 is exempt when coll_braid_verbose >= 20:
 *    its trace line per call is formatted into allocated memory.
 * Timings (first collective, steady state, cycle) are printed, not checked.
 * Under AddressSanitizer the allocation and RSS checks are off (its
 * allocator cannot be wrapped this way, its quarantine keeps freed memory).
 *
 * usage: mpi_comm_cost CYCLES [preconnect|lazy|first_need]
 */
#include "mpi_test_common.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

#define RSS_BOUND_KB 2048
#define STEADY 1000
#define BIG_COUNT 8192 /* doubles: 64 KiB */

#if defined(__SANITIZE_ADDRESS__)
#define WRAPPED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WRAPPED 0
#endif
#endif
#ifndef WRAPPED
#define WRAPPED 1
#endif

/* ------------------------------------------------------------------ */
/* allocation counting                                                 */
/* ------------------------------------------------------------------ */

static unsigned long long nalloc;

#if WRAPPED
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define COUNT_ONE() __atomic_fetch_add(&nalloc, 1, __ATOMIC_RELAXED)
void *malloc(size_t n) { COUNT_ONE(); return __libc_malloc(n); }
void *calloc(size_t n, size_t m) { COUNT_ONE(); return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { COUNT_ONE(); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { COUNT_ONE(); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { COUNT_ONE(); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n)
{
    COUNT_ONE();
    if (0 == a || (a & (a - 1)) || a % sizeof(void *)) return EINVAL;
    void *p = __libc_memalign(a, n);
    if (NULL == p) return ENOMEM;
    *out = p;
    return 0;
}
#endif

static unsigned long long allocs(void) { return __atomic_load_n(&nalloc, __ATOMIC_RELAXED); }

/* ------------------------------------------------------------------ */
/* MPI_T                                                                */
/* ------------------------------------------------------------------ */

static MPI_T_pvar_session session;
static MPI_T_pvar_handle ep_handle;

static void die(const char *what)
{
    fprintf(stderr, "mpi_comm_cost: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static unsigned long long endpoints(void)
{
    unsigned long long v = 0;
    MPI_T_pvar_read(session, ep_handle, &v);
    return v;
}

static int braid_verbose(void)
{
    int idx, count, v = 0;
    MPI_T_cvar_handle h;
    if (MPI_SUCCESS != MPI_T_cvar_get_index("coll_braid_verbose", &idx)) return 0;
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &count);
    MPI_T_cvar_read(h, &v);
    MPI_T_cvar_handle_free(&h);
    return v;
}

/* VmRSS in KiB, -1 if unreadable */
static long vmrss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (NULL == f) return -1;
    while (fgets(line, sizeof(line), f))
        if (1 == sscanf(line, "VmRSS: %ld kB", &kb)) break;
    fclose(f);
    return kb;
}

/* ranks meet through the pml alone: no collective before the first one */
static void p2p_barrier(int rank, int P)
{
    char b = 0;
    if (0 == rank) {
        for (int i = 1; i < P; i++) MPI_Recv(&b, 0, MPI_CHAR, i, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 1; i < P; i++) MPI_Send(&b, 0, MPI_CHAR, i, 78, MPI_COMM_WORLD);
    } else {
        MPI_Send(&b, 0, MPI_CHAR, 0, 77, MPI_COMM_WORLD);
        MPI_Recv(&b, 0, MPI_CHAR, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* the collectives                                                      */
/* ------------------------------------------------------------------ */

enum { K_BARRIER, K_BCAST, K_ALLREDUCE, K_REDUCE, K_ALLGATHER, K_RS_BLOCK, K_RS, K_N };
static const char *const kind_name[K_N] = { "barrier", "bcast", "allreduce", "reduce",
                                            "allgather", "reduce_scatter_block", "reduce_scatter" };
static double *in, *out;
static int *rcounts;

/* one call of kind k with n doubles per rank (per block for the scatters
 * and allgather); returns the number of wrong values */
static long call(int k, MPI_Comm comm, int n, int iter)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    int root = iter % P;
    long bad = 0;
    double rsum = 0.5 * P * (P - 1);
    switch (k) {
    case K_BARRIER: MPI_Barrier(comm); break;
    case K_BCAST:
        out[0] = rank == root ? iter : -1;
        MPI_Bcast(out, n, MPI_DOUBLE, root, comm);
        bad += out[0] != iter;
        break;
    case K_ALLREDUCE:
        in[0] = rank;
        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm);
        bad += out[0] != rsum;
        break;
    case K_REDUCE:
        in[0] = rank;
        MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, root, comm);
        bad += rank == root && out[0] != rsum;
        break;
    case K_ALLGATHER:
        in[0] = rank;
        MPI_Allgather(in, n, MPI_DOUBLE, out, n, MPI_DOUBLE, comm);
        bad += out[(size_t)(P - 1) * n] != P - 1;
        break;
    case K_RS_BLOCK:
        for (int r = 0; r < P; r++) in[(size_t)r * n] = rank + r;
        MPI_Reduce_scatter_block(in, out, n, MPI_DOUBLE, MPI_SUM, comm);
        bad += out[0] != rsum + (double)P * rank;
        break;
    default:
        for (int r = 0; r < P; r++) {
            rcounts[r] = n;
            in[(size_t)r * n] = rank + r;
        }
        MPI_Reduce_scatter(in, out, rcounts, MPI_DOUBLE, MPI_SUM, comm);
        bad += out[0] != rsum + (double)P * rank;
        break;
    }
    return bad;
}

static long one_cycle(int c, int rank, int P)
{
    MPI_Comm comm;
    if (c % 2) comm = mt_reversed_comm(MPI_COMM_WORLD);
    else MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int crank;
    MPI_Comm_rank(comm, &crank);
    double x = 1.0 + crank, s = 0;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, comm);
    long v[4] = { rank, c, 1, (long)rank * c }, t[4];
    MPI_Allreduce(v, t, 4, MPI_LONG, MPI_SUM, comm);
    MPI_Comm_free(&comm);
    long rs = (long)P * (P - 1) / 2;
    return (s != 0.5 * P * (P + 1)) + (t[0] != rs || t[1] != (long)c * P || t[2] != P ||
                                       t[3] != rs * c);
}

int main(int argc, char **argv)
{
    int cycles = argc > 1 ? atoi(argv[1]) : 1000;
    const char *mode = argc > 2 ? argv[2] : "preconnect";
    int first_need = 0 == strcmp(mode, "first_need");
    int lazy = first_need || 0 == strcmp(mode, "lazy");
    int provided;
    MPI_Init(&argc, &argv);
    /* before anything that could run a collective */
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (cycles < 10 || (!lazy && 0 != strcmp(mode, "preconnect"))) {
        if (0 == rank) fprintf(stderr, "usage: mpi_comm_cost CYCLES>=10 [preconnect|lazy|first_need]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int idx, count;
    if (MPI_SUCCESS != MPI_T_pvar_session_create(&session)) die("MPI_T_pvar_session_create failed");
    if (MPI_SUCCESS != MPI_T_pvar_get_index("coll_braid_endpoints", MPI_T_PVAR_CLASS_LEVEL, &idx))
        die("no MPI_T variable coll_braid_endpoints (braid not loaded?)");
    if (MPI_SUCCESS != MPI_T_pvar_handle_alloc(session, idx, NULL, &ep_handle, &count))
        die("MPI_T_pvar_handle_alloc failed");
    int verbose = braid_verbose();
    in = calloc((size_t)P * BIG_COUNT, sizeof(double));
    out = calloc((size_t)P * BIG_COUNT, sizeof(double));
    rcounts = calloc((size_t)P, sizeof(int));
    if (!in || !out || !rcounts) die("out of memory");

    /* endpoints made in MPI_Init, and the program's first collective */
    unsigned long long e_init = endpoints();
    p2p_barrier(rank, P);
    double t0 = now_us();
    long bad = call(K_ALLREDUCE, MPI_COMM_WORLD, 1, 0);
    double first_us = now_us() - t0;
    unsigned long long e_first = endpoints();
    if (first_need) {
        mt_check(0 == e_init, "first_need: %llu endpoints after MPI_Init, expected none", e_init);
        mt_check(0 == e_first, "first_need: the first allreduce made %llu endpoint(s)", e_first);
    } else if (lazy) {
        mt_check(0 == e_init, "lazy: %llu endpoints after MPI_Init, expected none", e_init);
        mt_check(e_first >= 1 && e_first <= (unsigned long long)P - 1,
                 "lazy: %llu endpoints after the first allreduce, expected 1..%d", e_first, P - 1);
    } else {
        mt_check((unsigned long long)P - 1 == e_init,
                 "preconnect: %llu endpoints after MPI_Init, expected P-1 = %d", e_init, P - 1);
        mt_check(e_first == e_init, "preconnect: the first allreduce made %llu endpoint(s)",
                 e_first - e_init);
    }
    double t1 = now_us();
    for (int i = 0; i < 100; i++) bad += call(K_ALLREDUCE, MPI_COMM_WORLD, 1, i);
    double steady_us = (now_us() - t1) / 100;
    if (first_need)
        mt_check(0 == endpoints(), "first_need: 8-byte allreduces made %llu endpoint(s)", endpoints());

    /* every collective on a fresh communicator: values, then no allocation per call */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int check_allocs = WRAPPED && !(0 == rank && verbose >= 20);
    for (int size = 0; size < 2; size++) {
        int n = size ? BIG_COUNT : 1;
        for (int k = 0; k < K_N; k++) {
            for (int i = 0; i < 20; i++) bad += call(k, comm, n, i);
            unsigned long long a0 = allocs();
            for (int i = 0; i < STEADY; i++) bad += call(k, comm, n, i);
            unsigned long long a = allocs() - a0;
            if (check_allocs)
                mt_check(a <= STEADY / 50, "%s of %zu bytes: %llu allocations in %d calls",
                         kind_name[k], (size_t)n * sizeof(double), a, STEADY);
        }
    }
    MPI_Comm_free(&comm);
    unsigned long long e_calls = endpoints();
    if (!lazy) mt_check(e_calls == e_init, "preconnect: collectives made %llu endpoint(s)",
                        e_calls - e_init);

    /* communicator cycles */
    int warm = cycles / 5 > 100 ? cycles / 5 : cycles / 2;
    long rss_warm = -1, rss_peak = -1;
    unsigned long long e_warm = 0;
    double tc = 0;
    for (int c = 0; c < cycles; c++) {
        if (c == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            rss_warm = vmrss_kb();
            e_warm = endpoints();
            tc = now_us();
        }
        bad += one_cycle(c, rank, P);
        if (c > warm && 0 == c % 100) {
            long r = vmrss_kb();
            if (r > rss_peak) rss_peak = r;
        }
    }
    double cycle_us = (now_us() - tc) / (cycles - warm);
    long rss_end = vmrss_kb();
    if (rss_end > rss_peak) rss_peak = rss_end;
    unsigned long long e_end = endpoints();
    mt_check(0 == bad, "%ld wrong values", bad);
    mt_check(e_end == e_warm, "endpoints grew from %llu to %llu over %d cycles", e_warm, e_end,
             cycles - warm);
    mt_check(e_end <= (unsigned long long)P - 1, "%llu endpoints, more than P-1 = %d", e_end, P - 1);
    if (!lazy) mt_check(e_end == e_init, "preconnect: %llu endpoints at the end, %llu after MPI_Init",
                        e_end, e_init);
    mt_check(!WRAPPED || (rss_warm > 0 && rss_peak - rss_warm <= RSS_BOUND_KB),
             "VmRSS grew from %ld KiB to %ld KiB over %d cycles (bound %d KiB)", rss_warm, rss_peak,
             cycles - warm, RSS_BOUND_KB);
    if (0 == rank)
        printf("mpi_comm_cost: %s, np=%d: endpoints %llu after MPI_Init, %llu at the end; first "
               "allreduce %.1f us, then %.2f us per call; %d cycles, %.1f us per cycle; VmRSS "
               "%ld KiB after warm-up, peak %ld KiB (+%ld); %ld wrong; allocations %s\n",
               mode, P, e_init, e_end, first_us, steady_us, cycles, cycle_us, rss_warm, rss_peak,
               rss_peak - rss_warm, bad,
               !WRAPPED ? "not counted (ASan)" : check_allocs ? "checked" : "not checked on rank 0 (trace)");
    MPI_T_pvar_handle_free(session, &ep_handle);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    free(in);
    free(out);
    free(rcounts);
    return mt_finish("mpi_comm_cost");
}
