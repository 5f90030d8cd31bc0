/*
 * braid_kernels.c - element-wise reduction kernels, one function per
 * predefined (type, op) pair, generated from two macro tables:
 *
 *   BRAID_KTYPES   the element types: enum suffix, name, C type, the unsigned
 *                  type integer arithmetic is done in, and the op set of the
 *                  type (integer: all ten ops; float/double: sum, prod, min,
 *                  max; bool: land, lor, lxor);
 *   K_<OP>(a, b)   the scalar expression of each op, a = in[i], b = inout[i].
 *
 * Each kernel is a plain counted loop over restrict-qualified pointers, which
 * GCC vectorises at -O3 (the library is built with -O3 and a dynamic
 * vectoriser cost model, see Makefile.am; check with -fopt-info-vec). On
 * x86-64/glibc each kernel is compiled three times (x86-64-v4 = AVX-512,
 * x86-64-v3 = AVX2, baseline SSE2) and the dynamic loader picks the best clone for the CPU.
 *
 * Semantics (identical to Open MPI's ompi/mca/op/base reference ops):
 *  - signed SUM/PROD are computed in an unsigned type of at least the same
 *    width, so they wrap modulo 2^n without undefined behaviour; converting
 *    the result back to the signed type is modulo 2^n in GCC and clang
 *    (implementation-defined in C11, defined in C23);
 *  - MIN/MAX keep inout when it is strictly smaller/larger, otherwise take in
 *    (NaN in `in` propagates, NaN only in `inout` is replaced);
 *  - logical ops give 0/1 of the element type.
 */
#include <stdint.h>

#include "braid_kernels.h"

/* ---- per-ISA clones ---------------------------------------------------- */
#if !defined(BRAID_KERNELS_NO_CLONES) && defined(__GNUC__) && !defined(__clang__) \
    && defined(__x86_64__) && defined(__ELF__) && defined(__GLIBC__) && __GNUC__ >= 8
#define BRAID_KERNEL_ATTR __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define BRAID_KERNEL_ATTR
#endif

/* ---- scalar op expressions: a = in[i], b = inout[i], T element type,
 *      W type of the arithmetic ------------------------------------------ */
#define K_SUM(a, b, T, W)  ((T)((W)(a) + (W)(b)))
#define K_PROD(a, b, T, W) ((T)((W)(a) * (W)(b)))
#define K_MIN(a, b, T, W)  (((b) < (a)) ? (b) : (a))
#define K_MAX(a, b, T, W)  (((b) > (a)) ? (b) : (a))
#define K_LAND(a, b, T, W) ((T)(((a) != 0) & ((b) != 0)))
#define K_LOR(a, b, T, W)  ((T)(((a) != 0) | ((b) != 0)))
#define K_LXOR(a, b, T, W) ((T)(((a) != 0) ^ ((b) != 0)))
#define K_BAND(a, b, T, W) ((T)((a) & (b)))
#define K_BOR(a, b, T, W)  ((T)((a) | (b)))
#define K_BXOR(a, b, T, W) ((T)((a) ^ (b)))
#define K_CPROD(a, b, T, W) ((b) * (a))
#define K_MAXLOC(a, b, T, W) k_loc(a, b, T, >)
#define K_MINLOC(a, b, T, W) k_loc(a, b, T, <)
/* a = in, b = inout: a's pair when its value wins, b with the smaller
 * index on a tie, else b (GNU statement expression) */
#define k_loc(a, b, T, CMP)                                                    \
    __extension__({                                                            \
        T r_ = (b);                                                            \
        if ((a).v CMP (b).v) r_ = (a);                                         \
        else if ((a).v == (b).v && (a).k < (b).k) r_.k = (a).k;                \
        r_;                                                                    \
    })

/* ---- op sets: X(ENUM_SUFFIX, name, expression, type args...) ----------- */
#define OPS_INT(X, ...) \
    X(SUM, sum, K_SUM, __VA_ARGS__)    X(PROD, prod, K_PROD, __VA_ARGS__) \
    X(MIN, min, K_MIN, __VA_ARGS__)    X(MAX, max, K_MAX, __VA_ARGS__)    \
    X(LAND, land, K_LAND, __VA_ARGS__) X(LOR, lor, K_LOR, __VA_ARGS__)    \
    X(LXOR, lxor, K_LXOR, __VA_ARGS__) X(BAND, band, K_BAND, __VA_ARGS__) \
    X(BOR, bor, K_BOR, __VA_ARGS__)    X(BXOR, bxor, K_BXOR, __VA_ARGS__)
#define OPS_FLOAT(X, ...) \
    X(SUM, sum, K_SUM, __VA_ARGS__) X(PROD, prod, K_PROD, __VA_ARGS__) \
    X(MIN, min, K_MIN, __VA_ARGS__) X(MAX, max, K_MAX, __VA_ARGS__)
#define OPS_BOOL(X, ...) \
    X(LAND, land, K_LAND, __VA_ARGS__) X(LOR, lor, K_LOR, __VA_ARGS__) \
    X(LXOR, lxor, K_LXOR, __VA_ARGS__)
#define OPS_COMPLEX(X, ...) \
    X(SUM, sum, K_SUM, __VA_ARGS__) X(PROD, prod, K_CPROD, __VA_ARGS__)
#define OPS_LOC(X, ...) \
    X(MAXLOC, maxloc, K_MAXLOC, __VA_ARGS__) X(MINLOC, minloc, K_MINLOC, __VA_ARGS__)

/* the value-index pairs, as Open MPI and MPI lay them out */
typedef struct { float v; int k; } kt_float_int;
typedef struct { double v; int k; } kt_double_int;
typedef struct { long v; int k; } kt_long_int;
typedef struct { int v; int k; } kt_int_int;
typedef struct { short v; int k; } kt_short_int;
typedef struct { long double v; int k; } kt_ldouble_int;
typedef struct { float v; float k; } kt_float_float;
typedef struct { double v; double k; } kt_double_double;

/* ---- types: X(ENUM_SUFFIX, name, C type, arithmetic type, op set) ------ */
#define BRAID_KTYPES(X)                                   \
    X(INT8, int8, int8_t, unsigned int, OPS_INT)          \
    X(UINT8, uint8, uint8_t, unsigned int, OPS_INT)       \
    X(INT16, int16, int16_t, unsigned int, OPS_INT)       \
    X(UINT16, uint16, uint16_t, unsigned int, OPS_INT)    \
    X(INT32, int32, int32_t, uint32_t, OPS_INT)           \
    X(UINT32, uint32, uint32_t, uint32_t, OPS_INT)        \
    X(INT64, int64, int64_t, uint64_t, OPS_INT)           \
    X(UINT64, uint64, uint64_t, uint64_t, OPS_INT)        \
    X(FLOAT, float, float, float, OPS_FLOAT)              \
    X(DOUBLE, double, double, double, OPS_FLOAT)          \
    X(BOOL, cbool, _Bool, unsigned int, OPS_BOOL)

/* the host-only types (braid_kernels.h), compiled for the baseline ISA
 * alone: nothing to gain from wider vectors, and GCC's vectorised complex
 * product fuses multiply-adds (vfmaddsub) even with -ffp-contract=off,
 * which would round otherwise than Open MPI's */
#define BRAID_KTYPES_HOST(X)                                   \
    X(LDOUBLE, ldouble, long double, long double, OPS_FLOAT)   \
    X(CFLOAT, cfloat, float _Complex, float _Complex, OPS_COMPLEX) \
    X(CDOUBLE, cdouble, double _Complex, double _Complex, OPS_COMPLEX) \
    X(CLDOUBLE, cldouble, long double _Complex, long double _Complex, OPS_COMPLEX) \
    X(FLOAT_INT, float_int, kt_float_int, int, OPS_LOC)        \
    X(DOUBLE_INT, double_int, kt_double_int, int, OPS_LOC)     \
    X(LONG_INT, long_int, kt_long_int, int, OPS_LOC)           \
    X(INT_INT, int_int, kt_int_int, int, OPS_LOC)              \
    X(SHORT_INT, short_int, kt_short_int, int, OPS_LOC)        \
    X(LDOUBLE_INT, ldouble_int, kt_ldouble_int, int, OPS_LOC)  \
    X(FLOAT_FLOAT, float_float, kt_float_float, int, OPS_LOC)  \
    X(DOUBLE_DOUBLE, double_double, kt_double_double, int, OPS_LOC)

/* ---- one kernel per (type, op) ----------------------------------------- */
#define KERNEL_FN(ATTR, op, EXPR, tn, T, W)                                    \
    ATTR static void braid_k_##op##_##tn(const void *restrict in_,             \
                                         void *restrict inout_, size_t count)  \
    {                                                                          \
        const T *in = (const T *)in_;                                          \
        T *io = (T *)inout_;                                                   \
        for (size_t i = 0; i < count; i++) io[i] = EXPR(in[i], io[i], T, W);   \
    }
#define DEFINE_KERNEL(OP, op, EXPR, TN, tn, T, W) KERNEL_FN(BRAID_KERNEL_ATTR, op, EXPR, tn, T, W)
#define DEFINE_HOST_KERNEL(OP, op, EXPR, TN, tn, T, W) KERNEL_FN(, op, EXPR, tn, T, W)
#define DEFINE_TYPE(TN, tn, T, W, OPS) OPS(DEFINE_KERNEL, TN, tn, T, W)
#define DEFINE_HOST_TYPE(TN, tn, T, W, OPS) OPS(DEFINE_HOST_KERNEL, TN, tn, T, W)
BRAID_KTYPES(DEFINE_TYPE)
BRAID_KTYPES_HOST(DEFINE_HOST_TYPE)

#define TABLE_ENTRY(OP, op, EXPR, TN, tn, T, W) \
    [BRAID_KT_##TN][BRAID_KOP_##OP] = braid_k_##op##_##tn,
#define TABLE_TYPE(TN, tn, T, W, OPS) OPS(TABLE_ENTRY, TN, tn, T, W)
static const braid_kernel_fn_t kernel_table[BRAID_KT_ALL][BRAID_KOP_ALL] = {
    BRAID_KTYPES(TABLE_TYPE) BRAID_KTYPES_HOST(TABLE_TYPE)
};

#define SIZE_ENTRY(TN, tn, T, W, OPS) [BRAID_KT_##TN] = sizeof(T),
static const size_t ktype_sizes[BRAID_KT_ALL] = { BRAID_KTYPES(SIZE_ENTRY)
                                                   BRAID_KTYPES_HOST(SIZE_ENTRY) };

static const char *const ktype_names[BRAID_KT_ALL] = {
    [BRAID_KT_INT8] = "int8",     [BRAID_KT_UINT8] = "uint8",   [BRAID_KT_INT16] = "int16",
    [BRAID_KT_UINT16] = "uint16", [BRAID_KT_INT32] = "int32",   [BRAID_KT_UINT32] = "uint32",
    [BRAID_KT_INT64] = "int64",   [BRAID_KT_UINT64] = "uint64", [BRAID_KT_FLOAT] = "float",
    [BRAID_KT_DOUBLE] = "double", [BRAID_KT_BOOL] = "bool",     [BRAID_KT_LDOUBLE] = "ldouble",
    [BRAID_KT_CFLOAT] = "cfloat", [BRAID_KT_CDOUBLE] = "cdouble",
    [BRAID_KT_CLDOUBLE] = "cldouble", [BRAID_KT_FLOAT_INT] = "float_int",
    [BRAID_KT_DOUBLE_INT] = "double_int", [BRAID_KT_LONG_INT] = "long_int",
    [BRAID_KT_INT_INT] = "int_int", [BRAID_KT_SHORT_INT] = "short_int",
    [BRAID_KT_LDOUBLE_INT] = "ldouble_int", [BRAID_KT_FLOAT_FLOAT] = "float_float",
    [BRAID_KT_DOUBLE_DOUBLE] = "double_double",
};

static const char *const kop_names[BRAID_KOP_ALL] = {
    [BRAID_KOP_SUM] = "sum",   [BRAID_KOP_PROD] = "prod", [BRAID_KOP_MIN] = "min",
    [BRAID_KOP_MAX] = "max",   [BRAID_KOP_LAND] = "land", [BRAID_KOP_LOR] = "lor",
    [BRAID_KOP_LXOR] = "lxor", [BRAID_KOP_BAND] = "band", [BRAID_KOP_BOR] = "bor",
    [BRAID_KOP_BXOR] = "bxor", [BRAID_KOP_MAXLOC] = "maxloc", [BRAID_KOP_MINLOC] = "minloc",
};

static bool in_range(braid_ktype_t t, braid_kop_t op)
{
    return (unsigned)t < BRAID_KT_ALL && (unsigned)op < BRAID_KOP_ALL;
}

braid_kernel_fn_t braid_kernel_lookup(braid_ktype_t t, braid_kop_t op)
{
    return in_range(t, op) ? kernel_table[t][op] : NULL;
}

bool braid_kernel_is_exact(braid_ktype_t t, braid_kop_t op)
{
    if (NULL == braid_kernel_lookup(t, op)) return false;
    bool floating = BRAID_KT_FLOAT == t || BRAID_KT_DOUBLE == t || BRAID_KT_LDOUBLE == t ||
                    BRAID_KT_CFLOAT == t || BRAID_KT_CDOUBLE == t || BRAID_KT_CLDOUBLE == t;
    bool arith = BRAID_KOP_SUM == op || BRAID_KOP_PROD == op;
    return !(floating && arith);
}

size_t braid_ktype_size(braid_ktype_t t)
{
    return (unsigned)t < BRAID_KT_ALL ? ktype_sizes[t] : 0;
}

const char *braid_ktype_name(braid_ktype_t t)
{
    return (unsigned)t < BRAID_KT_ALL ? ktype_names[t] : "?";
}

const char *braid_kop_name(braid_kop_t op)
{
    return (unsigned)op < BRAID_KOP_ALL ? kop_names[op] : "?";
}
