/*
 * mock_libcuda.c - the mock CUDA driver (tests/unit/mock_cuda_driver.h) as
 * a libcuda.so.1, so that whole MPI jobs run braid's CUDA path without a
 * GPU: put the directory holding it first in LD_LIBRARY_PATH and both braid
 * (which dlopens libcuda.so.1) and tests/mpi/mpi_cuda find it. Every
 * process gets its own driver, with BRAID_MOCK_CUDA_DEVICES GPUs (default
 * 2) whose queues run lazily (BRAID_MOCK_CUDA_MODE=random: at random
 * moments too). Device pointers fault when the host touches them, as real
 * ones do, so a device buffer that reaches a component that is not
 * CUDA-aware crashes the job here as on an H100.
 *
 * Exported under the names CUDA 13's cuda.h binds (cuMemAlloc_v2, ...);
 * the entry points braid and mpi_cuda use, nothing more.
 */
#include "mock_cuda_driver.h"

#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

__attribute__((constructor)) static void mock_libcuda_init(void)
{
    const char *n = getenv("BRAID_MOCK_CUDA_DEVICES"), *mode = getenv("BRAID_MOCK_CUDA_MODE");
    mcu_reset(n ? atoi(n) : 2, mode && 0 == strcmp(mode, "random") ? MCU_RANDOM : MCU_LAZY,
              (unsigned)getpid());
}

typedef mcu_ctx_t *ctx_t;
typedef mcu_stream_t *stream_t;
typedef mcu_event_t *event_t;

EXPORT mcu_result_t cuInit(unsigned f) { return mcu_cuInit(f); }
EXPORT mcu_result_t cuGetErrorString(mcu_result_t r, const char **s) { return mcu_cuGetErrorString(r, s); }
EXPORT mcu_result_t cuDeviceGetCount(int *n) { return mcu_cuDeviceGetCount(n); }
EXPORT mcu_result_t cuDeviceGet(int *d, int o) { return mcu_cuDeviceGet(d, o); }
EXPORT mcu_result_t cuDeviceGetAttribute(int *v, int a, int d) { return mcu_cuDeviceGetAttribute(v, a, d); }
EXPORT mcu_result_t cuPointerGetAttributes(unsigned n, int *a, void **d, mcu_devptr_t p)
{
    return mcu_cuPointerGetAttributes(n, a, d, p);
}
EXPORT mcu_result_t cuCtxGetCurrent(ctx_t *c) { return mcu_cuCtxGetCurrent(c); }
EXPORT mcu_result_t cuCtxSetCurrent(ctx_t c) { return mcu_cuCtxSetCurrent(c); }
EXPORT mcu_result_t cuCtxGetDevice(int *d) { return mcu_cuCtxGetDevice(d); }
EXPORT mcu_result_t cuCtxPushCurrent_v2(ctx_t c) { return mcu_cuCtxPushCurrent(c); }
EXPORT mcu_result_t cuCtxPopCurrent_v2(ctx_t *c) { return mcu_cuCtxPopCurrent(c); }
EXPORT mcu_result_t cuCtxSynchronize(void) { return mcu_cuCtxSynchronize(); }
EXPORT mcu_result_t cuDevicePrimaryCtxRetain(ctx_t *c, int d) { return mcu_cuDevicePrimaryCtxRetain(c, d); }
EXPORT mcu_result_t cuDevicePrimaryCtxRelease_v2(int d) { return mcu_cuDevicePrimaryCtxRelease(d); }
EXPORT mcu_result_t cuStreamCreate(stream_t *s, unsigned f) { return mcu_cuStreamCreate(s, f); }
EXPORT mcu_result_t cuStreamDestroy_v2(stream_t s) { return mcu_cuStreamDestroy(s); }
EXPORT mcu_result_t cuStreamSynchronize(stream_t s) { return mcu_cuStreamSynchronize(s); }
EXPORT mcu_result_t cuEventCreate(event_t *e, unsigned f) { return mcu_cuEventCreate(e, f); }
EXPORT mcu_result_t cuEventDestroy_v2(event_t e) { return mcu_cuEventDestroy(e); }
EXPORT mcu_result_t cuEventRecord(event_t e, stream_t s) { return mcu_cuEventRecord(e, s); }
EXPORT mcu_result_t cuEventQuery(event_t e) { return mcu_cuEventQuery(e); }
EXPORT mcu_result_t cuMemcpyDtoHAsync_v2(void *d, mcu_devptr_t s, size_t n, stream_t st)
{
    return mcu_cuMemcpyDtoHAsync(d, s, n, st);
}
EXPORT mcu_result_t cuMemcpyHtoDAsync_v2(mcu_devptr_t d, const void *s, size_t n, stream_t st)
{
    return mcu_cuMemcpyHtoDAsync(d, s, n, st);
}
EXPORT mcu_result_t cuMemcpy(mcu_devptr_t d, mcu_devptr_t s, size_t n) { return mcu_cuMemcpy(d, s, n); }
EXPORT mcu_result_t cuMemcpyHtoD_v2(mcu_devptr_t d, const void *s, size_t n) { return mcu_cuMemcpyHtoD(d, s, n); }
EXPORT mcu_result_t cuMemcpyDtoH_v2(void *d, mcu_devptr_t s, size_t n) { return mcu_cuMemcpyDtoH(d, s, n); }
EXPORT mcu_result_t cuMemHostAlloc(void **p, size_t n, unsigned f) { return mcu_cuMemHostAlloc(p, n, f); }
EXPORT mcu_result_t cuMemFreeHost(void *p) { return mcu_cuMemFreeHost(p); }
EXPORT mcu_result_t cuMemAlloc_v2(mcu_devptr_t *d, size_t n) { return mcu_cuMemAlloc(d, n); }
EXPORT mcu_result_t cuMemAllocManaged(mcu_devptr_t *d, size_t n, unsigned f) { return mcu_cuMemAllocManaged(d, n, f); }
EXPORT mcu_result_t cuMemFree_v2(mcu_devptr_t d) { return mcu_cuMemFree(d); }
EXPORT mcu_result_t cuModuleLoadData(mcu_module_t **m, const void *img) { return mcu_cuModuleLoadData(m, img); }
EXPORT mcu_result_t cuModuleUnload(mcu_module_t *m) { return mcu_cuModuleUnload(m); }
EXPORT mcu_result_t cuModuleGetFunction(mcu_function_t **f, mcu_module_t *m, const char *name)
{
    return mcu_cuModuleGetFunction(f, m, name);
}
EXPORT mcu_result_t cuLaunchKernel(mcu_function_t *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shmem, stream_t s, void **params,
                                   void **extra)
{
    return mcu_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}
