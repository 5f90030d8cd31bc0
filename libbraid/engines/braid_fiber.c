/*
 * braid_fiber.c - see braid_fiber.h.
 *
 * A fiber loops in trampoline() on its own stack: run the job, mark it
 * done, switch back, wait for the next job.
 *
 * A switch on x86-64 is braid_fiber_switch below: push the six registers
 * the System V ABI makes the callee keep, store the stack pointer, load
 * the other side's, pop its six, return on its stack - 15 instructions,
 * where glibc's _longjmp also demangles pointers and walks the thread's
 * cleanup handlers (~100 instructions a switch, callgrind). The first
 * entry "returns" into trampoline from a frame built at the top of the new
 * stack. The floating-point control words are not switched (as with
 * _setjmp/_longjmp): both sides run in one thread's floating-point
 * environment. Elsewhere the fiber enters its stack once through
 * makecontext + setcontext (a system call: setcontext restores a signal
 * mask) and every later switch is _setjmp/_longjmp; _FORTIFY_SOURCE is
 * turned off for this file, since its longjmp check refuses to jump to
 * another stack.
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
#include <stdint.h>
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
    braid_fiber_t *outer;   /* the fiber (or NULL) that resumed this one */
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

#ifdef BRAID_FIBER_ASM
/* Save this side's callee-saved registers on its stack and its stack
 * pointer in *save; continue the side whose stack pointer is load. */
void braid_fiber_switch(void **save, void *load);
__asm__(".text\n"
        ".p2align 4\n"
        ".globl braid_fiber_switch\n"
        ".hidden braid_fiber_switch\n"
        ".type braid_fiber_switch, @function\n"
        "braid_fiber_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size braid_fiber_switch, .-braid_fiber_switch\n");
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

bool braid_fiber_resume(braid_fiber_t *volatile f)
{
    if (f->done) return true;
    void *fake = NULL;
    braid_fiber_t *volatile outer = braid_fiber_self();
    f->outer = outer;
    set_self(f);
    enter_fiber_begin(f, &fake);
    /* f->back points into this frame only while the fiber runs: the
     * fiber switches back to it before this function returns */
#ifdef BRAID_FIBER_ASM
    void *back;
    f->back = &back;   // cppcheck-suppress autoVariables
    braid_fiber_switch(&back, f->sp);
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
#ifdef BRAID_FIBER_ASM
    /* the first switch pops six zero registers and returns into
     * trampoline with the stack as a call leaves it (16-byte aligned
     * before the return address, here a zero that ends backtraces) */
    void **top = (void **)(f->map + f->map_len);
    top[-1] = NULL;
    top[-2] = (void *)(uintptr_t)trampoline;
    for (int i = 3; i <= 8; i++) top[-i] = NULL;
    f->sp = &top[-8];
#else
    if (0 != getcontext(&f->uc)) {
        munmap(f->map, f->map_len);
        free(f);
        return NULL;
    }
    f->uc.uc_stack.ss_sp = f->map + page;
    f->uc.uc_stack.ss_size = BRAID_FIBER_STACK;
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
