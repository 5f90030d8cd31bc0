/*
 * braid_cuda.h - braid's use of CUDA device memory, in pure C.
 *
 * The CUDA driver (libcuda.so.1) is loaded with dlopen on first use and
 * every entry point braid needs is resolved with dlsym, so the component has
 * no link-time dependency on libcuda or libcudart and loads on machines with
 * no CUDA at all: there braid_cuda_available() is false and every pointer is
 * host memory. braid's reduction kernels are compiled by nvcc into a fatbin
 * (sm_75..sm_90 + PTX, see configure) embedded in the component as a byte
 * array and loaded with cuModuleLoadData when a device reduction is first
 * needed.
 *
 * Every CUDA failure becomes BRAID_ERR_DEVICE, with the call and CUDA's
 * error string handed to the log callback (level 1).
 */
#ifndef BRAID_CUDA_H
#define BRAID_CUDA_H

#include <stdbool.h>
#include <stddef.h>

#include "braid_devpipe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*braid_cuda_log_fn_t)(int level, const char *fmt, ...);

/* Where errors and notes go (may be NULL: silent). Call before first use. */
void braid_cuda_set_log(braid_cuda_log_fn_t fn);

/* Tests: take the driver's entry points from `resolve` (called with the
 * names libcuda.so.1 exports, e.g. "cuMemAlloc_v2") instead of dlopen'ing
 * libcuda.so.1. Call before any other braid_cuda function. */
typedef void *(*braid_cuda_resolve_fn_t)(const char *name);
void braid_cuda_set_driver(braid_cuda_resolve_fn_t resolve);

/* The driver library can be loaded (no cuInit: cheap, no GPU touched). */
bool braid_cuda_driver_present(void);

/* The driver loaded, every symbol resolved and cuInit succeeded (once). */
bool braid_cuda_available(void);

/* p is device memory (CU_POINTER_ATTRIBUTE_MEMORY_TYPE DEVICE or UNIFIED,
 * or IS_MANAGED: managed memory counts as device). False for NULL, plain
 * host memory (MEMORY_TYPE 0), pinned host memory (MEMORY_TYPE HOST), and
 * whenever CUDA is not available. */
bool braid_cuda_is_device_ptr(const void *p);

/* CUDA knows p: pinned host, device or managed memory (any MEMORY_TYPE, or
 * IS_MANAGED). False for NULL, plain host memory and whenever CUDA is not
 * available. Such memory is mapped by the driver, and another process's
 * process_vm_readv may be refused it (EFAULT). */
bool braid_cuda_is_cuda_memory(const void *p);

/* Per-user state: two streams (device-to-host, host-to-device), the
 * pipeline's events and the kernel module, bound to one CUDA context. */
typedef struct braid_cuda_session braid_cuda_session_t;

braid_cuda_session_t *braid_cuda_session_create(void);
void braid_cuda_session_destroy(braid_cuda_session_t *s);

/* Make the context that owns device pointer devptr current on this thread
 * (its device's primary context when the pointer names none), (re)create the
 * session's streams and events in it, and describe the session as a
 * braid_device_t for the pipeline. Pair with braid_cuda_session_end. */
int braid_cuda_session_begin(braid_cuda_session_t *s, const void *devptr, braid_device_t *dev);
void braid_cuda_session_end(braid_cuda_session_t *s);

/* A communicator's device staging: a session and the pipeline's slots
 * (braid_devpipe.h), made on first use. Run job through it on the device
 * of its device buffer: *ran false when it could not start (no memory, no
 * session, no device; the error returned, nothing sent: the caller still
 * takes part), else the pipeline's result. */
typedef struct braid_cuda_stage braid_cuda_stage_t;
int braid_cuda_stage_run(braid_cuda_stage_t **st, braid_devpipe_job_t *job, bool *ran);
void braid_cuda_stage_release(braid_cuda_stage_t *st);

/* Synchronous copies between any two of host and device memory
 * (cuMemcpy: unified addressing picks the direction); the bytes are at dst
 * on return, from pageable host memory too. */
int braid_cuda_memcpy(void *dst, const void *src, size_t len);

/* Device memory for tests and tools (cuMemAlloc / cuMemFree), in the
 * caller's current context, else in the primary context of device 0. */
int braid_cuda_malloc(void **p, size_t len);
void braid_cuda_free(void *p);

/* inout[i] = in[i] op inout[i] on device memory with braid's GPU kernels,
 * synchronous (ktype/kop: braid_kernels.h). BRAID_ERR_UNSUPPORTED for pairs
 * without a kernel. */
int braid_cuda_reduce(braid_cuda_session_t *s, const void *in, void *inout, size_t count,
                      int ktype, int kop);

/* Number of GPUs (0 when CUDA is not available). */
int braid_cuda_device_count(void);

#ifdef __cplusplus
}
#endif
#endif /* BRAID_CUDA_H */
