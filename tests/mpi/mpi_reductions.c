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
 * Untouched bytes (also in the default run for reduce_scatter): in-place
 * MPI_Reduce_scatter(_block) writes only the result block at the start of
 * recvbuf, the rest of the input keeps its values (as tuned and MPICH
 * leave it). The untouched mode checks, for every collective braid runs,
 * that no byte the call does not define changes: sendbufs, recvbuf on
 * reduce's non-root ranks, what lies past the data, the holes of derived
 * datatypes (pair types, a strided vector, resized types with a gap at the
 * end or the start) in recvbufs of allreduce, reduce, reduce_scatter,
 * bcast and allgather.
 *
 * usage: mpi_reductions [quick] [mid] [ompi-safe] | huge | untouched
 *   huge:      only an allreduce, a reduce and a bcast of more than 2^31 bytes
 *              (2 GiB per rank)
 *   untouched: only the untouched-bytes checks (every predefined type and
 *              op, and the derived types with holes)
 *   quick:     fewer counts, for sweeps
 *   mid:       every predefined type and op at 20011 elements too (20-320
 *              KB: two ranks' single-copy reduce ways)
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

static int quick, mid, ompi_safe;

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
        /* zeroed: a long double's padding bytes, which no assignment writes, */               \
        /* go to the peer by single copy (memcheck's uninitialised syscall bytes) */           \
        CTYPE *in = calloc(n + 1, sizeof(CTYPE)), *out = malloc((n + 1) * sizeof(CTYPE));      \
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
    size_t counts[] = { 1, (size_t)(P > 1 ? P - 1 : 1), (size_t)P, (size_t)P + 1, 1001, 20011 };
    size_t ncounts = quick ? 3 : mid ? 6 : 5;
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
            /* in place, the input past the result block keeps its values */
            mt_check(!ip || 0 == memcmp(out + rc, in + rc, (total - rc) * sizeof(int64_t)),
                     "%s reduce_scatter_block n=%d in place: recvbuf written past the result", what, rc);
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
    /* in place: the result at the start, the rest of the input as it was */
    memcpy(out, in, total * sizeof(double));
    MPI_Reduce_scatter(MPI_IN_PLACE, out, rcounts, MPI_DOUBLE, MPI_SUM, comm);
    bad = 0;
    for (int i = 0; i < rcounts[rank]; i++) {
        double e = 0;
        for (int r = 0; r < P; r++) e += (double)(mine_off + i + (size_t)r * 3);
        bad += out[i] != e;
    }
    size_t m = (size_t)rcounts[rank];
    mt_check(0 == bad && 0 == memcmp(out + m, in + m, (total - m) * sizeof(double)),
             "%s reduce_scatter uneven in place: %d wrong, or recvbuf written past the result",
             what, bad);
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

/* ------------------------------------------------------------------ */
/* untouched bytes                                                      */
/* ------------------------------------------------------------------ */

/* bytes past the data of every buffer below that must keep their values */
enum { GUARD = 48 };

/* n bytes (+ GUARD) of a per-seed pattern: what a buffer holds before a call */
static unsigned char *patterned(size_t n, long seed)
{
    unsigned char *b = malloc(n + GUARD);
    for (size_t i = 0; i < n + GUARD; i++) b[i] = mt_byte(seed, i);
    return b;
}

static unsigned char *dup_bytes(const unsigned char *b, size_t n)
{
    unsigned char *c = malloc(n + GUARD);
    memcpy(c, b, n + GUARD);
    return c;
}

/* first offset in [from, to) where a and b differ, or to */
static size_t first_diff(const unsigned char *a, const unsigned char *b, size_t from, size_t to)
{
    while (from < to && a[from] == b[from]) from++;
    return from;
}

/* for messages: "none" when at == end, else the offset */
static const char *where(size_t at, size_t end, char *s, size_t n)
{
    if (at == end) return "none";
    snprintf(s, n, "%zu", at);
    return s;
}

/* ---- predefined types: every type, every op MPI defines on it ---- */

typedef struct tdesc {
    const char *name;
    MPI_Datatype type;
    size_t size;
    int arith, integer, logical, bitwise;   /* the op classes it takes */
    void (*fill)(op_id_t o, int rank, void *buf, size_t n);
    size_t (*wrong)(op_id_t o, int P, const void *buf, size_t first, size_t n);
} tdesc_t;

#define DEFINE_DESC(NAME, CTYPE)                                                              \
    static void NAME##_fillv(op_id_t o, int rank, void *buf, size_t n)                         \
    {                                                                                          \
        NAME##_fill(o, rank, buf, n);                                                          \
    }                                                                                          \
    /* elements of buf that differ from the reduction of elements first.. */                  \
    static size_t NAME##_wrong(op_id_t o, int P, const void *buf, size_t first, size_t n)     \
    {                                                                                          \
        const CTYPE *x = buf;                                                                  \
        size_t bad = 0;                                                                        \
        for (size_t i = 0; i < n; i++) bad += x[i] != NAME##_expect(o, P, first + i);          \
        return bad;                                                                            \
    }
DEFINE_DESC(int8, int8_t)
DEFINE_DESC(uint8, uint8_t)
DEFINE_DESC(int16, int16_t)
DEFINE_DESC(uint16, uint16_t)
DEFINE_DESC(int32, int32_t)
DEFINE_DESC(uint32, uint32_t)
DEFINE_DESC(int64, int64_t)
DEFINE_DESC(uint64, uint64_t)
DEFINE_DESC(long_, long)
DEFINE_DESC(ulong, unsigned long)
DEFINE_DESC(float_, float)
DEFINE_DESC(double_, double)
DEFINE_DESC(ldouble, long double)
DEFINE_DESC(cbool, bool)
DEFINE_DESC(byte, unsigned char)

#define DESC(NAME, T, CTYPE, A, I, L, B) { #NAME, T, sizeof(CTYPE), A, I, L, B, NAME##_fillv, NAME##_wrong }

static int takes(const tdesc_t *d, op_id_t o)
{
    if (o <= OP_MAX) return d->arith;
    if (o <= OP_LXOR) return d->logical;
    return d->bitwise;
}

/* MPI_Reduce_scatter_block (block > 0) or MPI_Reduce_scatter (rcounts):
 * the result block right; nothing else of recvbuf written (in place: the
 * rest of the input; not in place: whatever lies past the block, here the
 * input's size + GUARD); sendbuf unchanged */
static void rs_untouched(MPI_Comm comm, const char *what, const tdesc_t *d, op_id_t o, int block,
                         const int *rcounts, int inplace)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t total = 0, first = 0;
    for (int r = 0; r < P; r++) {
        size_t n = (size_t)(block ? block : rcounts[r]);
        if (r < rank) first += n;
        total += n;
    }
    size_t mine = (size_t)(block ? block : rcounts[rank]), bytes = total * d->size;
    unsigned char *in = patterned(bytes, 1 + rank), *out = patterned(bytes, 1000 + rank);
    d->fill(o, rank, inplace ? out : in, total);
    unsigned char *in0 = dup_bytes(in, bytes), *out0 = dup_bytes(out, bytes);
    const void *sbuf = inplace ? MPI_IN_PLACE : in;
    if (block) MPI_Reduce_scatter_block(sbuf, out, block, d->type, mpi_op(o), comm);
    else MPI_Reduce_scatter(sbuf, out, rcounts, d->type, mpi_op(o), comm);
    size_t bad = d->wrong(o, P, out, first, mine);
    size_t at = first_diff(out, out0, mine * d->size, bytes + GUARD);
    size_t sat = first_diff(in, in0, 0, bytes + GUARD);
    char s1[24], s2[24];
    mt_check(0 == bad && at == bytes + GUARD && sat == bytes + GUARD,
             "%s %s %s %s inplace=%d mine=%zu total=%zu: %zu wrong; first recvbuf byte changed "
             "past the %zu-byte result: %s; first sendbuf byte changed: %s", what,
             block ? "reduce_scatter_block" : "reduce_scatter", d->name, op_names[o], inplace, mine,
             total, bad, mine * d->size, where(at, bytes + GUARD, s1, sizeof s1),
             where(sat, bytes + GUARD, s2, sizeof s2));
    free(in);
    free(out);
    free(in0);
    free(out0);
}

/* MPI_Reduce: the root's result right and nothing past it written; the
 * non-roots' recvbuf (not significant there) and every sendbuf unchanged */
static void reduce_untouched(MPI_Comm comm, const char *what, const tdesc_t *d, op_id_t o, size_t n,
                             int root, int inplace)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t bytes = n * d->size;
    int ip = inplace && rank == root;
    unsigned char *in = patterned(bytes, 2 + rank), *out = patterned(bytes, 2000 + rank);
    d->fill(o, rank, ip ? out : in, n);
    unsigned char *in0 = dup_bytes(in, bytes), *out0 = dup_bytes(out, bytes);
    MPI_Reduce(ip ? MPI_IN_PLACE : in, out, (int)n, d->type, mpi_op(o), root, comm);
    size_t bad = rank == root ? d->wrong(o, P, out, 0, n) : 0;
    size_t at = first_diff(out, out0, rank == root ? bytes : 0, bytes + GUARD);
    size_t sat = first_diff(in, in0, 0, bytes + GUARD);
    char s1[24], s2[24];
    mt_check(0 == bad && at == bytes + GUARD && sat == bytes + GUARD,
             "%s reduce %s %s n=%zu root=%d inplace=%d: %zu wrong; first recvbuf byte changed%s: "
             "%s; first sendbuf byte changed: %s", what, d->name, op_names[o], n, root, ip, bad,
             rank == root ? " past the result" : " (non-root)", where(at, bytes + GUARD, s1, sizeof s1),
             where(sat, bytes + GUARD, s2, sizeof s2));
    free(in);
    free(out);
    free(in0);
    free(out0);
}

/* MPI_Allreduce: nothing past the result written, sendbuf unchanged */
static void allreduce_untouched(MPI_Comm comm, const char *what, const tdesc_t *d, op_id_t o,
                                size_t n, int inplace)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t bytes = n * d->size;
    unsigned char *in = patterned(bytes, 3 + rank), *out = patterned(bytes, 3000 + rank);
    d->fill(o, rank, inplace ? out : in, n);
    unsigned char *in0 = dup_bytes(in, bytes), *out0 = dup_bytes(out, bytes);
    MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, (int)n, d->type, mpi_op(o), comm);
    size_t bad = d->wrong(o, P, out, 0, n);
    size_t at = first_diff(out, out0, bytes, bytes + GUARD);
    size_t sat = first_diff(in, in0, 0, bytes + GUARD);
    char s1[24], s2[24];
    mt_check(0 == bad && at == bytes + GUARD && sat == bytes + GUARD,
             "%s allreduce %s %s n=%zu inplace=%d: %zu wrong; first recvbuf byte changed past the "
             "result: %s; first sendbuf byte changed: %s", what, d->name, op_names[o], n, inplace,
             bad, where(at, bytes + GUARD, s1, sizeof s1), where(sat, bytes + GUARD, s2, sizeof s2));
    free(in);
    free(out);
    free(in0);
    free(out0);
}

static void test_untouched_predefined(MPI_Comm comm, const char *what)
{
    static const tdesc_t types[] = {
        DESC(int8, MPI_INT8_T, int8_t, 1, 1, 1, 1),
        DESC(uint8, MPI_UNSIGNED_CHAR, uint8_t, 1, 1, 1, 1),
        DESC(int16, MPI_SHORT, int16_t, 1, 1, 1, 1),
        DESC(uint16, MPI_UINT16_T, uint16_t, 1, 1, 1, 1),
        DESC(int32, MPI_INT, int32_t, 1, 1, 1, 1),
        DESC(uint32, MPI_UNSIGNED, uint32_t, 1, 1, 1, 1),
        DESC(int64, MPI_INT64_T, int64_t, 1, 1, 1, 1),
        DESC(uint64, MPI_UNSIGNED_LONG_LONG, uint64_t, 1, 1, 1, 1),
        DESC(long_, MPI_LONG, long, 1, 1, 1, 1),
        DESC(ulong, MPI_UNSIGNED_LONG, unsigned long, 1, 1, 1, 1),
        DESC(float_, MPI_FLOAT, float, 1, 0, 0, 0),
        DESC(double_, MPI_DOUBLE, double, 1, 0, 0, 0),
        DESC(ldouble, MPI_LONG_DOUBLE, long double, 1, 0, 0, 0),
        DESC(cbool, MPI_C_BOOL, bool, 0, 0, 1, 0),
        DESC(byte, MPI_BYTE, unsigned char, 0, 0, 0, 1),
    };
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    /* uneven counts: zeros in between; fewer elements than ranks (only the
     * last rank gets one); only the first rank gets any */
    int *spread = malloc(P * sizeof(int)), *few = malloc(P * sizeof(int)), *one = malloc(P * sizeof(int));
    for (int r = 0; r < P; r++) {
        spread[r] = r % 3 == 1 ? 0 : r + 2;
        few[r] = r == P - 1;
        one[r] = r == 0 ? 3 : 0;
    }
    for (size_t t = 0; t < sizeof types / sizeof *types; t++)
        for (int o = OP_SUM; o < OP_N; o++) {
            const tdesc_t *d = &types[t];
            if (!takes(d, o)) continue;
            for (int ip = 0; ip < 2; ip++) {
                rs_untouched(comm, what, d, o, 1, NULL, ip);
                rs_untouched(comm, what, d, o, 5, NULL, ip);
                rs_untouched(comm, what, d, o, 0, spread, ip);
                rs_untouched(comm, what, d, o, 0, few, ip);
                rs_untouched(comm, what, d, o, 0, one, ip);
                reduce_untouched(comm, what, d, o, (size_t)P + 1, ip ? P - 1 : 0, ip);
                allreduce_untouched(comm, what, d, o, (size_t)P + 1, ip);
            }
        }
    free(spread);
    free(few);
    free(one);
}

/* ---- derived datatypes with holes ----
 * Inputs and references are written as packed elements and unpacked with
 * MPI_Unpack (the datatype engine, no collective), which writes the data
 * bytes and leaves the holes: so an expected buffer is the buffer as it was
 * with the expected data unpacked over it, and a whole buffer compares
 * byte for byte, holes and what lies past the data included. */

typedef struct holey {
    const char *name;
    MPI_Datatype type;   /* committed */
    MPI_Op op;           /* MPI_OP_NULL: not for reductions */
    size_t psize;        /* packed bytes per element */
    /* packed element g (global index) of rank's input / of the reduction
     * over P ranks */
    void (*input)(int rank, size_t g, unsigned char *p);
    void (*expect)(int P, size_t g, unsigned char *p);
} holey_t;

static size_t extent_of(MPI_Datatype t)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    return (size_t)extent;
}

/* unpack n elements, element i from input(who, first+i) (or expect) */
static void holey_put(const holey_t *h, void *buf, size_t n, int who, size_t first, int expect)
{
    if (0 == n) return;
    unsigned char *packed = malloc(n * h->psize);
    for (size_t i = 0; i < n; i++)
        (expect ? h->expect : h->input)(who, first + i, packed + i * h->psize);
    int pos = 0;
    MPI_Unpack(packed, (int)(n * h->psize), &pos, buf, (int)n, h->type, MPI_COMM_SELF);
    free(packed);
}

/* MPI_SHORT_INT {short; 2-byte hole; int} with MINLOC: ties go to the
 * lowest index */
static void si_input(int rank, size_t g, unsigned char *p)
{
    short v = (short)((g * 7 + (size_t)rank * 3) % 5);
    int i = rank;
    memcpy(p, &v, sizeof v);
    memcpy(p + sizeof v, &i, sizeof i);
}
static void si_expect(int P, size_t g, unsigned char *p)
{
    short best = 0;
    int who = 0;
    for (int r = 0; r < P; r++) {
        short v = (short)((g * 7 + (size_t)r * 3) % 5);
        if (0 == r || v < best) { best = v; who = r; }
    }
    memcpy(p, &best, sizeof best);
    memcpy(p + sizeof best, &who, sizeof who);
}

/* MPI_DOUBLE_INT {double; int; 4-byte hole} with MAXLOC */
static void di_input(int rank, size_t g, unsigned char *p)
{
    double v = (double)((g * 5 + (size_t)rank * 11) % 7);
    int i = rank * 10;
    memcpy(p, &v, sizeof v);
    memcpy(p + sizeof v, &i, sizeof i);
}
static void di_expect(int P, size_t g, unsigned char *p)
{
    double best = 0;
    int who = 0;
    for (int r = 0; r < P; r++) {
        double v = (double)((g * 5 + (size_t)r * 11) % 7);
        if (0 == r || v > best) { best = v; who = r * 10; }
    }
    memcpy(p, &best, sizeof best);
    memcpy(p + sizeof best, &who, sizeof who);
}

/* the strided vector of test_strided_user_op (NV doubles, every other
 * one), summed by vec_sum_op */
static void dv_input(int rank, size_t g, unsigned char *p)
{
    for (int j = 0; j < NV; j++) {
        double v = (double)(rank * 100 + (int)((g * NV + (size_t)j) % 97));
        memcpy(p + j * sizeof v, &v, sizeof v);
    }
}
static void dv_expect(int P, size_t g, unsigned char *p)
{
    for (int j = 0; j < NV; j++) {
        double v = 0;
        for (int r = 0; r < P; r++) v += (double)(r * 100 + (int)((g * NV + (size_t)j) % 97));
        memcpy(p + j * sizeof v, &v, sizeof v);
    }
}

/* one int per element, at the type's true lower bound, summed */
static void gap_int_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    MPI_Aint lb, extent, tlb, textent;
    MPI_Type_get_extent(*t, &lb, &extent);
    MPI_Type_get_true_extent(*t, &tlb, &textent);
    for (int e = 0; e < *len; e++) {
        int a, b;
        memcpy(&a, (char *)in + e * extent + tlb, sizeof a);
        memcpy(&b, (char *)inout + e * extent + tlb, sizeof b);
        b += a;
        memcpy((char *)inout + e * extent + tlb, &b, sizeof b);
    }
}
static void gi_input(int rank, size_t g, unsigned char *p)
{
    int v = rank * 1000 + (int)(g % 1000);
    memcpy(p, &v, sizeof v);
}
static void gi_expect(int P, size_t g, unsigned char *p)
{
    int v = 0;
    for (int r = 0; r < P; r++) v += r * 1000 + (int)(g % 1000);
    memcpy(p, &v, sizeof v);
}

/* the types; *n_out entries, freed by holey_free */
static holey_t *holey_types(int *n_out)
{
    static holey_t h[5];
    MPI_Datatype vec, dvec, tail, lead1, lead;
    MPI_Type_vector(NV, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_create_resized(vec, 0, 2 * NV * sizeof(double), &dvec);   /* holes between and after */
    MPI_Type_free(&vec);
    MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &tail);        /* int, 8-byte gap */
    int bl = 1;
    MPI_Aint disp = sizeof(int);
    MPI_Datatype it = MPI_INT;
    MPI_Type_create_struct(1, &bl, &disp, &it, &lead1);
    MPI_Type_create_resized(lead1, 0, 3 * sizeof(int), &lead);          /* gap, int, gap */
    MPI_Type_free(&lead1);
    MPI_Type_commit(&dvec);
    MPI_Type_commit(&tail);
    MPI_Type_commit(&lead);
    MPI_Op vsum, gsum;
    MPI_Op_create(vec_sum_op, 1, &vsum);
    MPI_Op_create(gap_int_sum, 1, &gsum);
    h[0] = (holey_t){ "MPI_SHORT_INT", MPI_SHORT_INT, MPI_MINLOC, sizeof(short) + sizeof(int), si_input, si_expect };
    h[1] = (holey_t){ "MPI_DOUBLE_INT", MPI_DOUBLE_INT, MPI_MAXLOC, sizeof(double) + sizeof(int), di_input, di_expect };
    h[2] = (holey_t){ "strided vector", dvec, vsum, NV * sizeof(double), dv_input, dv_expect };
    h[3] = (holey_t){ "int + tail gap", tail, gsum, sizeof(int), gi_input, gi_expect };
    h[4] = (holey_t){ "gap + int + gap", lead, gsum, sizeof(int), gi_input, gi_expect };
    *n_out = 5;
    return h;
}

static void holey_free(holey_t *h, int n)
{
    MPI_Op_free(&h[2].op);
    MPI_Op_free(&h[3].op);
    for (int i = 2; i < n; i++) MPI_Type_free(&h[i].type);
}

/* compare a buffer of `bytes` (+ GUARD) with what it must hold */
static void expect_buffer(const unsigned char *got, const unsigned char *want, size_t bytes,
                          const char *what, const char *call, const holey_t *h, const char *buf,
                          size_t n, int inplace)
{
    size_t at = first_diff(got, want, 0, bytes + GUARD);
    mt_check(at == bytes + GUARD, "%s %s %s n=%zu inplace=%d: %s byte %zu of %zu (extent %zu) wrong",
             what, call, h->name, n, inplace, buf, at, bytes + GUARD, extent_of(h->type));
}

static void holey_reduce_scatter(MPI_Comm comm, const char *what, const holey_t *h, int block,
                                 const int *rcounts, int inplace)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t ext = extent_of(h->type), total = 0, first = 0;
    for (int r = 0; r < P; r++) {
        size_t n = (size_t)(block ? block : rcounts[r]);
        if (r < rank) first += n;
        total += n;
    }
    size_t mine = (size_t)(block ? block : rcounts[rank]), bytes = total * ext;
    unsigned char *in = patterned(bytes, 4 + rank), *out = patterned(bytes, 4000 + rank);
    holey_put(h, inplace ? out : in, total, rank, 0, 0);
    unsigned char *in0 = dup_bytes(in, bytes), *want = dup_bytes(out, bytes);
    holey_put(h, want, mine, P, first, 1);
    const void *sbuf = inplace ? MPI_IN_PLACE : in;
    const char *call = block ? "reduce_scatter_block" : "reduce_scatter";
    if (block) MPI_Reduce_scatter_block(sbuf, out, block, h->type, h->op, comm);
    else MPI_Reduce_scatter(sbuf, out, rcounts, h->type, h->op, comm);
    expect_buffer(out, want, bytes, what, call, h, "recvbuf", total, inplace);
    expect_buffer(in, in0, bytes, what, call, h, "sendbuf", total, inplace);
    free(in);
    free(out);
    free(in0);
    free(want);
}

static void holey_reduce(MPI_Comm comm, const char *what, const holey_t *h, size_t n, int root,
                         int inplace, int all)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t bytes = n * extent_of(h->type);
    int ip = inplace && (all || rank == root);
    unsigned char *in = patterned(bytes, 5 + rank), *out = patterned(bytes, 5000 + rank);
    holey_put(h, ip ? out : in, n, rank, 0, 0);
    unsigned char *in0 = dup_bytes(in, bytes), *want = dup_bytes(out, bytes);
    if (all || rank == root) holey_put(h, want, n, P, 0, 1);
    const void *sbuf = ip ? MPI_IN_PLACE : in;
    if (all) MPI_Allreduce(sbuf, out, (int)n, h->type, h->op, comm);
    else MPI_Reduce(sbuf, out, (int)n, h->type, h->op, root, comm);
    char call[32];
    snprintf(call, sizeof call, all ? "allreduce" : "reduce root=%d", root);
    expect_buffer(out, want, bytes, what, call, h, all || rank == root ? "recvbuf" : "non-root recvbuf",
                  n, ip);
    expect_buffer(in, in0, bytes, what, call, h, "sendbuf", n, ip);
    free(in);
    free(out);
    free(in0);
    free(want);
}

/* bcast: the root's buffer unchanged, the others get its data bytes and
 * keep their holes */
static void holey_bcast(MPI_Comm comm, const char *what, const holey_t *h, size_t n, int root)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t bytes = n * extent_of(h->type);
    unsigned char *buf = patterned(bytes, 6000 + rank);
    if (rank == root) holey_put(h, buf, n, root, 0, 0);
    unsigned char *want = dup_bytes(buf, bytes);
    holey_put(h, want, n, root, 0, 0);
    MPI_Bcast(buf, (int)n, h->type, root, comm);
    char call[32];
    snprintf(call, sizeof call, "bcast root=%d", root);
    expect_buffer(buf, want, bytes, what, call, h, "buffer", n, 0);
    free(buf);
    free(want);
}

/* allgather, the holey type on both sides (in place: the own block is
 * already in recvbuf): every block's data bytes right, the holes of
 * recvbuf, what lies past it and sendbuf unchanged */
static void holey_allgather(MPI_Comm comm, const char *what, const holey_t *h, size_t n, int inplace)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t ext = extent_of(h->type), block = n * ext, bytes = block * (size_t)P;
    unsigned char *in = patterned(block, 7 + rank), *out = patterned(bytes, 7000 + rank);
    holey_put(h, in, n, rank, 0, 0);
    if (inplace) holey_put(h, out + (size_t)rank * block, n, rank, 0, 0);
    unsigned char *in0 = dup_bytes(in, block), *want = dup_bytes(out, bytes);
    for (int r = 0; r < P; r++) holey_put(h, want + (size_t)r * block, n, r, 0, 0);
    MPI_Allgather(inplace ? MPI_IN_PLACE : in, (int)n, h->type, out, (int)n, h->type, comm);
    expect_buffer(out, want, bytes, what, "allgather", h, "recvbuf", n, inplace);
    expect_buffer(in, in0, block, what, "allgather", h, "sendbuf", n, inplace);
    free(in);
    free(out);
    free(in0);
    free(want);
}

static void test_untouched_derived(MPI_Comm comm, const char *what)
{
    int P, nh;
    MPI_Comm_size(comm, &P);
    holey_t *h = holey_types(&nh);
    int *spread = malloc(P * sizeof(int)), *few = malloc(P * sizeof(int));
    for (int r = 0; r < P; r++) {
        spread[r] = r % 3 == 1 ? 0 : 2 * r + 1;
        few[r] = r == P - 1;
    }
    size_t counts[] = { 1, (size_t)P + 1, 1000 };
    for (int t = 0; t < nh; t++)
        for (int k = 0; k < 3; k++) {
            size_t n = counts[k];
            for (int ip = 0; ip < 2; ip++) {
                holey_reduce(comm, what, &h[t], n, 0, ip, 1);
                holey_reduce(comm, what, &h[t], n, ip ? P - 1 : 0, ip, 0);
                holey_reduce_scatter(comm, what, &h[t], (int)(k + 1) * 2 - 1, NULL, ip);
                holey_allgather(comm, what, &h[t], n, ip);
            }
            holey_bcast(comm, what, &h[t], n, k % P);
        }
    for (int t = 0; t < nh; t++)
        for (int ip = 0; ip < 2; ip++) {
            holey_reduce_scatter(comm, what, &h[t], 0, spread, ip);
            holey_reduce_scatter(comm, what, &h[t], 0, few, ip);
        }
    /* contiguous buffers too: nothing past the data */
    holey_t bytes_h = { "MPI_INT", MPI_INT, MPI_OP_NULL, sizeof(int), gi_input, gi_expect };
    for (int k = 0; k < 3; k++) {
        holey_bcast(comm, what, &bytes_h, counts[k], (k + 1) % P);
        holey_allgather(comm, what, &bytes_h, counts[k], k & 1);
    }
    free(spread);
    free(few);
    holey_free(h, nh);
}

/* more than 2^31 bytes in one call: 2^28 + 5 doubles (2 GiB + 40 B) in
 * place; every value is a small integer, so the sum is exact. Then a
 * reduce to the last rank (in place there) and a bcast from rank 0 of the
 * same vector (more than one process_vm_readv each where the shm tier
 * reads single copy: the kernel moves at most 2 GiB - 4 KiB per call). */
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

    int root = P - 1;
    for (size_t i = 0; i < n; i++) x[i] = (double)((i % 1000) + (size_t)rank);
    MPI_Reduce(rank == root ? MPI_IN_PLACE : x, rank == root ? x : NULL, (int)n, MPI_DOUBLE, MPI_SUM,
               root, comm);
    bad = 0;
    if (rank == root)
        for (size_t i = 0; i < n; i++)
            if (x[i] != (double)P * (double)(i % 1000) + rsum && 0 == bad++) first = i;
    mt_check(0 == bad, "huge reduce of %zu bytes: %zu wrong (first at %zu)", n * sizeof(double), bad,
             first);

    for (size_t i = 0; i < n; i++) x[i] = 0 == rank ? (double)(i % 4093) : -1.0;
    MPI_Bcast(x, (int)n, MPI_DOUBLE, 0, comm);
    bad = 0;
    for (size_t i = 0; i < n; i++)
        if (x[i] != (double)(i % 4093) && 0 == bad++) first = i;
    mt_check(0 == bad, "huge bcast of %zu bytes: %zu wrong (first at %zu)", n * sizeof(double), bad,
             first);
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
        if (0 == strcmp(argv[i], "untouched")) {
            MPI_Comm rev = mt_reversed_comm(MPI_COMM_WORLD);
            test_untouched_predefined(MPI_COMM_WORLD, "world");
            test_untouched_derived(MPI_COMM_WORLD, "world");
            test_untouched_predefined(rev, "reversed");
            test_untouched_derived(rev, "reversed");
            MPI_Comm_free(&rev);
            return mt_finish("mpi_reductions untouched");
        }
        quick |= 0 == strcmp(argv[i], "quick");
        mid |= 0 == strcmp(argv[i], "mid");
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
