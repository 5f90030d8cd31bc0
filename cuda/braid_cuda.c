/*
 * braid_cuda.c - see braid_cuda.h. The CUDA driver API is reached through
 * dlopen/dlsym only; the few types and constants braid needs are declared
 * here (BC_*), checked against the toolkit's cuda.h at build time when
 * BRAID_CUDA_ABI_CHECK is defined (configure does when CUDA is enabled).
 */
#define _GNU_SOURCE
#include "braid_cuda.h"
#include "braid_kernels.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The slice of the driver API braid uses                               */
/* ------------------------------------------------------------------ */

typedef int bc_result_t;
typedef int bc_device_t;
typedef unsigned long long bc_deviceptr_t;
typedef struct bc_ctx *bc_context_t;
typedef struct bc_stream *bc_stream_t;
typedef struct bc_event *bc_event_t;
typedef struct bc_module *bc_module_t;
typedef struct bc_function *bc_function_t;

enum {
    BC_SUCCESS = 0,
    BC_ERROR_NOT_READY = 600,
    BC_POINTER_ATTRIBUTE_CONTEXT = 1,
    BC_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    BC_POINTER_ATTRIBUTE_IS_MANAGED = 8,
    BC_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    BC_MEMORYTYPE_NONE = 0,   /* what the driver reports for memory it does not know */
    BC_MEMORYTYPE_HOST = 1,
    BC_MEMORYTYPE_DEVICE = 2,
    BC_MEMORYTYPE_UNIFIED = 4,
    BC_MEMHOSTALLOC_PORTABLE = 1,
    BC_STREAM_DEFAULT = 0,
    BC_EVENT_DISABLE_TIMING = 2,
    BC_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
};

#ifdef BRAID_CUDA_ABI_CHECK
#include <cuda.h>
_Static_assert((int)CUDA_SUCCESS == BC_SUCCESS && (int)CUDA_ERROR_NOT_READY == BC_ERROR_NOT_READY, "CUresult");
_Static_assert((int)CU_POINTER_ATTRIBUTE_CONTEXT == BC_POINTER_ATTRIBUTE_CONTEXT &&
               (int)CU_POINTER_ATTRIBUTE_MEMORY_TYPE == BC_POINTER_ATTRIBUTE_MEMORY_TYPE &&
               (int)CU_POINTER_ATTRIBUTE_IS_MANAGED == BC_POINTER_ATTRIBUTE_IS_MANAGED &&
               (int)CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL == BC_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
               "CUpointer_attribute");
_Static_assert((int)CU_MEMORYTYPE_HOST == BC_MEMORYTYPE_HOST && (int)CU_MEMORYTYPE_DEVICE == BC_MEMORYTYPE_DEVICE &&
               (int)CU_MEMORYTYPE_UNIFIED == BC_MEMORYTYPE_UNIFIED, "CUmemorytype");
_Static_assert((int)CU_MEMHOSTALLOC_PORTABLE == BC_MEMHOSTALLOC_PORTABLE &&
               (int)CU_STREAM_DEFAULT == BC_STREAM_DEFAULT &&
               (int)CU_EVENT_DISABLE_TIMING == BC_EVENT_DISABLE_TIMING &&
               (int)CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == BC_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
               "flags");
_Static_assert(sizeof(CUdeviceptr) == sizeof(bc_deviceptr_t) && sizeof(CUresult) == sizeof(bc_result_t) &&
               sizeof(CUdevice) == sizeof(bc_device_t), "sizes");
#endif

/* Entry points, by their exported (versioned) names. */
#define BC_SYMBOLS(X)                                                                          \
    X(cuInit, "cuInit", bc_result_t, (unsigned))                                              \
    X(cuGetErrorString, "cuGetErrorString", bc_result_t, (bc_result_t, const char **))        \
    X(cuDeviceGetCount, "cuDeviceGetCount", bc_result_t, (int *))                             \
    X(cuDeviceGet, "cuDeviceGet", bc_result_t, (bc_device_t *, int))                          \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", bc_result_t, (int *, int, bc_device_t))   \
    X(cuPointerGetAttributes, "cuPointerGetAttributes", bc_result_t,                          \
      (unsigned, int *, void **, bc_deviceptr_t))                                             \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", bc_result_t, (bc_context_t *))                      \
    X(cuCtxGetDevice, "cuCtxGetDevice", bc_result_t, (bc_device_t *))                         \
    X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", bc_result_t, (bc_context_t))                   \
    X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", bc_result_t, (bc_context_t *))                   \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", bc_result_t,                      \
      (bc_context_t *, bc_device_t))                                                          \
    X(cuStreamCreate, "cuStreamCreate", bc_result_t, (bc_stream_t *, unsigned))               \
    X(cuStreamDestroy, "cuStreamDestroy_v2", bc_result_t, (bc_stream_t))                      \
    X(cuStreamSynchronize, "cuStreamSynchronize", bc_result_t, (bc_stream_t))                 \
    X(cuEventCreate, "cuEventCreate", bc_result_t, (bc_event_t *, unsigned))                  \
    X(cuEventDestroy, "cuEventDestroy_v2", bc_result_t, (bc_event_t))                         \
    X(cuEventRecord, "cuEventRecord", bc_result_t, (bc_event_t, bc_stream_t))                 \
    X(cuEventQuery, "cuEventQuery", bc_result_t, (bc_event_t))                                \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", bc_result_t,                                 \
      (void *, bc_deviceptr_t, size_t, bc_stream_t))                                          \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", bc_result_t,                                 \
      (bc_deviceptr_t, const void *, size_t, bc_stream_t))                                    \
    X(cuMemcpy, "cuMemcpy", bc_result_t, (bc_deviceptr_t, bc_deviceptr_t, size_t))            \
    X(cuMemHostAlloc, "cuMemHostAlloc", bc_result_t, (void **, size_t, unsigned))             \
    X(cuMemFreeHost, "cuMemFreeHost", bc_result_t, (void *))                                  \
    X(cuMemAlloc, "cuMemAlloc_v2", bc_result_t, (bc_deviceptr_t *, size_t))                   \
    X(cuMemFree, "cuMemFree_v2", bc_result_t, (bc_deviceptr_t))                               \
    X(cuModuleLoadData, "cuModuleLoadData", bc_result_t, (bc_module_t *, const void *))       \
    X(cuModuleUnload, "cuModuleUnload", bc_result_t, (bc_module_t))                           \
    X(cuModuleGetFunction, "cuModuleGetFunction", bc_result_t,                                \
      (bc_function_t *, bc_module_t, const char *))                                           \
    X(cuLaunchKernel, "cuLaunchKernel", bc_result_t,                                          \
      (bc_function_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,   \
       bc_stream_t, void **, void **))

#define BC_DECLARE(field, name, ret, args) ret (*field) args;
static struct {
    BC_SYMBOLS(BC_DECLARE)
} cu;

static struct {
    pthread_once_t probe_once, init_once;
    void *lib;
    braid_cuda_resolve_fn_t resolve;  /* tests: entry points from a mock driver */
    bool present;    /* the driver library is there */
    bool loaded;     /* every symbol resolved */
    bool available;  /* cuInit succeeded and a device exists */
    int ndevices;
    braid_cuda_log_fn_t log;
    /* each device's primary context, retained once (first use) and kept for
     * the life of the process, as the CUDA runtime does */
    pthread_mutex_t primary_lock;
    bc_context_t *primary;
} g = { PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, NULL, NULL, false, false, false, 0, NULL,
        PTHREAD_MUTEX_INITIALIZER, NULL };

/* the embedded kernels (braid_cuda_fatbin.c, generated from the .cu) */
extern const unsigned char braid_cuda_fatbin[];
extern const size_t braid_cuda_fatbin_len;

static void logf_(int level, const char *fmt, ...)
{
    if (NULL == g.log) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    g.log(level, "cuda: %s", buf);
}

static const char *error_string(bc_result_t r)
{
    const char *s = NULL;
    if (NULL == cu.cuGetErrorString || BC_SUCCESS != cu.cuGetErrorString(r, &s) || NULL == s)
        s = "unknown CUDA error";
    return s;
}

/* Log a failed call and turn it into braid's code. */
static int fail(const char *call, bc_result_t r)
{
    logf_(1, "%s failed: %s (CUresult %d)", call, error_string(r), r);
    return BRAID_ERR_DEVICE;
}

#define CU_CHECK(call, expr)                          \
    do {                                              \
        bc_result_t r_ = (expr);                      \
        if (BC_SUCCESS != r_) return fail(call, r_);  \
    } while (0)

void braid_cuda_set_log(braid_cuda_log_fn_t fn) { g.log = fn; }

void braid_cuda_set_driver(braid_cuda_resolve_fn_t resolve) { g.resolve = resolve; }

/* ------------------------------------------------------------------ */
/* Loading                                                              */
/* ------------------------------------------------------------------ */

static void *resolve(const char *name)
{
    return NULL != g.resolve ? g.resolve(name) : dlsym(g.lib, name);
}

static void probe(void)
{
    if (NULL == g.resolve) {
        g.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (NULL == g.lib) {
            logf_(10, "libcuda.so.1 not loaded (%s): every buffer is host memory", dlerror());
            return;
        }
    }
    g.present = true;
    bool ok = true;
#define BC_RESOLVE(field, name, ret, args)                                    \
    if (ok && NULL == (*(void **)&cu.field = resolve(name))) {                \
        logf_(1, "libcuda.so.1 lacks %s: CUDA support disabled", name);       \
        ok = false;                                                           \
    }
    BC_SYMBOLS(BC_RESOLVE)
#undef BC_RESOLVE
    g.loaded = ok;
}

bool braid_cuda_driver_present(void)
{
    pthread_once(&g.probe_once, probe);
    return g.present;
}

static void init(void)
{
    pthread_once(&g.probe_once, probe);
    if (!g.loaded) return;
    bc_result_t r = cu.cuInit(0);
    if (BC_SUCCESS != r) {
        logf_(10, "cuInit failed: %s (CUresult %d): every buffer is host memory", error_string(r), r);
        return;
    }
    r = cu.cuDeviceGetCount(&g.ndevices);
    if (BC_SUCCESS != r || g.ndevices <= 0) {
        logf_(10, "no CUDA device: every buffer is host memory");
        g.ndevices = 0;
        return;
    }
    g.primary = calloc((size_t)g.ndevices, sizeof(*g.primary));
    if (NULL == g.primary) {
        logf_(1, "out of memory: every buffer is host memory");
        return;
    }
    g.available = true;
}

bool braid_cuda_available(void)
{
    pthread_once(&g.init_once, init);
    return g.available;
}

int braid_cuda_device_count(void) { return braid_cuda_available() ? g.ndevices : 0; }

/* ------------------------------------------------------------------ */
/* Pointers                                                             */
/* ------------------------------------------------------------------ */

/* What cuPointerGetAttributes says about a pointer. Measured on driver 580
 * (CUDA 13), with and without a current context:
 *   plain host memory (malloc, stack): MEMORY_TYPE 0 (no CUmemorytype at
 *       all, not HOST), IS_MANAGED 0, CONTEXT NULL, DEVICE_ORDINAL -2;
 *   pinned host memory (cuMemHostAlloc): MEMORY_TYPE HOST, its context and
 *       device;
 *   device memory (cuMemAlloc): MEMORY_TYPE DEVICE, its context and device;
 *   managed memory (cuMemAllocManaged): MEMORY_TYPE DEVICE (not UNIFIED)
 *       with IS_MANAGED 1, its context and device.
 * Memory from the virtual memory management API or a pool may name no
 * context; its device ordinal still says where it lives. */
typedef enum { PTR_HOST, PTR_PINNED, PTR_DEVICE, PTR_MANAGED } ptr_kind_t;

typedef struct ptr_info {
    ptr_kind_t kind;
    bc_context_t ctx;   /* NULL for plain host memory */
    int ordinal;        /* -2 for plain host memory */
} ptr_info_t;

static ptr_kind_t classify(unsigned memtype, unsigned managed)
{
    if (managed) return PTR_MANAGED;   /* DEVICE here, UNIFIED on other platforms */
    switch (memtype) {
    case BC_MEMORYTYPE_DEVICE:
    case BC_MEMORYTYPE_UNIFIED: return PTR_DEVICE;
    case BC_MEMORYTYPE_HOST: return PTR_PINNED;
    default: return PTR_HOST;          /* BC_MEMORYTYPE_NONE: CUDA does not know it */
    }
}

static ptr_info_t query_ptr(const void *p)
{
    ptr_info_t info = { PTR_HOST, NULL, -2 };
    if (NULL == p || !braid_cuda_available()) return info;
    /* the driver's values for unknown memory, in case it leaves any unset */
    unsigned memtype = BC_MEMORYTYPE_NONE, managed = 0;
    bc_context_t ctx = NULL;
    int ordinal = -2;
    int attrs[4] = { BC_POINTER_ATTRIBUTE_MEMORY_TYPE, BC_POINTER_ATTRIBUTE_IS_MANAGED,
                     BC_POINTER_ATTRIBUTE_CONTEXT, BC_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
    void *data[4] = { &memtype, &managed, &ctx, &ordinal };
    /* unlike cuPointerGetAttribute, a plain host pointer is no error here */
    if (BC_SUCCESS != cu.cuPointerGetAttributes(4, attrs, data, (bc_deviceptr_t)(uintptr_t)p))
        return info;
    info.kind = classify(memtype, managed);
    if (PTR_HOST != info.kind) {
        info.ctx = ctx;
        info.ordinal = ordinal;
    }
    return info;
}

static bool on_device(const ptr_info_t *info)
{
    return PTR_DEVICE == info->kind || PTR_MANAGED == info->kind;
}

bool braid_cuda_is_device_ptr(const void *p)
{
    ptr_info_t info = query_ptr(p);
    return on_device(&info);
}

bool braid_cuda_is_cuda_memory(const void *p)
{
    return PTR_HOST != query_ptr(p).kind;
}

/* ------------------------------------------------------------------ */
/* Sessions                                                             */
/* ------------------------------------------------------------------ */

struct braid_cuda_session {
    bc_context_t ctx;                 /* streams and events live here */
    bc_stream_t stream[2];            /* BRAID_DEV_Q_D2H, BRAID_DEV_Q_H2D */
    bc_event_t event[BRAID_DEV_NEVENTS];
    bc_module_t module;               /* the kernels, loaded on first reduce */
    bc_function_t fn[BRAID_KT_NTYPES][BRAID_KOP_NOPS];
    int sm_count;
    bool pushed;                      /* begin pushed ctx; end pops it */
};

braid_cuda_session_t *braid_cuda_session_create(void)
{
    return calloc(1, sizeof(braid_cuda_session_t));
}

static void release_resources(braid_cuda_session_t *s)
{
    for (int e = 0; e < BRAID_DEV_NEVENTS; e++)
        if (s->event[e]) cu.cuEventDestroy(s->event[e]);
    for (int q = 0; q < 2; q++)
        if (s->stream[q]) cu.cuStreamDestroy(s->stream[q]);
    if (s->module) cu.cuModuleUnload(s->module);
    memset(s->event, 0, sizeof(s->event));
    memset(s->stream, 0, sizeof(s->stream));
    memset(s->fn, 0, sizeof(s->fn));
    s->module = NULL;
}

void braid_cuda_session_destroy(braid_cuda_session_t *s)
{
    if (NULL == s) return;
    if (NULL != s->ctx && BC_SUCCESS == cu.cuCtxPushCurrent(s->ctx)) {
        release_resources(s);
        bc_context_t dummy;
        cu.cuCtxPopCurrent(&dummy);
    }
    free(s);
}

/* Device `ordinal`'s primary context, retained on first use and kept: a
 * retain per call would leak a reference each time, and the application
 * could then never tear the context down. */
static int primary_context(int ordinal, bc_context_t *ctx)
{
    *ctx = NULL;
    if (ordinal < 0 || ordinal >= g.ndevices) {
        logf_(1, "no CUDA device %d (%d devices)", ordinal, g.ndevices);
        return BRAID_ERR_DEVICE;
    }
    int rc = BRAID_OK;
    pthread_mutex_lock(&g.primary_lock);
    if (NULL == g.primary[ordinal]) {
        bc_device_t dev;
        const char *call = "cuDeviceGet";
        bc_result_t r = cu.cuDeviceGet(&dev, ordinal);
        if (BC_SUCCESS == r) {
            call = "cuDevicePrimaryCtxRetain";
            r = cu.cuDevicePrimaryCtxRetain(&g.primary[ordinal], dev);
        }
        if (BC_SUCCESS != r) {
            g.primary[ordinal] = NULL;
            rc = fail(call, r);
        }
    }
    *ctx = g.primary[ordinal];
    pthread_mutex_unlock(&g.primary_lock);
    return rc;
}

/* The context to run in for pointer p: device (or managed) memory runs in
 * the context it was allocated in, or, when it names none, in its device's
 * primary context; anything else in the caller's current context, else in
 * device 0's primary context. */
static int context_for(const void *p, bc_context_t *ctx)
{
    ptr_info_t info = query_ptr(p);
    if (on_device(&info)) {
        if (NULL == info.ctx) return primary_context(info.ordinal, ctx);
        *ctx = info.ctx;
        return BRAID_OK;
    }
    bc_context_t cur = NULL;
    if (BC_SUCCESS == cu.cuCtxGetCurrent(&cur) && NULL != cur) {
        *ctx = cur;
        return BRAID_OK;
    }
    return primary_context(0, ctx);
}

static int create_resources(braid_cuda_session_t *s)
{
    /* Blocking streams: their work waits for what the application queued
     * before on the legacy default stream. A cuMemcpyHtoD from pageable
     * memory returns once the bytes are staged, before they reach the
     * device; a non-blocking stream's device-to-host copy then read the
     * buffer's old contents. */
    for (int q = 0; q < 2; q++)
        CU_CHECK("cuStreamCreate", cu.cuStreamCreate(&s->stream[q], BC_STREAM_DEFAULT));
    for (int e = 0; e < BRAID_DEV_NEVENTS; e++)
        CU_CHECK("cuEventCreate", cu.cuEventCreate(&s->event[e], BC_EVENT_DISABLE_TIMING));
    bc_device_t dev;
    s->sm_count = 0;
    if (BC_SUCCESS == cu.cuCtxGetDevice(&dev))
        cu.cuDeviceGetAttribute(&s->sm_count, BC_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    if (s->sm_count <= 0) s->sm_count = 16;
    return BRAID_OK;
}

static const braid_devops_t cuda_devops;

int braid_cuda_session_begin(braid_cuda_session_t *s, const void *devptr, braid_device_t *dev)
{
    if (!braid_cuda_available()) return BRAID_ERR_DEVICE;
    bc_context_t ctx;
    int rc = context_for(devptr, &ctx);
    if (BRAID_OK != rc) return rc;
    CU_CHECK("cuCtxPushCurrent", cu.cuCtxPushCurrent(ctx));
    s->pushed = true;
    if (ctx != s->ctx) {
        if (NULL != s->ctx) {
            /* the old context's objects: destroy them there */
            if (BC_SUCCESS == cu.cuCtxPushCurrent(s->ctx)) {
                release_resources(s);
                bc_context_t dummy;
                cu.cuCtxPopCurrent(&dummy);
            }
        }
        s->ctx = ctx;
        rc = create_resources(s);
        if (BRAID_OK != rc) {
            release_resources(s);
            s->ctx = NULL;
            braid_cuda_session_end(s);
            return rc;
        }
    }
    dev->ops = &cuda_devops;
    dev->ctx = s;
    return BRAID_OK;
}

void braid_cuda_session_end(braid_cuda_session_t *s)
{
    if (!s->pushed) return;
    bc_context_t dummy;
    cu.cuCtxPopCurrent(&dummy);
    s->pushed = false;
}

/* ------------------------------------------------------------------ */
/* Device operations (braid_devops_t)                                   */
/* ------------------------------------------------------------------ */

static int op_copy_async(void *ctx, int queue, void *dst, const void *src, size_t len)
{
    braid_cuda_session_t *s = ctx;
    if (BRAID_DEV_Q_D2H == queue)
        CU_CHECK("cuMemcpyDtoHAsync",
                 cu.cuMemcpyDtoHAsync(dst, (bc_deviceptr_t)(uintptr_t)src, len, s->stream[0]));
    else
        CU_CHECK("cuMemcpyHtoDAsync",
                 cu.cuMemcpyHtoDAsync((bc_deviceptr_t)(uintptr_t)dst, src, len, s->stream[1]));
    return BRAID_OK;
}

static int op_record(void *ctx, int queue, int event)
{
    braid_cuda_session_t *s = ctx;
    CU_CHECK("cuEventRecord", cu.cuEventRecord(s->event[event], s->stream[queue]));
    return BRAID_OK;
}

/* Poll (and yield) rather than block: ranks share cores with the GPU's
 * feeder threads when several processes share one GPU. */
static int op_wait(void *ctx, int event)
{
    braid_cuda_session_t *s = ctx;
    for (unsigned polls = 0;; polls++) {
        bc_result_t r = cu.cuEventQuery(s->event[event]);
        if (BC_SUCCESS == r) return BRAID_OK;
        if (BC_ERROR_NOT_READY != r) return fail("cuEventQuery", r);
        if (polls > 64) sched_yield();
    }
}

static int load_function(braid_cuda_session_t *s, int kt, int kop, bc_function_t *fn)
{
    if (kt < 0 || kt >= BRAID_KT_NTYPES || kop < 0 || kop >= BRAID_KOP_NOPS ||
        NULL == braid_kernel_lookup((braid_ktype_t)kt, (braid_kop_t)kop))
        return BRAID_ERR_UNSUPPORTED;
    if (NULL == s->module)
        CU_CHECK("cuModuleLoadData (braid's embedded kernels)",
                 cu.cuModuleLoadData(&s->module, braid_cuda_fatbin));
    if (NULL == s->fn[kt][kop]) {
        char name[64];
        snprintf(name, sizeof(name), "braid_k_%s_%s", braid_kop_name((braid_kop_t)kop),
                 braid_ktype_name((braid_ktype_t)kt));
        CU_CHECK("cuModuleGetFunction", cu.cuModuleGetFunction(&s->fn[kt][kop], s->module, name));
    }
    *fn = s->fn[kt][kop];
    return BRAID_OK;
}

static int op_reduce(void *ctx, int queue, const void *in, void *inout, size_t count, int ktype,
                     int kop)
{
    braid_cuda_session_t *s = ctx;
    bc_function_t fn = NULL;
    int rc = load_function(s, ktype, kop, &fn);
    if (BRAID_OK != rc || 0 == count) return rc;
    const unsigned threads = 256;
    size_t blocks = (count + threads - 1) / threads, max_blocks = (size_t)s->sm_count * 8;
    if (blocks > max_blocks) blocks = max_blocks;   /* the kernels loop over the grid */
    bc_deviceptr_t din = (bc_deviceptr_t)(uintptr_t)in, dio = (bc_deviceptr_t)(uintptr_t)inout;
    void *params[3] = { &din, &dio, &count };
    CU_CHECK("cuLaunchKernel", cu.cuLaunchKernel(fn, (unsigned)blocks, 1, 1, threads, 1, 1, 0,
                                                 s->stream[queue], params, NULL));
    return BRAID_OK;
}

static void *op_host_alloc(void *ctx, size_t len)
{
    (void)ctx;
    void *p = NULL;
    bc_result_t r = cu.cuMemHostAlloc(&p, len, BC_MEMHOSTALLOC_PORTABLE);
    if (BC_SUCCESS != r) {
        logf_(1, "cuMemHostAlloc(%zu) failed: %s; staging through pageable memory", len,
              error_string(r));
        return NULL;
    }
    return p;
}

static void op_host_free(void *ctx, void *p)
{
    braid_cuda_session_t *s = ctx;
    bool push = NULL != s && NULL != s->ctx && !s->pushed &&
                BC_SUCCESS == cu.cuCtxPushCurrent(s->ctx);
    cu.cuMemFreeHost(p);
    if (push) {
        bc_context_t dummy;
        cu.cuCtxPopCurrent(&dummy);
    }
}

static const braid_devops_t cuda_devops = {
    .copy_async = op_copy_async,
    .record = op_record,
    .wait = op_wait,
    .reduce = op_reduce,
    .host_alloc = op_host_alloc,
    .host_free = op_host_free,
};

int braid_cuda_reduce(braid_cuda_session_t *s, const void *in, void *inout, size_t count,
                      int ktype, int kop)
{
    braid_device_t dev;
    int rc = braid_cuda_session_begin(s, inout, &dev);
    if (BRAID_OK != rc) return rc;
    rc = op_reduce(s, BRAID_DEV_Q_H2D, in, inout, count, ktype, kop);
    if (BRAID_OK == rc) {
        bc_result_t r = cu.cuStreamSynchronize(s->stream[BRAID_DEV_Q_H2D]);
        if (BC_SUCCESS != r) rc = fail("cuStreamSynchronize", r);
    }
    braid_cuda_session_end(s);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Synchronous helpers                                                  */
/* ------------------------------------------------------------------ */

/* Make the context for p current (context_for) unless it already is;
 * *pushed says what to pop afterwards (NULL: nothing). */
static int with_context(const void *p, bc_context_t *pushed)
{
    *pushed = NULL;
    bc_context_t ctx, cur = NULL;
    int rc = context_for(p, &ctx);
    if (BRAID_OK != rc) return rc;
    if (BC_SUCCESS == cu.cuCtxGetCurrent(&cur) && cur == ctx) return BRAID_OK;
    CU_CHECK("cuCtxPushCurrent", cu.cuCtxPushCurrent(ctx));
    *pushed = ctx;
    return BRAID_OK;
}

static void without_context(bc_context_t pushed)
{
    bc_context_t dummy;
    if (NULL != pushed) cu.cuCtxPopCurrent(&dummy);
}

int braid_cuda_memcpy(void *dst, const void *src, size_t len)
{
    if (!braid_cuda_available()) return BRAID_ERR_DEVICE;
    if (0 == len) return BRAID_OK;
    ptr_info_t to = query_ptr(dst), from = query_ptr(src);
    bc_context_t pushed;
    int rc = with_context(on_device(&to) ? dst : src, &pushed);
    if (BRAID_OK != rc) return rc;
    const char *call = "cuMemcpy";
    bc_result_t r = cu.cuMemcpy((bc_deviceptr_t)(uintptr_t)dst, (bc_deviceptr_t)(uintptr_t)src, len);
    /* from pageable memory cuMemcpy returns once the bytes are staged; the
     * rest of the copy runs on the legacy stream: wait for it, so that the
     * copy is complete when this returns, as the header promises */
    if (BC_SUCCESS == r && on_device(&to) && PTR_HOST == from.kind) {
        call = "cuStreamSynchronize (after cuMemcpy)";
        r = cu.cuStreamSynchronize(NULL);
    }
    without_context(pushed);
    return BC_SUCCESS == r ? BRAID_OK : fail(call, r);
}

int braid_cuda_malloc(void **p, size_t len)
{
    *p = NULL;
    if (!braid_cuda_available()) return BRAID_ERR_DEVICE;
    bc_context_t pushed;
    int rc = with_context(NULL, &pushed);
    if (BRAID_OK != rc) return rc;
    bc_deviceptr_t d = 0;
    bc_result_t r = cu.cuMemAlloc(&d, len ? len : 1);
    without_context(pushed);
    if (BC_SUCCESS != r) return fail("cuMemAlloc", r);
    *p = (void *)(uintptr_t)d;
    return BRAID_OK;
}

void braid_cuda_free(void *p)
{
    if (NULL == p || !braid_cuda_available()) return;
    bc_context_t pushed;
    if (BRAID_OK != with_context(p, &pushed)) return;
    cu.cuMemFree((bc_deviceptr_t)(uintptr_t)p);
    without_context(pushed);
}

/* ------------------------------------------------------------------ */
/* staging                                                             */
/* ------------------------------------------------------------------ */

struct braid_cuda_stage {
    braid_cuda_session_t *session;
    braid_devpipe_t pipe;
};

int braid_cuda_stage_run(braid_cuda_stage_t **stp, braid_devpipe_job_t *job, bool *ran)
{
    braid_cuda_stage_t *st = *stp;
    *ran = false;
    if (NULL == st) {
        if (NULL == (st = calloc(1, sizeof(*st)))) return BRAID_ERR_NOMEM;
        if (NULL == (st->session = braid_cuda_session_create())) {
            free(st);
            return BRAID_ERR_NOMEM;
        }
        *stp = st;
    }
    braid_device_t dev;
    int rc = braid_cuda_session_begin(st->session, job->in_dev ? job->in : job->out, &dev);
    if (BRAID_OK != rc) return rc;
    *ran = true;
    rc = braid_devpipe_run(&st->pipe, &dev, job);
    braid_cuda_session_end(st->session);
    return rc;
}

void braid_cuda_stage_release(braid_cuda_stage_t *st)
{
    if (NULL == st) return;
    braid_devpipe_release(&st->pipe);   /* before the session its ops use */
    braid_cuda_session_destroy(st->session);
    free(st);
}
