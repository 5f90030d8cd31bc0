/*
 * test_ucx_load - UCX is started beside a thread that allocates from
 * glibc's main heap, and the heap survives.
 *
 * libucs's constructor moves the program break up a page and back to
 * test UCX's memory hooks. Where the libraries are loaded on one thread
 * while the thread of the main heap grows it, that heap is left with a
 * top past the break: a later allocation aborts ("break adjusted to free
 * malloc space") or faults; ucp_init's brk(NULL) may store a stale break
 * into glibc's __curbrk. braid_ucx_context names the thread that may do
 * either; this test starts UCX the two ways braid does, many times, each
 * in a fresh process (the libraries load once per process), while the
 * main thread allocates and frees blocks that keep moving the break:
 *
 *   main        braid_ucx_init on the main thread, between allocations
 *   first_need  braid_ucx_context on the main thread (as MPI_Init does in
 *               a threaded program), then another thread's
 *               braid_ucx_init (the worker) beside the allocations
 *
 * With the libraries loaded on another thread beside the allocations,
 * about one process in twenty died (2 vCPU); RUNS per way makes a miss
 * unlikely. Exit 77 (skip) where UCX cannot start at all.
 */
#include "braid_ucx.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNS 60
#define CHILD_SECONDS 10

static volatile int started;   /* the thread has returned from braid_ucx_init */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Allocations from the main heap that grow its top and give it back, so
 * that glibc moves the break all the time, for at least `ms` and until
 * *until is set; each block is written, so a top past the break faults. */
static void churn(double ms, volatile int *until)
{
    enum { KEEP = 512 };
    static void *keep[KEEP];
    double end = now_ms() + ms;
    for (unsigned n = 0; now_ms() < end || (NULL != until && !*until); n++) {
        unsigned i = n % KEEP;
        free(keep[i]);
        size_t len = 2048 + (n * 2654435761u) % 30000u;   /* below the mmap threshold */
        keep[i] = malloc(len);
        if (NULL == keep[i]) abort();
        memset(keep[i], (int)n, len);
        if (0 == n % 4096) for (unsigned k = 0; k < KEEP; k++) {   /* the top shrinks */
            free(keep[k]);
            keep[k] = NULL;
        }
    }
}

static void *start_on_thread(void *arg)
{
    const braid_ucx_config_t *cfg = arg;
    int rc = braid_ucx_init(cfg);
    started = 1;
    return (void *)(intptr_t)rc;
}

static int child(const char *way)
{
    braid_ucx_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    alarm(CHILD_SECONDS);
    setenv("UCX_HANDLE_ERRORS", "none", 1);   /* a fault ends the process, no backtrace */
    if (0 == strcmp(way, "main")) {
        churn(5, NULL);
        if (BRAID_OK != braid_ucx_init(&cfg)) return 77;
    } else {
        if (BRAID_OK != braid_ucx_context(&cfg)) return 77;
        pthread_t t;
        if (0 != pthread_create(&t, NULL, start_on_thread, &cfg)) return 1;
        churn(0, &started);
        void *rc;
        pthread_join(t, &rc);
        if (BRAID_OK != (int)(intptr_t)rc) return 77;
    }
    churn(5, NULL);   /* a heap left past the break fails here at the latest */
    braid_ucx_finalize();
    return 0;
}

int main(int argc, char **argv)
{
    if (3 == argc && 0 == strcmp(argv[1], "--child")) return child(argv[2]);
    const char *ways[] = { "main", "first_need" };
    int failed = 0, skipped = 0;
    for (int w = 0; w < 2; w++) {
        int bad = 0;
        for (int r = 0; r < RUNS; r++) {
            pid_t pid = fork();
            if (0 == pid) {
                execl("/proc/self/exe", argv[0], "--child", ways[w], (char *)NULL);
                _exit(127);
            }
            int st = 0;
            if (pid < 0 || waitpid(pid, &st, 0) != pid) return 1;
            if (WIFEXITED(st) && 77 == WEXITSTATUS(st)) {
                skipped++;
                break;
            }
            if (!WIFEXITED(st) || 0 != WEXITSTATUS(st)) {
                bad++;
                if (WIFSIGNALED(st))
                    fprintf(stderr, "%s run %d: signal %d (%s)\n", ways[w], r, WTERMSIG(st),
                            strsignal(WTERMSIG(st)));
                else
                    fprintf(stderr, "%s run %d: exit %d\n", ways[w], r, WEXITSTATUS(st));
            }
        }
        printf("%s: %d of %d runs failed\n", ways[w], bad, RUNS);
        failed += bad;
    }
    if (skipped) {
        printf("SKIP: UCX could not start\n");
        return 77;
    }
    return failed ? 1 : 0;
}
