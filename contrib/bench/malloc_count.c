/*
 * malloc_count.c - an LD_PRELOAD shim that counts the process's calls to
 * malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign and
 * valloc (free is not counted) and hands them to glibc's own allocator
 * (__libc_* entry points: no dlsym, so no allocation before the counter
 * works). comm_cycle finds malloc_count_calls() with dlsym.
 *
 *   cc -O2 -shared -fPIC -o malloc_count.so malloc_count.c
 *   LD_PRELOAD=./malloc_count.so mpirun ... comm_cycle
 *
 * (mpirun -x LD_PRELOAD passes it to the ranks; comm_cycle.sh does.)
 */
#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);

static unsigned long long calls;

static inline void count(void) { __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED); }

__attribute__((visibility("default"))) unsigned long long malloc_count_calls(void)
{
    return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
    count();
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
    count();
    return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
    count();
    return __libc_realloc(p, n);
}

void *memalign(size_t a, size_t n)
{
    count();
    return __libc_memalign(a, n);
}

void *aligned_alloc(size_t a, size_t n)
{
    count();
    return __libc_memalign(a, n);
}

void *valloc(size_t n)
{
    count();
    return __libc_valloc(n);
}

int posix_memalign(void **out, size_t a, size_t n)
{
    count();
    if (0 == a || (a & (a - 1)) || a % sizeof(void *)) return EINVAL;
    void *p = __libc_memalign(a, n);
    if (NULL == p) return ENOMEM;
    *out = p;
    return 0;
}
