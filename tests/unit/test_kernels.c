/* test_kernels.c - braid's reduction kernels against scalar references
 * written independently here: every defined (type, op) pair, counts that
 * exercise vector bodies and tails, aligned and misaligned buffers, random and
 * edge values; the lookup and is_exact tables; MPI wrap-around, NaN, signed
 * zero and 0/1 logical semantics checked against hand-computed values. */
#include <complex.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "unit_common.h"
#include "braid_kernels.h"

static const size_t counts[] = { 0, 1, 15, 16, 17, 31, 64, 1003 };
#define NCOUNTS (sizeof counts / sizeof *counts)
enum { GUARD = 9 }; /* elements after the range that must stay untouched */

/* ---------------- independent description of the types ---------------- */
static bool t_is_int(braid_ktype_t t) { return t <= BRAID_KT_UINT64; }
static bool t_is_float(braid_ktype_t t) { return BRAID_KT_FLOAT == t || BRAID_KT_DOUBLE == t; }
static bool t_is_signed(braid_ktype_t t)
{
    return BRAID_KT_INT8 == t || BRAID_KT_INT16 == t || BRAID_KT_INT32 == t || BRAID_KT_INT64 == t;
}
static unsigned t_bits(braid_ktype_t t)
{
    static const unsigned b[BRAID_KT_NTYPES] = { 8, 8, 16, 16, 32, 32, 64, 64, 32, 64, 8 };
    return b[t];
}
static size_t t_size(braid_ktype_t t)
{
    return BRAID_KT_BOOL == t ? sizeof(_Bool) : t_bits(t) / 8;
}
static uint64_t t_mask(braid_ktype_t t)
{
    return 64 == t_bits(t) ? UINT64_MAX : (UINT64_C(1) << t_bits(t)) - 1;
}
/* does MPI define op on t? */
static bool pair_defined(braid_ktype_t t, braid_kop_t op)
{
    if (t_is_int(t)) return true;
    if (t_is_float(t))
        return BRAID_KOP_SUM == op || BRAID_KOP_PROD == op || BRAID_KOP_MIN == op
               || BRAID_KOP_MAX == op;
    return BRAID_KOP_LAND == op || BRAID_KOP_LOR == op || BRAID_KOP_LXOR == op;
}

/* ---------------- element access ---------------- */
/* integer element i as its bit pattern, sign-extended for signed types */
static uint64_t int_load(braid_ktype_t t, const void *p, size_t i)
{
    uint64_t v = 0;
    memcpy(&v, (const char *)p + i * t_size(t), t_size(t)); /* little endian */
    if (t_is_signed(t) && t_bits(t) < 64 && (v >> (t_bits(t) - 1)) & 1) v |= ~t_mask(t);
    return v;
}
static void int_store(braid_ktype_t t, void *p, size_t i, uint64_t v)
{
    v &= t_mask(t);
    memcpy((char *)p + i * t_size(t), &v, t_size(t));
}

/* ---------------- scalar references ---------------- */
static uint64_t ref_int(braid_ktype_t t, braid_kop_t op, uint64_t a /* in */, uint64_t b /* inout */)
{
    bool sa = t_is_signed(t);
    bool a_lt_b = sa ? (int64_t)a < (int64_t)b : a < b;
    bool za = 0 != (a & t_mask(t)), zb = 0 != (b & t_mask(t));
    switch (op) {
    case BRAID_KOP_SUM: return a + b;      /* mod 2^64, masked by store */
    case BRAID_KOP_PROD: return a * b;
    case BRAID_KOP_MIN: return a_lt_b ? a : b;
    case BRAID_KOP_MAX: return a_lt_b ? b : a;
    case BRAID_KOP_LAND: return za && zb;
    case BRAID_KOP_LOR: return za || zb;
    case BRAID_KOP_LXOR: return za != zb;
    case BRAID_KOP_BAND: return a & b;
    case BRAID_KOP_BOR: return a | b;
    case BRAID_KOP_BXOR: return a ^ b;
    default: return 0xdeadbeef;
    }
}

/* Open MPI: inout = (inout < in) ? inout : in for MIN; written out by case */
static double ref_minmax(bool is_min, double in, double io)
{
    if (isnan(in)) return in;
    if (isnan(io)) return in;
    if (in == io) return in; /* +0.0 vs -0.0 included */
    if (is_min) return io < in ? io : in;
    return io > in ? io : in;
}

static float ref_float(braid_kop_t op, float a, float b)
{
    switch (op) {
    case BRAID_KOP_SUM: return a + b;
    case BRAID_KOP_PROD: return a * b;
    case BRAID_KOP_MIN: return (float)ref_minmax(true, a, b);
    case BRAID_KOP_MAX: return (float)ref_minmax(false, a, b);
    default: return -12345.0f;
    }
}
static double ref_double(braid_kop_t op, double a, double b)
{
    switch (op) {
    case BRAID_KOP_SUM: return a + b;
    case BRAID_KOP_PROD: return a * b;
    case BRAID_KOP_MIN: return ref_minmax(true, a, b);
    case BRAID_KOP_MAX: return ref_minmax(false, a, b);
    default: return -12345.0;
    }
}
static bool ref_bool(braid_kop_t op, bool a, bool b)
{
    switch (op) {
    case BRAID_KOP_LAND: return a && b;
    case BRAID_KOP_LOR: return a || b;
    case BRAID_KOP_LXOR: return a != b;
    default: return false;
    }
}

/* ref[i] = in[i] op ref[i] over count elements, element by element */
static void reference(braid_ktype_t t, braid_kop_t op, const void *in, void *ref, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (t_is_int(t)) {
            int_store(t, ref, i, ref_int(t, op, int_load(t, in, i), int_load(t, ref, i)));
        } else if (BRAID_KT_FLOAT == t) {
            float *r = ref;
            r[i] = ref_float(op, ((const float *)in)[i], r[i]);
        } else if (BRAID_KT_DOUBLE == t) {
            double *r = ref;
            r[i] = ref_double(op, ((const double *)in)[i], r[i]);
        } else {
            _Bool *r = ref;
            r[i] = ref_bool(op, ((const _Bool *)in)[i], r[i]);
        }
    }
}

/* ---------------- values ---------------- */
static uint64_t rng_state;
static uint64_t rng(void) /* splitmix64 */
{
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t int_edge(braid_ktype_t t)
{
    uint64_t m = t_mask(t), top = (m >> 1) + 1; /* 0x80.. */
    const uint64_t e[] = { 0, 1, m /* -1 / max */, top /* signed min */, top - 1 /* signed max */,
                           top + 1, m - 1, 2, 100, 127, 128, 200, 255, 0xFF00, 0x10000 };
    return e[rng() % (sizeof e / sizeof *e)];
}
static double float_edge(bool is_float)
{
    const double e[] = { 0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1.0, -1.0, 0.5,
                         is_float ? FLT_MAX : DBL_MAX, is_float ? -FLT_MAX : -DBL_MAX,
                         is_float ? FLT_MIN : DBL_MIN, is_float ? FLT_TRUE_MIN : DBL_TRUE_MIN };
    return e[rng() % (sizeof e / sizeof *e)];
}

/* fill n elements; edge_pct percent of them from the edge lists */
static void fill(braid_ktype_t t, void *p, size_t n, unsigned edge_pct)
{
    for (size_t i = 0; i < n; i++) {
        bool edge = rng() % 100 < edge_pct;
        if (t_is_int(t)) {
            int_store(t, p, i, edge ? int_edge(t) : rng());
        } else if (t_is_float(t)) {
            double v = edge ? float_edge(BRAID_KT_FLOAT == t)
                            : ((double)(rng() % 2000001) - 1000000.0) / 997.0;
            if (BRAID_KT_FLOAT == t) ((float *)p)[i] = (float)v;
            else ((double *)p)[i] = v;
        } else {
            ((_Bool *)p)[i] = rng() & 1;
        }
    }
}

/* equal results: bit for bit, except that float SUM/PROD only require a NaN
 * where the reference has one (the payload depends on operand order, which
 * the compiler may swap for a commutative op) */
static bool same_elem(braid_ktype_t t, braid_kop_t op, const void *x, const void *y, size_t i)
{
    size_t es = t_size(t);
    const char *a = (const char *)x + i * es, *b = (const char *)y + i * es;
    bool arith = BRAID_KOP_SUM == op || BRAID_KOP_PROD == op;
    if (BRAID_KT_FLOAT == t && arith) {
        float fa, fb;
        memcpy(&fa, a, sizeof fa), memcpy(&fb, b, sizeof fb);
        if (isnan(fb)) return isnan(fa);
    } else if (BRAID_KT_DOUBLE == t && arith) {
        double da, db;
        memcpy(&da, a, sizeof da), memcpy(&db, b, sizeof db);
        if (isnan(db)) return isnan(da);
    }
    return 0 == memcmp(a, b, es);
}

typedef struct {
    size_t checked, bad;
    char first[200];
} tally_t;

static void note_bad(tally_t *tl, braid_ktype_t t, braid_kop_t op, size_t count, size_t off,
                     size_t i, const char *what)
{
    if (0 == tl->bad++)
        snprintf(tl->first, sizeof tl->first, "%s %s count %zu offset %zu: %s at element %zu",
                 braid_ktype_name(t), braid_kop_name(op), count, off, what, i);
}

/* run one (type, op, count, offset, value mix) against the reference */
static void check_case(tally_t *tl, braid_ktype_t t, braid_kop_t op, braid_kernel_fn_t fn,
                       size_t count, size_t off, unsigned edge_pct)
{
    size_t es = t_size(t), n = off + count + GUARD;
    char *in = malloc(n * es), *io = malloc(n * es), *in0 = malloc(n * es), *ref = malloc(n * es);
    ck_assert(in && io && in0 && ref);
    fill(t, in, n, edge_pct);
    fill(t, io, n, edge_pct);
    memcpy(in0, in, n * es);
    memcpy(ref, io, n * es);

    fn(in + off * es, io + off * es, count);
    reference(t, op, in0 + off * es, ref + off * es, count);

    for (size_t i = 0; i < n; i++) {
        tl->checked++;
        if (!same_elem(t, op, io, ref, i))
            note_bad(tl, t, op, count, off, i, i < off || i >= off + count ? "guard overwritten"
                                                                            : "wrong result");
    }
    if (0 != memcmp(in, in0, n * es)) note_bad(tl, t, op, count, off, 0, "input modified");
    free(in), free(io), free(in0), free(ref);
}

START_TEST(test_matches_reference)
{
    rng_state = 20240611u;
    tally_t tl = { 0 };
    size_t pairs = 0;
    for (int t = 0; t < BRAID_KT_NTYPES; t++)
        for (int op = 0; op < BRAID_KOP_NOPS; op++) {
            braid_kernel_fn_t fn = braid_kernel_lookup(t, op);
            if (NULL == fn) continue;
            pairs++;
            for (size_t c = 0; c < NCOUNTS; c++)
                for (size_t off = 0; off < 2; off++) {
                    check_case(&tl, t, op, fn, counts[c], off, 5);  /* mostly random */
                    check_case(&tl, t, op, fn, counts[c], off, 75); /* mostly edges */
                }
        }
    ck_assert_msg(0 == tl.bad, "%zu of %zu elements differ; first: %s", tl.bad, tl.checked, tl.first);
    ck_assert_uint_eq(pairs, 8 * 10 + 2 * 4 + 3);
}
END_TEST

START_TEST(test_lookup_null_exactly_for_undefined)
{
    size_t wrong = 0, defined = 0;
    for (int t = 0; t < BRAID_KT_NTYPES; t++)
        for (int op = 0; op < BRAID_KOP_NOPS; op++) {
            bool has = NULL != braid_kernel_lookup(t, op);
            defined += has;
            wrong += has != pair_defined(t, op);
        }
    ck_assert_uint_eq(wrong, 0);
    ck_assert_uint_eq(defined, 91);
    /* out of range */
    ck_assert(NULL == braid_kernel_lookup(BRAID_KT_ALL, BRAID_KOP_SUM));
    ck_assert(NULL == braid_kernel_lookup(BRAID_KT_INT32, BRAID_KOP_NOPS));
    ck_assert(NULL == braid_kernel_lookup((braid_ktype_t)-1, BRAID_KOP_SUM));
    /* spot checks of the rule */
    ck_assert(NULL == braid_kernel_lookup(BRAID_KT_FLOAT, BRAID_KOP_BXOR));
    ck_assert(NULL == braid_kernel_lookup(BRAID_KT_DOUBLE, BRAID_KOP_LAND));
    ck_assert(NULL == braid_kernel_lookup(BRAID_KT_BOOL, BRAID_KOP_SUM));
    ck_assert(NULL == braid_kernel_lookup(BRAID_KT_BOOL, BRAID_KOP_BAND));
    ck_assert(NULL != braid_kernel_lookup(BRAID_KT_BOOL, BRAID_KOP_LXOR));
    ck_assert(NULL != braid_kernel_lookup(BRAID_KT_UINT8, BRAID_KOP_LAND));
}
END_TEST

START_TEST(test_is_exact_table)
{
    size_t wrong = 0, exact = 0;
    for (int t = 0; t < BRAID_KT_NTYPES; t++)
        for (int op = 0; op < BRAID_KOP_NOPS; op++) {
            bool want = pair_defined(t, op)
                        && !(t_is_float(t) && (BRAID_KOP_SUM == op || BRAID_KOP_PROD == op));
            bool got = braid_kernel_is_exact(t, op);
            exact += got;
            wrong += got != want;
        }
    ck_assert_uint_eq(wrong, 0);
    ck_assert_uint_eq(exact, 91 - 4);
    ck_assert(!braid_kernel_is_exact(BRAID_KT_DOUBLE, BRAID_KOP_SUM));
    ck_assert(braid_kernel_is_exact(BRAID_KT_DOUBLE, BRAID_KOP_MAX));
    ck_assert(braid_kernel_is_exact(BRAID_KT_INT64, BRAID_KOP_PROD));
    ck_assert(!braid_kernel_is_exact(BRAID_KT_ALL, BRAID_KOP_SUM));
}
END_TEST

/* hand-computed: integer SUM/PROD wrap around, never saturate */
START_TEST(test_wraparound)
{
    enum { N = 64 };
    size_t bad = 0;
    uint8_t ua[N], ub[N];
    int8_t sa[N], sb[N];
    int16_t ha[N], hb[N];
    int32_t ia[N], ib[N];
    uint64_t la[N], lb[N];
    for (size_t i = 0; i < N; i++) {
        ua[i] = 200, ub[i] = 200;
        sa[i] = 100, sb[i] = 100;
        ha[i] = 300, hb[i] = 300;
        ia[i] = INT32_MAX, ib[i] = 1;
        la[i] = UINT64_MAX, lb[i] = 3;
    }
    braid_kernel_lookup(BRAID_KT_UINT8, BRAID_KOP_SUM)(ua, ub, N);
    braid_kernel_lookup(BRAID_KT_INT8, BRAID_KOP_SUM)(sa, sb, N);
    braid_kernel_lookup(BRAID_KT_INT16, BRAID_KOP_PROD)(ha, hb, N);
    braid_kernel_lookup(BRAID_KT_INT32, BRAID_KOP_SUM)(ia, ib, N);
    braid_kernel_lookup(BRAID_KT_UINT64, BRAID_KOP_PROD)(la, lb, N);
    for (size_t i = 0; i < N; i++) {
        bad += 144 != ub[i];              /* 400 mod 256 */
        bad += -56 != sb[i];              /* 200 - 256 */
        bad += 24464 != hb[i];            /* 90000 mod 65536 */
        bad += INT32_MIN != ib[i];
        bad += UINT64_MAX - 2 != lb[i];   /* 3 * (2^64 - 1) mod 2^64 */
    }
    int8_t m1[N], m2[N];
    for (size_t i = 0; i < N; i++) m1[i] = INT8_MIN, m2[i] = INT8_MIN;
    braid_kernel_lookup(BRAID_KT_INT8, BRAID_KOP_SUM)(m1, m2, N);
    for (size_t i = 0; i < N; i++) bad += 0 != m2[i]; /* -128 + -128 = -256 = 0 mod 256 */
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* hand-computed: Open MPI's MIN/MAX with NaN and signed zeros */
START_TEST(test_minmax_nan_and_zero)
{
    enum { N = 40 };
    double in[N], io[N];
    size_t bad = 0;
    for (int op = BRAID_KOP_MIN; op <= BRAID_KOP_MAX; op++) {
        for (size_t i = 0; i < N; i++) {
            switch (i % 4) {
            case 0: in[i] = NAN, io[i] = 1.0; break;   /* -> NaN (in) */
            case 1: in[i] = 1.0, io[i] = NAN; break;   /* -> 1.0 (in) */
            case 2: in[i] = -0.0, io[i] = 0.0; break;  /* equal -> -0.0 (in) */
            case 3: in[i] = 0.0, io[i] = -0.0; break;  /* equal -> +0.0 (in) */
            }
        }
        braid_kernel_lookup(BRAID_KT_DOUBLE, op)(in, io, N);
        for (size_t i = 0; i < N; i++) {
            switch (i % 4) {
            case 0: bad += !isnan(io[i]); break;
            case 1: bad += 1.0 != io[i]; break;
            case 2: bad += !(0.0 == io[i] && signbit(io[i])); break;
            case 3: bad += !(0.0 == io[i] && !signbit(io[i])); break;
            }
        }
    }
    float fin[N], fio[N];
    for (size_t i = 0; i < N; i++) fin[i] = (float)i - 20.0f, fio[i] = (i & 1) ? INFINITY : -INFINITY;
    braid_kernel_lookup(BRAID_KT_FLOAT, BRAID_KOP_MAX)(fin, fio, N);
    for (size_t i = 0; i < N; i++) bad += fio[i] != ((i & 1) ? INFINITY : (float)i - 20.0f);
    ck_assert_uint_eq(bad, 0);
}
END_TEST

/* hand-computed: logical ops yield 0/1 for any non-zero input */
START_TEST(test_logical_zero_one)
{
    enum { N = 33 };
    int32_t in[N], io[N];
    size_t bad = 0;
    const int32_t want[3][4] = { /* (in, io) = (5,7), (5,0), (0,-3), (0,0) */
        [0] = { 1, 0, 0, 0 }, /* land */
        [1] = { 1, 1, 1, 0 }, /* lor */
        [2] = { 0, 1, 1, 0 }, /* lxor */
    };
    const int32_t a[4] = { 5, 5, 0, 0 }, b[4] = { 7, 0, -3, 0 };
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < N; i++) in[i] = a[i % 4], io[i] = b[i % 4];
        braid_kernel_lookup(BRAID_KT_INT32, BRAID_KOP_LAND + k)(in, io, N);
        for (size_t i = 0; i < N; i++) bad += io[i] != want[k][i % 4];
    }
    _Bool bi[N], bo[N];
    for (size_t i = 0; i < N; i++) bi[i] = i & 1, bo[i] = (i >> 1) & 1;
    braid_kernel_lookup(BRAID_KT_BOOL, BRAID_KOP_LXOR)(bi, bo, N);
    for (size_t i = 0; i < N; i++) bad += bo[i] != (((i & 1) != 0) != (((i >> 1) & 1) != 0));
    ck_assert_uint_eq(bad, 0);
}
END_TEST

START_TEST(test_count_zero_and_names)
{
    for (int t = 0; t < BRAID_KT_NTYPES; t++)
        for (int op = 0; op < BRAID_KOP_NOPS; op++) {
            braid_kernel_fn_t fn = braid_kernel_lookup(t, op);
            if (fn) fn(NULL, NULL, 0); /* must not touch memory */
        }
    size_t wrong = 0;
    for (int t = 0; t < BRAID_KT_NTYPES; t++) wrong += braid_ktype_size(t) != t_size(t);
    ck_assert_uint_eq(wrong, 0);
    ck_assert_uint_eq(braid_ktype_size(BRAID_KT_ALL), 0);
    ck_assert_str_eq(braid_ktype_name(BRAID_KT_UINT8), "uint8");
    ck_assert_str_eq(braid_ktype_name(BRAID_KT_BOOL), "bool");
    ck_assert_str_eq(braid_ktype_name(BRAID_KT_DOUBLE), "double");
    ck_assert_str_eq(braid_kop_name(BRAID_KOP_BXOR), "bxor");
    ck_assert_str_eq(braid_kop_name(BRAID_KOP_LXOR), "lxor");
    ck_assert_str_eq(braid_ktype_name(BRAID_KT_ALL), "?");
    ck_assert_str_eq(braid_kop_name(BRAID_KOP_ALL), "?");
    ck_assert_str_eq(braid_ktype_name(BRAID_KT_LDOUBLE_INT), "ldouble_int");
    ck_assert_str_eq(braid_kop_name(BRAID_KOP_MINLOC), "minloc");
}
END_TEST

/* The host-only kernels: long double, the complex types and the
 * MINLOC/MAXLOC pairs, against the plain C of Open MPI's reference ops
 * (inout = inout op in; a loc op keeps the smaller index of equal values),
 * and NULL for the pairs MPI does not define on them. */
typedef struct { double v; int k; } dint_t;
typedef struct { short v; int k; } sint_t;
typedef struct { long double v; int k; } ldint_t;
typedef struct { float v; float k; } ff_t;

#define LOC_REF(a, b, CMP)                                                     \
    do {                                                                       \
        if ((a).v CMP (b).v) (b) = (a);                                        \
        else if ((a).v == (b).v && (a).k < (b).k) (b).k = (a).k;               \
    } while (0)

START_TEST(test_host_only_kernels)
{
    enum { N = 517 };
    size_t bad = 0;
    /* long double */
    static long double la[N], lb[N], lr[N];
    for (braid_kop_t op = BRAID_KOP_SUM; op <= BRAID_KOP_MAX; op++) {
        for (size_t i = 0; i < N; i++) {
            la[i] = (long double)((int)(i % 13) - 6) / 3;
            lb[i] = (long double)((int)(i % 7) - 3) * 1.25L;
            long double a = la[i], b = lb[i];
            lr[i] = op == BRAID_KOP_SUM ? b + a : op == BRAID_KOP_PROD ? b * a
                  : op == BRAID_KOP_MIN ? (b < a ? b : a) : (b > a ? b : a);
        }
        braid_kernel_lookup(BRAID_KT_LDOUBLE, op)(la, lb, N);
        for (size_t i = 0; i < N; i++) bad += lb[i] != lr[i];
    }
    ck_assert_uint_eq(bad, 0);
    /* complex: sum and product (inout * in), float and double */
    static float _Complex fa[N], fb[N], fr[N];
    static double _Complex da[N], db[N], dr[N];
    for (int prod = 0; prod < 2; prod++) {
        for (size_t i = 0; i < N; i++) {
            fa[i] = (float)(i % 9) - 4.5f + (float)(i % 5) * 0.25f * 1.0if;
            fb[i] = 1.5f - (float)(i % 4) + (float)(i % 3) * 1.0if;
            fr[i] = prod ? fb[i] * fa[i] : fb[i] + fa[i];
            da[i] = (double)(i % 11) * 0.1 - 2.0 * 1.0i * (double)(i % 3);
            db[i] = 3.0 + (double)(i % 6) * 1.0i;
            dr[i] = prod ? db[i] * da[i] : db[i] + da[i];
        }
        braid_kop_t op = prod ? BRAID_KOP_PROD : BRAID_KOP_SUM;
        braid_kernel_lookup(BRAID_KT_CFLOAT, op)(fa, fb, N);
        braid_kernel_lookup(BRAID_KT_CDOUBLE, op)(da, db, N);
        for (size_t i = 0; i < N; i++) {
            bool off = 0 != memcmp(&fb[i], &fr[i], sizeof fr[i]) || 0 != memcmp(&db[i], &dr[i], sizeof dr[i]);
            if (off && bad < 4)
                fprintf(stderr, "complex %s i=%zu: float %a%+ai want %a%+ai, double %a%+ai want %a%+ai\n",
                        prod ? "prod" : "sum", i, crealf(fb[i]), cimagf(fb[i]), crealf(fr[i]),
                        cimagf(fr[i]), creal(db[i]), cimag(db[i]), creal(dr[i]), cimag(dr[i]));
            bad += off;
        }
    }
    ck_assert_uint_eq(bad, 0);
    /* the pairs: equal values every third element, so the index decides */
    static dint_t xa[N], xb[N], xr[N];
    static sint_t sa[N], sb[N], sr[N];
    static ldint_t qa[N], qb[N], qr[N];
    static ff_t ga[N], gb[N], gr[N];
    for (int max = 0; max < 2; max++) {
        for (size_t i = 0; i < N; i++) {
            double va = i % 3 ? (double)(i % 17) : 5.0, vb = i % 3 ? (double)(i % 11) : 5.0;
            int ka = (int)(i % 7), kb = (int)(i % 5);
            xa[i] = (dint_t){ va, ka }; xb[i] = (dint_t){ vb, kb };
            sa[i] = (sint_t){ (short)va, ka }; sb[i] = (sint_t){ (short)vb, kb };
            qa[i] = (ldint_t){ va, ka }; qb[i] = (ldint_t){ vb, kb };
            ga[i] = (ff_t){ (float)va, (float)ka }; gb[i] = (ff_t){ (float)vb, (float)kb };
            xr[i] = xb[i]; sr[i] = sb[i]; qr[i] = qb[i]; gr[i] = gb[i];
            if (max) {
                LOC_REF(xa[i], xr[i], >); LOC_REF(sa[i], sr[i], >);
                LOC_REF(qa[i], qr[i], >); LOC_REF(ga[i], gr[i], >);
            } else {
                LOC_REF(xa[i], xr[i], <); LOC_REF(sa[i], sr[i], <);
                LOC_REF(qa[i], qr[i], <); LOC_REF(ga[i], gr[i], <);
            }
        }
        braid_kop_t op = max ? BRAID_KOP_MAXLOC : BRAID_KOP_MINLOC;
        braid_kernel_lookup(BRAID_KT_DOUBLE_INT, op)(xa, xb, N);
        braid_kernel_lookup(BRAID_KT_SHORT_INT, op)(sa, sb, N);
        braid_kernel_lookup(BRAID_KT_LDOUBLE_INT, op)(qa, qb, N);
        braid_kernel_lookup(BRAID_KT_FLOAT_FLOAT, op)(ga, gb, N);
        for (size_t i = 0; i < N; i++)
            bad += xb[i].v != xr[i].v || xb[i].k != xr[i].k || sb[i].v != sr[i].v ||
                   sb[i].k != sr[i].k || qb[i].v != qr[i].v || qb[i].k != qr[i].k ||
                   gb[i].v != gr[i].v || gb[i].k != gr[i].k;
    }
    ck_assert_uint_eq(bad, 0);
    /* the layouts are the C structs MPI lays the pairs out as */
    ck_assert_uint_eq(braid_ktype_size(BRAID_KT_DOUBLE_INT), sizeof(dint_t));
    ck_assert_uint_eq(braid_ktype_size(BRAID_KT_SHORT_INT), sizeof(sint_t));
    ck_assert_uint_eq(braid_ktype_size(BRAID_KT_LDOUBLE_INT), sizeof(ldint_t));
    /* what MPI does not define on them has no kernel; exactness */
    ck_assert(NULL == braid_kernel_lookup(BRAID_KT_CDOUBLE, BRAID_KOP_MIN));
    ck_assert(NULL == braid_kernel_lookup(BRAID_KT_DOUBLE_INT, BRAID_KOP_SUM));
    ck_assert(NULL == braid_kernel_lookup(BRAID_KT_LDOUBLE, BRAID_KOP_BAND));
    ck_assert(NULL == braid_kernel_lookup(BRAID_KT_INT32, BRAID_KOP_MAXLOC));
    for (int t = BRAID_KT_NTYPES; t < BRAID_KT_ALL; t++)
        ck_assert(braid_kernel_lookup(t, BRAID_KOP_SUM) || braid_kernel_lookup(t, BRAID_KOP_MAXLOC));
    ck_assert(!braid_kernel_is_exact(BRAID_KT_CDOUBLE, BRAID_KOP_PROD));
    ck_assert(!braid_kernel_is_exact(BRAID_KT_LDOUBLE, BRAID_KOP_SUM));
    ck_assert(braid_kernel_is_exact(BRAID_KT_LDOUBLE, BRAID_KOP_MAX));
    ck_assert(braid_kernel_is_exact(BRAID_KT_FLOAT_INT, BRAID_KOP_MINLOC));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_matches_reference);
    tcase_add_test(tc, test_lookup_null_exactly_for_undefined);
    tcase_add_test(tc, test_is_exact_table);
    tcase_add_test(tc, test_wraparound);
    tcase_add_test(tc, test_minmax_nan_and_zero);
    tcase_add_test(tc, test_logical_zero_one);
    tcase_add_test(tc, test_count_zero_and_names);
    tcase_add_test(tc, test_host_only_kernels);
    suite_add_tcase(s, tc);
    return unit_run_suite(s);
}
