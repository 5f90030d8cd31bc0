/*
 * test_nonblocking.c - several collectives in flight at once on one
 * communicator, each on its own fiber (braid_fiber.h), over the in-process
 * transport: the contract of the nonblocking engine, without MPI.
 *
 * Every rank thread posts the same K collectives (a batch) in the same
 * order, as MPI makes the ranks of a communicator do: collective i is a
 * task of the rank's own request engine (braid_task.h, the component's
 * engine), whose job runs the registry algorithm's function with its own
 * arguments, buffers, scratch cache and strict transport
 * (strict_transport.h), and whose fiber carries the sequence number
 * i + 1, which the transport matches messages on (inproc_transport.c).
 * braid_task_post runs every job's first segment in posting order; then
 * the rank waits for the collectives one by one in a wait order, and
 * every wait runs passes of braid_engine_progress - each outstanding task
 * resumed once per pass, in posting order, completed through the
 * engine's hook - until the one waited for is complete, as MPI's
 * progress does.
 *
 * Calls that use the shared-memory segment take the engine's turns
 * (braid_turn_take / braid_turn_give, what the dispatch takes) when they
 * start, in posting order, and run one at a time, each rank on its own: a
 * fiber whose turn has not come yields. The hierarchical allreduce runs on
 * node views of a cyclic or random map (unit_topo.h).
 *
 * Checks: every rank's result of every collective against the reference
 * of its known inputs (unit_check_values; reduce_scatter: nothing written
 * beyond the result block), every rank returns BRAID_OK, no message left
 * over, no send buffer reused before its wait, and a barrier returns on no
 * rank before every rank entered it. A batch that has not finished after
 * NB_MAX_PASSES progress passes on a rank fails (every rank stops).
 *
 * Cases, P = 1..9 and 16:
 *  mixed       3..8 collectives of every kind, the algorithm, op, count
 *              (0, 1, P-1, P+1, 2P+3, 1001, 10007), root, in place,
 *              chunk and uneven reduce_scatter counts drawn per batch;
 *              waited for in a random order per rank
 *  every_alg   one batch per collective with every algorithm of it in
 *              flight at once (every allreduce algorithm that takes the
 *              op), and one with every algorithm of every collective
 *  split_order the batches of mixed, waited for in reverse posting order
 *              on even ranks and in posting order on odd ones, passes in
 *              posting order; rank 0 posts all of them before any other
 *              rank posts one (a post whose wait blocks instead of
 *              yielding never returns: the batch fails)
 *
 * UNIT_ALG=name[,name...] (unit_coll.h) keeps only those algorithms in
 * the batches.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "unit_coll.h"
#include "unit_topo.h"
#include "braid_task.h"

#define NB_MAX_K 64
/* A rank declares the batch hung after NB_STALL_PASSES progress passes in
 * which no rank saw anything move (a message sent, an shm call begun, a
 * fiber returned), or after NB_MAX_PASSES passes in all. A pass that
 * returns no fiber gives the core up: sched_yield for the first
 * NB_SPIN_PASSES passes without progress, then a sleep of NB_NAP_NS, so
 * that a peer thread kept off the core by a loaded machine is waited for
 * seconds, not passes (at least 2 s before the batch is declared hung). A
 * passing batch takes a few thousand passes in all. */
#define NB_STALL_PASSES 40000ul
#define NB_SPIN_PASSES 1000ul
#define NB_NAP_NS 50000l
#define NB_MAX_PASSES 10000000ul
/* the largest slot of the batch's shm segment */
#define NB_SHM_SLOT_MAX ((size_t)64 << 10)

static const int nb_p_list[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 16 };
#define NB_NP ((int)(sizeof nb_p_list / sizeof *nb_p_list))
#define NB_VARIANTS 4

typedef enum {
    NB_WAIT_RANDOM,   /* random wait order per rank */
    NB_WAIT_SPLIT     /* even ranks reverse, odd ranks posting order */
} nb_wait_t;

/* One batch: K collectives on P ranks. */
typedef struct nb_batch {
    int P, K;
    nb_wait_t wait;
    unsigned seed;
    unit_run_t *R[NB_MAX_K];            /* every rank's buffers and arguments of collective i */
    uint32_t seq[NB_MAX_K];             /* the sequence number of collective i's fiber */
    int ticket[NB_MAX_K];               /* shm turn, -1 when it does not use the segment */
    size_t rcounts[NB_MAX_K][UNIT_MAX_P];
    /* hierarchical allreduce: the node map and phases */
    uint64_t key[NB_MAX_K][UNIT_MAX_P];
    braid_hier_t phases[NB_MAX_K];
    /* the shm segment and each rank's view of it */
    void *shm_seg;
    size_t shm_slot;
    braid_shm_t shm[UNIT_MAX_P];
    braid_turns_t turns[UNIT_MAX_P];    /* each rank's turns on the segment */
    /* what the ranks saw */
    atomic_int entered[NB_MAX_K];       /* ranks that started collective i */
    atomic_int early[NB_MAX_K];         /* barrier i returned before every rank entered */
    atomic_int abort;                   /* a rank gave up: every rank stops */
    atomic_ulong progress;              /* bumped by a rank that saw something move */
    bool gate;                          /* the other ranks post after rank 0 posted all */
    atomic_int posted0;                 /* rank 0 posted every collective */
    int rc[NB_MAX_K][UNIT_MAX_P];
    int violations[NB_MAX_K][UNIT_MAX_P];
    int rank_rc[UNIT_MAX_P];
    unsigned long passes[UNIT_MAX_P];
} nb_batch_t;

/* One collective on one rank: a task of the rank's engine. */
typedef struct nb_job {
    braid_task_t task;
    bool done;
    nb_batch_t *B;
    int i, rank;
    braid_comm_t comm;        /* the rank's communicator, this collective's copy */
    braid_yield_t yield;      /* its waits give the fiber's thread back */
    strict_state_t strict;
    braid_scratch_t scratch;
    braid_coll_args_t a;
    unit_views_t *views;      /* hierarchical: the node and leader views */
    unit_topo_ctx_t topo;
    braid_hier_t hier;
    int rc, violations;
} nb_job_t;

/* ------------------------------------------------------------------ */
/* the fiber's job                                                     */
/* ------------------------------------------------------------------ */

static bool nb_due(void *f, unsigned turn, bool busy) { return braid_fiber_yield_due(f, turn, busy); }
static void nb_now(void *f)
{
    (void)f;
    braid_fiber_yield();
}

static int nb_job_run(void *p)
{
    nb_job_t *j = p;
    nb_batch_t *B = j->B;
    const unit_run_t *R = B->R[j->i];
    /* as the dispatch does: the sequence number and the yield on the
     * call's view, then the turn (the resumer bounds the wait: it stops
     * resuming after NB_MAX_PASSES) */
    j->yield = (braid_yield_t){ nb_due, nb_now, j->task.fiber };
    j->comm.seq = B->seq[j->i];
    j->comm.yield = &j->yield;
    if (B->ticket[j->i] >= 0) {
        braid_turn_take(&B->turns[j->rank], false, NULL, NULL);
        j->comm.shm = &B->shm[j->rank];
    }
    atomic_fetch_add(&B->entered[j->i], 1);
    braid_comm_t *c = &j->comm;
    if (unit_alg_has(R->coll, R->alg, BRAID_OPT_HIER)) {
        j->views = calloc(1, sizeof *j->views);
        unit_views_init(j->views, &j->comm, B->key[j->i]);
        j->hier = B->phases[j->i];
        j->hier.node = &j->views->node.comm;
        j->hier.leaders = braid_subcomm_is_member(&j->views->leaders) ? &j->views->leaders.comm : NULL;
        j->a.hier = &j->hier;
        c = &j->views->counted;
    }
    j->a.scratch = &j->scratch;
    strict_wrap(c, &j->strict);
    j->rc = R->fn(c, &j->a);
    j->violations = strict_unwrap(c, &j->strict);
    braid_scratch_release(&j->scratch);
    if (j->views) {
        unit_views_fini(j->views, &j->comm, &j->topo);
        free(j->views);
        j->views = NULL;
    }
    if (BRAID_COLL_BARRIER == R->coll && atomic_load(&B->entered[j->i]) != B->P)
        atomic_fetch_add(&B->early[j->i], 1);
    if (B->ticket[j->i] >= 0) braid_turn_give(&B->turns[j->rank], false);
    return j->rc;
}

/* ------------------------------------------------------------------ */
/* one rank: post, then wait in the rank's order                       */
/* ------------------------------------------------------------------ */

static void nb_shuffle(int *v, int n, unsigned *rs)
{
    for (int k = n - 1; k > 0; k--) {
        int m = (int)(rand_r(rs) % (unsigned)(k + 1)), t = v[k];
        v[k] = v[m];
        v[m] = t;
    }
}

/* What this rank has done so far: messages its fibers sent, shm calls
 * begun, fibers returned. */
static unsigned long nb_moved(const nb_batch_t *B, const nb_job_t *jobs)
{
    unsigned long n = 0;
    for (int i = 0; i < B->K; i++) {
        n += jobs[i].comm.stats.msgs_sent + jobs[i].done;
        if (jobs[i].views) n += jobs[i].views->counted.stats.msgs_sent;
    }
    return n + B->shm[jobs[0].rank].seq;
}

/* the engine's completion hook: the job's result is kept */
static void nb_complete(void *arg, braid_task_t *t)
{
    nb_job_t *j = (nb_job_t *)((char *)t - offsetof(nb_job_t, task));
    (void)arg;
    t->result = braid_task_finish(t);
    j->done = true;
}

static int nb_rank(braid_comm_t *c, void *arg)
{
    nb_batch_t *B = arg;
    int K = B->K, rank = c->rank;
    unsigned rs = B->seed * 2654435761u + (unsigned)rank * 40503u + 1u;
    if (NULL != B->shm_seg) {
        int rc = braid_shm_attach(&B->shm[rank], B->shm_seg, rank, c->size, true);
        if (BRAID_OK != rc) return rc;
    }
    nb_job_t *jobs = calloc((size_t)K, sizeof *jobs);
    int rc = BRAID_OK;
    if (B->gate && 0 != rank) {
        /* rank 0's posts must return before any peer has posted: its
         * waits yield instead of blocking */
        unsigned long naps = 0;
        while (!atomic_load(&B->posted0) && !atomic_load(&B->abort))
            if (++naps > NB_STALL_PASSES) {
                fprintf(stderr, "rank %d: rank 0 did not post its collectives\n", rank);
                atomic_store(&B->abort, 1);
                return BRAID_ERR_TRANSPORT;
            } else
                nanosleep(&(struct timespec){ 0, NB_NAP_NS }, NULL);
    }
    /* post: every job's first segment, in posting order */
    braid_engine_hooks_t hooks = { .complete = nb_complete };
    braid_engine_t eng;
    braid_engine_init(&eng, &hooks);
    for (int i = 0; i < K; i++) {
        nb_job_t *j = &jobs[i];
        j->B = B;
        j->i = i;
        j->rank = rank;
        j->comm = *c;
        j->comm.shm = NULL;
        memset(&j->comm.stats, 0, sizeof j->comm.stats);
        j->a = unit_rank_args(B->R[i], rank);
        braid_task_prepare(&j->task, BRAID_TASK_NONBLOCKING, -1);
        int st = braid_task_post(&j->task, nb_job_run, j);
        if (st < 0) {
            fprintf(stderr, "rank %d: no fiber for collective %d\n", rank, i);
            atomic_store(&B->abort, 1);
            return BRAID_ERR_NOMEM;
        }
        if (BRAID_TASK_PENDING == st) braid_engine_add(&eng, &j->task);
        else j->done = true;
    }
    if (0 == rank) atomic_store(&B->posted0, 1);
    /* the wait order */
    int order[NB_MAX_K];
    for (int i = 0; i < K; i++) order[i] = i;
    bool reverse = NB_WAIT_SPLIT == B->wait && 0 == rank % 2;
    if (reverse)
        for (int i = 0; i < K; i++) order[i] = K - 1 - i;
    if (NB_WAIT_RANDOM == B->wait) nb_shuffle(order, K, &rs);
    unsigned long passes = 0, stall = 0, seen = 0, seen_all = 0;
    for (int w = 0; w < K && BRAID_OK == rc; w++) {
        int t = order[w];
        /* wait for t: every pass resumes each outstanding fiber once */
        while (!jobs[t].done) {
            unsigned long moved = nb_moved(B, jobs), all;
            if (moved != seen) {
                seen = moved;
                atomic_fetch_add(&B->progress, 1);
            }
            if ((all = atomic_load(&B->progress)) != seen_all) {
                seen_all = all;
                stall = 0;
            }
            if (++passes > NB_MAX_PASSES || ++stall > NB_STALL_PASSES || atomic_load(&B->abort)) {
                if (!atomic_load(&B->abort))
                    fprintf(stderr, "rank %d: collective %d not done after %lu passes, %lu without "
                            "progress\n", rank, t, passes - 1, stall - 1);
                atomic_store(&B->abort, 1);
                rc = BRAID_ERR_TRANSPORT;
                break;
            }
            /* the other ranks' threads are what the fibers wait for */
            bool returned = braid_engine_progress(&eng, true) > 0;
            if (!returned && stall <= NB_SPIN_PASSES) sched_yield();
            else if (!returned) nanosleep(&(struct timespec){ 0, NB_NAP_NS }, NULL);
        }
    }
    B->passes[rank] = passes;
    if (BRAID_OK == rc)
        for (int i = 0; i < K; i++) {
            B->rc[i][rank] = jobs[i].task.result;
            B->violations[i][rank] = jobs[i].violations;
            braid_task_release(&jobs[i].task);
        }
    /* a fiber that did not return keeps its job: it is never resumed again */
    if (BRAID_OK == rc) free(jobs);
    return rc;
}

/* ------------------------------------------------------------------ */
/* batches                                                             */
/* ------------------------------------------------------------------ */

/* The v-th (cyclically) algorithm of coll that runs on messages alone
 * (the hierarchical allreduce's phases: its views have no segment). */
static int nb_message_alg(braid_coll_t coll, int v)
{
    int n = 0, ids[BRAID_MAX_ALGS];
    for (int alg = 1; alg < braid_alg_count(coll); alg++)
        if (!unit_alg_has(coll, alg, BRAID_OPT_HIER | BRAID_OPT_SHM)) ids[n++] = alg;
    return ids[v % n];
}

static unsigned nb_rand(unsigned *s) { return (unsigned)rand_r(s); }

/* Collective i of B: algorithm alg of coll, the rest drawn from *s. */
static void nb_add(nb_batch_t *B, braid_coll_t coll, int alg, unsigned *s)
{
    int P = B->P, i = B->K++;
    ck_assert_int_lt(i, NB_MAX_K);
    static const size_t fixed[] = { 0, 1, 1001, 10007 };
    size_t counts[8];
    int nc = 0;
    for (int k = 0; k < 4; k++) counts[nc++] = fixed[k];
    if (P > 2) counts[nc++] = (size_t)P - 1;
    counts[nc++] = (size_t)P + 1;
    counts[nc++] = 2 * (size_t)P + 3;
    unit_case_t k = { .count = counts[nb_rand(s) % (unsigned)nc] };
    k.root = (int)(nb_rand(s) % (unsigned)P);
    k.in_place = nb_rand(s) & 1;
    if (BRAID_COLL_ALLREDUCE == coll || BRAID_COLL_REDUCE == coll || BRAID_COLL_REDUCE_SCATTER == coll) {
        static const unit_op_kind_t kinds[] = { UNIT_OP_SUM_I64, UNIT_OP_SUM_F64, UNIT_OP_MATMUL };
        k.kind = kinds[nb_rand(s) % 3];
        k.exact = UNIT_OP_SUM_F64 != k.kind && (nb_rand(s) & 1);
        bool comm = UNIT_OP_MATMUL != k.kind;
        if (!braid_alg_takes_op(coll, alg, P, comm, k.exact)) {
            k.exact = true;
            if (!braid_alg_takes_op(coll, alg, P, comm, true)) k.kind = UNIT_OP_SUM_I64;
        }
        ck_assert(braid_alg_takes_op(coll, alg, P, UNIT_OP_MATMUL != k.kind, k.exact));
        k.null_rbuf = !k.in_place && (nb_rand(s) & 2);
    }
    if (BRAID_COLL_BCAST == coll) k.count = k.count * 8 + (nb_rand(s) & 1);
    if (BRAID_COLL_ALLGATHER == coll) k.esize = (nb_rand(s) & 1) ? 8 : 3;
    if (BRAID_COLL_REDUCE_SCATTER == coll && (nb_rand(s) & 1)) {
        /* uneven: 0..6 per rank, a large block on one rank now and then */
        for (int r = 0; r < P; r++) B->rcounts[i][r] = nb_rand(s) % 7;
        if (nb_rand(s) & 1) B->rcounts[i][nb_rand(s) % (unsigned)P] = 1000 + nb_rand(s) % 100;
        k.rcounts = B->rcounts[i];
    }
    bool shm = unit_alg_has(coll, alg, BRAID_OPT_SHM);
    if (unit_alg_has(coll, alg, BRAID_OPT_CHUNK | BRAID_OPT_TREE_CHUNK) && (nb_rand(s) & 1)) {
        size_t es = BRAID_COLL_BCAST == coll ? 1 : BRAID_COLL_ALLGATHER == coll ? k.esize
                                                                               : unit_op_esize(k.kind);
        k.params.chunk_bytes = (1 + nb_rand(s) % 3) * es * (k.count > 1001 ? 64 : 1);
    }
    B->R[i] = unit_run_new(coll, alg, P, &k);
    if (shm && unit_case_bytes(B->R[i]) > NB_SHM_SLOT_MAX) {
        /* no single-copy reader here: the bytes must fit a slot */
        unit_run_free(B->R[i]);
        k.count = (size_t)P + 1;
        k.rcounts = NULL;
        B->R[i] = unit_run_new(coll, alg, P, &k);
    }
    unit_run_t *R = B->R[i];
    B->seq[i] = (uint32_t)i + 1;
    B->ticket[i] = -1;
    if (shm) {
        int t = 0;
        for (int j = 0; j < i; j++) t += B->ticket[j] >= 0;
        B->ticket[i] = t;
        size_t bytes = unit_case_bytes(R);
        if (bytes > B->shm_slot) B->shm_slot = bytes;
    }
    if (unit_alg_has(coll, alg, BRAID_OPT_HIER)) {
        int nodes = 1 + P % 3 < P ? 1 + P % 3 : P;
        unit_make_map((i + P) % 2 ? UNIT_MAP_RANDOM : UNIT_MAP_CYCLIC, P, nodes, B->seed + (unsigned)i,
                      B->key[i]);
        braid_hier_t *h = &B->phases[i];
        memset(h, 0, sizeof *h);
        int v = (int)nb_rand(s);
        h->node_reduce = braid_algorithm(BRAID_COLL_REDUCE, nb_message_alg(BRAID_COLL_REDUCE, v))->run;
        h->node_bcast = braid_algorithm(BRAID_COLL_BCAST, nb_message_alg(BRAID_COLL_BCAST, v))->run;
        h->leaders_allreduce =
            braid_algorithm(BRAID_COLL_ALLREDUCE, nb_message_alg(BRAID_COLL_ALLREDUCE, v))->run;
        h->node_bcast_params.chunk_bytes = v % 2 ? 64 : 0;
    }
    size_t n = strlen(R->what);
    snprintf(R->what + n, sizeof R->what - n, " [collective %d of the batch, seq %u, shm ticket %d]", i,
             B->seq[i], B->ticket[i]);
}

static nb_batch_t *nb_new(int P, unsigned seed, nb_wait_t wait)
{
    nb_batch_t *B = calloc(1, sizeof *B);
    B->P = P;
    B->seed = seed;
    B->wait = wait;
    return B;
}

/* Selected algorithms of coll (UNIT_ALG). */
static int nb_nsel(braid_coll_t coll)
{
    int n = 0;
    for (int alg = 1; alg < braid_alg_count(coll); alg++) n += unit_alg_selected(coll, alg);
    return n;
}

/* A batch of 3..8 collectives drawn from seed: the collective, then one
 * of its selected algorithms. */
static nb_batch_t *nb_mixed(int P, unsigned seed, nb_wait_t wait)
{
    nb_batch_t *B = nb_new(P, seed, wait);
    unsigned s = seed;
    int K = 3 + (int)(nb_rand(&s) % 6);
    braid_coll_t colls[BRAID_COLL_N];
    int ncolls = 0;
    for (int c = 0; c < BRAID_COLL_N; c++)
        if (nb_nsel((braid_coll_t)c)) colls[ncolls++] = (braid_coll_t)c;
    ck_assert_int_gt(ncolls, 0);
    for (int i = 0; i < K; i++) {
        braid_coll_t coll = colls[nb_rand(&s) % (unsigned)ncolls];
        nb_add(B, coll, unit_nth_alg(coll, (int)(nb_rand(&s) % (unsigned)nb_nsel(coll))), &s);
    }
    return B;
}

/* Run B and check every collective; frees B. */
static void nb_run_check(nb_batch_t *B)
{
    int P = B->P;
    for (int i = 0; i < B->K && NULL == B->shm_seg; i++)
        if (B->ticket[i] >= 0) B->shm_seg = unit_shm_segment(P, 3, B->shm_slot ? B->shm_slot : 1);
    inproc_result_t res = inproc_run(P, nb_rank, NULL, B);
    free(res.stats);
    char what[160];
    snprintf(what, sizeof what, "P=%d seed=%u K=%d wait=%s", P, B->seed, B->K,
             NB_WAIT_RANDOM == B->wait ? "random" : "split");
    unsigned long most = 0;
    for (int r = 0; r < P; r++) most = B->passes[r] > most ? B->passes[r] : most;
    ck_assert_msg(0 == atomic_load(&B->abort) && BRAID_OK == res.rc,
                  "%s: the batch did not finish (rc %d, most passes %lu): first collective %s", what,
                  res.rc, most, B->R[0]->what);
    ck_assert_msg(0 == res.leftover_msgs, "%s: %d messages left", what, res.leftover_msgs);
    for (int i = 0; i < B->K; i++) {
        unit_run_t *R = B->R[i];
        int bad_rc = 0, viol = 0;
        for (int r = 0; r < P; r++) {
            bad_rc += BRAID_OK != B->rc[i][r];
            viol += B->violations[i][r];
        }
        ck_assert_msg(0 == bad_rc, "%s: %s: %d ranks returned an error (rank 0: %d)", what, R->what, bad_rc,
                      B->rc[i][0]);
        ck_assert_msg(0 == viol, "%s: %s: %d send-buffer violations", what, R->what, viol);
        ck_assert_msg(0 == atomic_load(&B->early[i]), "%s: %s: returned on %d ranks before every rank entered",
                      what, R->what, atomic_load(&B->early[i]));
        ck_assert_msg(P == atomic_load(&B->entered[i]), "%s: %s: entered by %d ranks", what, R->what,
                      atomic_load(&B->entered[i]));
        unit_check_values(R);
        unit_check_untouched(R, true);
        unit_run_free(R);
    }
    free(B->shm_seg);
    free(B);
    braid_fiber_pool_release();
}

/* ------------------------------------------------------------------ */
/* tests                                                               */
/* ------------------------------------------------------------------ */

START_TEST(mixed)
{
    int P = nb_p_list[_i / NB_VARIANTS], v = _i % NB_VARIANTS;
    nb_run_check(nb_mixed(P, 1000u * (unsigned)P + (unsigned)v, NB_WAIT_RANDOM));
}
END_TEST

START_TEST(split_order)
{
    int P = nb_p_list[_i / NB_VARIANTS], v = _i % NB_VARIANTS;
    nb_batch_t *B = nb_mixed(P, 1000u * (unsigned)P + (unsigned)v, NB_WAIT_SPLIT);
    B->gate = true;
    nb_run_check(B);
}
END_TEST

/* _i: P index * (BRAID_COLL_N + 1) + collective (BRAID_COLL_N: all) */
START_TEST(every_alg)
{
    int P = nb_p_list[_i / (BRAID_COLL_N + 1)], which = _i % (BRAID_COLL_N + 1);
    unsigned s = 77u + (unsigned)_i;
    nb_batch_t *B = nb_new(P, s, NB_WAIT_RANDOM);
    for (int c = 0; c < BRAID_COLL_N; c++) {
        if (which != BRAID_COLL_N && which != c) continue;
        for (int alg = 1; alg < braid_alg_count((braid_coll_t)c); alg++)
            if (unit_alg_selected((braid_coll_t)c, alg)) nb_add(B, (braid_coll_t)c, alg, &s);
    }
    if (0 == B->K) {
        free(B);
        return;
    }
    nb_run_check(B);
}
END_TEST

/* The fiber's step count, which the progress thread takes for progress: a
 * yield at a wait's first turn after a later turn of another wait is a
 * new step; more turns of the same wait, and a turn wait (braid_turn_take
 * counts each of its yields as one), are not more than one each. */
typedef struct {
    volatile int stage;   /* what the test has released: 1 = wait a, 2 = wait b */
    braid_turns_t turns;
} steps_job_t;

static void steps_wait(braid_fiber_t *f, volatile int *stage, int until)
{
    for (unsigned turn = 1; *stage < until; turn++)
        if (braid_fiber_yield_due(f, turn, true)) braid_fiber_yield();
}

static int steps_job(void *p)
{
    steps_job_t *j = p;
    braid_fiber_t *f = braid_fiber_self();
    steps_wait(f, &j->stage, 1);
    steps_wait(f, &j->stage, 2);
    braid_turn_take(&j->turns, false, NULL, NULL);   /* served at once: no yield */
    braid_turn_give(&j->turns, false);
    return 0;
}

START_TEST(fiber_steps)
{
    steps_job_t j = { .stage = 0 };
    braid_fiber_t *f = braid_fiber_get(steps_job, &j);
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(braid_fiber_steps(f), 0);
    ck_assert(!braid_fiber_resume(f));            /* into wait a */
    ck_assert_uint_eq(braid_fiber_steps(f), 1);
    for (int i = 0; i < 3; i++) ck_assert(!braid_fiber_resume(f));   /* still in wait a */
    ck_assert_uint_eq(braid_fiber_steps(f), 1);
    j.stage = 1;
    ck_assert(!braid_fiber_resume(f));            /* past a, into wait b */
    ck_assert_uint_eq(braid_fiber_steps(f), 2);
    ck_assert(!braid_fiber_resume(f));
    ck_assert_uint_eq(braid_fiber_steps(f), 2);
    j.stage = 2;
    ck_assert(braid_fiber_resume(f));             /* returns */
    ck_assert_uint_eq(braid_fiber_steps(f), 2);
    braid_fiber_put(f);
    braid_fiber_pool_release();
}
END_TEST

/* The progress thread's back-off. A pass after which a fiber waits
 * somewhere new is progress, as one after which it finished is: a shm-tier
 * step has no fd to wake the thread, so a thread that backed off between
 * steps would add its sleep to every step. Here a job of PT_STEPS waits,
 * each done at its second look (a step whose peer's flag is up by the next
 * pass), runs to its end on the thread without one wait on the transport's
 * wake-up (counting only finished fibers, the thread waits from its 64th
 * pass on). Then a job whose flag nobody sets: the thread backs off into
 * waits of growing length, at most 200 us each, and the job ends once the
 * flag is set. */
#define PT_STEPS 2000
typedef struct {
    int steps;
    int flag;   /* the second job waits for it */
} pt_job_t;

static struct {
    int waits;   /* hooks.wait_event's calls */
    long longest;
} pt_seen;

static int pt_poll(void) { return 0; }
static bool pt_wait_event(long ns)
{
    __atomic_add_fetch(&pt_seen.waits, 1, __ATOMIC_RELAXED);
    if (ns > __atomic_load_n(&pt_seen.longest, __ATOMIC_RELAXED))
        __atomic_store_n(&pt_seen.longest, ns, __ATOMIC_RELAXED);
    nanosleep(&(struct timespec){ 0, ns }, NULL);
    return false;
}
static const char *pt_wait_name(void) { return "the test's clock"; }
static void pt_complete(void *arg, braid_task_t *t)
{
    (void)arg;
    t->result = braid_task_finish(t);
}

static int pt_steps_job(void *p)
{
    pt_job_t *j = p;
    braid_fiber_t *f = braid_fiber_self();
    for (int s = 0; s < j->steps; s++)   /* each wait's first look fails */
        if (braid_fiber_yield_due(f, 1, true)) braid_fiber_yield();
    for (unsigned turn = 1; !__atomic_load_n(&j->flag, __ATOMIC_ACQUIRE); turn++)
        if (braid_fiber_yield_due(f, turn, true)) braid_fiber_yield();
    return 5;
}

/* post j on t, leave it to the thread, and complete it once it ran out */
static void pt_run(braid_engine_t *e, braid_task_t *t, pt_job_t *j, int set_flag_after_waits)
{
    if (NULL == t->fiber) braid_task_prepare(t, BRAID_TASK_NONBLOCKING, -1);
    else braid_task_reuse(t, BRAID_TASK_NONBLOCKING, -1);
    ck_assert_int_eq(braid_task_post(t, pt_steps_job, j), BRAID_TASK_PENDING);
    braid_engine_add(e, t);
    for (long naps = 0; !__atomic_load_n(&t->ran_out, __ATOMIC_ACQUIRE); naps++) {
        ck_assert_msg(naps < 20000, "the progress thread did not run the job out");
        if (set_flag_after_waits && __atomic_load_n(&pt_seen.waits, __ATOMIC_RELAXED) >=
                                        set_flag_after_waits)
            __atomic_store_n(&j->flag, 1, __ATOMIC_RELEASE);
        nanosleep(&(struct timespec){ 0, 100000 }, NULL);
    }
    ck_assert_int_eq(braid_engine_progress(e, true), 1);   /* this thread completes it */
    ck_assert_int_eq(t->result, 5);
    ck_assert(!braid_engine_outstanding(e));
}

START_TEST(progress_thread_back_off)
{
    braid_engine_hooks_t hooks = { .complete = pt_complete, .poll = pt_poll,
                                   .wait_event = pt_wait_event, .wait_name = pt_wait_name };
    braid_engine_t e;
    braid_engine_init(&e, &hooks);
    braid_engine_set_shared(&e, true, true);
    braid_task_t t;
    memset(&t, 0, sizeof t);
    pt_job_t steps = { .steps = PT_STEPS, .flag = 1 };
    pt_run(&e, &t, &steps, 0);
    ck_assert_uint_ge(braid_fiber_steps(t.fiber), PT_STEPS);
    ck_assert_int_eq(pt_seen.waits, 0);
    /* idle: 64 passes with sched_yield, then waits from 1 us doubling to
     * 200 us; 12 waits reach the ceiling */
    pt_job_t idle = { .steps = 0, .flag = 0 };
    pt_run(&e, &t, &idle, 12);
    ck_assert_int_ge(pt_seen.waits, 12);
    ck_assert_int_ge(pt_seen.longest, 100000);
    ck_assert_int_le(pt_seen.longest, 200000);
    braid_engine_fini(&e, braid_task_release);
    braid_task_release(&t);
    braid_fiber_pool_release();
}
END_TEST

/* A task keeps its fiber from its first post to braid_task_release,
 * which gives it back to the pool: later posts bind their jobs to the
 * same fiber (after a job that returned and after one that yielded and
 * was resumed), and the released fiber is the pool's next. */
static int keep_job(void *p)
{
    int *n = p;
    (*n)++;
    return 7;
}

static int keep_yield_job(void *p)
{
    int *n = p;
    braid_fiber_yield();
    (*n)++;
    return 8;
}

START_TEST(task_keeps_fiber)
{
    braid_task_t t;
    memset(&t, 0, sizeof t);
    braid_task_prepare(&t, BRAID_TASK_NONBLOCKING, -1);
    int n = 0;
    ck_assert_int_eq(braid_task_post(&t, keep_job, &n), BRAID_TASK_DONE);
    ck_assert_int_eq(t.result, 7);
    braid_fiber_t *f = t.fiber;
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(braid_task_post(&t, keep_yield_job, &n), BRAID_TASK_PENDING);
    ck_assert_ptr_eq(t.fiber, f);
    ck_assert(braid_fiber_resume(t.fiber));
    ck_assert_int_eq(braid_task_finish(&t), 8);
    ck_assert_int_eq(braid_task_post(&t, keep_job, &n), BRAID_TASK_DONE);
    ck_assert_ptr_eq(t.fiber, f);
    ck_assert_int_eq(n, 3);
    braid_task_release(&t);
    ck_assert_ptr_null(t.fiber);
    braid_fiber_t *g = braid_fiber_get(keep_job, &n);
    ck_assert_ptr_eq(g, f);
    braid_fiber_put(g);
    braid_fiber_pool_release();
}
END_TEST

/* How a job enters and leaves its fiber: one fiber from the pool runs
 * jobs that return at once and jobs that yield, in turn (each starts
 * afresh at the stack's top whatever the last one left there); a job
 * resumes another fiber from its own stack and is itself resumed from a
 * second thread; the resumer's locals survive every entry. */
typedef struct {
    int yields;           /* how many times the job yields before returning */
    int result;
    braid_fiber_t *inner; /* resumed from inside this job until it returns */
    int order[8], norder; /* what ran, in order (job ids) */
    int id;
    braid_fiber_t *self;  /* braid_fiber_self() as the job saw it */
} entry_job_t;

static int entry_job(void *p)
{
    entry_job_t *j = p;
    j->self = braid_fiber_self();
    j->order[j->norder++] = j->id;
    if (NULL != j->inner)
        while (!braid_fiber_resume(j->inner)) j->order[j->norder++] = -j->id;
    for (int i = 0; i < j->yields; i++) braid_fiber_yield();
    return j->result;
}

static void *resume_on_thread(void *f) { return (void *)(uintptr_t)braid_fiber_resume(f); }

START_TEST(fiber_entries)
{
    /* a fresh job after each kind of ending, on the one pooled fiber */
    const int yields[] = { 0, 2, 0, 1, 0 };
    braid_fiber_t *first = NULL;
    unsigned long keep = 0x5eed;
    for (int k = 0; k < 5; k++) {
        entry_job_t j = { .yields = yields[k], .result = 100 + k, .id = 1 };
        braid_fiber_t *f = braid_fiber_get(entry_job, &j);
        ck_assert_ptr_nonnull(f);
        if (0 == k) first = f;
        ck_assert_ptr_eq(f, first);
        int resumes = 1;
        unsigned long mine = keep * 31u + (unsigned long)k;
        while (!braid_fiber_resume(f)) resumes++;
        ck_assert_uint_eq(mine, keep * 31u + (unsigned long)k);
        ck_assert_int_eq(resumes, yields[k] + 1);
        ck_assert_int_eq(braid_fiber_result(f), 100 + k);
        ck_assert_ptr_eq(j.self, f);
        ck_assert_ptr_null(braid_fiber_self());
        braid_fiber_put(f);
    }
    /* nested: the outer job resumes the inner fiber (which yields once)
     * from its own stack, then yields; the second thread finishes it */
    entry_job_t in = { .yields = 1, .result = 7, .id = 2 };
    entry_job_t out = { .yields = 1, .result = 9, .id = 1 };
    braid_fiber_t *fi = braid_fiber_get(entry_job, &in);
    out.inner = fi;
    braid_fiber_t *fo = braid_fiber_get(entry_job, &out);
    ck_assert(fi != fo);
    ck_assert(!braid_fiber_resume(fo));   /* outer ran inner to its end, then yielded */
    ck_assert_ptr_null(braid_fiber_self());
    ck_assert_int_eq(braid_fiber_result(fi), 7);
    ck_assert_ptr_eq(in.self, fi);
    pthread_t t;
    void *done = NULL;
    ck_assert_int_eq(pthread_create(&t, NULL, resume_on_thread, fo), 0);
    ck_assert_int_eq(pthread_join(t, &done), 0);
    ck_assert(NULL != done);
    ck_assert_int_eq(braid_fiber_result(fo), 9);
    /* outer started (1), resumed inner, which started (2), yielded
     * (-1 seen by outer), and returned on the next resume */
    ck_assert_int_eq(out.norder, 2);
    ck_assert_int_eq(out.order[0], 1);
    ck_assert_int_eq(out.order[1], -1);
    ck_assert_int_eq(in.norder, 1);
    ck_assert_int_eq(in.order[0], 2);
    braid_fiber_put(fi);
    braid_fiber_put(fo);
    braid_fiber_pool_release();
}
END_TEST

int main(void)
{
    /* UNIT_ALG: every name must be an algorithm of some collective
     * (checked against a collective that has one of them; exits 99
     * listing the valid names otherwise) */
    braid_coll_t check = BRAID_COLL_ALLREDUCE;
    for (int c = 0; c < BRAID_COLL_N; c++)
        if (nb_nsel((braid_coll_t)c)) check = (braid_coll_t)c;
    unit_alg_filter(check);
    Suite *s = suite_create("nonblocking");
    TCase *tc = unit_tcase(s, "in_flight", 120);
    tcase_add_loop_test(tc, mixed, 0, NB_NP * NB_VARIANTS);
    tcase_add_loop_test(tc, every_alg, 0, NB_NP * (BRAID_COLL_N + 1));
    tcase_add_loop_test(tc, split_order, 0, NB_NP * NB_VARIANTS);
    tcase_add_test(tc, fiber_steps);
    tcase_add_test(tc, task_keeps_fiber);
    tcase_add_test(tc, fiber_entries);
    tcase_add_test(tc, progress_thread_back_off);
    return unit_run_suite(s);
}
