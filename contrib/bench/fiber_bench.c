/*
 * fiber_bench.c - what the nonblocking engine's fibers cost on this
 * machine, without MPI: take a fiber from the pool, switch to it, let its
 * job return, switch back and put it back (what a nonblocking call that
 * completes inside its post pays); and the same with one yield in the job
 * (two more switches: a call that waits once). Built twice: fiber_bench
 * with the engine's own switch (x86-64), fiber_bench_portable with
 * _setjmp/_longjmp. Prints ns per job, best of 5 rounds.
 *
 *   contrib/bench/fiber_bench [JOBS]     (default 5,000,000 per round)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "braid_fiber.h"

static int job_return(void *arg)
{
    (void)arg;
    return 0;
}

static int job_yield(void *arg)
{
    (void)arg;
    braid_fiber_yield();
    return 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ns per job of fn, resumed until it returns */
static double per_job(braid_fiber_fn fn, long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++) {
        braid_fiber_t *f = braid_fiber_get(fn, NULL);
        if (NULL == f) {
            fprintf(stderr, "fiber_bench: no fiber\n");
            exit(1);
        }
        while (!braid_fiber_resume(f)) {
        }
        braid_fiber_put(f);
    }
    return (now() - t0) / (double)n * 1e9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    braid_fiber_pool_shared(false);   /* as in a job without MPI_THREAD_MULTIPLE */
    double best[2] = { 1e30, 1e30 };
    for (int round = 0; round < 5; round++) {
        double a = per_job(job_return, n), b = per_job(job_yield, n);
        if (a < best[0]) best[0] = a;
        if (b < best[1]) best[1] = b;
    }
    printf("%s: get + switch in + return + switch back + put: %.1f ns; with one yield: %.1f ns\n",
           argv[0], best[0], best[1]);
    braid_fiber_pool_release();
    return 0;
}
