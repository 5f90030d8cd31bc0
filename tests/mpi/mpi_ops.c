/*
 * mpi_ops.c - every predefined (datatype, op) pair that Open MPI reduces,
 * through braid's MPI_Allreduce: bit for bit Open MPI's own result, and on
 * braid's kernels - never one MPI_Reduce_local call per fold.
 *
 *   mpi_ops            (np 2: every pair Open MPI accepts; np >= 3: the
 *                       pairs whose result does not depend on order)
 *
 * For each predefined datatype and each predefined op, Open MPI's own
 * MPI_Reduce_local says whether it takes the pair (the errors handler
 * returns). Each accepted pair is reduced with MPI_Allreduce over inputs
 * from a fixed pattern (with edge values: negative numbers, zeros of both
 * signs, NaNs and equal keys where the type has them), and compared with
 * the fold of the same inputs in rank order by Open MPI's MPI_Reduce_local.
 *
 * The program defines PMPI_Reduce_local (exported with -rdynamic): braid,
 * loaded later, binds to it, so every call braid makes to it is counted;
 * the real one is reached through dlsym(RTLD_NEXT). A pair whose
 * MPI_Allreduce made any such call fell back to a checked MPI call per
 * fold, and fails the test. Rank 0 prints one line per pair with the
 * counts, and a summary.
 */
#define _GNU_SOURCE
#include <complex.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <limits.h>
#include <stdint.h>
#include <wchar.h>

#include "mpi_test_common.h"

typedef int (*reduce_local_fn)(const void *, void *, int, MPI_Datatype, MPI_Op);
static reduce_local_fn real_reduce_local;
static long interposed_calls;

int PMPI_Reduce_local(const void *in, void *inout, int count, MPI_Datatype dt, MPI_Op op)
{
    interposed_calls++;
    return real_reduce_local(in, inout, count, dt, op);
}

static int wrank, wsize;

typedef struct { const char *name; MPI_Datatype t; int sgn; } named_type_t;
typedef struct { const char *name; MPI_Op op; } named_op_t;

/* what kind of value a byte pattern must become for a type */
typedef enum { K_INT, K_FLOAT, K_DOUBLE, K_LDOUBLE, K_CFLOAT, K_CDOUBLE, K_CLDOUBLE,
               K_LOGICAL, K_PAIR } kind_t;

/* the sized Fortran types exist where Open MPI was built with a Fortran
 * compiler that has them */
#ifdef MPI_REAL4
#define REAL4 MPI_REAL4
#else
#define REAL4 MPI_DATATYPE_NULL
#endif
#ifdef MPI_REAL8
#define REAL8 MPI_REAL8
#else
#define REAL8 MPI_DATATYPE_NULL
#endif

static bool type_kind(MPI_Datatype t, kind_t *k)
{
    if (t == MPI_FLOAT || t == MPI_REAL || t == REAL4) *k = K_FLOAT;
    else if (t == MPI_DOUBLE || t == MPI_DOUBLE_PRECISION || t == REAL8) *k = K_DOUBLE;
    else if (t == MPI_LONG_DOUBLE) *k = K_LDOUBLE;
    else if (t == MPI_C_FLOAT_COMPLEX || t == MPI_COMPLEX || t == MPI_C_COMPLEX) *k = K_CFLOAT;
    else if (t == MPI_C_DOUBLE_COMPLEX || t == MPI_DOUBLE_COMPLEX) *k = K_CDOUBLE;
    else if (t == MPI_C_LONG_DOUBLE_COMPLEX) *k = K_CLDOUBLE;
    else if (t == MPI_C_BOOL || t == MPI_LOGICAL || t == MPI_CXX_BOOL) *k = K_LOGICAL;
    else if (t == MPI_FLOAT_INT || t == MPI_DOUBLE_INT || t == MPI_LONG_INT || t == MPI_2INT ||
             t == MPI_SHORT_INT || t == MPI_LONG_DOUBLE_INT || t == MPI_2REAL ||
             t == MPI_2DOUBLE_PRECISION || t == MPI_2INTEGER)
        *k = K_PAIR;
    else *k = K_INT;
    return true;
}

/* element i of rank r: small values, so that products over a few ranks
 * stay exact where the type is exact, and edge values now and then */
static double pattern(int r, size_t i)
{
    static const double edges[] = { 0.0, -0.0, -1.0, 1.0, 2.5, -3.75, 100.0, 7.0 };
    size_t j = (i * 7 + (size_t)r * 3) % 23;
    if (j < 8) return edges[j];
    return (double)((int)((i * 13 + (size_t)r * 29) % 19) - 9) * (j % 2 ? 0.5 : 1.0);
}

/* the bytes of a long double that hold its value (x87: 10 of 16); the
 * rest is padding that no op defines */
#if LDBL_MANT_DIG == 64
#define LDBL_BYTES 10
#else
#define LDBL_BYTES sizeof(long double)
#endif

/* NaNs and -0.0 go into SUM and PROD only: which of two NaNs, of a NaN
 * and a number, or of 0.0 and -0.0 MIN and MAX return depends on the
 * operands' order */
static bool nan_ok;

static void fill_element(kind_t k, MPI_Datatype t, size_t extent, int r, size_t i,
                         unsigned char *at)
{
    double v = pattern(r, i);
    if (!nan_ok && 0.0 == v) v = 0.0;   /* and no -0.0: MIN(0, -0) is order's choice too */
    memset(at, 0, extent);
    switch (k) {
    case K_FLOAT: { float f = (float)v; if (nan_ok && (i + (size_t)r) % 37 == 5) f = NAN; memcpy(at, &f, sizeof f); break; }
    case K_DOUBLE: { double d = v; if (nan_ok && (i + (size_t)r) % 41 == 6) d = NAN; memcpy(at, &d, sizeof d); break; }
    case K_LDOUBLE: { long double d = v; memcpy(at, &d, LDBL_BYTES); break; }
    /* complex parts that round: a product fused into multiply-adds
     * would differ in the last bit */
    case K_CFLOAT: { float f[2] = { (float)(v / 3), (float)(pattern(r + 5, i) / 7) }; memcpy(at, f, sizeof f); break; }
    case K_CDOUBLE: { double d[2] = { v / 3, pattern(r + 5, i) / 7 }; memcpy(at, d, sizeof d); break; }
    case K_CLDOUBLE: {
        long double d[2] = { (long double)v / 3, (long double)pattern(r + 5, i) / 7 };
        memcpy(at, &d[0], LDBL_BYTES);
        memcpy(at + sizeof(long double), &d[1], LDBL_BYTES);
        break;
    }
    case K_LOGICAL: at[0] = (unsigned char)(((i + (size_t)r) % 3) == 0); break;
    case K_PAIR: {
        /* value, then an int key (Fortran pairs: two of the same type);
         * equal values across ranks now and then, so the key decides */
        double val = (i % 4 == 0) ? 3.0 : v;
        int key = (int)((i * 5 + (size_t)(wsize - r) * 11) % 17);
        if (t == MPI_FLOAT_INT) { float f = (float)val; memcpy(at, &f, 4); memcpy(at + 4, &key, 4); }
        else if (t == MPI_DOUBLE_INT) { memcpy(at, &val, 8); memcpy(at + 8, &key, 4); }
        else if (t == MPI_LONG_INT) { long l = (long)val; memcpy(at, &l, sizeof l); memcpy(at + sizeof(long), &key, 4); }
        else if (t == MPI_2INT || t == MPI_2INTEGER) { int a = (int)val; memcpy(at, &a, 4); memcpy(at + 4, &key, 4); }
        else if (t == MPI_SHORT_INT) { short s = (short)val; memcpy(at, &s, 2); memcpy(at + 4, &key, 4); }
        else if (t == MPI_LONG_DOUBLE_INT) { long double d = val; memcpy(at, &d, LDBL_BYTES); memcpy(at + sizeof(long double), &key, 4); }
        else if (t == MPI_2REAL) { float f[2] = { (float)val, (float)key }; memcpy(at, f, 8); }
        else if (t == MPI_2DOUBLE_PRECISION) { double d[2] = { val, key }; memcpy(at, d, 16); }
        break;
    }
    case K_INT: {
        /* every byte of the integer varies (negative values too) */
        /* (modulo 2^64: the bytes are what matters) */
        unsigned long long x = (unsigned long long)(long long)(v * 2) * 0x0101010101010101ULL +
                               (unsigned long long)(i * 131 + (size_t)r);
        if (i % 5 == 1) x = (unsigned long long)(long long)v;
        memcpy(at, &x, extent < sizeof x ? extent : sizeof x);
        break;
    }
    }
}

/* the bytes that carry values: the type's own bytes (packed: no holes of
 * the pair types), and of a long double its first LDBL_BYTES */
static bool same_values(MPI_Datatype t, kind_t k, const unsigned char *a, const unsigned char *b,
                        int n, size_t extent)
{
    if (K_LDOUBLE == k || K_CLDOUBLE == k || t == MPI_LONG_DOUBLE_INT) {
        size_t parts = K_CLDOUBLE == k ? 2 : 1;
        for (int i = 0; i < n; i++)
            for (size_t p = 0; p < parts; p++) {
                size_t o = (size_t)i * extent + p * sizeof(long double);
                if (0 != memcmp(a + o, b + o, LDBL_BYTES)) return false;
            }
        if (t == MPI_LONG_DOUBLE_INT)
            for (int i = 0; i < n; i++) {
                size_t o = (size_t)i * extent + sizeof(long double);
                if (0 != memcmp(a + o, b + o, sizeof(int))) return false;
            }
        return true;
    }
    int size;
    MPI_Pack_size(n, t, MPI_COMM_SELF, &size);
    unsigned char *pa = malloc((size_t)size), *pb = malloc((size_t)size);
    int qa = 0, qb = 0;
    MPI_Pack(a, n, t, pa, size, &qa, MPI_COMM_SELF);
    MPI_Pack(b, n, t, pb, size, &qb, MPI_COMM_SELF);
    bool same = qa == qb && 0 == memcmp(pa, pb, (size_t)qa);
    free(pa);
    free(pb);
    return same;
}

/* Integer MIN (is_min) or MAX over the ranks' inputs by C's order of a
 * signed or unsigned integer of `size` bytes, into ref; returns at how
 * many elements that differs from what ref held (Open MPI's fold). */
static int c_minmax(int is_signed, size_t size, bool is_min, int n, unsigned char *ref,
                    unsigned char *scratch)
{
    int odd = 0;
    for (int i = 0; i < n; i++) {
        long long sbest = 0;
        unsigned long long ubest = 0;
        for (int r = 0; r < wsize; r++) {
            fill_element(K_INT, MPI_DATATYPE_NULL, size, r, (size_t)i, scratch);
            unsigned long long u = 0;
            memcpy(&u, scratch, size);
            long long sv = size < 8 && (u >> (8 * size - 1)) ? (long long)(u | (~0ULL << (8 * size)))
                                                            : (long long)u;
            if (0 == r || (is_min ? sv < sbest : sv > sbest)) sbest = sv;
            if (0 == r || (is_min ? u < ubest : u > ubest)) ubest = u;
        }
        unsigned char want[8];
        if (is_signed) memcpy(want, &sbest, size);
        else memcpy(want, &ubest, size);
        unsigned char *at = ref + (size_t)i * size;
        odd += 0 != memcmp(at, want, size);
        memcpy(at, want, size);
    }
    return odd;
}

/* floating SUM and PROD depend on the order of the fold beyond two ranks */
static bool order_free(kind_t k, MPI_Op op)
{
    bool floating = K_FLOAT == k || K_DOUBLE == k || K_LDOUBLE == k || K_CFLOAT == k ||
                    K_CDOUBLE == k || K_CLDOUBLE == k;
    return !(floating && (op == MPI_SUM || op == MPI_PROD));
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    real_reduce_local = (reduce_local_fn)dlsym(RTLD_NEXT, "PMPI_Reduce_local");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    mt_check(NULL != real_reduce_local, "dlsym(RTLD_NEXT, PMPI_Reduce_local)");
    if (NULL == real_reduce_local) return mt_finish("mpi_ops");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    const named_type_t types[] = {
        { "MPI_CHAR", MPI_CHAR, CHAR_MIN < 0 }, { "MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, 1 },
        { "MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, 0 }, { "MPI_BYTE", MPI_BYTE, 0 },
        { "MPI_WCHAR", MPI_WCHAR, WCHAR_MIN < 0 }, { "MPI_SHORT", MPI_SHORT, 1 },
        { "MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, 0 }, { "MPI_INT", MPI_INT, 1 },
        { "MPI_UNSIGNED", MPI_UNSIGNED, 0 }, { "MPI_LONG", MPI_LONG, 1 },
        { "MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, 0 }, { "MPI_LONG_LONG", MPI_LONG_LONG, 1 },
        { "MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, 0 },
        { "MPI_INT8_T", MPI_INT8_T, 1 }, { "MPI_UINT8_T", MPI_UINT8_T, 0 },
        { "MPI_INT16_T", MPI_INT16_T, 1 }, { "MPI_UINT16_T", MPI_UINT16_T, 0 },
        { "MPI_INT32_T", MPI_INT32_T, 1 }, { "MPI_UINT32_T", MPI_UINT32_T, 0 },
        { "MPI_INT64_T", MPI_INT64_T, 1 }, { "MPI_UINT64_T", MPI_UINT64_T, 0 },
        { "MPI_AINT", MPI_AINT, 1 }, { "MPI_OFFSET", MPI_OFFSET, 1 }, { "MPI_COUNT", MPI_COUNT, 1 },
        { "MPI_C_BOOL", MPI_C_BOOL, -1 },
        { "MPI_FLOAT", MPI_FLOAT, -1 }, { "MPI_DOUBLE", MPI_DOUBLE, -1 },
        { "MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, -1 },
        { "MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, -1 },
        { "MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, -1 },
        { "MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX, -1 },
        { "MPI_FLOAT_INT", MPI_FLOAT_INT, -1 }, { "MPI_DOUBLE_INT", MPI_DOUBLE_INT, -1 },
        { "MPI_LONG_INT", MPI_LONG_INT, -1 }, { "MPI_2INT", MPI_2INT, -1 },
        { "MPI_SHORT_INT", MPI_SHORT_INT, -1 }, { "MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, -1 },
        { "MPI_INTEGER", MPI_INTEGER, 1 }, { "MPI_REAL", MPI_REAL, -1 },
        { "MPI_DOUBLE_PRECISION", MPI_DOUBLE_PRECISION, -1 }, { "MPI_COMPLEX", MPI_COMPLEX, -1 },
        { "MPI_DOUBLE_COMPLEX", MPI_DOUBLE_COMPLEX, -1 }, { "MPI_LOGICAL", MPI_LOGICAL, -1 },
        { "MPI_2REAL", MPI_2REAL, -1 }, { "MPI_2DOUBLE_PRECISION", MPI_2DOUBLE_PRECISION, -1 },
        { "MPI_2INTEGER", MPI_2INTEGER, -1 },
#ifdef MPI_INTEGER1
        { "MPI_INTEGER1", MPI_INTEGER1, 1 },
#endif
#ifdef MPI_INTEGER2
        { "MPI_INTEGER2", MPI_INTEGER2, 1 },
#endif
#ifdef MPI_INTEGER4
        { "MPI_INTEGER4", MPI_INTEGER4, 1 },
#endif
#ifdef MPI_INTEGER8
        { "MPI_INTEGER8", MPI_INTEGER8, 1 },
#endif
#ifdef MPI_REAL4
        { "MPI_REAL4", MPI_REAL4, -1 },
#endif
#ifdef MPI_REAL8
        { "MPI_REAL8", MPI_REAL8, -1 },
#endif
    };
    const named_op_t ops[] = {
        { "SUM", MPI_SUM }, { "PROD", MPI_PROD }, { "MIN", MPI_MIN }, { "MAX", MPI_MAX },
        { "LAND", MPI_LAND }, { "LOR", MPI_LOR }, { "LXOR", MPI_LXOR },
        { "BAND", MPI_BAND }, { "BOR", MPI_BOR }, { "BXOR", MPI_BXOR },
        { "MAXLOC", MPI_MAXLOC }, { "MINLOC", MPI_MINLOC },
    };
    const int n = 1003;
    int pairs = 0, fell_back = 0, wrong = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        MPI_Datatype t = types[ti].t;
        if (MPI_DATATYPE_NULL == t) continue;
        MPI_Aint lb, extent;
        MPI_Type_get_extent(t, &lb, &extent);
        kind_t k;
        type_kind(t, &k);
        size_t bytes = (size_t)extent * (size_t)n;
        unsigned char *mine = calloc(1, bytes), *got = calloc(1, bytes), *ref = calloc(1, bytes),
                      *other = calloc(1, bytes);
        for (size_t oi = 0; oi < sizeof ops / sizeof *ops; oi++) {
            MPI_Op op = ops[oi].op;
            nan_ok = op == MPI_SUM || op == MPI_PROD;
            /* does Open MPI take the pair? (the same answer on every rank) */
            for (int i = 0; i < n; i++) fill_element(k, t, (size_t)extent, 0, (size_t)i, ref + (size_t)i * (size_t)extent);
            memcpy(other, ref, bytes);
            if (MPI_SUCCESS != real_reduce_local(ref, other, n, t, op)) continue;
            if (wsize > 2 && !order_free(k, op)) continue;
            pairs++;
            /* the reference: the fold in rank order, by Open MPI */
            for (int i = 0; i < n; i++) fill_element(k, t, (size_t)extent, wsize - 1, (size_t)i, ref + (size_t)i * (size_t)extent);
            for (int r = wsize - 2; r >= 0; r--) {
                for (int i = 0; i < n; i++) fill_element(k, t, (size_t)extent, r, (size_t)i, other + (size_t)i * (size_t)extent);
                /* one element at a time: Open MPI 4.1's vectorised ops
                 * (op/avx) saturate 8- and 16-bit sums from 32 elements
                 * on, where its scalar code and braid wrap around */
                for (int i = 0; i < n; i++)
                    real_reduce_local(other + (size_t)i * (size_t)extent, ref + (size_t)i * (size_t)extent, 1, t, op);
            }
            /* integer MIN and MAX by C's order of the type: Open MPI 4.1
             * compares MPI_UNSIGNED_LONG as signed and MPI_OFFSET as
             * unsigned (reported below, not followed) */
            if (K_INT == k && types[ti].sgn >= 0 && (op == MPI_MIN || op == MPI_MAX)) {
                int odd = c_minmax(types[ti].sgn, (size_t)extent, op == MPI_MIN, n, ref, other);
                if (0 == wrank && odd)
                    printf("mpi_ops: note: Open MPI's own %s %s differs from C's order at %d "
                           "of %d elements; braid follows C\n", types[ti].name, ops[oi].name, odd, n);
            }
            for (int i = 0; i < n; i++) fill_element(k, t, (size_t)extent, wrank, (size_t)i, mine + (size_t)i * (size_t)extent);
            memcpy(got, mine, bytes);
            long before = interposed_calls;
            int rc = MPI_Allreduce(mine, got, n, t, op, MPI_COMM_WORLD);
            long calls = interposed_calls - before, all_calls = 0;
            PMPI_Allreduce(&calls, &all_calls, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            bool same = MPI_SUCCESS == rc && same_values(t, k, got, ref, n, (size_t)extent);
            int all_same = 0, me = same;
            PMPI_Allreduce(&me, &all_same, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
            fell_back += all_calls > 0;
            wrong += !all_same;
            if (0 == wrank && (all_calls > 0 || !all_same))
                printf("mpi_ops: %s %s: %s%s (%ld MPI_Reduce_local calls)\n", types[ti].name,
                       ops[oi].name, all_same ? "" : "WRONG VALUES ", all_calls ? "falls back" : "",
                       all_calls);
            if (!same && getenv("MPI_OPS_DEBUG")) {
                for (int i = 0; i < n; i++) {
                    size_t o = (size_t)i * (size_t)extent;
                    if (same_values(t, k, got + o, ref + o, 1, (size_t)extent)) continue;
                    fprintf(stderr, "rank %d %s %s: element %d differs:", wrank, types[ti].name,
                            ops[oi].name, i);
                    for (MPI_Aint b = 0; b < extent; b++) fprintf(stderr, " %02x/%02x", got[o + b], ref[o + b]);
                    fprintf(stderr, "\n");
                    break;
                }
            }
            mt_check(all_same, "%s %s: result differs from Open MPI's", types[ti].name, ops[oi].name);
            mt_check(0 == all_calls, "%s %s: %ld MPI_Reduce_local calls (fell back)",
                     types[ti].name, ops[oi].name, all_calls);
        }
        free(mine); free(got); free(ref); free(other);
    }
    if (0 == wrank)
        printf("mpi_ops: np=%d %d predefined pairs, %d on braid's kernels, %d fell back, %d wrong\n",
               wsize, pairs, pairs - fell_back, fell_back, wrong);
    return mt_finish("mpi_ops");
}
