/*
 * braid_task.c - the request engine (braid_task.h): pool,
 * outstanding list, progress, progress thread, shm turns.
 *
 * The outstanding list is linked through the requests, in post order:
 * adding one never allocates, so a post cannot fail half way, and progress
 * resumes the oldest first (a later call on the same segment waits for
 * its turn behind it anyway).
 */
#include "braid_task.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void lock(const braid_engine_t *e, pthread_mutex_t *m)
{
    if (e->shared) pthread_mutex_lock(m);
}
static inline void unlock(const braid_engine_t *e, pthread_mutex_t *m)
{
    if (e->shared) pthread_mutex_unlock(m);
}

static void log_line(const braid_engine_t *e, int level, const char *msg)
{
    if (NULL != e->hooks.log) e->hooks.log(e->hooks.arg, level, msg);
}

void braid_engine_init(braid_engine_t *e, const braid_engine_hooks_t *hooks)
{
    memset(e, 0, sizeof(*e));
    e->hooks = *hooks;
    pthread_mutex_init(&e->lock, NULL);
    pthread_mutex_init(&e->pool_lock, NULL);
    pthread_mutex_init(&e->pt.lock, NULL);
    pthread_cond_init(&e->pt.wake, NULL);
}

void braid_engine_set_shared(braid_engine_t *e, bool shared, bool thread)
{
    e->thread_wanted = thread && NULL != e->hooks.poll && NULL != e->hooks.wait_event &&
                      NULL != e->hooks.wait_name;
    e->shared = shared || e->thread_wanted;
}

/* ------------------------------------------------------------------ */
/* requests                                                            */
/* ------------------------------------------------------------------ */

braid_task_t *braid_engine_pool_take(braid_engine_t *e)
{
    lock(e, &e->pool_lock);
    braid_task_t *r = e->pool;
    if (NULL != r) e->pool = r->next_free;
    unlock(e, &e->pool_lock);
    return r;
}

void braid_engine_pool_give(braid_engine_t *e, braid_task_t *r)
{
    lock(e, &e->pool_lock);
    r->next_free = e->pool;
    e->pool = r;
    unlock(e, &e->pool_lock);
}

void braid_task_prepare(braid_task_t *r, braid_task_kind_t kind, int inject)
{
    r->kind = kind;
    r->result = BRAID_OK;
    r->fall_back = r->inner = r->ran_out = false;
    r->seq = 0;
    r->chosen = false;
    r->chan = -1;
    r->next_free = r->next_active = NULL;
    if (inject >= 0) braid_task_inject(r, inject);
}

void braid_task_inject(braid_task_t *r, int inject)
{
    braid_scratch_release(&r->scratch);
    r->scratch.fail_alloc = 1;
    r->scratch.allocs_before_failure = (unsigned)inject;
}

void braid_task_release(braid_task_t *r)
{
    braid_fiber_put(r->fiber);
    r->fiber = NULL;
    braid_scratch_release(&r->scratch);
    for (int i = 0; i < 2; i++) {
        free(r->counts[i]);
        r->counts[i] = NULL;
        r->counts_len[i] = 0;
    }
}

size_t *braid_task_counts(braid_task_t *r, int slot, size_t n)
{
    if (r->counts_len[slot] < n) {
        size_t *q = realloc(r->counts[slot], n * sizeof(size_t));
        if (NULL == q) return NULL;
        r->counts[slot] = q;
        r->counts_len[slot] = n;
    }
    return r->counts[slot];
}

int braid_task_finish(braid_task_t *r)
{
    return NULL != r->fiber ? braid_fiber_result(r->fiber) : r->result;
}

static void thread_wake(braid_engine_t *e);

void braid_engine_add(braid_engine_t *e, braid_task_t *r)
{
    lock(e, &e->lock);
    r->ran_out = false;
    r->next_active = NULL;
    if (NULL != e->tail) e->tail->next_active = r;
    else e->head = r;
    e->tail = r;
    __atomic_add_fetch(&e->outstanding, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&e->runnable, 1, __ATOMIC_RELEASE);
    unlock(e, &e->lock);
    if (NULL != e->hooks.activated) e->hooks.activated();
    if (e->thread_wanted) thread_wake(e);
}

/* ------------------------------------------------------------------ */
/* progress                                                            */
/* ------------------------------------------------------------------ */

bool braid_engine_outstanding(const braid_engine_t *e)
{
    return 0 != __atomic_load_n(&e->outstanding, __ATOMIC_ACQUIRE);
}

/* progress's entry: one thread at a time, and never re-entered from a
 * completion it makes (unshared: a flag instead of the lock) */
static bool progress_enter(braid_engine_t *e)
{
    if (e->shared) return 0 == pthread_mutex_trylock(&e->lock);
    if (e->progress_running) return false;
    e->progress_running = true;
    return true;
}

static void progress_leave(braid_engine_t *e)
{
    if (e->shared) pthread_mutex_unlock(&e->lock);
    else e->progress_running = false;
}

/* Resumes r once; whether it finished. A resume after which the fiber
 * finished or waits somewhere new counts in e->advanced (the progress
 * thread's measure of a pass that did something). */
static bool run_once(braid_engine_t *e, braid_task_t *r)
{
    if (r->inner) return e->hooks.inner_done(e->hooks.arg, r);
    unsigned steps = braid_fiber_steps(r->fiber);
    bool done = braid_fiber_resume(r->fiber);
    if (done || braid_fiber_steps(r->fiber) != steps)
        __atomic_add_fetch(&e->advanced, 1, __ATOMIC_RELAXED);
    return done;
}

int braid_engine_progress(braid_engine_t *e, bool complete)
{
    if (!braid_engine_outstanding(e) || NULL != braid_fiber_self()) return 0;
    if (!progress_enter(e)) return 0;
    int n = 0;
    braid_task_t **link = &e->head, *prev = NULL;
    while (NULL != *link) {
        braid_task_t *r = *link;
        if (!r->ran_out && (r->ran_out = run_once(e, r))) {
            __atomic_sub_fetch(&e->runnable, 1, __ATOMIC_RELEASE);
            n++;
        }
        if (!r->ran_out || !complete) {
            prev = r;
            link = &r->next_active;
            continue;
        }
        /* unlinked before it completes: a waiting thread may reuse it at once */
        *link = r->next_active;
        if (e->tail == r) e->tail = prev;
        __atomic_sub_fetch(&e->outstanding, 1, __ATOMIC_RELEASE);
        e->hooks.complete(e->hooks.arg, r);
        n++;
    }
    progress_leave(e);
    return n;
}

/* ------------------------------------------------------------------ */
/* the progress thread                                                 */
/* ------------------------------------------------------------------ */

/* Started with the first outstanding request. It sleeps on a condition
 * variable while no request has a fiber left to run (woken by
 * braid_engine_add); otherwise it resumes them, and when a pass advances
 * none it backs off: a few passes with sched_yield, then waits of growing
 * length up to PT_SLEEP_MAX_NS on the transport's wake-up (hooks.wait_event),
 * so that a late peer costs this rank little CPU (the application computes
 * on the same cores): a message wakes it at once, a shm-tier flag (no fd
 * to wait on) is seen within the wait's length. It never completes a
 * request: the host's threads do (Open MPI completes requests without
 * atomics unless the job asked for MPI_THREAD_MULTIPLE). */
#define PT_SPIN_PASSES 64
#define PT_SLEEP_MAX_NS 200000L

static void *thread_main(void *arg)
{
    braid_engine_t *e = arg;
    unsigned idle = 0, seen = 0;
    long sleep_ns = 1000;
    for (;;) {
        pthread_mutex_lock(&e->pt.lock);
        while (!e->pt.stop && 0 == __atomic_load_n(&e->runnable, __ATOMIC_ACQUIRE)) {
            idle = 0;
            sleep_ns = 1000;
            pthread_cond_wait(&e->pt.wake, &e->pt.lock);
        }
        bool stop = e->pt.stop;
        pthread_mutex_unlock(&e->pt.lock);
        if (stop) return NULL;
        /* the transport first (a pass resumes every fiber, each of which
         * also polls it), then the requests */
        int n = e->hooks.poll() + braid_engine_progress(e, false);
        /* a fiber past one wait and into the next is progress too: a
         * shm-tier step has no fd to wake the thread, so backing off
         * between steps would add a sleep to every step */
        unsigned adv = __atomic_load_n(&e->advanced, __ATOMIC_RELAXED);
        if (adv != seen) {
            seen = adv;
            n++;
        }
        if (n > 0) {
            idle = 0;
            sleep_ns = 1000;
        } else if (++idle < PT_SPIN_PASSES) {
            sched_yield();
        } else if (e->hooks.wait_event(sleep_ns)) {
            sleep_ns = 1000;   /* a message came: the fibers waiting on it run next */
        } else if (sleep_ns < PT_SLEEP_MAX_NS) {
            sleep_ns = sleep_ns * 2 < PT_SLEEP_MAX_NS ? sleep_ns * 2 : PT_SLEEP_MAX_NS;
        }
    }
}

static void thread_wake(braid_engine_t *e)
{
    pthread_mutex_lock(&e->pt.lock);
    if (!e->pt.started && !e->pt.stop) {
        e->pt.started = 0 == pthread_create(&e->pt.thread, NULL, thread_main, e);
        char line[160];
        snprintf(line, sizeof(line), "progress thread started; it waits on %s",
                 e->hooks.wait_name());
        log_line(e, e->pt.started ? 10 : 1,
                 e->pt.started ? line
                               : "the progress thread could not be started; requests progress "
                                 "inside MPI calls only");
    }
    pthread_cond_signal(&e->pt.wake);
    pthread_mutex_unlock(&e->pt.lock);
}

static void thread_stop(braid_engine_t *e)
{
    pthread_mutex_lock(&e->pt.lock);
    e->pt.stop = true;
    bool started = e->pt.started;
    pthread_cond_signal(&e->pt.wake);
    pthread_mutex_unlock(&e->pt.lock);
    if (started) pthread_join(e->pt.thread, NULL);
    e->pt.started = false;
    e->pt.stop = false;
}

void braid_engine_fini(braid_engine_t *e, void (*release)(braid_task_t *r))
{
    thread_stop(e);
    lock(e, &e->pool_lock);
    for (braid_task_t *r = e->pool, *n; NULL != r; r = n) {
        n = r->next_free;
        release(r);
    }
    e->pool = NULL;
    unlock(e, &e->pool_lock);
    lock(e, &e->lock);
    e->head = e->tail = NULL;
    e->outstanding = e->runnable = 0;
    unlock(e, &e->lock);
}

/* ------------------------------------------------------------------ */
/* turns                                                               */
/* ------------------------------------------------------------------ */

void braid_turn_wait(braid_turns_t *t, unsigned mine, void (*wait)(void *), void *arg)
{
    unsigned turn = 0;
    while (__atomic_load_n(&t->serving, __ATOMIC_ACQUIRE) != mine) {
        braid_fiber_t *f = braid_fiber_self();
        if (NULL == f) {
            wait(arg);
            continue;
        }
        (void)braid_fiber_yield_due(f, ++turn, true);   /* counts the wait as one step */
        braid_fiber_yield();
    }
}
