/*
 * braid_fiber.c - see braid_fiber.h.
 *
 * On x86-64 (braid_fiber_switch.S, kept out of the C file so that the
 * component is never marked as safe for CET shadow stacks, which a switch
 * between stacks is not) a job starts with braid_fiber_call: a call of
 * braid_fiber_run_job at the top of the fiber's stack, which returns to
 * the caller by an ordinary `ret` when the job never yields - most
 * nonblocking collectives whose peers are there finish inside their post.
 * A yield and a resume are braid_fiber_switch: push the six registers the
 * System V ABI makes the callee keep, store the stack pointer, load the
 * other side's, pop its six, return on its stack - 15 instructions, where
 * glibc's _longjmp also demangles pointers and walks the thread's cleanup
 * handlers (~100 instructions a switch, callgrind). A switch's `ret`
 * lands where the processor's return-stack predictor does not expect it,
 * and so do the next returns on each side; a job entered by a call and
 * left by its return pays none of that (contrib/bench/fiber_bench). The
 * floating-point control words are not switched (as with
 * _setjmp/_longjmp): both sides run in one thread's floating-point
 * environment.
 *
 * Elsewhere a fiber loops in trampoline() on its own stack (run the job,
 * mark it done, switch back, wait for the next job), entered once through
 * makecontext + setcontext (a system call: setcontext restores a signal
 * mask); every later switch is _setjmp/_longjmp. _FORTIFY_SOURCE is
 * turned off for this file, since its longjmp check refuses to jump to
 * another stack.
 *
 * On a fiber, thread-local state is read only through braid_fiber_self(),
 * which is not inlined: a fiber may yield on one thread and be resumed on
 * another, and a compiler may keep the address of a thread-local variable
 * in a register across a call - it must never be kept across a switch.
 * braid_fiber_resume's own frame always goes on on its caller's thread,
 * and reads and writes it directly.
 *
 * Under AddressSanitizer every switch is announced
 * (__sanitizer_start/finish_switch_fiber), so that it checks the stack the
 * code is on and not the one it left.
 */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* REG_RSP */
#endif
#include "braid_fiber.h"

#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
/* under valgrind, each fiber stack is registered as a stack, so memcheck
 * takes a switch for one and not for a huge frame (no-ops otherwise; the
 * header comes with valgrind, and the build does without it) */
#if defined(__has_include) && !defined(__CPPCHECK__)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define BRAID_FIBER_VALGRIND 1
#endif
#endif

#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) && !defined(BRAID_FIBER_PORTABLE)
#define BRAID_FIBER_ASM 1
#endif

struct braid_fiber {
#ifdef BRAID_FIBER_ASM
    void *sp;               /* the fiber's stack pointer while it is switched out */
    void **back;            /* where the resumer's is kept, on the resumer's stack */
#else
    jmp_buf jb;             /* the fiber's context while it is switched out */
    jmp_buf *back;          /* the resumer's context, on the resumer's stack */
    ucontext_t uc;          /* the first entry */
#endif
    char *map;              /* guard region + stack */
    size_t map_len;
    size_t guard;           /* bytes of the guard region at map */
#ifdef BRAID_FIBER_VALGRIND
    unsigned vg_stack;      /* valgrind's id of the stack */
#endif
#ifdef BRAID_FIBER_ASM
    bool started;           /* the job was entered (braid_fiber_call) */
#else
    bool entered;           /* trampoline runs on the stack */
#endif
    bool done;              /* the job returned */
    braid_fiber_fn fn;
    void *arg;
    int result;
    unsigned yields;
    unsigned steps;         /* waits yielded in (braid_fiber_steps) */
    unsigned last_turn;     /* the turn of the last yield_due that said yes */
    void *data;
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
static size_t stack_bytes = BRAID_FIBER_STACK;   /* braid_fiber_pool_configure */
static char overflow_hint[256] = "raise the fibers' stack size";

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

/* ------------------------------------------------------------------ */
/* sanitizer announcements (no-ops without ASan)                       */
/* ------------------------------------------------------------------ */

static inline void enter_fiber_begin(braid_fiber_t *f, void **fake)
{
#ifdef BRAID_FIBER_ASAN
    __sanitizer_start_switch_fiber(fake, f->map + f->guard, f->map_len - f->guard);
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

/* the job returned: its frames are gone, and no fake stack is kept */
static inline void end_fiber_begin(braid_fiber_t *f)
{
#ifdef BRAID_FIBER_ASAN
    __sanitizer_start_switch_fiber(NULL, f->back_bottom, f->back_size);
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
/* stack overflow: a message instead of a bare SIGSEGV                 */
/* ------------------------------------------------------------------ */

/* Installed with the first fiber, taken out at braid_fiber_pool_release;
 * it only adds a line and then runs the handler it replaced. */
static struct sigaction prev_segv;
static bool segv_installed;
static char overflow_msg[512];
static size_t overflow_len;

/* The interrupted stack pointer, or 0 where this file cannot read it. */
static uintptr_t fault_sp(void *uc)
{
#if defined(__x86_64__) && defined(REG_RSP)
    return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.sp;
#else
    (void)uc;
    return 0;
#endif
}

/* Async-signal-safe: a TLS load, compares, write(2). */
static void segv_handler(int sig, siginfo_t *si, void *uc)
{
    braid_fiber_t *f = cur;
    if (NULL != f) {
        uintptr_t lo = (uintptr_t)f->map, top = lo + f->guard;
        uintptr_t sp = fault_sp(uc), addr = (uintptr_t)si->si_addr;
        /* the stack pointer below the usable stack (a frame may have
         * jumped the guard), or a fault inside the guard */
        bool over = (0 != sp && sp < top && sp + f->map_len >= lo) || (addr >= lo && addr < top);
        if (over) {
            ssize_t w = write(STDERR_FILENO, overflow_msg, overflow_len);
            (void)w;
        }
    }
    if (prev_segv.sa_flags & SA_SIGINFO) {
        if (NULL != prev_segv.sa_sigaction) prev_segv.sa_sigaction(sig, si, uc);
    } else if (SIG_DFL == prev_segv.sa_handler || SIG_IGN == prev_segv.sa_handler) {
        /* returning faults again, now with the default action */
        signal(sig, SIG_DFL);
    } else {
        prev_segv.sa_handler(sig);
    }
}

static void overflow_message(void)
{
    int n = snprintf(overflow_msg, sizeof(overflow_msg),
                     "braid: a nonblocking collective's fiber overflowed its stack of %zu KiB "
                     "(a user reduction op with large local arrays?): %s\n",
                     stack_bytes >> 10, overflow_hint);
    overflow_len = n < 0 ? 0 : (size_t)n < sizeof(overflow_msg) ? (size_t)n : sizeof(overflow_msg) - 1;
}

static void segv_install(void)
{
    if (segv_installed) return;
    overflow_message();
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = segv_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    segv_installed = 0 == sigaction(SIGSEGV, &sa, &prev_segv);
}

static void segv_uninstall(void)
{
    struct sigaction now;
    if (!segv_installed || 0 != sigaction(SIGSEGV, NULL, &now)) return;
    /* only if nobody installed a handler over braid's since */
    if ((now.sa_flags & SA_SIGINFO) && segv_handler == now.sa_sigaction)
        sigaction(SIGSEGV, &prev_segv, NULL);
    segv_installed = false;
}

/* An overflow's signal cannot run on the stack that overflowed: a thread
 * that resumes fibers gets an alternate signal stack, unless it has one
 * of its own (kept for the thread's life: a few pages of address space). */
static __thread bool altstack_checked __attribute__((tls_model("initial-exec")));

__attribute__((noinline)) static void altstack_ensure(void)
{
    altstack_checked = true;
    stack_t old;
    if (0 != sigaltstack(NULL, &old) || !(old.ss_flags & SS_DISABLE)) return;
    size_t len = 64 << 10;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == p) return;
    stack_t ss = { .ss_sp = p, .ss_size = len, .ss_flags = 0 };
    if (0 != sigaltstack(&ss, NULL)) munmap(p, len);
}

/* ------------------------------------------------------------------ */
/* switching                                                           */
/* ------------------------------------------------------------------ */

#ifdef BRAID_FIBER_ASM
/* Save this side's callee-saved registers on its stack and its stack
 * pointer in *save; continue the side whose stack pointer is load
 * (braid_fiber_switch.S). */
void braid_fiber_switch(void **save, void *load);
/* Save this side as braid_fiber_switch does, call braid_fiber_run_job(f)
 * with the stack pointer at top, continue the side it returns. */
void braid_fiber_call(void **save, void *top, braid_fiber_t *f);
void *braid_fiber_run_job(braid_fiber_t *f) __attribute__((visibility("hidden")));
#endif

/* On the fiber: back to the resumer; returns when resumed again. */
static void switch_out(braid_fiber_t *f)
{
    leave_fiber_begin(f);
#ifdef BRAID_FIBER_ASM
    braid_fiber_switch(&f->sp, *f->back);
#else
    if (0 == _setjmp(f->jb)) _longjmp(*f->back, 1);
#endif
    enter_fiber_end(f);
}

#ifdef BRAID_FIBER_ASM
/* A job's whole run on f's stack (from braid_fiber_call): the stack
 * pointer to continue is that of whoever resumed the fiber last - the
 * caller of braid_fiber_call itself when the job never yielded. */
void *braid_fiber_run_job(braid_fiber_t *f)
{
#ifdef BRAID_FIBER_ASAN
    f->fake = NULL;   /* a fresh stack: nothing of an earlier job's to bring back */
#endif
    enter_fiber_end(f);
    f->result = f->fn(f->arg);
    f->done = true;
    end_fiber_begin(f);
    return *f->back;
}
#else
__attribute__((noreturn, used)) static void trampoline(void)
{
    braid_fiber_t *f = braid_fiber_self();
    enter_fiber_end(f);
    for (;;) {
        f->result = f->fn(f->arg);
        f->done = true;
        switch_out(f);   /* parked here until the next job is resumed */
    }
}
#endif

/* Locals of braid_fiber_resume live across the switch: the assembly
 * switch keeps the callee-saved registers, _setjmp/_longjmp do not
 * (volatile: on the stack) */
#ifdef BRAID_FIBER_ASM
#define ACROSS_SWITCH
#define RESUME_INLINE static inline __attribute__((always_inline))
#else
#define ACROSS_SWITCH volatile
#define RESUME_INLINE static   /* a function calling _setjmp is never inlined */
#endif

RESUME_INLINE bool resume(braid_fiber_t *ACROSS_SWITCH f)
{
    if (f->done) return true;
    if (!altstack_checked) altstack_ensure();
    void *fake = NULL;
    /* this frame goes on on the thread that called it (the fiber switches
     * back to f->back, set here), so it reads and writes the thread's
     * current fiber directly */
    braid_fiber_t *ACROSS_SWITCH outer = cur;
    cur = f;
    enter_fiber_begin(f, &fake);
    /* f->back points into this frame only while the fiber runs: the
     * fiber switches back to it before this function returns */
#ifdef BRAID_FIBER_ASM
    void *back;
    f->back = &back;   // cppcheck-suppress autoVariables
    if (f->started) {
        braid_fiber_switch(&back, f->sp);
    } else {
        f->started = true;
        braid_fiber_call(&back, f->map + f->map_len, f);
    }
#else
    jmp_buf back;
    f->back = &back;   // cppcheck-suppress autoVariables
    if (0 == _setjmp(back)) {
        if (!f->entered) {
            f->entered = true;
            setcontext(&f->uc);
        }
        _longjmp(f->jb, 1);
    }
#endif
    leave_fiber_end(fake);
    cur = outer;
    return f->done;
}

bool braid_fiber_resume(braid_fiber_t *f) { return resume(f); }

bool braid_fiber_start(braid_fiber_t *f, braid_fiber_fn fn, void *arg)
{
    braid_fiber_rearm(f, fn, arg);
    return resume(f);
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

void braid_fiber_pool_configure(size_t bytes, const char *hint)
{
    long page = sysconf(_SC_PAGESIZE);
    if (bytes < BRAID_FIBER_STACK_MIN) bytes = BRAID_FIBER_STACK_MIN;
    bytes = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
    pool_enter();
    stack_bytes = bytes;
    if (NULL != hint) snprintf(overflow_hint, sizeof(overflow_hint), "%s", hint);
    overflow_message();
    pool_leave();
}

static braid_fiber_t *fiber_new(void)
{
    braid_fiber_t *volatile f = calloc(1, sizeof(*f));
    if (NULL == f) return NULL;
    pool_enter();
    segv_install();
    size_t stack = stack_bytes;
    pool_leave();
    f->guard = BRAID_FIBER_GUARD;
    f->map_len = stack + f->guard;
    f->map = mmap(NULL, f->map_len, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (MAP_FAILED == f->map) {
        free(f);
        return NULL;
    }
    mprotect(f->map, f->guard, PROT_NONE);   /* overflow faults instead of corrupting */
#ifdef BRAID_FIBER_VALGRIND
    f->vg_stack = VALGRIND_STACK_REGISTER(f->map + f->guard, f->map + f->map_len);
#endif
    /* x86-64: each job enters at the stack's top (page-aligned) through
     * braid_fiber_call; elsewhere trampoline is entered once, here */
#ifndef BRAID_FIBER_ASM
    if (0 != getcontext(&f->uc)) {
        munmap(f->map, f->map_len);
        free(f);
        return NULL;
    }
    f->uc.uc_stack.ss_sp = f->map + f->guard;
    f->uc.uc_stack.ss_size = stack;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, trampoline, 0);
#endif
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
    f->data = NULL;
    f->next = NULL;
    braid_fiber_rearm(f, fn, arg);
    return f;
}

void braid_fiber_rearm(braid_fiber_t *f, braid_fiber_fn fn, void *arg)
{
    f->fn = fn;
    f->arg = arg;
#ifdef BRAID_FIBER_ASM
    f->started = false;
#endif
    f->done = false;
    f->result = 0;
    f->yields = 0;
    f->steps = 0;
    f->last_turn = UINT_MAX;
}

void braid_fiber_put(braid_fiber_t *f)
{
    if (NULL == f) return;
    pool_enter();
    f->next = pool_free;
    pool_free = f;
    pool_leave();
}

bool braid_fiber_yield_due(braid_fiber_t *f, unsigned turn, bool busy)
{
    if (!busy && 0 == f->yields && turn < BRAID_FIBER_FIRST_SPIN) return false;
    if (turn <= f->last_turn) f->steps++;
    f->last_turn = turn;
    return true;
}

unsigned braid_fiber_steps(const braid_fiber_t *f) { return f->steps; }

int braid_fiber_result(const braid_fiber_t *f) { return f->result; }
unsigned braid_fiber_yields(const braid_fiber_t *f) { return f->yields; }
void braid_fiber_set_data(braid_fiber_t *f, void *data) { f->data = data; }
void *braid_fiber_data(const braid_fiber_t *f) { return f->data; }

void braid_fiber_pool_release(void)
{
    pool_enter();
    for (braid_fiber_t *f = pool_all, *n; NULL != f; f = n) {
        n = f->all;
#ifdef BRAID_FIBER_VALGRIND
        VALGRIND_STACK_DEREGISTER(f->vg_stack);
#endif
        munmap(f->map, f->map_len);
        free(f);
    }
    pool_all = pool_free = NULL;
    segv_uninstall();
    pool_leave();
}
