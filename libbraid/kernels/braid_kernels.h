/*
 * braid_kernels.h - braid's element-wise reduction kernels for the predefined
 * MPI (type, op) pairs.
 *
 * Every kernel computes   inout[i] = in[i] op inout[i],   0 <= i < count,
 * with exactly the results of Open MPI's reference ops (ompi/mca/op/base):
 *
 *  - SUM, PROD on integers wrap around modulo 2^n (never saturate), signed
 *    types included (the arithmetic is done in an unsigned type);
 *  - MIN, MAX are  inout = (inout < in) ? inout : in  (resp. >), as Open MPI.
 *    For float/double this means: a NaN in `in` is propagated, a NaN only in
 *    `inout` is replaced by `in`; when the operands compare equal (+0.0 and
 *    -0.0 included) the result is `in`;
 *  - LAND, LOR, LXOR yield 0 or 1:  (a && b), (a || b), (!a != !b);
 *  - BAND, BOR, BXOR are the bitwise operators on integer types;
 *  - complex SUM and PROD are C's complex + and * (inout * in, as Open MPI
 *    writes it), never contracted into fused multiply-adds;
 *  - MAXLOC (MINLOC): the pair with the larger (smaller) value, and of
 *    equal values the smaller index.
 *
 * Pairs MPI does not define (bitwise or logical ops on float/double,
 * arithmetic, min/max or bitwise ops on bool) have no kernel: lookup returns
 * NULL and the caller falls back to MPI's own reduction.
 *
 * `in` and `inout` must not overlap. Buffers need no particular alignment
 * beyond that of the element type. The code is pure C (no MPI): the kernels
 * are written as simple counted loops that the compiler vectorises, and on
 * x86-64 with GCC each kernel is cloned for AVX-512BW, AVX2 and the baseline
 * ISA and picked at load time (ifunc).
 */
#ifndef BRAID_KERNELS_H
#define BRAID_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The types up to BRAID_KT_NTYPES have device kernels too (cuda/); the
 * rest, up to BRAID_KT_ALL, are host only: long double, the complex types
 * (SUM and PROD) and the value-index pairs of MINLOC and MAXLOC, laid out
 * as C structs {value, index} (Fortran's pairs: two of the same type). */
typedef enum {
    BRAID_KT_INT8, BRAID_KT_UINT8, BRAID_KT_INT16, BRAID_KT_UINT16,
    BRAID_KT_INT32, BRAID_KT_UINT32, BRAID_KT_INT64, BRAID_KT_UINT64,
    BRAID_KT_FLOAT, BRAID_KT_DOUBLE,
    BRAID_KT_BOOL, /* C _Bool, logical ops only */
    BRAID_KT_NTYPES,
    BRAID_KT_LDOUBLE = BRAID_KT_NTYPES,
    BRAID_KT_CFLOAT, BRAID_KT_CDOUBLE, BRAID_KT_CLDOUBLE,
    BRAID_KT_FLOAT_INT, BRAID_KT_DOUBLE_INT, BRAID_KT_LONG_INT, BRAID_KT_INT_INT,
    BRAID_KT_SHORT_INT, BRAID_KT_LDOUBLE_INT, BRAID_KT_FLOAT_FLOAT, BRAID_KT_DOUBLE_DOUBLE,
    BRAID_KT_ALL
} braid_ktype_t;

/* Likewise: the ops up to BRAID_KOP_NOPS on every type, MAXLOC and
 * MINLOC on the pairs only (host). */
typedef enum {
    BRAID_KOP_SUM, BRAID_KOP_PROD, BRAID_KOP_MIN, BRAID_KOP_MAX,
    BRAID_KOP_LAND, BRAID_KOP_LOR, BRAID_KOP_LXOR,
    BRAID_KOP_BAND, BRAID_KOP_BOR, BRAID_KOP_BXOR,
    BRAID_KOP_NOPS,
    BRAID_KOP_MAXLOC = BRAID_KOP_NOPS, BRAID_KOP_MINLOC,
    BRAID_KOP_ALL
} braid_kop_t;

/* inout[i] = in[i] op inout[i], i < count */
typedef void (*braid_kernel_fn_t)(const void *in, void *inout, size_t count);

/* The kernel for (t, op); NULL when MPI does not define op on that type
 * (bitwise ops on floats, arithmetic on bool, ...) or t/op is out of range. */
braid_kernel_fn_t braid_kernel_lookup(braid_ktype_t t, braid_kop_t op);

/* true when the result does not depend on evaluation order (integers, logical,
 * bitwise, min/max of any type); false for float/double SUM and PROD, and for
 * pairs that have no kernel. */
bool braid_kernel_is_exact(braid_ktype_t t, braid_kop_t op);

/* Size in bytes of one element of t (0 when out of range). */
size_t braid_ktype_size(braid_ktype_t t);

/* "int8", ..., "bool" and "sum", ..., "bxor"; "?" when out of range. */
const char *braid_ktype_name(braid_ktype_t t);
const char *braid_kop_name(braid_kop_t op);

#ifdef __cplusplus
}
#endif

#endif /* BRAID_KERNELS_H */
