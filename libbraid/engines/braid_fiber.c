/*
 * braid_fiber.c - see braid_fiber.h.
 *
 * A fiber enters its stack once, through makecontext + setcontext (the one
 * system call of its life: setcontext restores a signal mask), and then
 * loops in trampoline(): run the job, mark it done, switch back, wait for
 * the next job. Every later switch, either way, is _setjmp/_longjmp.
 * _FORTIFY_SOURCE is turned off for this file: its longjmp check refuses
 * to jump to another stack.
 *
 * Thread-local state is read only through braid_fiber_self(), which is
 * not inlined: a fiber may yield on one thread and be resumed on another,
 * and a compiler may keep the address of a thread-local variable in a
 * register across a call - it must never be kept across a switch.
 *
 * Under AddressSanitizer every switch is announced
 * (__sanitizer_start/finish_switch_fiber), so that it checks the stack the
 * code is on and not the one it left.
 */
#undef _FORTIFY_SOURCE
#include "braid_fiber.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define BRAID_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BRAID_FIBER_ASAN 1
#endif
#endif
#ifdef BRAID_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

struct braid_fiber {
    jmp_buf jb;             /* the fiber's context while it is switched out */
    jmp_buf *back;          /* the resumer's context, on the resumer's stack */
    braid_fiber_t *outer;   /* the fiber (or NULL) that resumed this one */
    ucontext_t uc;          /* the first entry */
    char *map;              /* guard page + stack */
    size_t map_len;
    bool entered;           /* trampoline runs on the stack */
    bool done;              /* the job returned */
    braid_fiber_fn fn;
    void *arg;
    int result;
    unsigned yields;
    void *data;
    uint32_t seq;
    braid_fiber_t *next;    /* the pool's free list */
    braid_fiber_t *all;     /* every fiber made, for braid_fiber_pool_release */
#ifdef BRAID_FIBER_ASAN
    void *fake;             /* ASan's fake stack of the side switched away from */
    const void *back_bottom;/* the resumer's stack, to announce the switch back */
    size_t back_size;
#endif
};

/* initial-exec: one %fs-relative load instead of a __tls_get_addr call
 * (the shm tier's wait loop asks on every turn); one pointer of the static
 * TLS surplus glibc keeps for libraries that are dlopen'ed, as the
 * component is */
static __thread braid_fiber_t *cur __attribute__((tls_model("initial-exec")));
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static braid_fiber_t *pool_free, *pool_all;
static bool pool_shared = true;   /* braid_fiber_pool_shared */

static inline void pool_enter(void)
{
    if (pool_shared) pthread_mutex_lock(&pool_lock);
}
static inline void pool_leave(void)
{
    if (pool_shared) pthread_mutex_unlock(&pool_lock);
}

void braid_fiber_pool_shared(bool shared) { pool_shared = shared; }

__attribute__((noinline)) braid_fiber_t *braid_fiber_self(void) { return cur; }
__attribute__((noinline)) static void set_self(braid_fiber_t *f) { cur = f; }

/* ------------------------------------------------------------------ */
/* sanitizer announcements (no-ops without ASan)                       */
/* ------------------------------------------------------------------ */

static inline void enter_fiber_begin(braid_fiber_t *f, void **fake)
{
#ifdef BRAID_FIBER_ASAN
    long page = sysconf(_SC_PAGESIZE);
    __sanitizer_start_switch_fiber(fake, f->map + page, f->map_len - (size_t)page);
#else
    (void)f, (void)fake;
#endif
}

static inline void enter_fiber_end(braid_fiber_t *f)
{
#ifdef BRAID_FIBER_ASAN
    __sanitizer_finish_switch_fiber(f->fake, &f->back_bottom, &f->back_size);
#else
    (void)f;
#endif
}

static inline void leave_fiber_begin(braid_fiber_t *f)
{
#ifdef BRAID_FIBER_ASAN
    __sanitizer_start_switch_fiber(&f->fake, f->back_bottom, f->back_size);
#else
    (void)f;
#endif
}

static inline void leave_fiber_end(void *fake)
{
#ifdef BRAID_FIBER_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
    (void)fake;
#endif
}

/* ------------------------------------------------------------------ */
/* switching                                                           */
/* ------------------------------------------------------------------ */

/* On the fiber: back to the resumer; returns when resumed again. */
static void switch_out(braid_fiber_t *f)
{
    leave_fiber_begin(f);
    if (0 == _setjmp(f->jb)) _longjmp(*f->back, 1);
    enter_fiber_end(f);
}

static void trampoline(void)
{
    braid_fiber_t *f = braid_fiber_self();
    enter_fiber_end(f);
    for (;;) {
        f->result = f->fn(f->arg);
        f->done = true;
        switch_out(f);   /* parked here until the next job is resumed */
    }
}

bool braid_fiber_resume(braid_fiber_t *volatile f)
{
    if (f->done) return true;
    jmp_buf back;
    void *fake = NULL;
    braid_fiber_t *volatile outer = braid_fiber_self();
    f->back = &back;
    f->outer = outer;
    set_self(f);
    enter_fiber_begin(f, &fake);
    if (0 == _setjmp(back)) {
        if (!f->entered) {
            f->entered = true;
            setcontext(&f->uc);
        }
        _longjmp(f->jb, 1);
    }
    leave_fiber_end(fake);
    set_self(outer);
    return f->done;
}

void braid_fiber_yield(void)
{
    braid_fiber_t *f = braid_fiber_self();
    if (NULL == f) return;
    f->yields++;
    switch_out(f);
}

/* ------------------------------------------------------------------ */
/* the pool                                                            */
/* ------------------------------------------------------------------ */

static braid_fiber_t *fiber_new(void)
{
    long page = sysconf(_SC_PAGESIZE);
    braid_fiber_t *volatile f = calloc(1, sizeof(*f));
    if (NULL == f) return NULL;
    f->map_len = BRAID_FIBER_STACK + (size_t)page;
    f->map = mmap(NULL, f->map_len, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (MAP_FAILED == f->map) {
        free(f);
        return NULL;
    }
    mprotect(f->map, (size_t)page, PROT_NONE);   /* overflow faults instead of corrupting */
    if (0 != getcontext(&f->uc)) {
        munmap(f->map, f->map_len);
        free(f);
        return NULL;
    }
    f->uc.uc_stack.ss_sp = f->map + page;
    f->uc.uc_stack.ss_size = BRAID_FIBER_STACK;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, trampoline, 0);
    return f;
}

braid_fiber_t *braid_fiber_get(braid_fiber_fn fn, void *arg)
{
    pool_enter();
    braid_fiber_t *f = pool_free;
    if (NULL != f) pool_free = f->next;
    pool_leave();
    if (NULL == f) {
        if (NULL == (f = fiber_new())) return NULL;
        pool_enter();
        f->all = pool_all;
        pool_all = f;
        pool_leave();
    }
    f->fn = fn;
    f->arg = arg;
    f->done = false;
    f->result = 0;
    f->yields = 0;
    f->data = NULL;
    f->seq = 0;
    f->next = NULL;
    return f;
}

void braid_fiber_put(braid_fiber_t *f)
{
    if (NULL == f) return;
    pool_enter();
    f->next = pool_free;
    pool_free = f;
    pool_leave();
}

bool braid_fiber_yield_due(const braid_fiber_t *f, unsigned turn, bool busy)
{
    return busy || f->yields > 0 || turn >= BRAID_FIBER_FIRST_SPIN;
}

int braid_fiber_result(const braid_fiber_t *f) { return f->result; }
unsigned braid_fiber_yields(const braid_fiber_t *f) { return f->yields; }
void braid_fiber_set_data(braid_fiber_t *f, void *data) { f->data = data; }
void *braid_fiber_data(const braid_fiber_t *f) { return f->data; }
void braid_fiber_set_seq(braid_fiber_t *f, uint32_t seq) { f->seq = seq; }
uint32_t braid_fiber_seq(const braid_fiber_t *f) { return f->seq; }

void braid_fiber_pool_release(void)
{
    pool_enter();
    for (braid_fiber_t *f = pool_all, *n; NULL != f; f = n) {
        n = f->all;
        munmap(f->map, f->map_len);
        free(f);
    }
    pool_all = pool_free = NULL;
    pool_leave();
}
