/*
 * libbraidprof.c - a profile of an MPI job's collectives through the PMPI
 * interface: preloaded into any Open MPI job, braid's or not, so that a
 * run under braid and a run under tuned (--mca coll ^braid) give the same
 * table.
 *
 *   mpirun -np 2 -x LD_PRELOAD=$BUILD/contrib/profile/libbraidprof.so ./app
 *   ... -x BRAIDPROF_OUT=prof.csv            also write the table as CSV
 *   ... -x BRAIDPROF_ALGORITHMS=1            also braid's algorithm per call
 *
 * What it counts. The blocking, nonblocking (MPI_I*) and persistent
 * (MPI_*_init, MPIX_*_init on Open MPI 4.1) forms of barrier, bcast,
 * reduce, allreduce, reduce_scatter, reduce_scatter_block, allgather(v),
 * alltoall(v), gather(v), scatter(v), scan and exscan, each form a row of
 * its own (allreduce, iallreduce, allreduce_init), by size class of the
 * call's bytes: <=64B, <=1KiB, <=16KiB, <=256KiB, <=4MiB, >4MiB. Per row:
 *   calls   summed over the ranks (a persistent request counts its starts)
 *   bytes   summed over the ranks; a call's bytes are count x type size
 *           of its count argument: the whole buffer of bcast, reduce,
 *           allreduce, scan and exscan, the input vector of
 *           reduce_scatter(_block), a rank's block of allgather, gather,
 *           scatter and alltoall (sendcount; recvcount in place), the mean
 *           block of allgatherv and alltoallv, a rank's own block of
 *           gatherv and scatterv. The same sizes braid selects by (its
 *           trace's bytes=); braid_bench's S is P times the block.
 *   time    the slowest rank's sum of the time inside the calls, and the
 *           slowest rank's mean per call, in us. A nonblocking call's time
 *           is its post plus the MPI_Wait/Test calls that wait for it (a
 *           Waitall's share: its time times tracked/n requests, split
 *           evenly); a persistent request's, its init, starts and waits.
 *   after   for blocking calls, the part of that time after the last rank
 *           of the communicator had entered the call (the slowest rank's
 *           sum; "arrival" below): what a collective component can
 *           shorten. The rest is waiting for the other ranks to arrive.
 * At MPI_Finalize the ranks reduce the table on MPI_COMM_WORLD
 * (PMPI_Reduce) and rank 0 prints it to stderr, lines headed
 * "braidprof:", with a total line (the slowest rank's time in all
 * collectives) and, with BRAIDPROF_OUT, writes it as CSV: a comment line
 * naming the command, then
 *   collective,size_class,calls,bytes,time_sum_max_rank_us,time_per_call_us,
 *   component,algorithms,not_braid,one_rank,after_arrival_max_rank_us
 * component: braid when mca_coll_braid.so is loaded in the process, else
 * tuned when mca_coll_tuned.so is or libmpi holds tuned, else "other".
 *
 * BRAIDPROF_ALGORITHMS=1: which algorithm braid ran for each call
 * (algorithms: "shm:8 recursive_doubling:2"), how many calls on a
 * communicator of several ranks it did not run (not_braid: given to
 * the previous component, or a communicator braid declined) and how many
 * were on a one-rank communicator (one_rank: braid takes none; Open MPI's
 * self component runs them); calls of 0 bytes, which braid completes
 * without running anything, are in neither. braid has no counter for these; its
 * trace (coll_braid_verbose >= 20) prints one line per call it runs, on
 * rank 0 of the communicator: "braid: iallreduce ring np=4 bytes=8". The
 * library turns the trace on (OMPI_MCA_coll_braid_verbose=20 unless set
 * higher) and points Open MPI's diagnostic output at a temporary file
 * (OPAL_OUTPUT_STDERR_FD, read by opal_output_init inside MPI_Init); after
 * every collective it reads what the call wrote: a trace line names the
 * call's algorithm, a call on a communicator's rank 0 without one was not
 * braid's (a nonblocking or persistent call's line may come later: it
 * waits in a queue for the next line of its name; a line no call waits
 * for is a collective braid ran inside another MPI call, such as the
 * allreduce of communicator set-up: a line of its own, and a row with
 * size_class "inside_mpi" and no calls in the CSV). Lines that are not the
 * trace go on to stderr, late (at the end of the next collective); braid's
 * informational lines the raised verbosity adds are dropped. This mode
 * costs what the trace costs (a formatted line and a write per call) and
 * is for a separate run, not a timed one.
 *
 * Arrival (BRAIDPROF_ARRIVAL=0 turns it off). Each blocking call's entry
 * and exit stamps, on a clock the processes of one node share (the time
 * stamp counter where the kernel trusts it across cores, tsc_reliable,
 * else CLOCK_MONOTONIC), are kept (32 bytes a call, up to 2^20 calls a rank) with
 * the call's number on its communicator. A communicator's id is agreed
 * at its first blocking call: its rank 0 names it and tells the others
 * with one PMPI_Bcast (outside the timed call; the one extra call the
 * profile makes on an application's communicator). At MPI_Finalize rank 0
 * gathers the records; per call, the last rank's entry splits each rank's
 * time into waiting (before it) and the rest ("after", 0 for a rank that
 * left before the last one came). Not measured, and said so, when the
 * ranks are on several nodes or a rank made more calls than it keeps.
 * Intercommunicators' calls are not split.
 *
 * Overhead: two clock reads (ticks()) and a few adds per call, and
 * a lookup in MPI_Wait/Test while a collective request is outstanding;
 * the arrival stamps add a store per blocking call, an attribute lookup
 * when the communicator differs from the last call's, and two clock reads
 * where the stamp counter is not shared (contrib/profile/overhead.sh). C
 * programs (and C++, Python); Fortran's bindings are not wrapped.
 * Threads: with MPI_THREAD_MULTIPLE the counters are atomic and the
 * request table locked.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <dlfcn.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the persistent initialisers: MPI-4's names (Open MPI 5.0, whose
 * MPI_VERSION is still 3), or Open MPI 4.1's pcollreq extension */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define PROF_PERSISTENT 1
#define PINIT(x)        MPI_##x##_init
#define PPINIT(x)       PMPI_##x##_init
#else
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PROF_PERSISTENT 1
#define PINIT(x)        MPIX_##x##_init
#define PPINIT(x)       PMPIX_##x##_init
#else
#define PROF_PERSISTENT 0
#endif
#endif

#define EXPORT __attribute__((visibility("default")))

enum {
    BARRIER,
    BCAST,
    REDUCE,
    ALLREDUCE,
    REDUCE_SCATTER,
    REDUCE_SCATTER_BLOCK,
    ALLGATHER,
    ALLGATHERV,
    ALLTOALL,
    ALLTOALLV,
    GATHER,
    GATHERV,
    SCATTER,
    SCATTERV,
    SCAN,
    EXSCAN,
    NCOLL
};
static const char *const coll_name[NCOLL] = {
    "barrier",   "bcast",      "reduce",   "allreduce", "reduce_scatter", "reduce_scatter_block",
    "allgather", "allgatherv", "alltoall", "alltoallv", "gather",         "gatherv",
    "scatter",   "scatterv",   "scan",     "exscan"
};
enum { BLOCKING, NONBLOCKING, PERSISTENT, NFORM };
enum { NCLASS = 6 };
static const char *const class_name[NCLASS] = { "<=64B",    "<=1KiB", "<=16KiB",
                                                "<=256KiB", "<=4MiB", ">4MiB" };
#define MAXALG 32 /* distinct algorithm names the census keeps */
#define NSLOT  (NFORM * NCOLL * NCLASS)
/* after the rows, one slot per collective and form for what braid ran
 * inside other MPI calls (census): Open MPI's communicator set-up runs
 * allreduce on the parent communicator */
#define NINNER (NFORM * NCOLL)

typedef struct slot {
    uint64_t calls, bytes, ns;
    uint64_t once;   /* calls on a communicator's rank 0 (census) */
    uint64_t handed; /* of those, calls braid did not run (census) */
    uint64_t single; /* calls on a one-rank communicator (census; braid takes none) */
    uint64_t alg[MAXALG];
} slot_t;

static struct {
    int inited, finalized, atomic, rank, size;
    int census, swallow;  /* BRAIDPROF_ALGORITHMS; drop braid's info lines */
    int heard;            /* a line of braid's was read (census) */
    int trace_fd, out_fd; /* the file Open MPI's diagnostics go to; where they go on */
    off_t trace_off;
    uint64_t outstanding; /* collective requests in the table */
    const char *out_path;
    char *algs[MAXALG];
    int nalgs;
    slot_t tab[NSLOT + NINNER];
} P = { .trace_fd = -1, .out_fd = 2 };

static inline int slot_index(int form, int coll, int cls)
{
    return (form * NCOLL + coll) * NCLASS + cls;
}

static inline int class_of(uint64_t b)
{
    return b <= 64 ? 0 : b <= 1024 ? 1 : b <= 16384 ? 2 : b <= 262144 ? 3 : b <= 4194304 ? 4 : 5;
}

static inline uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The clock of the calls: the time stamp counter where it runs at a
 * constant rate through every state (x86 with constant_tsc and
 * nonstop_tsc: about 10 ns a read against clock_gettime's 25 on a KVM
 * guest), converted to ns at the report by the rate measured over the run
 * against CLOCK_MONOTONIC; else clock_gettime. BRAIDPROF_CLOCK=gettime
 * chooses clock_gettime. */
static int use_tsc;
static uint64_t tsc_start, ns_start;

static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (use_tsc) return __rdtsc();
#endif
    return now_ns();
}

static void clock_open(void)
{
#if defined(__x86_64__) || defined(__i386__)
    const char *c = getenv("BRAIDPROF_CLOCK");
    char line[4096];
    int constant = 0, nonstop = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof(line), f)) {
        if (0 != strncmp(line, "flags", 5)) continue;
        constant = NULL != strstr(line, " constant_tsc");
        nonstop = NULL != strstr(line, " nonstop_tsc");
        break;
    }
    if (f) fclose(f);
    use_tsc = constant && nonstop && !(c && 0 == strcmp(c, "gettime"));
#endif
    ns_start = now_ns();
    tsc_start = ticks();
}

/* ns per tick over the run so far */
static double clock_rate(void)
{
    if (!use_tsc) return 1.0;
    uint64_t ns = now_ns() - ns_start, t = ticks() - tsc_start;
    return t > 0 && ns > 0 ? (double)ns / (double)t : 1.0;
}

static inline void add(uint64_t *x, uint64_t v)
{
    if (P.atomic)
        __atomic_fetch_add(x, v, __ATOMIC_RELAXED);
    else
        *x += v;
}

static inline uint64_t tsize(MPI_Datatype t, int count)
{
    int s = 0;
    if (count <= 0 || MPI_DATATYPE_NULL == t || MPI_SUCCESS != PMPI_Type_size(t, &s) || s < 0)
        return 0;
    return (uint64_t)count * (uint64_t)s;
}

static uint64_t sum_counts(const int *c, int n)
{
    uint64_t s = 0;
    for (int i = 0; c && i < n; i++) s += c[i] > 0 ? (uint64_t)c[i] : 0;
    return s;
}

static int comm_size(MPI_Comm c)
{
    int n = 1;
    (void)PMPI_Comm_size(c, &n);
    return n > 0 ? n : 1;
}

static int comm_rank(MPI_Comm c)
{
    int r = 0;
    (void)PMPI_Comm_rank(c, &r);
    return r;
}

/* ------------------------------------------------------------------ */
/* the census: braid's trace, read back after each call                */
/* ------------------------------------------------------------------ */

/* calls posted on a communicator's rank 0 whose trace line has not come
 * yet (nonblocking and persistent): the next line of their name is theirs */
#define PENDING 1024
static struct {
    int form, coll, slot;
} pending[PENDING];
static int npending;

static int alg_id(const char *name)
{
    for (int i = 0; i < P.nalgs; i++)
        if (0 == strcmp(P.algs[i], name)) return i;
    if (P.nalgs == MAXALG) return MAXALG - 1; /* the last keeps the rest */
    P.algs[P.nalgs] = strdup(name);
    return P.algs[P.nalgs] ? P.nalgs++ : MAXALG - 1;
}

/* braid's name of a call: reduce_scatter_block is its reduce_scatter */
static int braid_coll(int coll) { return REDUCE_SCATTER_BLOCK == coll ? REDUCE_SCATTER : coll; }

/* "iallreduce" -> NONBLOCKING, ALLREDUCE; -1 when not a collective */
static int parse_call(const char *name, int *form)
{
    char base[48];
    size_t n = strlen(name);
    *form = BLOCKING;
    if (n >= sizeof(base)) return -1;
    strcpy(base, name);
    if (n > 5 && 0 == strcmp(base + n - 5, "_init")) {
        base[n - 5] = '\0';
        *form = PERSISTENT;
    } else if ('i' == base[0]) {
        memmove(base, base + 1, n);
        *form = NONBLOCKING;
    }
    for (int c = 0; c < NCOLL; c++)
        if (0 == strcmp(base, coll_name[c]) && c != REDUCE_SCATTER_BLOCK) return c;
    return -1;
}

static void forward(const char *line, size_t n)
{
    while (n > 0) {
        ssize_t w = write(P.out_fd, line, n);
        if (w <= 0) return;
        line += w;
        n -= (size_t)w;
    }
}

/* One line of Open MPI's diagnostics: braid's trace is counted (for the
 * current call `cur`, a slot index, or -1); 1: the line goes on to stderr */
static int take_line(const char *line, int cur, int cur_form, int cur_coll, int *matched)
{
    const char *b = strstr(line, "braid: ");
    char name[48], alg[48];
    int np, form;
    unsigned long long bytes;
    if (NULL == b) return 1;
    P.heard = 1;
    if (4 == sscanf(b + 7, "%47s %47s np=%d bytes=%llu", name, alg, &np, &bytes)) {
        int coll = parse_call(name, &form);
        if (coll >= 0) {
            int a = alg_id(alg), s = -1;
            if (cur >= 0 && !*matched && form == cur_form && coll == braid_coll(cur_coll)) {
                s = cur;
                *matched = 1;
            } else {
                for (int i = 0; i < npending; i++)
                    if (pending[i].form == form && pending[i].coll == coll) {
                        s = pending[i].slot;
                        memmove(&pending[i], &pending[i + 1],
                                (size_t)(npending - i - 1) * sizeof(pending[0]));
                        npending--;
                        break;
                    }
                /* a line no call here waits for: a collective braid ran
                 * inside another MPI call */
                if (s < 0) s = NSLOT + form * NCOLL + coll;
            }
            add(&P.tab[s].alg[a], 1);
            return !P.swallow;
        }
    }
    /* braid's other lines: what the raised verbosity adds is dropped,
     * warnings and errors go on */
    return !P.swallow || strstr(b, "WARNING") || strstr(b, "rror") || strstr(b, "fail");
}

/* Read what was written to the diagnostics file since the last look. */
static void drain(int cur, int cur_form, int cur_coll, int *matched)
{
    static char buf[65536];
    static size_t have;
    for (;;) {
        ssize_t r = pread(P.trace_fd, buf + have, sizeof(buf) - 1 - have, P.trace_off);
        if (r <= 0) break;
        P.trace_off += r;
        have += (size_t)r;
        size_t start = 0;
        for (size_t i = 0; i < have; i++)
            if ('\n' == buf[i]) {
                buf[i] = '\0';
                int keep = take_line(buf + start, cur, cur_form, cur_coll, matched);
                buf[i] = '\n';
                if (keep) forward(buf + start, i + 1 - start);
                start = i + 1;
            }
        /* a line longer than the buffer goes on as it is */
        if (0 == start && have == sizeof(buf) - 1) {
            forward(buf, have);
            have = 0;
            continue;
        }
        memmove(buf, buf + start, have - start);
        have -= start;
    }
}

/* the census's state is one thread's at a time (MPI_THREAD_MULTIPLE) */
static int census_lock;

static void spin_lock(int *l)
{
    if (P.atomic)
        while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {}
}

static void spin_unlock(int *l)
{
    if (P.atomic) __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* a call that waits for its line in the queue (full: not braid's) */
static void wait_for_line(int form, int coll, int s)
{
    if (npending == PENDING) {
        add(&P.tab[s].handed, 1);
        return;
    }
    pending[npending].form = form;
    pending[npending].coll = braid_coll(coll);
    pending[npending].slot = s;
    npending++;
}

/* Before a call (where: census_where of its communicator, or 0). Under
 * MPI_THREAD_MULTIPLE another thread's call may print its line while
 * this one runs, or this one's line reach another thread's reading: each
 * call on a communicator's rank 0 waits in the queue from its start, and
 * every line takes the oldest call of its name there. */
static void census_before(int form, int coll, int s, uint64_t bytes, int where)
{
    int m = 0;
    spin_lock(&census_lock);
    drain(-1, 0, 0, &m);
    if (P.atomic && 1 == where && (bytes || BARRIER == coll)) wait_for_line(form, coll, s);
    spin_unlock(&census_lock);
}

/* where a call stands for the census: 0 this process is not its
 * communicator's rank 0, 1 it is, 2 the communicator has one rank */
static int census_where(MPI_Comm c) { return 0 != comm_rank(c) ? 0 : 1 == comm_size(c) ? 2 : 1; }

/* after a call (rank0: census_where of its communicator) */
static void census_after(int form, int coll, int s, uint64_t bytes, int rank0)
{
    int matched = 0;
    spin_lock(&census_lock);
    if (P.atomic)
        drain(-1, 0, 0, &matched);
    else
        drain(s, form, coll, &matched);
    if (rank0) {
        add(&P.tab[s].once, 1);
        if (matched || (0 == bytes && BARRIER != coll)) {
        } else if (2 == rank0) {
            add(&P.tab[s].single, 1);
        } else if (P.atomic) {
            /* in the queue since census_before */
        } else if (BLOCKING == form) {
            add(&P.tab[s].handed, 1);
        } else {
            wait_for_line(form, coll, s);
        }
    }
    spin_unlock(&census_lock);
}

static void census_open(void)
{
    const char *v = getenv("OMPI_MCA_coll_braid_verbose");
    if (NULL == v || atoi(v) < 20) {
        setenv("OMPI_MCA_coll_braid_verbose", "20", 1);
        P.swallow = 1;
    }
    const char *fd = getenv("OPAL_OUTPUT_STDERR_FD");
    if (fd && atoi(fd) > 0) P.out_fd = atoi(fd);
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/braidprof-XXXXXX", dir && *dir ? dir : "/tmp");
    P.trace_fd = mkstemp(path);
    if (P.trace_fd < 0) {
        P.census = 0;
        return;
    }
    unlink(path);
    char num[16];
    snprintf(num, sizeof(num), "%d", P.trace_fd);
    setenv("OPAL_OUTPUT_STDERR_FD", num, 1);
}

static void census_flush_at_exit(void)
{
    int m = 0;
    if (P.trace_fd >= 0) drain(-1, 0, 0, &m);
}

/* ------------------------------------------------------------------ */
/* start, and the accounting of a call                                 */
/* ------------------------------------------------------------------ */
/* arrival: a blocking call's time after the last rank came            */
/* ------------------------------------------------------------------ */

#define NBLOCK        (NCOLL * NCLASS) /* the blocking rows: form 0's slots */
#define ARRIVALS_KEPT (1u << 20)

typedef struct arrival {
    uint64_t comm, t_in, t_out; /* stamps: ticks(), or CLOCK_MONOTONIC ns (A.tsc 0) */
    uint32_t seq, slot;         /* slot: at the report, | source rank << 16 */
} arrival_t;

typedef struct comm_tag {
    uint64_t id; /* 0: not split (an intercommunicator) */
    uint32_t seq;
} comm_tag_t;

static struct {
    int on, full, lock, keyval;
    int tsc;        /* the stamps are ticks(): a stamp counter all cores share */
    MPI_Comm last;  /* the communicator of the last call and its tag (one thread) */
    comm_tag_t *last_tag;
    uint64_t named; /* communicators this rank has named */
    arrival_t *rec;
    size_t n, cap;
} A = { .keyval = MPI_KEYVAL_INVALID };

static int tag_delete(MPI_Comm c, int k, void *v, void *x)
{
    (void)c, (void)k, (void)x;
    if (v == A.last_tag) A.last_tag = NULL;
    free(v);
    return MPI_SUCCESS;
}

/* Is the stamp counter one clock for every core? The kernel says so with
 * tsc_reliable, or by running its clock on it. */
static int tsc_shared(void)
{
    char line[4096], cs[64] = "";
    int reliable = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof(line), f))
        if (0 == strncmp(line, "flags", 5)) {
            reliable = NULL != strstr(line, " tsc_reliable");
            break;
        }
    if (f) fclose(f);
    f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f && fgets(cs, sizeof(cs), f)) reliable |= 0 == strncmp(cs, "tsc", 3);
    if (f) fclose(f);
    return reliable;
}

static void arrival_open(void)
{
    const char *e = getenv("BRAIDPROF_ARRIVAL");
    A.on = !(e && 0 == atoi(e));
    /* not inherited by a dup: each communicator is named at its own first call */
    if (A.on && MPI_SUCCESS != PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, tag_delete,
                                                       &A.keyval, NULL))
        A.on = 0;
    A.tsc = use_tsc && tsc_shared();
}

/* The communicator's tag. Its first blocking call is the same call on
 * every rank (MPI orders a communicator's collectives alike), so the
 * bcast that names it lines up. */
static comm_tag_t *comm_tag(MPI_Comm c)
{
    void *v = NULL;
    int flag = 0, inter = 0;
    /* (a freed communicator's handle may come back: its tag's deletion
     * forgets it) */
    if (!P.atomic && A.last_tag && c == A.last) return A.last_tag;
    if (MPI_SUCCESS == PMPI_Comm_get_attr(c, A.keyval, &v, &flag) && flag) {
        A.last = c;
        A.last_tag = P.atomic ? NULL : v;
        return v;
    }
    comm_tag_t *t = calloc(1, sizeof(*t));
    if (!t) return NULL;
    (void)PMPI_Comm_test_inter(c, &inter);
    if (!inter) {
        uint64_t k = __atomic_add_fetch(&A.named, 1, __ATOMIC_RELAXED);
        t->id = (uint64_t)(uint32_t)P.rank << 32 | (uint32_t)k;
        if (comm_size(c) > 1) (void)PMPI_Bcast(&t->id, 1, MPI_UINT64_T, 0, c);
    }
    if (MPI_SUCCESS != PMPI_Comm_set_attr(c, A.keyval, t)) {
        free(t);
        return NULL;
    }
    return t;
}

static void arrival_add(comm_tag_t *t, int slot, uint64_t t_in, uint64_t t_out)
{
    if (P.atomic) spin_lock(&A.lock);
    uint32_t seq = t->seq++;
    if (A.n == A.cap && !A.full) {
        size_t cap = A.cap ? 2 * A.cap : 4096;
        arrival_t *r = cap <= ARRIVALS_KEPT ? realloc(A.rec, cap * sizeof(*r)) : NULL;
        if (r) {
            A.rec = r;
            A.cap = cap;
        } else {
            A.full = 1;
        }
    }
    if (A.n < A.cap && !A.full)
        A.rec[A.n++] = (arrival_t){ t->id, t_in, t_out, seq, (uint32_t)slot };
    if (P.atomic) spin_unlock(&A.lock);
}

static int by_call(const void *a, const void *b)
{
    const arrival_t *x = a, *y = b;
    if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The slowest rank's time after the last arrival, per blocking row and
 * in all ([NBLOCK]), in ns (rate: ns per tick), on rank 0; NULL when
 * measured, else why not. */
static const char *arrival_report(uint64_t *after, double rate)
{
    int bad[2] = { !A.on, A.full }, any[2], shared = 0;
    MPI_Comm node;
    if (A.on && MPI_SUCCESS == PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                                                     MPI_INFO_NULL, &node)) {
        shared = comm_size(node);
        (void)PMPI_Comm_free(&node);
    }
    bad[0] |= shared != P.size;
    (void)PMPI_Allreduce(bad, any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any[0] || any[1]) {
        free(A.rec);
        A.rec = NULL;
        return !A.on ? "off (BRAIDPROF_ARRIVAL=0)"
               : any[1] ? "not measured: a rank made more blocking calls than it keeps"
                        : "not measured: the ranks are on more than one node";
    }
    int n = (int)A.n, *counts = NULL, *displs = NULL, total = 0;
    MPI_Datatype rec_t;
    (void)PMPI_Type_contiguous((int)sizeof(arrival_t), MPI_BYTE, &rec_t);
    (void)PMPI_Type_commit(&rec_t);
    arrival_t *all = NULL;
    uint64_t *sum = NULL;
    if (0 == P.rank) {
        counts = calloc((size_t)P.size, sizeof(int));
        displs = calloc((size_t)P.size, sizeof(int));
    }
    (void)PMPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (0 == P.rank) {
        for (int r = 0; r < P.size; r++) {
            displs[r] = total;
            total += counts[r];
        }
        all = malloc((size_t)(total ? total : 1) * sizeof(*all));
        sum = calloc((size_t)P.size * (NBLOCK + 1), sizeof(*sum));
    }
    (void)PMPI_Gatherv(A.rec, n, rec_t, all, counts, displs, rec_t, 0, MPI_COMM_WORLD);
    (void)PMPI_Type_free(&rec_t);
    free(A.rec);
    A.rec = NULL;
    if (0 != P.rank) return NULL;
    for (int r = 0; r < P.size; r++)
        for (int i = displs[r]; i < displs[r] + counts[r]; i++) all[i].slot |= (uint32_t)r << 16;
    qsort(all, (size_t)total, sizeof(*all), by_call);
    for (int i = 0, j; i < total; i = j) {
        uint64_t last = 0;
        for (j = i; j < total && all[j].comm == all[i].comm && all[j].seq == all[i].seq; j++)
            last = all[j].t_in > last ? all[j].t_in : last;
        for (int k = i; k < j; k++) {
            uint64_t a = all[k].t_out > last ? all[k].t_out - last : 0;
            uint64_t *mine = sum + (size_t)(all[k].slot >> 16) * (NBLOCK + 1);
            mine[all[k].slot & 0xffff] += a;
            mine[NBLOCK] += a;
        }
    }
    memset(after, 0, (NBLOCK + 1) * sizeof(*after));
    for (int r = 0; r < P.size; r++)
        for (int s = 0; s <= NBLOCK; s++) {
            uint64_t v = (uint64_t)((double)sum[(size_t)r * (NBLOCK + 1) + s] * (A.tsc ? rate : 1.0));
            after[s] = v > after[s] ? v : after[s];
        }
    free(all);
    free(sum);
    free(counts);
    free(displs);
    return NULL;
}

/* ------------------------------------------------------------------ */

static void prof_open(void)
{
    if (P.inited) return;
    P.inited = 1;
    clock_open();
    P.out_path = getenv("BRAIDPROF_OUT");
    const char *c = getenv("BRAIDPROF_ALGORITHMS");
    P.census = c && atoi(c) > 0;
    if (P.census) {
        census_open();
        atexit(census_flush_at_exit);
    }
}

static const char *component(void);

static void prof_started(int provided)
{
    P.atomic = MPI_THREAD_MULTIPLE == provided;
    (void)PMPI_Comm_rank(MPI_COMM_WORLD, &P.rank);
    (void)PMPI_Comm_size(MPI_COMM_WORLD, &P.size);
    arrival_open();
    if (!P.census) return;
    int m = 0;
    drain(-1, 0, 0, &m);
    /* braid at verbosity 20 says in MPI_Init whether it took
     * MPI_COMM_WORLD: nothing read means its output went elsewhere (an
     * Open MPI that ignores OPAL_OUTPUT_STDERR_FD), and no algorithm can
     * be told */
    if (!P.heard && 0 == strcmp(component(), "braid")) {
        if (0 == P.rank)
            fprintf(stderr, "braidprof: braid's trace cannot be read here (Open MPI's output "
                            "does not follow OPAL_OUTPUT_STDERR_FD): no algorithms\n");
        P.census = 0;
    }
}

static inline void account(int s, uint64_t bytes, uint64_t ns)
{
    add(&P.tab[s].calls, 1);
    add(&P.tab[s].bytes, bytes);
    add(&P.tab[s].ns, ns);
}

/* A blocking call or a post: time it and count it. */
#define PROFILE(form, coll, bytes_expr, comm, call)                                                \
    do {                                                                                           \
        uint64_t b_ = (bytes_expr);                                                                \
        int s_ = slot_index(form, coll, class_of(b_));                                             \
        int w_ = P.census ? census_where(comm) : 0;                                                \
        if (P.census) census_before(form, coll, s_, b_, w_);                                       \
        comm_tag_t *a_ = A.on ? comm_tag(comm) : NULL;                                             \
        uint64_t in_ = a_ && !A.tsc ? now_ns() : 0;                                                \
        uint64_t t0_ = ticks();                                                                    \
        int rc_ = (call);                                                                          \
        uint64_t t1_ = ticks(), out_ = a_ && !A.tsc ? now_ns() : t1_;                              \
        account(s_, b_, t1_ - t0_);                                                                \
        if (a_ && a_->id) arrival_add(a_, s_, A.tsc ? t0_ : in_, out_);                            \
        if (P.census) census_after(form, coll, s_, b_, w_);                                        \
        return rc_;                                                                                \
    } while (0)

/* ------------------------------------------------------------------ */
/* outstanding collective requests: the table the waits look in        */
/* ------------------------------------------------------------------ */

#define RTAB 4096 /* a power of 2; requests beyond it are not followed */
typedef struct rentry {
    uintptr_t key; /* 0: empty */
    int slot, form, coll;
    int persistent, rank0; /* rank0: census_where of the communicator */
    uint64_t bytes;
} rentry_t;
static rentry_t rtab[RTAB];
static int rlock;

static void lock(void) { spin_lock(&rlock); }

static void unlock(void) { spin_unlock(&rlock); }

static inline uintptr_t rkey(MPI_Request r) { return (uintptr_t)r; }

static inline unsigned rhash(uintptr_t k)
{
    return (unsigned)((k >> 4) * 2654435761u) & (RTAB - 1);
}

static void track(MPI_Request r, int slot, int form, int coll, int persistent, uint64_t bytes,
                  MPI_Comm comm)
{
    int rank0 = P.census ? census_where(comm) : 0;
    uintptr_t k = rkey(r);
    if (0 == k || MPI_REQUEST_NULL == r) return;
    lock();
    if (P.outstanding < RTAB / 2) {
        unsigned h = rhash(k);
        while (rtab[h].key != 0 && rtab[h].key != k) h = (h + 1) & (RTAB - 1);
        if (0 == rtab[h].key) P.outstanding++;
        rtab[h] = (rentry_t){ k, slot, form, coll, persistent, rank0, bytes };
    }
    unlock();
}

/* its entry, copied out (found: 1) */
static int lookup(MPI_Request r, rentry_t *out)
{
    uintptr_t k = rkey(r);
    if (0 == k || MPI_REQUEST_NULL == r) return 0;
    lock();
    unsigned h = rhash(k);
    int found = 0;
    while (rtab[h].key != 0) {
        if (rtab[h].key == k) {
            *out = rtab[h];
            found = 1;
            break;
        }
        h = (h + 1) & (RTAB - 1);
    }
    unlock();
    return found;
}

/* remove a key (linear probing's backward-shift deletion) */
static void untrack(uintptr_t k)
{
    lock();
    unsigned h = rhash(k);
    while (rtab[h].key != 0 && rtab[h].key != k) h = (h + 1) & (RTAB - 1);
    if (rtab[h].key == k) {
        P.outstanding--;
        unsigned i = h, j = h;
        for (;;) {
            j = (j + 1) & (RTAB - 1);
            if (0 == rtab[j].key) break;
            unsigned home = rhash(rtab[j].key);
            /* j's entry may move to i when its home is not in (i, j] */
            if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
                rtab[i] = rtab[j];
                i = j;
            }
        }
        rtab[i].key = 0;
    }
    unlock();
}

/* Waits and tests: at most this many requests of one call are followed */
#define WAITMAX 256

typedef struct waitset {
    int n;            /* tracked requests among the call's */
    int idx[WAITMAX]; /* their positions */
    rentry_t e[WAITMAX];
} waitset_t;

static int gather_tracked(int count, const MPI_Request *reqs, waitset_t *w)
{
    w->n = 0;
    for (int i = 0; i < count && w->n < WAITMAX; i++) {
        if (lookup(reqs[i], &w->e[w->n])) w->idx[w->n++] = i;
    }
    return w->n;
}

/* time dt of a wait or test over `count` requests: the collective ones'
 * share, split evenly over those that `done` says completed, or over all
 * tracked ones (done == NULL); completed non-persistent ones leave */
static void settle(const waitset_t *w, int count, uint64_t dt, const int *done)
{
    int k = 0;
    for (int i = 0; i < w->n; i++) k += !done || done[i];
    /* nothing completed (a test): the time still went to the tracked */
    int none = 0 == k;
    if (none) k = w->n;
    uint64_t share = dt * (uint64_t)w->n / (uint64_t)(count > 0 ? count : 1) / (uint64_t)k;
    for (int i = 0; i < w->n; i++) {
        if (!none && done && !done[i]) continue;
        add(&P.tab[w->e[i].slot].ns, share);
        if (!none && !w->e[i].persistent) untrack(w->e[i].key);
    }
}

/* ------------------------------------------------------------------ */
/* initialisation and the report                                       */
/* ------------------------------------------------------------------ */

EXPORT int MPI_Init(int *argc, char ***argv)
{
    prof_open();
    int rc = PMPI_Init(argc, argv), provided = MPI_THREAD_SINGLE;
    (void)PMPI_Query_thread(&provided);
    prof_started(provided);
    return rc;
}

EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    prof_open();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    prof_started(MPI_SUCCESS == rc ? *provided : MPI_THREAD_SINGLE);
    return rc;
}

static int has_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *want = data;
    return info->dlpi_name && strstr(info->dlpi_name, want) ? 1 : 0;
}

static const char *component(void)
{
    if (dl_iterate_phdr(has_object, (void *)"mca_coll_braid.so")) return "braid";
    if (dl_iterate_phdr(has_object, (void *)"mca_coll_tuned.so")) return "tuned";
    /* an Open MPI whose components are built into libmpi (Debian's 5.0) */
    if (NULL != dlsym(RTLD_DEFAULT, "mca_coll_tuned_component")) return "tuned";
    return "other";
}

static void command(char *buf, size_t len)
{
    FILE *f = fopen("/proc/self/cmdline", "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i + 1 < n; i++)
        if ('\0' == buf[i]) buf[i] = ' ';
    if (0 == n) snprintf(buf, len, "?");
}

/* "recursive_doubling:10 shm:2" */
static void alg_text(const uint64_t *alg, char *const *names, int nalgs, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int a = 0; a < nalgs && o < len; a++)
        if (alg[a])
            o += (size_t)snprintf(buf + o, len - o, "%s%s:%llu", o ? " " : "", names[a],
                                  (unsigned long long)alg[a]);
}

/* Rank 0 gathers each rank's census as text lines "slot name count" and
 * adds them to its own table; the names of rank 0's table come first. */
static void census_gather(slot_t *tab)
{
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    if (!text) return;
    text[0] = '\0';
    for (int s = 0; s < NSLOT + NINNER && P.rank != 0; s++)
        for (int a = 0; a < P.nalgs; a++)
            if (P.tab[s].alg[a]) {
                if (len + 128 > cap) {
                    char *t = realloc(text, cap *= 2);
                    if (!t) break;
                    text = t;
                }
                len += (size_t)snprintf(text + len, cap - len, "%d %s %llu\n", s, P.algs[a],
                                        (unsigned long long)P.tab[s].alg[a]);
            }
    int mine = (int)len, *lens = NULL, *displs = NULL, total = 0;
    char *all = NULL;
    if (0 == P.rank) {
        lens = calloc((size_t)P.size, sizeof(int));
        displs = calloc((size_t)P.size, sizeof(int));
    }
    (void)PMPI_Gather(&mine, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (0 == P.rank && lens && displs) {
        for (int i = 0; i < P.size; i++) {
            displs[i] = total;
            total += lens[i];
        }
        all = malloc((size_t)total + 1);
    }
    (void)PMPI_Gatherv(text, mine, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (0 == P.rank && all) {
        all[total] = '\0';
        for (char *line = strtok(all, "\n"); line; line = strtok(NULL, "\n")) {
            int s;
            char name[64];
            unsigned long long n;
            if (3 == sscanf(line, "%d %63s %llu", &s, name, &n) && s >= 0 && s < NSLOT + NINNER)
                tab[s].alg[alg_id(name)] += n;
        }
    }
    free(all);
    free(lens);
    free(displs);
    free(text);
}

static void report(void)
{
    /* what is still pending was not braid's */
    for (int i = 0; i < npending; i++) add(&P.tab[pending[i].slot].handed, 1);
    npending = 0;
    uint64_t sums[NSLOT][5], rsums[NSLOT][5], ns[NSLOT + 1], rns[NSLOT + 1];
    double mean[NSLOT], rmean[NSLOT], rate = clock_rate();
    ns[NSLOT] = 0;
    for (int s = 0; s < NSLOT; s++) P.tab[s].ns = (uint64_t)((double)P.tab[s].ns * rate);
    for (int s = 0; s < NSLOT; s++) {
        sums[s][0] = P.tab[s].calls;
        sums[s][1] = P.tab[s].bytes;
        sums[s][2] = P.tab[s].once;
        sums[s][3] = P.tab[s].handed;
        sums[s][4] = P.tab[s].single;
        ns[s] = P.tab[s].ns;
        ns[NSLOT] += P.tab[s].ns;
        mean[s] = P.tab[s].calls ? (double)P.tab[s].ns / (double)P.tab[s].calls : 0.0;
    }
    (void)PMPI_Reduce(sums, rsums, NSLOT * 5, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    (void)PMPI_Reduce(ns, rns, NSLOT + 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    (void)PMPI_Reduce(mean, rmean, NSLOT, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    static slot_t tab[NSLOT + NINNER];
    if (P.census) {
        memcpy(tab, P.tab, sizeof(tab));
        census_gather(tab);
    }
    static uint64_t after[NBLOCK + 1];
    const char *no_split = arrival_report(after, rate);
    if (0 != P.rank) return;

    char cmd[2048], algs[1024];
    command(cmd, sizeof(cmd));
    const char *comp = component();
    FILE *csv = NULL;
    if (P.out_path && *P.out_path && NULL == (csv = fopen(P.out_path, "w")))
        fprintf(stderr, "braidprof: cannot write %s\n", P.out_path);
    if (csv) {
        fprintf(csv, "# braidprof: np=%d; component=%s; command: %s\n", P.size, comp, cmd);
        fprintf(csv, "collective,size_class,calls,bytes,time_sum_max_rank_us,time_per_call_us,"
                     "component,algorithms,not_braid,one_rank,after_arrival_max_rank_us\n");
    }
    fprintf(stderr,
            "braidprof: collectives of %s (np=%d, component %s; time: the slowest rank's; "
            "after: its time after the last rank came)\n",
            cmd, P.size, comp);
    if (no_split) fprintf(stderr, "braidprof: after: %s\n", no_split);
    fprintf(stderr, "braidprof: %-24s %-9s %10s %14s %14s %12s %14s%s\n", "collective", "size",
            "calls", "bytes", "time_us", "us_per_call", "after_us",
            P.census ? "  braid's algorithm:calls, calls it did not run" : "");
    uint64_t tcalls = 0, tbytes = 0;
    for (int f = 0; f < NFORM; f++)
        for (int c = 0; c < NCOLL; c++)
            for (int k = 0; k < NCLASS; k++) {
                int s = slot_index(f, c, k);
                if (0 == rsums[s][0]) continue;
                char name[48];
                snprintf(name, sizeof(name), "%s%s%s", NONBLOCKING == f ? "i" : "", coll_name[c],
                         PERSISTENT == f ? "_init" : "");
                tcalls += rsums[s][0];
                tbytes += rsums[s][1];
                algs[0] = '\0';
                if (P.census) alg_text(tab[s].alg, P.algs, P.nalgs, algs, sizeof(algs));
                char aft[32] = "";
                if (!no_split && s < NBLOCK) snprintf(aft, sizeof(aft), "%.1f", after[s] / 1e3);
                fprintf(stderr, "braidprof: %-24s %-9s %10llu %14llu %14.1f %12.2f %14s", name,
                        class_name[k], (unsigned long long)rsums[s][0],
                        (unsigned long long)rsums[s][1], (double)rns[s] / 1e3, rmean[s] / 1e3,
                        aft[0] ? aft : "-");
                if (P.census)
                    fprintf(stderr, "  algs=%s not_braid=%llu one_rank=%llu", algs[0] ? algs : "-",
                            (unsigned long long)rsums[s][3], (unsigned long long)rsums[s][4]);
                fputc('\n', stderr);
                if (csv) {
                    fprintf(csv, "%s,%s,%llu,%llu,%.3f,%.3f,%s,%s,", name, class_name[k],
                            (unsigned long long)rsums[s][0], (unsigned long long)rsums[s][1],
                            (double)rns[s] / 1e3, rmean[s] / 1e3, comp, algs);
                    if (P.census)
                        fprintf(csv, "%llu,%llu,", (unsigned long long)rsums[s][3],
                                (unsigned long long)rsums[s][4]);
                    else
                        fputs(",,", csv);
                    fprintf(csv, "%s\n", aft);
                }
            }
    double per = tcalls ? (double)rns[NSLOT] / 1e3 / ((double)tcalls / P.size) : 0.0;
    char aft[32] = "";
    if (!no_split) snprintf(aft, sizeof(aft), "%.1f", after[NBLOCK] / 1e3);
    fprintf(stderr, "braidprof: %-24s %-9s %10llu %14llu %14.1f %12.2f %14s\n", "total", "all",
            (unsigned long long)tcalls, (unsigned long long)tbytes, (double)rns[NSLOT] / 1e3, per,
            aft[0] ? aft : "-");
    if (csv) {
        fprintf(csv, "total,all,%llu,%llu,%.3f,%.3f,%s,,,,%s\n", (unsigned long long)tcalls,
                (unsigned long long)tbytes, (double)rns[NSLOT] / 1e3, per, comp, aft);
    }
    /* what braid ran that the program did not call: one line, and a row
     * "inside_mpi" per collective in the CSV */
    for (int i = 0; P.census && i < NINNER; i++) {
        alg_text(tab[NSLOT + i].alg, P.algs, P.nalgs, algs, sizeof(algs));
        if (!algs[0]) continue;
        char name[48];
        int f = i / NCOLL, c = i % NCOLL;
        snprintf(name, sizeof(name), "%s%s%s", NONBLOCKING == f ? "i" : "", coll_name[c],
                 PERSISTENT == f ? "_init" : "");
        fprintf(stderr,
                "braidprof: braid also ran, inside other MPI calls (communicator set-up): "
                "%s algs=%s\n",
                name, algs);
        if (csv) fprintf(csv, "%s,inside_mpi,0,0,0,0,%s,%s,0,0,\n", name, comp, algs);
    }
    if (csv) fclose(csv);
}

EXPORT int MPI_Finalize(void)
{
    if (P.inited && !P.finalized) {
        P.finalized = 1;
        int m = 0;
        if (P.census) drain(-1, 0, 0, &m);
        report(); /* (its own calls are PMPI's: not counted) */
        if (P.census) drain(-1, 0, 0, &m);
    }
    int rc = PMPI_Finalize();
    if (P.census) census_flush_at_exit();
    return rc;
}

/* ------------------------------------------------------------------ */
/* blocking collectives                                                */
/* ------------------------------------------------------------------ */

EXPORT int MPI_Barrier(MPI_Comm comm) { PROFILE(BLOCKING, BARRIER, 0, comm, PMPI_Barrier(comm)); }

EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
    PROFILE(BLOCKING, BCAST, tsize(t, count), comm, PMPI_Bcast(buf, count, t, root, comm));
}

EXPORT int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, int root,
                      MPI_Comm comm)
{
    PROFILE(BLOCKING, REDUCE, tsize(t, count), comm, PMPI_Reduce(sb, rb, count, t, op, root, comm));
}

EXPORT int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op,
                         MPI_Comm comm)
{
    PROFILE(BLOCKING, ALLREDUCE, tsize(t, count), comm, PMPI_Allreduce(sb, rb, count, t, op, comm));
}

EXPORT int MPI_Reduce_scatter(const void *sb, void *rb, const int rcounts[], MPI_Datatype t,
                              MPI_Op op, MPI_Comm comm)
{
    PROFILE(BLOCKING, REDUCE_SCATTER, tsize(t, 1) * sum_counts(rcounts, comm_size(comm)), comm,
            PMPI_Reduce_scatter(sb, rb, rcounts, t, op, comm));
}

EXPORT int MPI_Reduce_scatter_block(const void *sb, void *rb, int rcount, MPI_Datatype t, MPI_Op op,
                                    MPI_Comm comm)
{
    PROFILE(BLOCKING, REDUCE_SCATTER_BLOCK, tsize(t, rcount) * (uint64_t)comm_size(comm), comm,
            PMPI_Reduce_scatter_block(sb, rb, rcount, t, op, comm));
}

EXPORT int MPI_Scan(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    PROFILE(BLOCKING, SCAN, tsize(t, count), comm, PMPI_Scan(sb, rb, count, t, op, comm));
}

EXPORT int MPI_Exscan(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    PROFILE(BLOCKING, EXSCAN, tsize(t, count), comm, PMPI_Exscan(sb, rb, count, t, op, comm));
}

/* the size of the block-sized collectives: the send block, or in place
 * the receive block */
#define BLOCK(sb, sc, st, rc, rt) (MPI_IN_PLACE == (sb) ? tsize(rt, rc) : tsize(st, sc))
#define MEANV(counts, t, comm)                                                                     \
    (tsize(t, 1) * sum_counts(counts, comm_size(comm)) / (uint64_t)comm_size(comm))

EXPORT int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                         MPI_Comm comm)
{
    PROFILE(BLOCKING, ALLGATHER, BLOCK(sb, sc, st, rc, rt), comm,
            PMPI_Allgather(sb, sc, st, rb, rc, rt, comm));
}

EXPORT int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[],
                          const int displs[], MPI_Datatype rt, MPI_Comm comm)
{
    PROFILE(BLOCKING, ALLGATHERV, MEANV(rcs, rt, comm), comm,
            PMPI_Allgatherv(sb, sc, st, rb, rcs, displs, rt, comm));
}

EXPORT int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                        MPI_Comm comm)
{
    PROFILE(BLOCKING, ALLTOALL, BLOCK(sb, sc, st, rc, rt), comm,
            PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm));
}

EXPORT int MPI_Alltoallv(const void *sb, const int scs[], const int sds[], MPI_Datatype st,
                         void *rb, const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm comm)
{
    PROFILE(BLOCKING, ALLTOALLV, MPI_IN_PLACE == sb ? MEANV(rcs, rt, comm) : MEANV(scs, st, comm),
            comm, PMPI_Alltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm));
}

EXPORT int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                      int root, MPI_Comm comm)
{
    PROFILE(BLOCKING, GATHER, BLOCK(sb, sc, st, rc, rt), comm,
            PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm));
}

/* gatherv in place: the root's own block of the receive counts */
static uint64_t gatherv_bytes(const void *sb, int sc, MPI_Datatype st, const int rcs[],
                              MPI_Datatype rt, MPI_Comm comm)
{
    return MPI_IN_PLACE == sb && rcs ? tsize(rt, rcs[comm_rank(comm)]) : tsize(st, sc);
}

EXPORT int MPI_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[],
                       const int displs[], MPI_Datatype rt, int root, MPI_Comm comm)
{
    PROFILE(BLOCKING, GATHERV, gatherv_bytes(sb, sc, st, rcs, rt, comm), comm,
            PMPI_Gatherv(sb, sc, st, rb, rcs, displs, rt, root, comm));
}

EXPORT int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                       int root, MPI_Comm comm)
{
    PROFILE(BLOCKING, SCATTER, MPI_IN_PLACE == rb ? tsize(st, sc) : tsize(rt, rc), comm,
            PMPI_Scatter(sb, sc, st, rb, rc, rt, root, comm));
}

static uint64_t scatterv_bytes(const int scs[], MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                               MPI_Comm comm)
{
    return MPI_IN_PLACE == rb && scs ? tsize(st, scs[comm_rank(comm)]) : tsize(rt, rc);
}

EXPORT int MPI_Scatterv(const void *sb, const int scs[], const int displs[], MPI_Datatype st,
                        void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
    PROFILE(BLOCKING, SCATTERV, scatterv_bytes(scs, st, rb, rc, rt, comm), comm,
            PMPI_Scatterv(sb, scs, displs, st, rb, rc, rt, root, comm));
}

/* ------------------------------------------------------------------ */
/* nonblocking collectives: the post, and the request followed         */
/* ------------------------------------------------------------------ */

#define POST(coll, bytes_expr, comm, req, call)                                                    \
    do {                                                                                           \
        uint64_t b_ = (bytes_expr);                                                                \
        int s_ = slot_index(NONBLOCKING, coll, class_of(b_));                                      \
        int w_ = P.census ? census_where(comm) : 0;                                                \
        if (P.census) census_before(NONBLOCKING, coll, s_, b_, w_);                                \
        uint64_t t0_ = ticks();                                                                    \
        int rc_ = (call);                                                                          \
        account(s_, b_, ticks() - t0_);                                                            \
        if (MPI_SUCCESS == rc_) track(*(req), s_, NONBLOCKING, coll, 0, b_, comm);                 \
        if (P.census) census_after(NONBLOCKING, coll, s_, b_, w_);                                 \
        return rc_;                                                                                \
    } while (0)

EXPORT int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    POST(BARRIER, 0, comm, req, PMPI_Ibarrier(comm, req));
}

EXPORT int MPI_Ibcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm,
                      MPI_Request *req)
{
    POST(BCAST, tsize(t, count), comm, req, PMPI_Ibcast(buf, count, t, root, comm, req));
}

EXPORT int MPI_Ireduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, int root,
                       MPI_Comm comm, MPI_Request *req)
{
    POST(REDUCE, tsize(t, count), comm, req, PMPI_Ireduce(sb, rb, count, t, op, root, comm, req));
}

EXPORT int MPI_Iallreduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op,
                          MPI_Comm comm, MPI_Request *req)
{
    POST(ALLREDUCE, tsize(t, count), comm, req, PMPI_Iallreduce(sb, rb, count, t, op, comm, req));
}

EXPORT int MPI_Ireduce_scatter(const void *sb, void *rb, const int rcounts[], MPI_Datatype t,
                               MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    POST(REDUCE_SCATTER, tsize(t, 1) * sum_counts(rcounts, comm_size(comm)), comm, req,
         PMPI_Ireduce_scatter(sb, rb, rcounts, t, op, comm, req));
}

EXPORT int MPI_Ireduce_scatter_block(const void *sb, void *rb, int rcount, MPI_Datatype t,
                                     MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    POST(REDUCE_SCATTER_BLOCK, tsize(t, rcount) * (uint64_t)comm_size(comm), comm, req,
         PMPI_Ireduce_scatter_block(sb, rb, rcount, t, op, comm, req));
}

EXPORT int MPI_Iscan(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                     MPI_Request *req)
{
    POST(SCAN, tsize(t, count), comm, req, PMPI_Iscan(sb, rb, count, t, op, comm, req));
}

EXPORT int MPI_Iexscan(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op,
                       MPI_Comm comm, MPI_Request *req)
{
    POST(EXSCAN, tsize(t, count), comm, req, PMPI_Iexscan(sb, rb, count, t, op, comm, req));
}

EXPORT int MPI_Iallgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                          MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    POST(ALLGATHER, BLOCK(sb, sc, st, rc, rt), comm, req,
         PMPI_Iallgather(sb, sc, st, rb, rc, rt, comm, req));
}

EXPORT int MPI_Iallgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[],
                           const int displs[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
    POST(ALLGATHERV, MEANV(rcs, rt, comm), comm, req,
         PMPI_Iallgatherv(sb, sc, st, rb, rcs, displs, rt, comm, req));
}

EXPORT int MPI_Ialltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                         MPI_Comm comm, MPI_Request *req)
{
    POST(ALLTOALL, BLOCK(sb, sc, st, rc, rt), comm, req,
         PMPI_Ialltoall(sb, sc, st, rb, rc, rt, comm, req));
}

EXPORT int MPI_Ialltoallv(const void *sb, const int scs[], const int sds[], MPI_Datatype st,
                          void *rb, const int rcs[], const int rds[], MPI_Datatype rt,
                          MPI_Comm comm, MPI_Request *req)
{
    POST(ALLTOALLV, MPI_IN_PLACE == sb ? MEANV(rcs, rt, comm) : MEANV(scs, st, comm), comm, req,
         PMPI_Ialltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm, req));
}

EXPORT int MPI_Igather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                       int root, MPI_Comm comm, MPI_Request *req)
{
    POST(GATHER, BLOCK(sb, sc, st, rc, rt), comm, req,
         PMPI_Igather(sb, sc, st, rb, rc, rt, root, comm, req));
}

EXPORT int MPI_Igatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[],
                        const int displs[], MPI_Datatype rt, int root, MPI_Comm comm,
                        MPI_Request *req)
{
    POST(GATHERV, gatherv_bytes(sb, sc, st, rcs, rt, comm), comm, req,
         PMPI_Igatherv(sb, sc, st, rb, rcs, displs, rt, root, comm, req));
}

EXPORT int MPI_Iscatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                        int root, MPI_Comm comm, MPI_Request *req)
{
    POST(SCATTER, MPI_IN_PLACE == rb ? tsize(st, sc) : tsize(rt, rc), comm, req,
         PMPI_Iscatter(sb, sc, st, rb, rc, rt, root, comm, req));
}

EXPORT int MPI_Iscatterv(const void *sb, const int scs[], const int displs[], MPI_Datatype st,
                         void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
                         MPI_Request *req)
{
    POST(SCATTERV, scatterv_bytes(scs, st, rb, rc, rt, comm), comm, req,
         PMPI_Iscatterv(sb, scs, displs, st, rb, rc, rt, root, comm, req));
}

/* ------------------------------------------------------------------ */
/* persistent collectives: counted at each start                       */
/* ------------------------------------------------------------------ */

#if PROF_PERSISTENT
/* the init: its time goes to the row; the request is followed, its
 * starts are the calls */
#define PINIT_BODY(coll, bytes_expr, comm, req, call)                                              \
    do {                                                                                           \
        uint64_t b_ = (bytes_expr);                                                                \
        int s_ = slot_index(PERSISTENT, coll, class_of(b_));                                       \
        uint64_t t0_ = ticks();                                                                    \
        int rc_ = (call);                                                                          \
        add(&P.tab[s_].ns, ticks() - t0_);                                                         \
        if (MPI_SUCCESS == rc_) track(*(req), s_, PERSISTENT, coll, 1, b_, comm);                  \
        return rc_;                                                                                \
    } while (0)

EXPORT int PINIT(Barrier)(MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(BARRIER, 0, comm, req, PPINIT(Barrier)(comm, info, req));
}

EXPORT int PINIT(Bcast)(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm,
                        MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(BCAST, tsize(t, count), comm, req,
               PPINIT(Bcast)(buf, count, t, root, comm, info, req));
}

EXPORT int PINIT(Reduce)(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, int root,
                         MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(REDUCE, tsize(t, count), comm, req,
               PPINIT(Reduce)(sb, rb, count, t, op, root, comm, info, req));
}

EXPORT int PINIT(Allreduce)(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op,
                            MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(ALLREDUCE, tsize(t, count), comm, req,
               PPINIT(Allreduce)(sb, rb, count, t, op, comm, info, req));
}

EXPORT int PINIT(Reduce_scatter)(const void *sb, void *rb, const int rcounts[], MPI_Datatype t,
                                 MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(REDUCE_SCATTER, tsize(t, 1) * sum_counts(rcounts, comm_size(comm)), comm, req,
               PPINIT(Reduce_scatter)(sb, rb, rcounts, t, op, comm, info, req));
}

EXPORT int PINIT(Reduce_scatter_block)(const void *sb, void *rb, int rcount, MPI_Datatype t,
                                       MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(REDUCE_SCATTER_BLOCK, tsize(t, rcount) * (uint64_t)comm_size(comm), comm, req,
               PPINIT(Reduce_scatter_block)(sb, rb, rcount, t, op, comm, info, req));
}

EXPORT int PINIT(Scan)(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op,
                       MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(SCAN, tsize(t, count), comm, req,
               PPINIT(Scan)(sb, rb, count, t, op, comm, info, req));
}

EXPORT int PINIT(Exscan)(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op,
                         MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(EXSCAN, tsize(t, count), comm, req,
               PPINIT(Exscan)(sb, rb, count, t, op, comm, info, req));
}

EXPORT int PINIT(Allgather)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                            MPI_Datatype rt, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(ALLGATHER, BLOCK(sb, sc, st, rc, rt), comm, req,
               PPINIT(Allgather)(sb, sc, st, rb, rc, rt, comm, info, req));
}

EXPORT int PINIT(Allgatherv)(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[],
                             const int displs[], MPI_Datatype rt, MPI_Comm comm, MPI_Info info,
                             MPI_Request *req)
{
    PINIT_BODY(ALLGATHERV, MEANV(rcs, rt, comm), comm, req,
               PPINIT(Allgatherv)(sb, sc, st, rb, rcs, displs, rt, comm, info, req));
}

EXPORT int PINIT(Alltoall)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                           MPI_Datatype rt, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(ALLTOALL, BLOCK(sb, sc, st, rc, rt), comm, req,
               PPINIT(Alltoall)(sb, sc, st, rb, rc, rt, comm, info, req));
}

EXPORT int PINIT(Alltoallv)(const void *sb, const int scs[], const int sds[], MPI_Datatype st,
                            void *rb, const int rcs[], const int rds[], MPI_Datatype rt,
                            MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(ALLTOALLV, MPI_IN_PLACE == sb ? MEANV(rcs, rt, comm) : MEANV(scs, st, comm), comm,
               req, PPINIT(Alltoallv)(sb, scs, sds, st, rb, rcs, rds, rt, comm, info, req));
}

EXPORT int PINIT(Gather)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                         int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(GATHER, BLOCK(sb, sc, st, rc, rt), comm, req,
               PPINIT(Gather)(sb, sc, st, rb, rc, rt, root, comm, info, req));
}

EXPORT int PINIT(Gatherv)(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[],
                          const int displs[], MPI_Datatype rt, int root, MPI_Comm comm,
                          MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(GATHERV, gatherv_bytes(sb, sc, st, rcs, rt, comm), comm, req,
               PPINIT(Gatherv)(sb, sc, st, rb, rcs, displs, rt, root, comm, info, req));
}

EXPORT int PINIT(Scatter)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                          MPI_Datatype rt, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(SCATTER, MPI_IN_PLACE == rb ? tsize(st, sc) : tsize(rt, rc), comm, req,
               PPINIT(Scatter)(sb, sc, st, rb, rc, rt, root, comm, info, req));
}

EXPORT int PINIT(Scatterv)(const void *sb, const int scs[], const int displs[], MPI_Datatype st,
                           void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
                           MPI_Info info, MPI_Request *req)
{
    PINIT_BODY(SCATTERV, scatterv_bytes(scs, st, rb, rc, rt, comm), comm, req,
               PPINIT(Scatterv)(sb, scs, displs, st, rb, rc, rt, root, comm, info, req));
}
#endif

/* A start of a followed persistent request is a call of its row. */
EXPORT int MPI_Start(MPI_Request *req)
{
    rentry_t e;
    if (0 == P.outstanding || !lookup(*req, &e)) return PMPI_Start(req);
    if (P.census) census_before(e.form, e.coll, e.slot, e.bytes, e.rank0);
    uint64_t t0 = ticks();
    int rc = PMPI_Start(req);
    account(e.slot, e.bytes, ticks() - t0);
    if (P.census) census_after(e.form, e.coll, e.slot, e.bytes, e.rank0);
    return rc;
}

EXPORT int MPI_Startall(int count, MPI_Request reqs[])
{
    waitset_t w;
    if (0 == P.outstanding || 0 == gather_tracked(count, reqs, &w))
        return PMPI_Startall(count, reqs);
    for (int i = 0; P.census && i < w.n; i++)
        census_before(w.e[i].form, w.e[i].coll, w.e[i].slot, w.e[i].bytes, w.e[i].rank0);
    uint64_t t0 = ticks();
    int rc = PMPI_Startall(count, reqs);
    uint64_t dt = ticks() - t0;
    for (int i = 0; i < w.n; i++) {
        account(w.e[i].slot, w.e[i].bytes, dt / (uint64_t)w.n);
        if (P.census)
            census_after(w.e[i].form, w.e[i].coll, w.e[i].slot, w.e[i].bytes, w.e[i].rank0);
    }
    return rc;
}

EXPORT int MPI_Request_free(MPI_Request *req)
{
    rentry_t e;
    if (P.outstanding && lookup(*req, &e)) untrack(e.key);
    return PMPI_Request_free(req);
}

/* ------------------------------------------------------------------ */
/* waits and tests                                                     */
/* ------------------------------------------------------------------ */

EXPORT int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    rentry_t e;
    if (0 == P.outstanding || !lookup(*req, &e)) return PMPI_Wait(req, st);
    uint64_t t0 = ticks();
    int rc = PMPI_Wait(req, st);
    add(&P.tab[e.slot].ns, ticks() - t0);
    if (!e.persistent) untrack(e.key);
    return rc;
}

EXPORT int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    rentry_t e;
    if (0 == P.outstanding || !lookup(*req, &e)) return PMPI_Test(req, flag, st);
    uint64_t t0 = ticks();
    int rc = PMPI_Test(req, flag, st);
    add(&P.tab[e.slot].ns, ticks() - t0);
    if (*flag && !e.persistent) untrack(e.key);
    return rc;
}

EXPORT int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status sts[])
{
    waitset_t w;
    if (0 == P.outstanding || 0 == gather_tracked(count, reqs, &w))
        return PMPI_Waitall(count, reqs, sts);
    uint64_t t0 = ticks();
    int rc = PMPI_Waitall(count, reqs, sts);
    settle(&w, count, ticks() - t0, NULL);
    return rc;
}

EXPORT int MPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
    waitset_t w;
    if (0 == P.outstanding || 0 == gather_tracked(count, reqs, &w))
        return PMPI_Testall(count, reqs, flag, sts);
    uint64_t t0 = ticks();
    int rc = PMPI_Testall(count, reqs, flag, sts);
    int done[WAITMAX];
    for (int i = 0; i < w.n; i++) done[i] = *flag;
    settle(&w, count, ticks() - t0, done);
    return rc;
}

/* Waitany, Testany, Waitsome, Testsome: the completed ones are known by
 * their positions */
static void settle_indices(const waitset_t *w, int count, uint64_t dt, const int *idx, int nidx)
{
    int done[WAITMAX];
    for (int i = 0; i < w->n; i++) {
        done[i] = 0;
        for (int j = 0; j < nidx; j++)
            if (idx[j] == w->idx[i]) done[i] = 1;
    }
    settle(w, count, dt, done);
}

EXPORT int MPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *st)
{
    waitset_t w;
    if (0 == P.outstanding || 0 == gather_tracked(count, reqs, &w))
        return PMPI_Waitany(count, reqs, index, st);
    uint64_t t0 = ticks();
    int rc = PMPI_Waitany(count, reqs, index, st);
    settle_indices(&w, count, ticks() - t0, index, MPI_UNDEFINED == *index ? 0 : 1);
    return rc;
}

EXPORT int MPI_Testany(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *st)
{
    waitset_t w;
    if (0 == P.outstanding || 0 == gather_tracked(count, reqs, &w))
        return PMPI_Testany(count, reqs, index, flag, st);
    uint64_t t0 = ticks();
    int rc = PMPI_Testany(count, reqs, index, flag, st);
    settle_indices(&w, count, ticks() - t0, index, *flag && MPI_UNDEFINED != *index ? 1 : 0);
    return rc;
}

EXPORT int MPI_Waitsome(int count, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[])
{
    waitset_t w;
    if (0 == P.outstanding || 0 == gather_tracked(count, reqs, &w))
        return PMPI_Waitsome(count, reqs, outcount, idx, sts);
    uint64_t t0 = ticks();
    int rc = PMPI_Waitsome(count, reqs, outcount, idx, sts);
    settle_indices(&w, count, ticks() - t0, idx, MPI_UNDEFINED == *outcount ? 0 : *outcount);
    return rc;
}

EXPORT int MPI_Testsome(int count, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[])
{
    waitset_t w;
    if (0 == P.outstanding || 0 == gather_tracked(count, reqs, &w))
        return PMPI_Testsome(count, reqs, outcount, idx, sts);
    uint64_t t0 = ticks();
    int rc = PMPI_Testsome(count, reqs, outcount, idx, sts);
    settle_indices(&w, count, ticks() - t0, idx, MPI_UNDEFINED == *outcount ? 0 : *outcount);
    return rc;
}
