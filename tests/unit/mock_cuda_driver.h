/*
 * mock_cuda_driver.h - the slice of the CUDA driver API that braid_cuda.c
 * uses, in host memory, for testing braid's CUDA layer without a GPU.
 * braid_cuda_set_driver(mcu_symbol) makes braid_cuda.c take its entry points
 * from here instead of libcuda.so.1.
 *
 * It behaves as the real driver was seen to behave (driver 580.159.04,
 * CUDA 13.0, H100: pointer attributes, error codes, the stale reads) and,
 * where that run showed nothing, as the driver API's documentation says
 * (stream ordering, pageable copies):
 *
 *  - symbols: only the names libcuda.so.1 exports with the ABI that CUDA
 *    13's cuda.h selects (cuMemAlloc_v2, cuCtxPushCurrent_v2, ...); an old
 *    unversioned name (32-bit sizes) or a per-thread-stream variant is not
 *    resolved, so code asking for one finds no driver;
 *  - before cuInit every call fails with CUDA_ERROR_NOT_INITIALIZED;
 *    cuDeviceGet with an ordinal outside [0, devices) fails with
 *    CUDA_ERROR_INVALID_DEVICE (101);
 *  - cuPointerGetAttributes (no context needed): plain host memory gives
 *    MEMORY_TYPE 0 (not HOST), IS_MANAGED 0, CONTEXT NULL, DEVICE_ORDINAL -2;
 *    pinned memory MEMORY_TYPE HOST with its context and device; device
 *    memory DEVICE; managed memory DEVICE (not UNIFIED) with IS_MANAGED 1;
 *    interior pointers as their allocation;
 *  - contexts: a per-thread stack; allocations, streams, events, modules
 *    need a current context (CUDA_ERROR_INVALID_CONTEXT without one); each
 *    device's primary context counts its retains (mcu_primary_retains) and
 *    is destroyed, with everything in it, when the last one is released;
 *  - device memory is out of the host's reach (mapped PROT_NONE, as a real
 *    device pointer faults on the host) and starts as zeros; managed and
 *    pinned memory are host memory;
 *  - streams run in order, lazily: queued work runs only when something
 *    waits for it (event query, stream or context synchronisation, a
 *    synchronous copy) or, in MCU_RANDOM mode, at random moments; each
 *    context has a legacy default stream (stream 0); blocking streams
 *    (flags 0) wait for work queued earlier on the legacy stream and the
 *    legacy stream for theirs; non-blocking streams wait for nothing;
 *  - copies: NULL, or a device side that is not device memory, fails with
 *    CUDA_ERROR_INVALID_VALUE ("Null address specified"). From pageable
 *    host memory to the device (cuMemcpy, cuMemcpyHtoD, the Async forms)
 *    the bytes are staged at the call and the transfer is queued: cuMemcpy
 *    returns before it lands. Device to pageable memory returns when done.
 *    With pinned memory the Async forms read or write the host bytes when
 *    the queue gets there. Freeing memory first waits for all queued work;
 *  - kernels: cuModuleGetFunction knows braid_k_<op>_<type> for every pair
 *    with a CPU kernel and runs that kernel on the queue; a kernel touching
 *    host memory or another GPU's device memory (no peer access) leaves the
 *    context's sticky error CUDA_ERROR_ILLEGAL_ADDRESS, returned by every
 *    later wait.
 *
 * cuCtxGetCurrent and cuPointerGetAttributes leave junk in their stack
 * frames (a variable of the caller read before it is written holds
 * garbage, as it did with the real driver).
 *
 * One process, one driver: the state is global, calls are serialised by a
 * lock (the real driver is thread-safe) and braid caches what it learns
 * (devices, primary contexts) per process, so each test calls mcu_reset()
 * first and runs in its own forked process (Check's default).
 */
#ifndef MOCK_CUDA_DRIVER_H
#define MOCK_CUDA_DRIVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid_kernels.h"
#include "mock_device.h"

typedef int mcu_result_t;
typedef unsigned long long mcu_devptr_t;

enum {
    MCU_SUCCESS = 0,
    MCU_ERROR_INVALID_VALUE = 1,
    MCU_ERROR_NOT_INITIALIZED = 3,
    MCU_ERROR_NO_DEVICE = 100,
    MCU_ERROR_INVALID_DEVICE = 101,
    MCU_ERROR_INVALID_CONTEXT = 201,
    MCU_ERROR_INVALID_HANDLE = 400,
    MCU_ERROR_NOT_FOUND = 500,
    MCU_ERROR_NOT_READY = 600,
    MCU_ERROR_ILLEGAL_ADDRESS = 700,
};

typedef enum { MCU_LAZY, MCU_RANDOM } mcu_mode_t;
typedef enum { MCU_MEM_DEVICE, MCU_MEM_MANAGED, MCU_MEM_PINNED } mcu_mem_kind_t;

#define MCU_MAX_DEVICES 4
#define MCU_MAX_ALLOCS 256
#define MCU_MAX_STREAMS 64    /* the legacy streams (one per device) included */
#define MCU_MAX_EVENTS 128
#define MCU_MAX_MODULES 16
#define MCU_QLEN 4096
#define MCU_STACK 16

struct mcu_stream;

typedef struct mcu_ctx {
    int device;
    int retains;                 /* primary context: alive while > 0 */
    int sticky;                  /* a kernel's fault, returned by every wait */
    struct mcu_stream *legacy;
} mcu_ctx_t;

typedef struct mcu_dep {
    struct mcu_stream *stream;
    long pos;                    /* run that stream up to here first */
} mcu_dep_t;

typedef struct mcu_item {
    bool kernel;
    char *dst;
    const char *src;             /* staged copy of pageable bytes, or the source */
    char *staged;                /* owned */
    size_t len;                  /* copies: bytes; kernels: elements */
    braid_kernel_fn_t k;
    size_t es;
    int ndeps;
    mcu_dep_t *deps;             /* owned */
} mcu_item_t;

typedef struct mcu_stream {
    bool live, legacy, blocking;
    mcu_ctx_t *ctx;
    mcu_item_t q[MCU_QLEN];
    long submitted, executed;
} mcu_stream_t;

typedef struct mcu_event {
    bool live, recorded;
    mcu_ctx_t *ctx;
    mcu_stream_t *stream;
    long pos;
    int polls;
} mcu_event_t;

typedef struct mcu_module {
    bool live;
    mcu_ctx_t *ctx;
} mcu_module_t;

/* a function handle: which CPU kernel, from which module */
typedef struct mcu_function {
    mcu_module_t *module;
    braid_kernel_fn_t k;
    size_t es;
} mcu_function_t;

typedef struct mcu_alloc {
    bool live;
    mcu_mem_kind_t kind;
    mock_mem_t mem;              /* device: PROT_NONE address + backing */
    char *host;                  /* managed, pinned: the bytes, host-accessible */
    size_t len;
    mcu_ctx_t *ctx;              /* NULL: names no context (VMM, pools) */
    int device;
} mcu_alloc_t;

static struct {
    pthread_mutex_t lock;
    bool initialised;
    int ndevices;
    mcu_mode_t mode;
    unsigned rng;
    mcu_ctx_t primary[MCU_MAX_DEVICES];
    mcu_stream_t *streams;       /* MCU_MAX_STREAMS; [0, ndevices) are the legacy ones */
    mcu_event_t events[MCU_MAX_EVENTS];
    mcu_module_t modules[MCU_MAX_MODULES];
    mcu_function_t functions[BRAID_KT_NTYPES][BRAID_KOP_NOPS];
    mcu_alloc_t allocs[MCU_MAX_ALLOCS];
    long misdirected;            /* Async copies whose host side is device memory */
} mcu = { .lock = PTHREAD_MUTEX_INITIALIZER };

static __thread mcu_ctx_t *mcu_stack[MCU_STACK];
static __thread int mcu_depth;

/* ------------------------------------------------------------------ */
/* memory                                                               */
/* ------------------------------------------------------------------ */

static inline char *mcu_alloc_base(const mcu_alloc_t *a)
{
    return MCU_MEM_DEVICE == a->kind ? a->mem.addr : a->host;
}

/* the allocation holding [p, p + len), or NULL (host memory CUDA does not know) */
static inline mcu_alloc_t *mcu_find(const void *p, size_t len)
{
    const char *c = p;
    for (int i = 0; i < MCU_MAX_ALLOCS; i++) {
        mcu_alloc_t *a = &mcu.allocs[i];
        if (!a->live) continue;
        const char *base = mcu_alloc_base(a);
        if (c >= base && c <= base + a->len && len <= (size_t)(base + a->len - c)) return a;
    }
    return NULL;
}

static inline bool mcu_on_device(const mcu_alloc_t *a)
{
    return NULL != a && MCU_MEM_PINNED != a->kind;
}

/* where the bytes at p are */
static inline char *mcu_bytes(const void *p)
{
    mcu_alloc_t *a = mcu_find(p, 0);
    if (NULL != a && MCU_MEM_DEVICE == a->kind) return a->mem.backing + ((const char *)p - a->mem.addr);
    return (char *)p;
}

static inline mcu_alloc_t *mcu_new_alloc(mcu_mem_kind_t kind, size_t len, mcu_ctx_t *ctx, int device)
{
    for (int i = 0; i < MCU_MAX_ALLOCS; i++) {
        mcu_alloc_t *a = &mcu.allocs[i];
        if (a->live) continue;
        memset(a, 0, sizeof(*a));
        if (MCU_MEM_DEVICE == kind) {
            if (!mock_mem_new(&a->mem, len)) return NULL;
        } else if (NULL == (a->host = calloc(1, len ? len : 1))) {
            return NULL;
        }
        a->live = true;
        a->kind = kind;
        a->len = len;
        a->ctx = ctx;
        a->device = device;
        return a;
    }
    return NULL;
}

static inline void mcu_free_alloc(mcu_alloc_t *a)
{
    if (MCU_MEM_DEVICE == a->kind) mock_mem_delete(&a->mem);
    else free(a->host);
    memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------------ */
/* queues                                                               */
/* ------------------------------------------------------------------ */

static inline void mcu_run_to(mcu_stream_t *s, long pos);

/* A kernel in context c reaches managed memory and its own device's memory;
 * another GPU's memory (no peer access) and host memory fault. */
static inline bool mcu_kernel_reaches(const mcu_alloc_t *a, const mcu_ctx_t *c)
{
    return mcu_on_device(a) && (MCU_MEM_MANAGED == a->kind || a->device == c->device);
}

static inline void mcu_exec_next(mcu_stream_t *s)
{
    mcu_item_t *it = &s->q[s->executed % MCU_QLEN];
    for (int i = 0; i < it->ndeps; i++) mcu_run_to(it->deps[i].stream, it->deps[i].pos);
    if (!it->kernel) {
        memcpy(mcu_bytes(it->dst), it->staged ? it->staged : mcu_bytes(it->src), it->len);
    } else {
        mcu_alloc_t *in = mcu_find(it->src, it->len * it->es), *io = mcu_find(it->dst, it->len * it->es);
        if (!mcu_kernel_reaches(in, s->ctx) || !mcu_kernel_reaches(io, s->ctx))
            s->ctx->sticky = MCU_ERROR_ILLEGAL_ADDRESS;
        else
            it->k(mcu_bytes(it->src), mcu_bytes(it->dst), it->len);
    }
    free(it->staged);
    free(it->deps);
    memset(it, 0, sizeof(*it));
    s->executed++;
}

static inline void mcu_run_to(mcu_stream_t *s, long pos)
{
    while (s->executed < pos && s->executed < s->submitted) mcu_exec_next(s);
}

static inline void mcu_run_all(mcu_stream_t *s) { mcu_run_to(s, s->submitted); }

/* the device moves on by itself (MCU_RANDOM) */
static inline void mcu_background(void)
{
    if (MCU_RANDOM != mcu.mode || NULL == mcu.streams) return;
    mcu.rng = mcu.rng * 1103515245u + 12345u;
    mcu_stream_t *s = &mcu.streams[(mcu.rng >> 16) % MCU_MAX_STREAMS];
    if (s->live) mcu_run_to(s, s->executed + (long)((mcu.rng >> 8) % 3));
}

/* Queue it on s with the implicit waits of the legacy stream. */
static inline void mcu_push(mcu_stream_t *s, mcu_item_t it)
{
    if (s->submitted - s->executed >= MCU_QLEN) mcu_exec_next(s);   /* the device got there */
    if (s->blocking) {
        it.deps = malloc(sizeof(mcu_dep_t));
        it.deps[0] = (mcu_dep_t){ s->ctx->legacy, s->ctx->legacy->submitted };
        it.ndeps = 1;
    } else if (s->legacy) {
        it.deps = calloc(MCU_MAX_STREAMS, sizeof(mcu_dep_t));
        for (int i = 0; i < MCU_MAX_STREAMS; i++) {
            mcu_stream_t *o = &mcu.streams[i];
            if (o->live && o->blocking && o->ctx == s->ctx)
                it.deps[it.ndeps++] = (mcu_dep_t){ o, o->submitted };
        }
    }
    s->q[s->submitted % MCU_QLEN] = it;
    s->submitted++;
}

/* ------------------------------------------------------------------ */
/* handles and the current context                                      */
/* ------------------------------------------------------------------ */

static inline bool mcu_ctx_alive(const mcu_ctx_t *c)
{
    for (int d = 0; d < mcu.ndevices; d++)
        if (c == &mcu.primary[d]) return c->retains > 0;
    return false;
}

static inline mcu_ctx_t *mcu_current(void)
{
    mcu_ctx_t *c = mcu_depth > 0 ? mcu_stack[mcu_depth - 1] : NULL;
    return NULL != c && mcu_ctx_alive(c) ? c : NULL;
}

static inline mcu_stream_t *mcu_stream_of(void *h, mcu_ctx_t *cur)
{
    if (NULL == h) return NULL != cur ? cur->legacy : NULL;   /* stream 0: legacy */
    mcu_stream_t *s = h;
    if (s < mcu.streams || s >= mcu.streams + MCU_MAX_STREAMS || !s->live) return NULL;
    return s;
}

static inline mcu_event_t *mcu_event_of(void *h)
{
    mcu_event_t *e = h;
    if (e < mcu.events || e >= mcu.events + MCU_MAX_EVENTS || !e->live) return NULL;
    return e;
}

/* release every object of a primary context that is torn down */
static inline void mcu_destroy_ctx_objects(mcu_ctx_t *c)
{
    for (int i = 0; i < MCU_MAX_STREAMS; i++) {
        mcu_stream_t *s = &mcu.streams[i];
        if (s->live && s->ctx == c && !s->legacy) {
            mcu_run_all(s);
            s->live = false;
        }
    }
    mcu_run_all(c->legacy);
    for (int i = 0; i < MCU_MAX_EVENTS; i++)
        if (mcu.events[i].ctx == c) mcu.events[i].live = false;
    for (int i = 0; i < MCU_MAX_MODULES; i++)
        if (mcu.modules[i].ctx == c) mcu.modules[i].live = false;
    for (int i = 0; i < MCU_MAX_ALLOCS; i++)
        if (mcu.allocs[i].live && mcu.allocs[i].ctx == c) mcu_free_alloc(&mcu.allocs[i]);
    c->sticky = MCU_SUCCESS;
}

#define MCU_ENTER()                                      \
    pthread_mutex_lock(&mcu.lock);                       \
    mcu_result_t rc_ = MCU_SUCCESS;                      \
    if (!mcu.initialised) { rc_ = MCU_ERROR_NOT_INITIALIZED; goto out_; } \
    mcu_background()
#define MCU_FAIL(code) do { rc_ = (code); goto out_; } while (0)
#define MCU_LEAVE()                                      \
    out_:                                                \
    pthread_mutex_unlock(&mcu.lock);                     \
    return rc_

/* a current context is required */
#define MCU_NEED_CTX(cur)                                \
    mcu_ctx_t *cur = mcu_current();                      \
    if (NULL == cur) MCU_FAIL(MCU_ERROR_INVALID_CONTEXT)

/* ------------------------------------------------------------------ */
/* the entry points                                                     */
/* ------------------------------------------------------------------ */

static mcu_result_t mcu_cuInit(unsigned flags)
{
    pthread_mutex_lock(&mcu.lock);
    mcu_result_t rc_ = MCU_SUCCESS;
    if (0 != flags) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    if (0 == mcu.ndevices) MCU_FAIL(MCU_ERROR_NO_DEVICE);
    mcu.initialised = true;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuGetErrorString(mcu_result_t r, const char **s)
{
    static const struct { mcu_result_t r; const char *s; } names[] = {
        { MCU_SUCCESS, "no error" },
        { MCU_ERROR_INVALID_VALUE, "invalid argument" },
        { MCU_ERROR_NOT_INITIALIZED, "initialization error" },
        { MCU_ERROR_NO_DEVICE, "no CUDA-capable device is detected" },
        { MCU_ERROR_INVALID_DEVICE, "invalid device ordinal" },
        { MCU_ERROR_INVALID_CONTEXT, "invalid device context" },
        { MCU_ERROR_INVALID_HANDLE, "invalid resource handle" },
        { MCU_ERROR_NOT_FOUND, "named symbol not found" },
        { MCU_ERROR_NOT_READY, "device not ready" },
        { MCU_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered" },
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].r == r) {
            *s = names[i].s;
            return MCU_SUCCESS;
        }
    *s = NULL;
    return MCU_ERROR_INVALID_VALUE;
}

static mcu_result_t mcu_cuDeviceGetCount(int *n)
{
    MCU_ENTER();
    *n = mcu.ndevices;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuDeviceGet(int *dev, int ordinal)
{
    MCU_ENTER();
    if (ordinal < 0 || ordinal >= mcu.ndevices) MCU_FAIL(MCU_ERROR_INVALID_DEVICE);
    *dev = ordinal;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuDeviceGetAttribute(int *v, int attr, int dev)
{
    MCU_ENTER();
    if (dev < 0 || dev >= mcu.ndevices) MCU_FAIL(MCU_ERROR_INVALID_DEVICE);
    if (16 != attr) MCU_FAIL(MCU_ERROR_INVALID_VALUE);   /* MULTIPROCESSOR_COUNT only */
    *v = 132;
    MCU_LEAVE();
}

static __attribute__((noinline)) mcu_result_t mcu_pointer_get_attributes(unsigned n, int *attrs,
                                                                          void **data, mcu_devptr_t ptr)
{
    MCU_ENTER();
    mcu_alloc_t *a = mcu_find((const void *)(uintptr_t)ptr, 0);
    for (unsigned i = 0; i < n; i++) {
        if (NULL == data[i]) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
        switch (attrs[i]) {
        case 1:   /* CONTEXT */
            *(mcu_ctx_t **)data[i] = a ? a->ctx : NULL;
            break;
        case 2:   /* MEMORY_TYPE: 0 for memory the driver does not know */
            *(unsigned *)data[i] = NULL == a ? 0u : MCU_MEM_PINNED == a->kind ? 1u : 2u;
            break;
        case 8:   /* IS_MANAGED */
            *(unsigned *)data[i] = a && MCU_MEM_MANAGED == a->kind;
            break;
        case 9:   /* DEVICE_ORDINAL */
            *(int *)data[i] = a ? a->device : -2;
            break;
        default: MCU_FAIL(MCU_ERROR_INVALID_VALUE);
        }
    }
    MCU_LEAVE();
}

static __attribute__((noinline)) mcu_result_t mcu_ctx_get_current(mcu_ctx_t **c)
{
    MCU_ENTER();
    *c = mcu_depth > 0 ? mcu_stack[mcu_depth - 1] : NULL;
    MCU_LEAVE();
}

/* The entry points a caller asks before deciding on a context leave junk
 * in their whole stack frame, as the real driver's did on the H100: a
 * variable of the caller read before it is written, where such a frame was,
 * holds garbage (there: an invalid device ordinal) rather than a lucky
 * zero. The junk is written after the work, so no tail call skips it. */
#define MCU_JUNK_FRAME(call)                                             \
    volatile unsigned char junk_[96];                                    \
    mcu_result_t r_ = (call);                                            \
    for (size_t j_ = 0; j_ < sizeof(junk_); j_++) junk_[j_] = 0x7f;      \
    return r_

static mcu_result_t mcu_cuCtxGetCurrent(mcu_ctx_t **c) { MCU_JUNK_FRAME(mcu_ctx_get_current(c)); }

static mcu_result_t mcu_cuPointerGetAttributes(unsigned n, int *attrs, void **data, mcu_devptr_t ptr)
{
    MCU_JUNK_FRAME(mcu_pointer_get_attributes(n, attrs, data, ptr));
}

static mcu_result_t mcu_cuCtxGetDevice(int *dev)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    *dev = cur->device;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuCtxPushCurrent(mcu_ctx_t *c)
{
    MCU_ENTER();
    if (NULL == c || !mcu_ctx_alive(c)) MCU_FAIL(MCU_ERROR_INVALID_CONTEXT);
    if (mcu_depth >= MCU_STACK) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    mcu_stack[mcu_depth++] = c;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuCtxPopCurrent(mcu_ctx_t **c)
{
    MCU_ENTER();
    if (0 == mcu_depth) MCU_FAIL(MCU_ERROR_INVALID_CONTEXT);
    mcu_ctx_t *top = mcu_stack[--mcu_depth];
    if (c) *c = top;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuCtxSetCurrent(mcu_ctx_t *c)
{
    MCU_ENTER();
    if (NULL == c) {
        if (mcu_depth > 0) mcu_depth--;
    } else if (!mcu_ctx_alive(c)) {
        MCU_FAIL(MCU_ERROR_INVALID_CONTEXT);
    } else if (0 == mcu_depth) {
        mcu_stack[mcu_depth++] = c;
    } else {
        mcu_stack[mcu_depth - 1] = c;
    }
    MCU_LEAVE();
}

static mcu_result_t mcu_cuCtxSynchronize(void)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    for (int i = 0; i < MCU_MAX_STREAMS; i++)
        if (mcu.streams[i].live && mcu.streams[i].ctx == cur) mcu_run_all(&mcu.streams[i]);
    rc_ = cur->sticky;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuDevicePrimaryCtxRetain(mcu_ctx_t **c, int dev)
{
    MCU_ENTER();
    if (dev < 0 || dev >= mcu.ndevices) MCU_FAIL(MCU_ERROR_INVALID_DEVICE);
    mcu.primary[dev].retains++;
    *c = &mcu.primary[dev];
    MCU_LEAVE();
}

static mcu_result_t mcu_cuDevicePrimaryCtxRelease(int dev)
{
    MCU_ENTER();
    if (dev < 0 || dev >= mcu.ndevices) MCU_FAIL(MCU_ERROR_INVALID_DEVICE);
    if (mcu.primary[dev].retains <= 0) MCU_FAIL(MCU_ERROR_INVALID_CONTEXT);
    if (0 == --mcu.primary[dev].retains) mcu_destroy_ctx_objects(&mcu.primary[dev]);
    MCU_LEAVE();
}

static mcu_result_t mcu_cuStreamCreate(mcu_stream_t **out, unsigned flags)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    if (flags > 1) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    for (int i = mcu.ndevices; i < MCU_MAX_STREAMS; i++) {
        mcu_stream_t *s = &mcu.streams[i];
        if (s->live) continue;
        memset(s, 0, sizeof(*s));
        s->live = true;
        s->blocking = 0 == flags;   /* CU_STREAM_NON_BLOCKING = 1 */
        s->ctx = cur;
        *out = s;
        goto out_;
    }
    MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    MCU_LEAVE();
}

static mcu_result_t mcu_cuStreamDestroy(mcu_stream_t *h)
{
    MCU_ENTER();
    mcu_stream_t *s = mcu_stream_of(h, NULL);
    if (NULL == s || NULL == h || s->legacy) MCU_FAIL(MCU_ERROR_INVALID_HANDLE);
    mcu_run_all(s);   /* queued work still completes */
    s->live = false;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuStreamSynchronize(mcu_stream_t *h)
{
    MCU_ENTER();
    mcu_stream_t *s = mcu_stream_of(h, mcu_current());
    if (NULL == s) MCU_FAIL(NULL == h ? MCU_ERROR_INVALID_CONTEXT : MCU_ERROR_INVALID_HANDLE);
    mcu_run_all(s);
    rc_ = s->ctx->sticky;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuEventCreate(mcu_event_t **out, unsigned flags)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    if (flags & ~0xfu) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    for (int i = 0; i < MCU_MAX_EVENTS; i++) {
        mcu_event_t *e = &mcu.events[i];
        if (e->live) continue;
        memset(e, 0, sizeof(*e));
        e->live = true;
        e->ctx = cur;
        *out = e;
        goto out_;
    }
    MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    MCU_LEAVE();
}

static mcu_result_t mcu_cuEventDestroy(mcu_event_t *h)
{
    MCU_ENTER();
    mcu_event_t *e = mcu_event_of(h);
    if (NULL == e) MCU_FAIL(MCU_ERROR_INVALID_HANDLE);
    e->live = false;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuEventRecord(mcu_event_t *h, mcu_stream_t *sh)
{
    MCU_ENTER();
    mcu_event_t *e = mcu_event_of(h);
    mcu_stream_t *s = mcu_stream_of(sh, mcu_current());
    /* the event and the stream must belong to the same context */
    if (NULL == e || NULL == s || e->ctx != s->ctx) MCU_FAIL(MCU_ERROR_INVALID_HANDLE);
    e->recorded = true;
    e->stream = s;
    e->pos = s->submitted;
    e->polls = 0;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuEventQuery(mcu_event_t *h)
{
    MCU_ENTER();
    mcu_event_t *e = mcu_event_of(h);
    if (NULL == e) MCU_FAIL(MCU_ERROR_INVALID_HANDLE);
    if (!e->recorded) goto out_;
    if (e->stream->executed < e->pos && 0 == e->polls++) MCU_FAIL(MCU_ERROR_NOT_READY);
    mcu_run_to(e->stream, e->pos);   /* the next poll finds it done */
    rc_ = e->ctx->sticky;
    MCU_LEAVE();
}

/* the checks every copy makes: both sides named, the device side device memory */
static inline bool mcu_copy_ok(const void *dev_side, const void *host_side, size_t len)
{
    return NULL != dev_side && NULL != host_side && mcu_on_device(mcu_find(dev_side, len));
}

static inline bool mcu_pageable(const void *p) { return NULL == mcu_find(p, 0); }

static inline char *mcu_stage(const void *src, size_t len)
{
    char *s = malloc(len ? len : 1);
    memcpy(s, src, len);
    return s;
}

static mcu_result_t mcu_cuMemcpyHtoDAsync(mcu_devptr_t dst, const void *src, size_t len, mcu_stream_t *sh)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    mcu_stream_t *s = mcu_stream_of(sh, cur);
    if (NULL == s || s->ctx != cur) MCU_FAIL(MCU_ERROR_INVALID_HANDLE);
    char *d = (char *)(uintptr_t)dst;
    if (!mcu_copy_ok(d, src, len)) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    if (mcu_on_device(mcu_find(src, len))) mcu.misdirected++;
    /* pageable bytes are staged now; pinned ones are read when the queue gets there */
    mcu_push(s, (mcu_item_t){ .dst = d, .src = src, .len = len,
                              .staged = mcu_pageable(src) ? mcu_stage(src, len) : NULL });
    MCU_LEAVE();
}

static mcu_result_t mcu_cuMemcpyDtoHAsync(void *dst, mcu_devptr_t src, size_t len, mcu_stream_t *sh)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    mcu_stream_t *s = mcu_stream_of(sh, cur);
    if (NULL == s || s->ctx != cur) MCU_FAIL(MCU_ERROR_INVALID_HANDLE);
    const char *sp = (const char *)(uintptr_t)src;
    if (!mcu_copy_ok(sp, dst, len)) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    if (mcu_on_device(mcu_find(dst, len))) mcu.misdirected++;
    mcu_push(s, (mcu_item_t){ .dst = dst, .src = sp, .len = len });
    if (mcu_pageable(dst)) mcu_run_all(s);   /* to pageable memory: done on return */
    MCU_LEAVE();
}

/* the synchronous copies: unified addressing picks the direction */
static inline mcu_result_t mcu_sync_copy(mcu_ctx_t *cur, char *d, const char *s, size_t len)
{
    bool to_dev = mcu_on_device(mcu_find(d, len)), from_dev = mcu_on_device(mcu_find(s, len));
    if (NULL == d || NULL == s) return MCU_ERROR_INVALID_VALUE;   /* "Null address specified" */
    if ((NULL != mcu_find(d, 0) && NULL == mcu_find(d, len)) ||
        (NULL != mcu_find(s, 0) && NULL == mcu_find(s, len)))
        return MCU_ERROR_INVALID_VALUE;                           /* past the allocation's end */
    if (to_dev && !from_dev && mcu_pageable(s)) {
        /* staged now, transferred later on the legacy stream: cuMemcpy
         * returns before the bytes reach the device */
        mcu_run_all(cur->legacy);
        mcu_push(cur->legacy, (mcu_item_t){ .dst = d, .src = s, .len = len, .staged = mcu_stage(s, len) });
        return MCU_SUCCESS;
    }
    if (to_dev && from_dev) {   /* device to device: queued, no host wait */
        mcu_push(cur->legacy, (mcu_item_t){ .dst = d, .src = s, .len = len });
        return MCU_SUCCESS;
    }
    mcu_run_all(cur->legacy);
    memcpy(mcu_bytes(d), mcu_bytes(s), len);
    return cur->sticky;
}

static mcu_result_t mcu_cuMemcpy(mcu_devptr_t dst, mcu_devptr_t src, size_t len)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    rc_ = mcu_sync_copy(cur, (char *)(uintptr_t)dst, (const char *)(uintptr_t)src, len);
    MCU_LEAVE();
}

static mcu_result_t mcu_cuMemcpyHtoD(mcu_devptr_t dst, const void *src, size_t len)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    if (!mcu_copy_ok((const void *)(uintptr_t)dst, src, len)) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    rc_ = mcu_sync_copy(cur, (char *)(uintptr_t)dst, src, len);
    MCU_LEAVE();
}

static mcu_result_t mcu_cuMemcpyDtoH(void *dst, mcu_devptr_t src, size_t len)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    if (!mcu_copy_ok((const void *)(uintptr_t)src, dst, len)) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    rc_ = mcu_sync_copy(cur, dst, (const char *)(uintptr_t)src, len);
    MCU_LEAVE();
}

static mcu_result_t mcu_cuMemHostAlloc(void **p, size_t len, unsigned flags)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    if (flags & ~7u) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    mcu_alloc_t *a = mcu_new_alloc(MCU_MEM_PINNED, len, cur, cur->device);
    if (NULL == a) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    *p = a->host;
    MCU_LEAVE();
}

/* Freeing memory waits for the device to finish all it was given, as
 * cuMemFree and cuMemFreeHost do (implicit synchronisation). */
static inline void mcu_drain_all(void)
{
    for (int i = 0; i < MCU_MAX_STREAMS; i++)
        if (mcu.streams[i].live) mcu_run_all(&mcu.streams[i]);
}

static mcu_result_t mcu_cuMemFreeHost(void *p)
{
    MCU_ENTER();
    mcu_alloc_t *a = mcu_find(p, 0);
    if (NULL == a || MCU_MEM_PINNED != a->kind || a->host != p) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    mcu_drain_all();
    mcu_free_alloc(a);
    MCU_LEAVE();
}

static mcu_result_t mcu_alloc_in(mcu_mem_kind_t kind, mcu_devptr_t *d, size_t len)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    if (0 == len) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    mcu_alloc_t *a = mcu_new_alloc(kind, len, cur, cur->device);
    if (NULL == a) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    *d = (mcu_devptr_t)(uintptr_t)mcu_alloc_base(a);
    MCU_LEAVE();
}

static mcu_result_t mcu_cuMemAlloc(mcu_devptr_t *d, size_t len)
{
    return mcu_alloc_in(MCU_MEM_DEVICE, d, len);
}

static mcu_result_t mcu_cuMemAllocManaged(mcu_devptr_t *d, size_t len, unsigned flags)
{
    (void)flags;
    return mcu_alloc_in(MCU_MEM_MANAGED, d, len);
}

static mcu_result_t mcu_cuMemFree(mcu_devptr_t d)
{
    MCU_ENTER();
    mcu_alloc_t *a = mcu_find((const void *)(uintptr_t)d, 0);
    if (!mcu_on_device(a) || (uintptr_t)mcu_alloc_base(a) != d) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    mcu_drain_all();
    mcu_free_alloc(a);
    MCU_LEAVE();
}

static mcu_result_t mcu_cuModuleLoadData(mcu_module_t **m, const void *image)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    if (NULL == image) MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    for (int i = 0; i < MCU_MAX_MODULES; i++)
        if (!mcu.modules[i].live) {
            mcu.modules[i] = (mcu_module_t){ true, cur };
            *m = &mcu.modules[i];
            goto out_;
        }
    MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    MCU_LEAVE();
}

static mcu_result_t mcu_cuModuleUnload(mcu_module_t *m)
{
    MCU_ENTER();
    if (m < mcu.modules || m >= mcu.modules + MCU_MAX_MODULES || !m->live) MCU_FAIL(MCU_ERROR_INVALID_HANDLE);
    m->live = false;
    MCU_LEAVE();
}

static mcu_result_t mcu_cuModuleGetFunction(mcu_function_t **f, mcu_module_t *m, const char *name)
{
    MCU_ENTER();
    if (m < mcu.modules || m >= mcu.modules + MCU_MAX_MODULES || !m->live) MCU_FAIL(MCU_ERROR_INVALID_HANDLE);
    for (int t = 0; t < BRAID_KT_NTYPES; t++)
        for (int op = 0; op < BRAID_KOP_NOPS; op++) {
            braid_kernel_fn_t k = braid_kernel_lookup((braid_ktype_t)t, (braid_kop_t)op);
            char want[64];
            snprintf(want, sizeof(want), "braid_k_%s_%s", braid_kop_name((braid_kop_t)op),
                     braid_ktype_name((braid_ktype_t)t));
            if (NULL == k || strcmp(want, name)) continue;
            mcu.functions[t][op] = (mcu_function_t){ m, k, braid_ktype_size((braid_ktype_t)t) };
            *f = &mcu.functions[t][op];
            goto out_;
        }
    MCU_FAIL(MCU_ERROR_NOT_FOUND);
    MCU_LEAVE();
}

/* braid's kernels take (const T *in, T *inout, size_t n) */
static mcu_result_t mcu_cuLaunchKernel(mcu_function_t *f, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                       mcu_stream_t *sh, void **params, void **extra)
{
    MCU_ENTER();
    MCU_NEED_CTX(cur);
    (void)shmem;
    (void)extra;
    mcu_stream_t *s = mcu_stream_of(sh, cur);
    if (NULL == f || NULL == f->module || !f->module->live || f->module->ctx != cur || NULL == s ||
        s->ctx != cur)
        MCU_FAIL(MCU_ERROR_INVALID_HANDLE);
    if (0 == gx * gy * gz || 0 == bx * by * bz || bx * by * bz > 1024 || NULL == params)
        MCU_FAIL(MCU_ERROR_INVALID_VALUE);
    mcu_devptr_t in = *(mcu_devptr_t *)params[0], io = *(mcu_devptr_t *)params[1];
    size_t n = *(size_t *)params[2];
    mcu_push(s, (mcu_item_t){ .kernel = true, .dst = (char *)(uintptr_t)io,
                              .src = (const char *)(uintptr_t)in, .len = n, .k = f->k, .es = f->es });
    MCU_LEAVE();
}

/* ------------------------------------------------------------------ */
/* what libcuda.so.1 exports                                            */
/* ------------------------------------------------------------------ */

static __attribute__((unused)) void *mcu_symbol(const char *name)
{
    static const struct { const char *name; void *fn; } table[] = {
        { "cuInit", (void *)mcu_cuInit },
        { "cuGetErrorString", (void *)mcu_cuGetErrorString },
        { "cuDeviceGetCount", (void *)mcu_cuDeviceGetCount },
        { "cuDeviceGet", (void *)mcu_cuDeviceGet },
        { "cuDeviceGetAttribute", (void *)mcu_cuDeviceGetAttribute },
        { "cuPointerGetAttributes", (void *)mcu_cuPointerGetAttributes },
        { "cuCtxGetCurrent", (void *)mcu_cuCtxGetCurrent },
        { "cuCtxSetCurrent", (void *)mcu_cuCtxSetCurrent },
        { "cuCtxGetDevice", (void *)mcu_cuCtxGetDevice },
        { "cuCtxPushCurrent_v2", (void *)mcu_cuCtxPushCurrent },
        { "cuCtxPopCurrent_v2", (void *)mcu_cuCtxPopCurrent },
        { "cuCtxSynchronize", (void *)mcu_cuCtxSynchronize },
        { "cuDevicePrimaryCtxRetain", (void *)mcu_cuDevicePrimaryCtxRetain },
        { "cuDevicePrimaryCtxRelease_v2", (void *)mcu_cuDevicePrimaryCtxRelease },
        { "cuStreamCreate", (void *)mcu_cuStreamCreate },
        { "cuStreamDestroy_v2", (void *)mcu_cuStreamDestroy },
        { "cuStreamSynchronize", (void *)mcu_cuStreamSynchronize },
        { "cuEventCreate", (void *)mcu_cuEventCreate },
        { "cuEventDestroy_v2", (void *)mcu_cuEventDestroy },
        { "cuEventRecord", (void *)mcu_cuEventRecord },
        { "cuEventQuery", (void *)mcu_cuEventQuery },
        { "cuMemcpyDtoHAsync_v2", (void *)mcu_cuMemcpyDtoHAsync },
        { "cuMemcpyHtoDAsync_v2", (void *)mcu_cuMemcpyHtoDAsync },
        { "cuMemcpy", (void *)mcu_cuMemcpy },
        { "cuMemcpyHtoD_v2", (void *)mcu_cuMemcpyHtoD },
        { "cuMemcpyDtoH_v2", (void *)mcu_cuMemcpyDtoH },
        { "cuMemHostAlloc", (void *)mcu_cuMemHostAlloc },
        { "cuMemFreeHost", (void *)mcu_cuMemFreeHost },
        { "cuMemAlloc_v2", (void *)mcu_cuMemAlloc },
        { "cuMemAllocManaged", (void *)mcu_cuMemAllocManaged },
        { "cuMemFree_v2", (void *)mcu_cuMemFree },
        { "cuModuleLoadData", (void *)mcu_cuModuleLoadData },
        { "cuModuleUnload", (void *)mcu_cuModuleUnload },
        { "cuModuleGetFunction", (void *)mcu_cuModuleGetFunction },
        { "cuLaunchKernel", (void *)mcu_cuLaunchKernel },
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (0 == strcmp(table[i].name, name)) return table[i].fn;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* for the tests                                                        */
/* ------------------------------------------------------------------ */

/* A fresh driver with ndevices GPUs (0: cuInit fails with NO_DEVICE). */
static inline void mcu_reset(int ndevices, mcu_mode_t mode, unsigned seed)
{
    pthread_mutex_lock(&mcu.lock);
    for (int i = 0; i < MCU_MAX_ALLOCS; i++)
        if (mcu.allocs[i].live) mcu_free_alloc(&mcu.allocs[i]);
    free(mcu.streams);
    memset(mcu.events, 0, sizeof(mcu.events));
    memset(mcu.modules, 0, sizeof(mcu.modules));
    memset(mcu.primary, 0, sizeof(mcu.primary));
    mcu.streams = calloc(MCU_MAX_STREAMS, sizeof(mcu_stream_t));
    mcu.ndevices = ndevices < MCU_MAX_DEVICES ? ndevices : MCU_MAX_DEVICES;
    for (int d = 0; d < mcu.ndevices; d++) {
        mcu_stream_t *l = &mcu.streams[d];
        l->live = l->legacy = true;
        l->ctx = &mcu.primary[d];
        mcu.primary[d].device = d;
        mcu.primary[d].legacy = l;
    }
    mcu.initialised = false;
    mcu.mode = mode;
    mcu.rng = seed * 2654435761u + 7u;
    mcu.misdirected = 0;
    mcu_depth = 0;
    pthread_mutex_unlock(&mcu.lock);
}

/* What an application does first (cudaSetDevice): device dev's primary
 * context, retained and current on this thread. */
static inline mcu_ctx_t *mcu_app_use_device(int dev)
{
    mcu_ctx_t *c = NULL;
    if (MCU_SUCCESS != mcu_cuInit(0) || MCU_SUCCESS != mcu_cuDevicePrimaryCtxRetain(&c, dev) ||
        MCU_SUCCESS != mcu_cuCtxSetCurrent(c))
        return NULL;
    return c;
}

/* Memory of a kind on device dev, in its primary context (retained by the
 * application); unowned: device memory that names no context, as the
 * virtual memory management API and pools hand out. */
static inline void *mcu_app_alloc(mcu_mem_kind_t kind, int dev, size_t len, bool unowned)
{
    pthread_mutex_lock(&mcu.lock);
    if (0 == mcu.primary[dev].retains) mcu.primary[dev].retains++;
    mcu_alloc_t *a = mcu_new_alloc(kind, len, unowned ? NULL : &mcu.primary[dev], dev);
    pthread_mutex_unlock(&mcu.lock);
    return a ? mcu_alloc_base(a) : NULL;
}

/* The bytes the device holds at p now, whatever is still queued. */
static inline const void *mcu_peek(const void *p) { return mcu_bytes(p); }
static inline void *mcu_poke(void *p) { return mcu_bytes(p); }

static inline int mcu_primary_retains(int dev) { return mcu.primary[dev].retains; }

/* work queued on any stream and not done */
static inline long mcu_pending(void)
{
    long n = 0;
    for (int i = 0; i < MCU_MAX_STREAMS; i++)
        if (mcu.streams[i].live) n += mcu.streams[i].submitted - mcu.streams[i].executed;
    return n;
}

static inline int mcu_live_streams(void)
{
    int n = 0;
    for (int i = mcu.ndevices; i < MCU_MAX_STREAMS; i++) n += mcu.streams[i].live;
    return n;
}

#endif /* MOCK_CUDA_DRIVER_H */
