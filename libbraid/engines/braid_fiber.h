/*
 * braid_fiber.h - fibers: an algorithm run on a stack of its own, so that
 * a blocking algorithm becomes a nonblocking collective without being
 * rewritten.
 *
 * An algorithm's only blocking points are its transport's waitall and the
 * shared-memory tier's flag waits. Run on a fiber, those waits test once
 * and, when not done, give the thread back (braid_fiber_yield); whoever
 * drives progress resumes the fiber later (braid_fiber_resume), on any
 * thread, and the wait tests again. Between two resumes the fiber's stack
 * holds the algorithm's whole state - loop counters, pointers, the request
 * array - exactly as the straight-line code left it.
 *
 * Cost: on x86-64 a job enters its fiber by a call and, when it never
 * yields, leaves by its return; a yield or a resume is a switch of 15
 * instructions (braid_fiber.c). Elsewhere a switch is _setjmp + _longjmp
 * (no system call: no signal mask is saved). A fiber's stack is mapped
 * once and reused by every later job, so a
 * nonblocking call in steady state allocates nothing and makes no system
 * call. The stack is as large as a thread's (BRAID_FIBER_STACK by
 * default, braid_fiber_pool_configure), MAP_NORESERVE: only the pages a
 * job touches are backed - a user reduction op with large local arrays
 * runs on a fiber as it would on a thread. Below it lies a guard region of
 * BRAID_FIBER_GUARD bytes, so that a frame far larger than a page still
 * faults there, and a fault on a fiber whose stack pointer has left its
 * stack prints what to raise (the hint given to
 * braid_fiber_pool_configure) before the process's previous SIGSEGV
 * handler runs; a thread that resumes fibers gets an alternate signal
 * stack for that, unless it has one.
 *
 * One fiber runs on one thread at a time; the caller keeps two threads
 * from resuming the same fiber (the component resumes under its progress
 * lock). A fiber may be resumed from another fiber's stack (a nested
 * progress): it returns there when it yields.
 *
 * Pure C: no Open MPI, no UCX.
 */
#ifndef BRAID_FIBER_H
#define BRAID_FIBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BRAID_FIBER_STACK ((size_t)8 << 20)
#define BRAID_FIBER_STACK_MIN ((size_t)64 << 10)
#define BRAID_FIBER_GUARD ((size_t)1 << 20)

typedef struct braid_fiber braid_fiber_t;
typedef int (*braid_fiber_fn)(void *arg);

/* A fiber from the process's pool (made on first need), with job fn(arg)
 * bound but not started; NULL when no stack can be mapped. */
braid_fiber_t *braid_fiber_get(braid_fiber_fn fn, void *arg);

/* Run f's job until it yields or returns; true when it returned (its
 * result is braid_fiber_result). Resuming a finished fiber returns true. */
bool braid_fiber_resume(braid_fiber_t *f);
int braid_fiber_result(const braid_fiber_t *f);

/* f's job returned: bind it to the next job fn(arg), not started, for an
 * owner that keeps its fiber between jobs (its data stays). */
void braid_fiber_rearm(braid_fiber_t *f, braid_fiber_fn fn, void *arg);
/* braid_fiber_rearm, then braid_fiber_resume, in one call */
bool braid_fiber_start(braid_fiber_t *f, braid_fiber_fn fn, void *arg);

/* f's job returned: give it back to the pool. */
void braid_fiber_put(braid_fiber_t *f);

/* The fiber this thread runs now, or NULL on the thread's own stack. */
braid_fiber_t *braid_fiber_self(void);

/* From a fiber's job: give the thread back to the resumer. */
void braid_fiber_yield(void);

/* A wait loop on fiber f at its turn-th unsuccessful test (turn counts
 * from 1; a loop may ask only every few turns): whether to give the thread
 * back now. Until the job's first yield - the post of a nonblocking
 * collective - not before BRAID_FIBER_FIRST_SPIN turns, so that a
 * collective whose peers are already there finishes inside the post and
 * MPI_Wait finds it done without a round of Open MPI's progress; after
 * that, and on an oversubscribed node (busy: another process may need
 * this core), at once. */
#define BRAID_FIBER_FIRST_SPIN 64u
bool braid_fiber_yield_due(braid_fiber_t *f, unsigned turn, bool busy);

/* How many waits f has yielded in since its job started: a yield at a turn
 * no later than the previous yield's began a new wait, so the job got past
 * the one before. A resumer compares it across a resume to tell a job that
 * advanced from one still waiting where it was. */
unsigned braid_fiber_steps(const braid_fiber_t *f);

/* How many times f yielded since its job started. */
unsigned braid_fiber_yields(const braid_fiber_t *f);

/* What the fiber's owner attaches (the component: its request). */
void braid_fiber_set_data(braid_fiber_t *f, void *data);
void *braid_fiber_data(const braid_fiber_t *f);

/* Unmap the pooled stacks and take the overflow handler back out (process
 * end; no fiber may be running). */
void braid_fiber_pool_release(void);

/* Stack bytes of the fibers made from now on (at least
 * BRAID_FIBER_STACK_MIN, rounded up to pages), and the hint an overflow
 * prints after "stack of N KiB overflowed": what to raise. */
void braid_fiber_pool_configure(size_t stack_bytes, const char *overflow_hint);

/* Whether threads may get and put fibers at the same time (the default):
 * false drops the pool's lock, for a caller that is only ever entered by
 * one thread at a time. */
void braid_fiber_pool_shared(bool shared);

#ifdef __cplusplus
}
#endif
#endif /* BRAID_FIBER_H */
