/*
 * braid_cuda_kernels.cu - braid's element-wise reductions on the GPU:
 *
 *     inout[i] = in[i] op inout[i],   0 <= i < n
 *
 * for the (type, op) pairs that have a CPU kernel in coll/kernels (same
 * results bit for bit: integer SUM/PROD wrap modulo 2^n, MIN/MAX keep
 * `inout` only when strictly smaller/larger, logical ops yield 0 or 1).
 * One kernel per pair, named braid_k_<op>_<type> with the names of
 * braid_kop_name()/braid_ktype_name(); braid_cuda.c looks them up by name
 * in the fatbin that nvcc builds from this file (sm_75..sm_90 + PTX) and the
 * component embeds. Each kernel is a grid-stride loop, so any grid size
 * covers any n.
 */
#include <stddef.h>
#include <stdint.h>

#include "braid_kernels.h"

/* wrap-around arithmetic: done in 64-bit unsigned, truncated to the type */
template <typename T> __device__ __forceinline__ T wrap_add(T a, T b)
{
    return (T)((unsigned long long)a + (unsigned long long)b);
}
template <typename T> __device__ __forceinline__ T wrap_mul(T a, T b)
{
    return (T)((unsigned long long)a * (unsigned long long)b);
}

#define BRAID_KERNEL(opname, tname, T, EXPR)                                                  \
    extern "C" __global__ void braid_k_##opname##_##tname(const T *__restrict__ in,           \
                                                          T *__restrict__ inout, size_t n)    \
    {                                                                                         \
        size_t stride = (size_t)gridDim.x * blockDim.x;                                       \
        for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {  \
            T a = in[i], b = inout[i];                                                        \
            inout[i] = (EXPR);                                                                \
        }                                                                                     \
    }

#define BRAID_INT_KERNELS(tname, T)                                  \
    BRAID_KERNEL(sum, tname, T, wrap_add<T>(a, b))                   \
    BRAID_KERNEL(prod, tname, T, wrap_mul<T>(a, b))                  \
    BRAID_KERNEL(min, tname, T, (b < a) ? b : a)                     \
    BRAID_KERNEL(max, tname, T, (b > a) ? b : a)                     \
    BRAID_KERNEL(land, tname, T, (T)((a && b) ? 1 : 0))              \
    BRAID_KERNEL(lor, tname, T, (T)((a || b) ? 1 : 0))               \
    BRAID_KERNEL(lxor, tname, T, (T)((!a != !b) ? 1 : 0))            \
    BRAID_KERNEL(band, tname, T, (T)(a & b))                         \
    BRAID_KERNEL(bor, tname, T, (T)(a | b))                          \
    BRAID_KERNEL(bxor, tname, T, (T)(a ^ b))

#define BRAID_FLOAT_KERNELS(tname, T)                                \
    BRAID_KERNEL(sum, tname, T, a + b)                               \
    BRAID_KERNEL(prod, tname, T, a * b)                              \
    BRAID_KERNEL(min, tname, T, (b < a) ? b : a)                     \
    BRAID_KERNEL(max, tname, T, (b > a) ? b : a)

BRAID_INT_KERNELS(int8, int8_t)
BRAID_INT_KERNELS(uint8, uint8_t)
BRAID_INT_KERNELS(int16, int16_t)
BRAID_INT_KERNELS(uint16, uint16_t)
BRAID_INT_KERNELS(int32, int32_t)
BRAID_INT_KERNELS(uint32, uint32_t)
BRAID_INT_KERNELS(int64, int64_t)
BRAID_INT_KERNELS(uint64, uint64_t)
BRAID_FLOAT_KERNELS(float, float)
BRAID_FLOAT_KERNELS(double, double)

/* C _Bool: logical ops only */
BRAID_KERNEL(land, bool, bool, a && b)
BRAID_KERNEL(lor, bool, bool, a || b)
BRAID_KERNEL(lxor, bool, bool, a != b)

/* the kernel table above assumes braid_kernels.h's enumerations */
static_assert(BRAID_KT_NTYPES == 11 && BRAID_KOP_NOPS == 10,
              "braid_kernels.h changed: update braid_cuda_kernels.cu");
