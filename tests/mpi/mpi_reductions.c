/*
 * mpi_reductions.c - MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block,
 * MPI_Reduce_scatter and MPI_Allgather under braid, with whatever
 * algorithms the coll_braid_*_algorithm parameters force. Every result is
 * compared with a reference computed locally from the known inputs.
 *
 * Covered: every predefined C integer/floating type with every op MPI
 * defines on it; MPI_C_BOOL logical ops; MPI_BYTE bitwise ops; long double
 * and double complex (Open MPI's own kernels); MPI_DOUBLE_INT and MPI_2INT
 * with MAXLOC/MINLOC; counts 1, P-1, P, P+1, odd and 1 Mi + 3; in place and
 * not; 8-bit SUM wrap-around (200 + 200 = 144, not 255); a non-commutative
 * user op (2x2 matrix product) in rank order; a strided vector datatype with
 * a user op, holes untouched; bit-identical double sums on every rank; a
 * communicator with reversed rank order and a split one.
 *
 * The references are MPI's definitions, not Open MPI's behaviour: Open MPI
 * 4.1.4 itself (tuned + op/avx on this AVX-512 machine) fails the 8- and
 * 16-bit unsigned SUM wrap-around (op/avx saturates) and MIN/MAX on
 * MPI_UNSIGNED_LONG (compared as signed); braid's kernels must get them
 * right. Run with --mca coll ^braid to see Open MPI's failures.
 *
 * usage: mpi_reductions [quick] [ompi-safe] | huge
 *   huge:      only an allreduce of more than 2^31 bytes (2 GiB per rank)
 *   quick:     fewer counts, for sweeps
 *   ompi-safe: skip the checks Open MPI 4.1.4 itself fails (uint8, uint16
 *              and unsigned long types, 8-bit wrap-around), for runs where
 *              braid is off and Open MPI's collectives do the work
 */
#include "mpi_test_common.h"

#include <complex.h>
#include <stdbool.h>
#include <stdint.h>

/* bool instantiates the generic reference ops; PROD is never used on it */
#pragma GCC diagnostic ignored "-Wint-in-bool-context"

static int quick, ompi_safe;

/* ------------------------------------------------------------------ */
/* inputs and reference ops, generic over C types                      */
/* ------------------------------------------------------------------ */

typedef enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_LAND, OP_LOR, OP_LXOR, OP_BAND, OP_BOR,
               OP_BXOR, OP_N } op_id_t;
static const char *op_names[OP_N] = { "SUM", "PROD", "MIN", "MAX", "LAND", "LOR", "LXOR",
                                      "BAND", "BOR", "BXOR" };
static MPI_Op mpi_op(op_id_t o)
{
    MPI_Op ops[OP_N] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR, MPI_LXOR,
                         MPI_BAND, MPI_BOR, MPI_BXOR };
    return ops[o];
}

/* small values keep signed sums and float products exact in any order;
 * integer products wrap identically in any order (computed unsigned) */
static long input_value(op_id_t o, int rank, size_t i)
{
    switch (o) {
    case OP_PROD: { static const long f[] = { 1, 2, -1, 3, 1, -2, 1 }; return f[(rank * 3 + i) % 7]; }
    case OP_LAND: case OP_LOR: case OP_LXOR: return ((size_t)rank + i) % 3 == 0 ? 0 : (long)(i % 5 + 1);
    case OP_BAND: case OP_BOR: case OP_BXOR: return (long)((i * 37 + (size_t)rank * 101) & 0x7f);
    default: return (long)((i * 13 + (size_t)rank * 7) % 23) - 11;
    }
}

#define DEFINE_TYPE_TEST(NAME, CTYPE, UTYPE, INTEGER)                                          \
    static CTYPE NAME##_ref_op(op_id_t o, CTYPE a, CTYPE b)                                    \
    {                                                                                          \
        switch (o) {                                                                           \
        case OP_SUM: return INTEGER ? (CTYPE)(UTYPE)((unsigned long long)(UTYPE)a + (UTYPE)b) : (CTYPE)(a + b); \
        case OP_PROD: return INTEGER ? (CTYPE)(UTYPE)((unsigned long long)(UTYPE)a * (UTYPE)b) : (CTYPE)(a * b); \
        case OP_MIN: return a < b ? a : b;                                                     \
        case OP_MAX: return a > b ? a : b;                                                     \
        case OP_LAND: return (CTYPE)(a && b);                                                  \
        case OP_LOR: return (CTYPE)(a || b);                                                   \
        case OP_LXOR: return (CTYPE)(!a != !b);                                                \
        default: return a;                                                                     \
        }                                                                                      \
    }                                                                                          \
    static CTYPE NAME##_ref_bitop(op_id_t o, CTYPE a, CTYPE b);                                \
    static void NAME##_fill(op_id_t o, int rank, CTYPE *buf, size_t n)                         \
    {                                                                                          \
        for (size_t i = 0; i < n; i++) buf[i] = (CTYPE)input_value(o, rank, i);                \
    }                                                                                          \
    static CTYPE NAME##_expect(op_id_t o, int P, size_t i)                                     \
    {                                                                                          \
        CTYPE acc = (CTYPE)input_value(o, 0, i);                                               \
        for (int r = 1; r < P; r++) {                                                          \
            CTYPE x = (CTYPE)input_value(o, r, i);                                             \
            acc = o >= OP_BAND ? NAME##_ref_bitop(o, acc, x) : NAME##_ref_op(o, acc, x);        \
        }                                                                                      \
        return acc;                                                                            \
    }                                                                                          \
    static void NAME##_test(MPI_Comm comm, const char *what, MPI_Datatype t, op_id_t o,       \
                            size_t n, int inplace)                                             \
    {                                                                                          \
        int rank, P;                                                                           \
        MPI_Comm_rank(comm, &rank);                                                            \
        MPI_Comm_size(comm, &P);                                                               \
        CTYPE *in = malloc((n + 1) * sizeof(CTYPE)), *out = malloc((n + 1) * sizeof(CTYPE));    \
        NAME##_fill(o, rank, in, n);                                                           \
        if (inplace) memcpy(out, in, n * sizeof(CTYPE));                                       \
        else memset(out, 0x5a, (n + 1) * sizeof(CTYPE));                                        \
        MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, (int)n, t, mpi_op(o), comm);           \
        size_t bad = 0, first = 0;                                                             \
        for (size_t i = 0; i < n; i++)                                                         \
            if (out[i] != NAME##_expect(o, P, i) && 0 == bad++) first = i;                     \
        mt_check(0 == bad, "%s allreduce %s %s n=%zu inplace=%d: %zu wrong (first at %zu)",     \
                 what, #NAME, op_names[o], n, inplace, bad, first);                            \
        /* reduce to a few roots */                                                            \
        for (int root = 0; root < P; root += (P > 3 ? P - 1 : 1)) {                            \
            NAME##_fill(o, rank, in, n);                                                       \
            bool ip = inplace && rank == root;                                                 \
            if (ip) memcpy(out, in, n * sizeof(CTYPE));                                        \
            else memset(out, 0x5a, (n + 1) * sizeof(CTYPE));                                     \
            MPI_Reduce(ip ? MPI_IN_PLACE : in, out, (int)n, t, mpi_op(o), root, comm);         \
            bad = 0;                                                                           \
            if (rank == root)                                                                  \
                for (size_t i = 0; i < n; i++) bad += out[i] != NAME##_expect(o, P, i);        \
            mt_check(0 == bad, "%s reduce %s %s n=%zu root=%d: %zu wrong", what, #NAME,       \
                     op_names[o], n, root, bad);                                               \
        }                                                                                      \
        free(in);                                                                              \
        free(out);                                                                             \
    }

#define DEFINE_BITOPS(NAME, CTYPE)                                                             \
    static CTYPE NAME##_ref_bitop(op_id_t o, CTYPE a, CTYPE b)                                 \
    {                                                                                          \
        return o == OP_BAND ? (CTYPE)(a & b) : o == OP_BOR ? (CTYPE)(a | b) : (CTYPE)(a ^ b);  \
    }
#define DEFINE_NO_BITOPS(NAME, CTYPE)                                                          \
    static CTYPE NAME##_ref_bitop(op_id_t o, CTYPE a, CTYPE b) { (void)o; (void)b; return a; }

DEFINE_TYPE_TEST(int8, int8_t, uint8_t, 1)            DEFINE_BITOPS(int8, int8_t)
DEFINE_TYPE_TEST(uint8, uint8_t, uint8_t, 1)          DEFINE_BITOPS(uint8, uint8_t)
DEFINE_TYPE_TEST(int16, int16_t, uint16_t, 1)         DEFINE_BITOPS(int16, int16_t)
DEFINE_TYPE_TEST(uint16, uint16_t, uint16_t, 1)       DEFINE_BITOPS(uint16, uint16_t)
DEFINE_TYPE_TEST(int32, int32_t, uint32_t, 1)         DEFINE_BITOPS(int32, int32_t)
DEFINE_TYPE_TEST(uint32, uint32_t, uint32_t, 1)       DEFINE_BITOPS(uint32, uint32_t)
DEFINE_TYPE_TEST(int64, int64_t, uint64_t, 1)         DEFINE_BITOPS(int64, int64_t)
DEFINE_TYPE_TEST(uint64, uint64_t, uint64_t, 1)       DEFINE_BITOPS(uint64, uint64_t)
DEFINE_TYPE_TEST(long_, long, unsigned long, 1)       DEFINE_BITOPS(long_, long)
DEFINE_TYPE_TEST(ulong, unsigned long, unsigned long, 1) DEFINE_BITOPS(ulong, unsigned long)
DEFINE_TYPE_TEST(float_, float, float, 0)             DEFINE_NO_BITOPS(float_, float)
DEFINE_TYPE_TEST(double_, double, double, 0)          DEFINE_NO_BITOPS(double_, double)
DEFINE_TYPE_TEST(ldouble, long double, long double, 0) DEFINE_NO_BITOPS(ldouble, long double)
DEFINE_TYPE_TEST(cbool, bool, bool, 1)                DEFINE_NO_BITOPS(cbool, bool)
DEFINE_TYPE_TEST(byte, unsigned char, unsigned char, 1) DEFINE_BITOPS(byte, unsigned char)

static void test_predefined(MPI_Comm comm, const char *what)
{
    int P;
    MPI_Comm_size(comm, &P);
    size_t counts[] = { 1, (size_t)(P > 1 ? P - 1 : 1), (size_t)P, (size_t)P + 1, 1001 };
    size_t ncounts = quick ? 3 : sizeof counts / sizeof *counts;
    for (size_t k = 0; k < ncounts; k++) {
        size_t n = counts[quick ? k + 2 : k];
        int ip = (int)(k & 1);
        for (int o = OP_SUM; o < OP_N; o++) {
            int integer_op = o >= OP_LAND, arith = o <= OP_MAX;
            if (arith || integer_op) {
                int8_test(comm, what, MPI_INT8_T, o, n, ip);
                if (!ompi_safe) uint8_test(comm, what, MPI_UNSIGNED_CHAR, o, n, !ip);
                int16_test(comm, what, MPI_SHORT, o, n, ip);
                if (!ompi_safe) uint16_test(comm, what, MPI_UINT16_T, o, n, ip);
                int32_test(comm, what, MPI_INT, o, n, !ip);
                uint32_test(comm, what, MPI_UNSIGNED, o, n, ip);
                int64_test(comm, what, MPI_INT64_T, o, n, ip);
                uint64_test(comm, what, MPI_UNSIGNED_LONG_LONG, o, n, !ip);
                long__test(comm, what, MPI_LONG, o, n, ip);
                if (!ompi_safe) ulong_test(comm, what, MPI_UNSIGNED_LONG, o, n, ip);
            }
            if (arith) {
                float__test(comm, what, MPI_FLOAT, o, n, ip);
                double__test(comm, what, MPI_DOUBLE, o, n, !ip);
                ldouble_test(comm, what, MPI_LONG_DOUBLE, o, n, ip);
            }
            if (o == OP_LAND || o == OP_LOR || o == OP_LXOR) cbool_test(comm, what, MPI_C_BOOL, o, n, ip);
            if (o >= OP_BAND) byte_test(comm, what, MPI_BYTE, o, n, ip);
        }
    }
}

/* ------------------------------------------------------------------ */
/* special cases                                                        */
/* ------------------------------------------------------------------ */

/* uint8 200 + 200 + ... wraps modulo 256 at every count, including the
 * vector lengths where Open MPI 4.1.4's AVX-512 kernel saturates */
static void test_uint8_wrap(MPI_Comm comm, const char *what)
{
    int P;
    MPI_Comm_size(comm, &P);
    size_t sizes[] = { 1, 15, 16, 64, 1000, 4099 };
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        uint8_t *in = malloc(n), *out = malloc(n);
        memset(in, 200, n);
        MPI_Allreduce(in, out, (int)n, MPI_UINT8_T, MPI_SUM, comm);
        uint8_t expect = (uint8_t)(200u * (unsigned)P);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += out[i] != expect;
        mt_check(0 == bad, "%s uint8 200*%d wrap n=%zu: %zu wrong (got %u, want %u)", what, P, n,
                 bad, out[0], expect);
        free(in);
        free(out);
    }
}

static void test_large_counts(MPI_Comm comm, const char *what)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t n = (1u << 20) + 3;
    int32_t *i32 = malloc(n * sizeof(int32_t));
    double *d = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        i32[i] = (int32_t)((i * 13 + (size_t)rank * 7) % 1000);
        d[i] = (double)((i + (size_t)rank) % 1024);
    }
    MPI_Allreduce(MPI_IN_PLACE, i32, (int)n, MPI_INT32_T, MPI_SUM, comm);
    MPI_Allreduce(MPI_IN_PLACE, d, (int)n, MPI_DOUBLE, MPI_MAX, comm);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t e = 0;
        double m = 0;
        for (int r = 0; r < P; r++) {
            e += (int32_t)((i * 13 + (size_t)r * 7) % 1000);
            double v = (double)((i + (size_t)r) % 1024);
            m = v > m ? v : m;
        }
        bad += i32[i] != e || d[i] != m;
    }
    mt_check(0 == bad, "%s allreduce 1Mi+3 int32 SUM / double MAX: %zu wrong", what, bad);
    free(i32);
    free(d);
}

/* double sums of inexact values: every rank must hold the same bits */
static void test_bit_identical(MPI_Comm comm, const char *what)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t sizes[] = { 7, 1000, 100003 };
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        double *x = malloc(n * sizeof(double)), *mine = malloc(n * sizeof(double));
        for (size_t i = 0; i < n; i++) x[i] = 1.0 / (double)(rank + 3) + (double)i * 1e-7 + rank * 1e9;
        MPI_Allreduce(x, mine, (int)n, MPI_DOUBLE, MPI_SUM, comm);
        /* compare with rank 0's bits, point to point */
        size_t bad = 0;
        if (0 == rank) {
            for (int r = 1; r < P; r++) {
                MPI_Recv(x, (int)n, MPI_DOUBLE, r, 7, comm, MPI_STATUS_IGNORE);
                bad += 0 != memcmp(x, mine, n * sizeof(double));
            }
        } else {
            MPI_Send(mine, (int)n, MPI_DOUBLE, 0, 7, comm);
        }
        double tol_bad = 0;
        for (size_t i = 0; i < n; i++) {
            double e = 0;
            for (int r = 0; r < P; r++) e += 1.0 / (double)(r + 3) + (double)i * 1e-7 + r * 1e9;
            double rel = (mine[i] - e) / (e != 0 ? e : 1);
            if (rel > 1e-12 || rel < -1e-12) tol_bad++;
        }
        mt_check(0 == bad && 0 == tol_bad, "%s double sum n=%zu: %zu ranks differ from rank 0, %.0f off reference",
                 what, n, bad, tol_bad);
        free(x);
        free(mine);
    }
}

/* MPI_DOUBLE_INT with MAXLOC / MINLOC, MPI_2INT with MINLOC */
static void test_pair_types(MPI_Comm comm, const char *what)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    enum { N = 257 };
    struct { double v; int i; } in[N], out[N];
    struct { int v; int i; } in2[N], out2[N];
    for (int k = 0; k < N; k++) {
        in[k].v = (double)((k * 7 + rank * 3) % 5);   /* ties: lowest index must win */
        in[k].i = rank;
        in2[k].v = (k + rank * 11) % 9;
        in2[k].i = rank * 10;
    }
    for (int loc = 0; loc < 2; loc++) {
        MPI_Op op = loc ? MPI_MINLOC : MPI_MAXLOC;
        MPI_Allreduce(in, out, N, MPI_DOUBLE_INT, op, comm);
        int bad = 0;
        for (int k = 0; k < N; k++) {
            double best = (double)((k * 7) % 5);
            int who = 0;
            for (int r = 1; r < P; r++) {
                double v = (double)((k * 7 + r * 3) % 5);
                if (loc ? v < best : v > best) { best = v; who = r; }
            }
            bad += out[k].v != best || out[k].i != who;
        }
        mt_check(0 == bad, "%s MPI_DOUBLE_INT %s: %d wrong", what, loc ? "MINLOC" : "MAXLOC", bad);
    }
    MPI_Allreduce(in2, out2, N, MPI_2INT, MPI_MINLOC, comm);
    int bad = 0;
    for (int k = 0; k < N; k++) {
        int best = k % 9, who = 0;
        for (int r = 1; r < P; r++) {
            int v = (k + r * 11) % 9;
            if (v < best) { best = v; who = r * 10; }
        }
        bad += out2[k].v != best || out2[k].i != who;
    }
    mt_check(0 == bad, "%s MPI_2INT MINLOC: %d wrong", what, bad);
}

/* 2x2 integer matrix product mod 1000003: associative, not commutative */
typedef struct { int64_t a, b, c, d; } mat2_t;
static mat2_t mat_mul(mat2_t x, mat2_t y)
{
    const int64_t M = 1000003;
    mat2_t r = { (x.a * y.a + x.b * y.c) % M, (x.a * y.b + x.b * y.d) % M,
                 (x.c * y.a + x.d * y.c) % M, (x.c * y.b + x.d * y.d) % M };
    return r;
}
static void matmul_op(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    mat2_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++) b[i] = mat_mul(a[i], b[i]);
}
static mat2_t mat_input(int rank, int i)
{
    mat2_t m = { rank + 1, (i + 2) % 7, rank % 3, (i * 5 + rank) % 11 + 1 };
    return m;
}

static void test_noncommutative(MPI_Comm comm, const char *what)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    MPI_Datatype mt;
    MPI_Type_contiguous(4, MPI_INT64_T, &mt);
    MPI_Type_commit(&mt);
    MPI_Op op;
    MPI_Op_create(matmul_op, 0, &op);
    int counts[] = { 1, P + 1, 1000 };
    for (int k = 0; k < 3; k++) {
        int n = counts[k];
        mat2_t *in = malloc(n * sizeof(mat2_t)), *out = malloc(n * sizeof(mat2_t));
        for (int i = 0; i < n; i++) in[i] = mat_input(rank, i);
        MPI_Allreduce(in, out, n, mt, op, comm);
        int bad = 0;
        for (int i = 0; i < n; i++) {
            mat2_t e = mat_input(0, i);
            for (int r = 1; r < P; r++) e = mat_mul(e, mat_input(r, i));
            bad += memcmp(&e, &out[i], sizeof e) != 0;
        }
        mt_check(0 == bad, "%s non-commutative matmul allreduce n=%d: %d wrong", what, n, bad);
        int root = P - 1;
        MPI_Reduce(in, out, n, mt, op, root, comm);
        bad = 0;
        if (rank == root)
            for (int i = 0; i < n; i++) {
                mat2_t e = mat_input(0, i);
                for (int r = 1; r < P; r++) e = mat_mul(e, mat_input(r, i));
                bad += memcmp(&e, &out[i], sizeof e) != 0;
            }
        mt_check(0 == bad, "%s non-commutative matmul reduce n=%d: %d wrong", what, n, bad);
        free(in);
        free(out);
    }
    MPI_Op_free(&op);
    MPI_Type_free(&mt);
}

/* strided vector (every other double, NV per element) with a user sum */
enum { NV = 5 };
static void vec_sum_op(void *in, void *inout, int *len, MPI_Datatype *t)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(*t, &lb, &extent);
    for (int e = 0; e < *len; e++) {
        double *a = (double *)((char *)in + e * extent), *b = (double *)((char *)inout + e * extent);
        for (int j = 0; j < NV; j++) b[2 * j] += a[2 * j];
    }
}

static void test_strided_user_op(MPI_Comm comm, const char *what)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    MPI_Datatype vec, rvec;
    MPI_Type_vector(NV, 1, 2, MPI_DOUBLE, &vec);
    /* extent covers the trailing hole too, so consecutive elements tile */
    MPI_Type_create_resized(vec, 0, 2 * NV * sizeof(double), &rvec);
    MPI_Type_commit(&rvec);
    MPI_Op op;
    MPI_Op_create(vec_sum_op, 1, &op);
    int counts[] = { 1, P, 333 };
    for (int k = 0; k < 3; k++) {
        int n = counts[k];
        size_t nd = (size_t)n * 2 * NV;
        double *in = malloc(nd * sizeof(double)), *out = malloc(nd * sizeof(double));
        for (size_t i = 0; i < nd; i++) {
            in[i] = (i % 2) ? -7.0 : (double)(rank * 100 + (int)(i % 97));
            out[i] = -3.0;
        }
        for (int ip = 0; ip < 2; ip++) {
            if (ip) memcpy(out, in, nd * sizeof(double));
            else for (size_t i = 0; i < nd; i++) out[i] = -3.0;
            MPI_Allreduce(ip ? MPI_IN_PLACE : in, out, n, rvec, op, comm);
            int bad = 0;
            for (size_t i = 0; i < nd; i++) {
                double e;
                if (i % 2) e = ip ? -7.0 : -3.0;   /* holes: untouched */
                else { e = 0; for (int r = 0; r < P; r++) e += r * 100 + (int)(i % 97); }
                bad += out[i] != e;
            }
            mt_check(0 == bad, "%s strided vector user op n=%d inplace=%d: %d wrong", what, n, ip, bad);
        }
        free(in);
        free(out);
    }
    MPI_Op_free(&op);
    MPI_Type_free(&rvec);
    MPI_Type_free(&vec);
}

/* ------------------------------------------------------------------ */
/* reduce_scatter and allgather                                         */
/* ------------------------------------------------------------------ */

static void test_reduce_scatter(MPI_Comm comm, const char *what)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    int blocks[] = { 1, 3, 1000 };
    for (int k = 0; k < 3; k++) {
        int rc = blocks[k];
        size_t total = (size_t)rc * P;
        int64_t *in = malloc(total * sizeof(int64_t)), *out = malloc(total * sizeof(int64_t));
        for (int ip = 0; ip < 2; ip++) {
            for (size_t i = 0; i < total; i++) in[i] = (int64_t)(i * 3 + (size_t)rank * 1000);
            if (ip) memcpy(out, in, total * sizeof(int64_t));
            MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : in, out, rc, MPI_INT64_T, MPI_SUM, comm);
            int bad = 0;
            for (int i = 0; i < rc; i++) {
                size_t g = (size_t)rank * rc + i;
                int64_t e = 0;
                for (int r = 0; r < P; r++) e += (int64_t)(g * 3 + (size_t)r * 1000);
                bad += out[i] != e;
            }
            mt_check(0 == bad, "%s reduce_scatter_block n=%d inplace=%d: %d wrong", what, rc, ip, bad);
        }
        free(in);
        free(out);
    }
    /* uneven counts, zeros included */
    int *rcounts = malloc(P * sizeof(int));
    size_t total = 0, mine_off = 0;
    for (int r = 0; r < P; r++) {
        rcounts[r] = (r % 3 == 1) ? 0 : r * 5 + 1;
        if (r < rank) mine_off += rcounts[r];
        total += rcounts[r];
    }
    double *in = malloc((total + 1) * sizeof(double)), *out = malloc((total + 1) * sizeof(double));
    for (size_t i = 0; i < total; i++) in[i] = (double)(i + (size_t)rank * 3);
    MPI_Reduce_scatter(in, out, rcounts, MPI_DOUBLE, MPI_SUM, comm);
    int bad = 0;
    for (int i = 0; i < rcounts[rank]; i++) {
        double e = 0;
        for (int r = 0; r < P; r++) e += (double)(mine_off + i + (size_t)r * 3);
        bad += out[i] != e;
    }
    mt_check(0 == bad, "%s reduce_scatter uneven: %d wrong", what, bad);
    free(in);
    free(out);
    free(rcounts);
}

static void test_allgather(MPI_Comm comm, const char *what)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    int counts[] = { 1, 7, 4099 };
    for (int k = 0; k < 3; k++) {
        int n = counts[k];
        int *mine = malloc(n * sizeof(int)), *all = malloc((size_t)n * P * sizeof(int));
        for (int ip = 0; ip < 2; ip++) {
            for (int i = 0; i < n; i++) mine[i] = rank * 100000 + i;
            for (size_t i = 0; i < (size_t)n * P; i++) all[i] = -1;
            if (ip) memcpy(all + (size_t)rank * n, mine, n * sizeof(int));
            MPI_Allgather(ip ? MPI_IN_PLACE : mine, n, MPI_INT, all, n, MPI_INT, comm);
            int bad = 0;
            for (int r = 0; r < P; r++)
                for (int i = 0; i < n; i++) bad += all[(size_t)r * n + i] != r * 100000 + i;
            mt_check(0 == bad, "%s allgather n=%d inplace=%d: %d wrong", what, n, ip, bad);
        }
        free(mine);
        free(all);
    }
    /* send plain ints, receive into a strided vector layout */
    int n = 10;
    MPI_Datatype vec, rvec;
    MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 2 * n * sizeof(int), &rvec);
    MPI_Type_commit(&rvec);
    int send[10], *recv = malloc((size_t)2 * n * P * sizeof(int));
    for (int i = 0; i < n; i++) send[i] = rank * 1000 + i;
    for (int i = 0; i < 2 * n * P; i++) recv[i] = -9;
    MPI_Allgather(send, n, MPI_INT, recv, 1, rvec, comm);
    int bad = 0;
    for (int r = 0; r < P; r++)
        for (int i = 0; i < 2 * n; i++)
            bad += recv[r * 2 * n + i] != (i % 2 ? -9 : r * 1000 + i / 2);
    mt_check(0 == bad, "%s allgather into strided type: %d wrong", what, bad);
    free(recv);
    MPI_Type_free(&rvec);
    MPI_Type_free(&vec);
}

/* more than 2^31 bytes in one call: 2^28 + 5 doubles (2 GiB + 40 B) in
 * place; every value is a small integer, so the sum is exact */
static void test_huge(MPI_Comm comm)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t n = ((size_t)1 << 28) + 5;
    double *x = malloc(n * sizeof(double));
    if (NULL == x) {
        mt_check(0, "huge: cannot allocate %zu bytes", n * sizeof(double));
        return;
    }
    for (size_t i = 0; i < n; i++) x[i] = (double)((i % 1000) + (size_t)rank);
    MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_DOUBLE, MPI_SUM, comm);
    size_t bad = 0, first = 0;
    double rsum = (double)P * (P - 1) / 2;
    for (size_t i = 0; i < n; i++)
        if (x[i] != (double)P * (double)(i % 1000) + rsum && 0 == bad++) first = i;
    mt_check(0 == bad, "huge allreduce of %zu bytes: %zu wrong (first at %zu)", n * sizeof(double),
             bad, first);
    free(x);
}

static void run_all(MPI_Comm comm, const char *what, int full)
{
    test_predefined(comm, what);
    if (!ompi_safe) test_uint8_wrap(comm, what);
    test_bit_identical(comm, what);
    test_pair_types(comm, what);
    test_noncommutative(comm, what);
    test_strided_user_op(comm, what);
    test_reduce_scatter(comm, what);
    test_allgather(comm, what);
    if (full) test_large_counts(comm, what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "huge")) {
            test_huge(MPI_COMM_WORLD);
            return mt_finish("mpi_reductions huge");
        }
        quick |= 0 == strcmp(argv[i], "quick");
        ompi_safe |= 0 == strcmp(argv[i], "ompi-safe");
    }
    run_all(MPI_COMM_WORLD, "world", !quick);
    MPI_Comm rev = mt_reversed_comm(MPI_COMM_WORLD);
    run_all(rev, "reversed", 0);
    MPI_Comm_free(&rev);
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &split);
    test_predefined(split, "split");
    test_noncommutative(split, "split");
    MPI_Comm_free(&split);
    return mt_finish("mpi_reductions");
}
