/*
 * braid_task.h - the request engine: nonblocking and persistent
 * collectives as fibers (braid_fiber.h), with the outstanding list that
 * progress walks, the request pool, an optional progress thread, and the
 * turns that order calls on a shared-memory segment.
 *
 * A request's job (normally a blocking collective's code) runs on a fiber.
 * braid_task_post runs it until its first wait that is not done: a job that
 * returns there is complete (or fell back, when it recorded
 * braid_task_fall_back instead of running), otherwise the request goes on
 * the outstanding list and braid_engine_progress resumes it, once per pass,
 * until it returns. The host (the Open MPI glue, or a unit test) completes
 * it through a hook:
 *
 *   post ──> fiber's first run ──┬─ returned: BRAID_TASK_DONE / _FELL_BACK
 *                                └─ waiting: braid_engine_add ──> progress
 *   progress: resume each outstanding fiber ──> returned: hooks.complete
 *
 * Nothing here knows Open MPI or UCX: what the engine needs of them (poll
 * the transport, block on its wake-up, tell the host's progress loop that
 * a request is outstanding, log) comes as hooks. One engine serves one
 * process in the component; the unit tests make one per rank thread.
 *
 * Locks: only where two threads can be in the engine at once (the host's
 * MPI_THREAD_MULTIPLE, or the progress thread: braid_engine_set_shared);
 * otherwise one thread at a time calls in, and plain stores do.
 */
#ifndef BRAID_TASK_H
#define BRAID_TASK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "braid_algo.h"
#include "braid_fiber.h"
#include "braid_select.h"
#include "braid_shm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { BRAID_TASK_NONBLOCKING, BRAID_TASK_PERSISTENT } braid_task_kind_t;

/* What braid_task_post found. */
enum {
    BRAID_TASK_PENDING = 0,  /* the job waits: braid_engine_add it */
    BRAID_TASK_DONE = 1,     /* the job returned: its result in r->result */
    BRAID_TASK_FELL_BACK = 2, /* the job gave the call to the previous module
                                 (braid_task_fall_back) */
};

/* The engine's part of a request; the host embeds it in its own request
 * type. What a blocking call keeps per communicator, a request keeps for
 * itself, since several may be in flight on one communicator. */
typedef struct braid_task {
    braid_task_kind_t kind;
    braid_fiber_t *fiber;    /* its job's, kept from the first post to braid_task_release */
    int result;              /* the job's return, once it returned */
    bool fall_back;          /* the job gave the call to the previous module, not run it */
    bool inner;              /* runs as another library's request: hooks.inner_done polls it */
    bool ran_out;            /* returned (or inner done): to be completed by a host thread */
    uint32_t seq;            /* persistent: its tag sequence number, fixed at init */
    /* persistent: the choice made at its first start and kept (arguments,
     * communicator and channel never change), and the communicator view on
     * its own shm channel (chan < 0: none) */
    bool chosen;
    size_t choice_bytes;
    braid_choice_t choice;
    int chan;
    braid_shm_t chan_shm;
    braid_comm_t view;
    /* kept across the request's uses */
    braid_scratch_t scratch;
    size_t *counts[2];
    size_t counts_len[2];
    braid_hier_t hier;
    struct braid_task *next_free, *next_active;
} braid_task_t;

typedef struct braid_engine_hooks {
    void *arg;
    /* r ran out (its job returned, or its inner request is done): complete
     * it. Called by the thread that progresses with completion on; r is
     * off the list already (a waiter may reuse it at once). */
    void (*complete)(void *arg, braid_task_t *r);
    /* r->inner: whether the request it runs as is done (NULL: never inner) */
    bool (*inner_done)(void *arg, braid_task_t *r);
    /* a request went outstanding (NULL: nothing to tell) */
    void (*activated)(void);
    /* the progress thread: poll the transport (events seen), and block on
     * its wake-up for up to ns (true: woken by an event); wait_name: what
     * that is, for the log. NULL: no thread. */
    int (*poll)(void);
    bool (*wait_event)(long ns);
    const char *(*wait_name)(void);
    /* one line at a verbosity level (NULL: silent) */
    void (*log)(void *arg, int level, const char *msg);
} braid_engine_hooks_t;

typedef struct braid_engine {
    braid_engine_hooks_t hooks;
    bool shared;                 /* two threads may be in the engine at once */
    bool thread_wanted;          /* start the progress thread with the first request */
    pthread_mutex_t lock;        /* the outstanding list and every resume from progress */
    braid_task_t *head, *tail;
    int outstanding;             /* the list's length, read without the lock */
    int runnable;                /* of those, the ones not ran out (the thread's work) */
    unsigned advanced;           /* resumes after which a fiber finished or waited anew */
    bool progress_running;       /* unshared: progress is not re-entered */
    pthread_mutex_t pool_lock;
    braid_task_t *pool;
    struct {                     /* the progress thread */
        pthread_t thread;
        bool started, stop;
        pthread_mutex_t lock;
        pthread_cond_t wake;
    } pt;
} braid_engine_t;

void braid_engine_init(braid_engine_t *e, const braid_engine_hooks_t *hooks);
/* shared: threads may post and progress at once; thread: a progress
 * thread runs the fibers between the host's calls (implies shared) */
void braid_engine_set_shared(braid_engine_t *e, bool shared, bool thread);
/* Stop the thread, empty the list, and hand every pooled request to
 * release (the host frees its type). */
void braid_engine_fini(braid_engine_t *e, void (*release)(braid_task_t *r));

/* r, fresh from the host's allocation (zeroed), for a call of this kind;
 * inject >= 0 (tests): braid_task_inject. */
void braid_task_prepare(braid_task_t *r, braid_task_kind_t kind, int inject);
/* r's scratch starts empty and fails after inject allocations, so that
 * every rank fails the same one (fault injection, tests) */
void braid_task_inject(braid_task_t *r, int inject);

/* The pool: a request the host made before (NULL: make one), and back.
 * Pooled requests are prepared: the host prepares one before it gives it
 * back, unless its one use since was a nonblocking post that returned
 * BRAID_TASK_DONE, which leaves it so (its result aside), and a taken one
 * only needs braid_task_reuse. */
braid_task_t *braid_engine_pool_take(braid_engine_t *e);
void braid_engine_pool_give(braid_engine_t *e, braid_task_t *r);

/* Their inline first tries, for the small-call path (a post takes and
 * gives a request each): without a lock, and so only when the engine is
 * not shared; NULL / false: take or give then. */
static inline braid_task_t *braid_engine_pool_pop(braid_engine_t *e)
{
    braid_task_t *r = e->pool;
    if (e->shared || NULL == r) return NULL;
    e->pool = r->next_free;
    return r;
}

static inline bool braid_engine_pool_push(braid_engine_t *e, braid_task_t *r)
{
    if (e->shared) return false;
    r->next_free = e->pool;
    e->pool = r;
    return true;
}

/* A prepared r from the pool, for a call of this kind */
static inline void braid_task_reuse(braid_task_t *r, braid_task_kind_t kind, int inject)
{
    r->kind = kind;
    if (inject >= 0) braid_task_inject(r, inject);
}
/* free what r keeps across uses, its fiber back to the pool (the host's
 * destructor) */
void braid_task_release(braid_task_t *r);

/* Run job(arg) on r's fiber (from the pool at its first post) until its
 * first wait that is not done. Returns BRAID_TASK_* or BRAID_ERR_NOMEM
 * (no fiber). Inline: every nonblocking call and start comes through. */
static inline int braid_task_post(braid_task_t *r, braid_fiber_fn job, void *arg)
{
    bool returned;
    r->fall_back = r->inner = r->ran_out = false;
    if (NULL != r->fiber) {
        returned = braid_fiber_start(r->fiber, job, arg);
    } else {
        if (NULL == (r->fiber = braid_fiber_get(job, arg))) return BRAID_ERR_NOMEM;
        braid_fiber_set_data(r->fiber, r);
        returned = braid_fiber_resume(r->fiber);
    }
    if (!returned) return BRAID_TASK_PENDING;
    r->result = braid_fiber_result(r->fiber);
    return r->fall_back ? BRAID_TASK_FELL_BACK : BRAID_TASK_DONE;
}
/* Put r on the outstanding list (its fiber waits, or r->inner is set). */
void braid_engine_add(braid_engine_t *e, braid_task_t *r);
/* r's job returned: its result */
int braid_task_finish(braid_task_t *r);

/* Inside a job: record that the call falls back to the previous module (the job returns at
 * once). The decision must fall before the job's first wait. */
static inline void braid_task_fall_back(braid_task_t *r) { r->fall_back = true; }
/* n size_t of r's workspace slot (0 or 1), grown on demand; NULL when out
 * of memory */
size_t *braid_task_counts(braid_task_t *r, int slot, size_t n);

/* Resume every outstanding request once; with complete, complete those
 * that ran out (hooks.complete). One thread at a time: another finds the
 * lock taken and leaves (the holder progresses its requests too). Never
 * from a fiber. Returns how many advanced. */
int braid_engine_progress(braid_engine_t *e, bool complete);
bool braid_engine_outstanding(const braid_engine_t *e);

/* ------------------------------------------------------------------ */
/* Turns: calls on a shared-memory segment, one at a time, in call order */
/* ------------------------------------------------------------------ */

/* The shm tier numbers calls in call order and expects each rank to finish
 * them in that order (a rank's done flag covers every earlier call). A
 * nonblocking call may be overtaken by a later one on another fiber, so
 * calls on the segment take a ticket when dispatched (in call order) and
 * wait for their turn: a fiber by yielding, a blocking call by wait(arg)
 * (the host's progress, which runs the fibers ahead). */
typedef struct braid_turns {
    unsigned ticket, serving;
} braid_turns_t;

/* whether calls are queued (a blocking call with none ahead runs at once,
 * with no read-modify-write) */
static inline bool braid_turns_queued(const braid_turns_t *t)
{
    return __atomic_load_n(&t->ticket, __ATOMIC_ACQUIRE) !=
           __atomic_load_n(&t->serving, __ATOMIC_ACQUIRE);
}
/* the wait for turn mine, once it is not at once */
void braid_turn_wait(braid_turns_t *t, unsigned mine, void (*wait)(void *), void *arg);

/* shared: two threads may take turns on t (atomic increments). Inline:
 * every nonblocking call on a segment takes and gives one. */
static inline void braid_turn_take(braid_turns_t *t, bool shared, void (*wait)(void *), void *arg)
{
    unsigned mine = shared ? __atomic_fetch_add(&t->ticket, 1, __ATOMIC_ACQ_REL) : t->ticket++;
    if (__atomic_load_n(&t->serving, __ATOMIC_ACQUIRE) != mine) braid_turn_wait(t, mine, wait, arg);
}

static inline void braid_turn_give(braid_turns_t *t, bool shared)
{
    if (shared) __atomic_fetch_add(&t->serving, 1, __ATOMIC_ACQ_REL);
    else __atomic_store_n(&t->serving, t->serving + 1, __ATOMIC_RELEASE);
}

#ifdef __cplusplus
}
#endif

#endif /* BRAID_TASK_H */
