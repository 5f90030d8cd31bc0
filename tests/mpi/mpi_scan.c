/*
 * mpi_scan.c - MPI_Scan and MPI_Exscan, their MPI_I* and _init forms,
 * against prefix reductions every rank computes from the inputs it knows.
 *
 * Rank s's element i is value(s, i). Per communicator (MPI_COMM_WORLD, its
 * reverse, and a split of the even and odd ranks) and per count {0, 1, 3,
 * P + 1, 1000, 40000}, for scan and exscan:
 *   - MPI_SUM of MPI_INT, not in place and in place;
 *   - MPI_MAXLOC of MPI_2INT (a pair type);
 *   - a user op that is not commutative (composition of affine maps
 *     x -> a x + b mod 2^32, on pairs of unsigned): rank order must hold;
 *     also as a resized type whose holes must keep their values;
 *   - three MPI_Iscan / MPI_Iexscan outstanding, waited for in reverse;
 *   - MPI_Scan_init / MPI_Exscan_init started three times with new values;
 *   - on MPI_COMM_WORLD and its reverse, counts 1, P + 1 and 1000: every
 *     predefined type (pair and complex types among them) with every op
 *     MPI allows on it, against MPI_Reduce_local folded in rank order.
 * Exscan's rank 0 result is undefined in MPI and not checked.
 */
#include <stdint.h>

#include "mpi_test_common.h"
#include "mpi_persistent.h"

#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define Scan_init MPIX_Scan_init
#define Exscan_init MPIX_Exscan_init
#else
#define Scan_init MPI_Scan_init
#define Exscan_init MPI_Exscan_init
#endif

static int value(int s, int i, int salt) { return s * 7919 + (i % 1013) - 500 + salt; }

/* the affine map of rank s, element i */
typedef struct { unsigned a, b; } affine_t;
static affine_t affine(int s, int i)
{
    affine_t f = { 2u * (unsigned)(s + i) + 1u, (unsigned)(s * 31 + i) };
    return f;
}

/* inout = in then inout (in is the lower rank's); the elements lie one
 * extent of *dt apart (dt NULL: adjacent) */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    MPI_Aint lb, extent = sizeof(affine_t);
    if (NULL != dt) MPI_Type_get_extent(*dt, &lb, &extent);
    size_t stride = (size_t)extent / sizeof(affine_t);
    affine_t *u = in, *v = inout;
    for (size_t i = 0; i < (size_t)*len * stride; i += stride) {
        affine_t r = { u[i].a * v[i].a, u[i].b * v[i].a + v[i].b };
        v[i] = r;
    }
}

typedef struct { int v, i; } pair_t;

typedef struct {
    MPI_Comm comm;
    int P, me, n;
    int ex;                /* exscan */
} run_t;

/* ranks whose inputs enter this rank's result: [0, upto) */
static int upto(const run_t *t) { return t->ex ? t->me : t->me + 1; }

static void check_sum(const run_t *t, const int *r, int stride, int salt, const char *what)
{
    if (0 == upto(t)) return;
    long bad = 0;
    for (int i = 0; i < t->n; i++) {
        long want = 0;
        for (int s = 0; s < upto(t); s++) want += value(s, i, salt);
        bad += r[(size_t)i * stride] != want;
    }
    mt_check(0 == bad, "%s%s: P=%d rank=%d n=%d: %ld wrong", t->ex ? "ex" : "", what, t->P, t->me,
             t->n, bad);
}

static void fill(const run_t *t, int *b, int stride, int salt)
{
    for (int i = 0; i < t->n; i++) b[(size_t)i * stride] = value(t->me, i, salt);
}

static int prefix(const run_t *t, const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op)
{
    return t->ex ? MPI_Exscan(s, r, n, dt, op, t->comm) : MPI_Scan(s, r, n, dt, op, t->comm);
}

static void plain(const run_t *t, size_t len)
{
    int *s = malloc(len * sizeof(int)), *r = malloc(len * sizeof(int)), *s0 = malloc(len * sizeof(int));
    fill(t, s, 1, 0);
    memcpy(s0, s, len * sizeof(int));
    prefix(t, s, r, t->n, MPI_INT, MPI_SUM);
    check_sum(t, r, 1, 0, "scan sum");
    mt_check(0 == memcmp(s, s0, len * sizeof(int)), "scan: send buffer changed");
    fill(t, r, 1, 1);
    prefix(t, MPI_IN_PLACE, r, t->n, MPI_INT, MPI_SUM);
    check_sum(t, r, 1, 1, "scan sum in place");

    free(s);
    free(r);
    free(s0);
}

static void pairs_and_user_op(const run_t *t, size_t len)
{
    pair_t *ps = malloc(len * sizeof *ps), *pr = malloc(len * sizeof *pr);
    for (int i = 0; i < t->n; i++) ps[i] = (pair_t){ (t->me * 13 + i) % 5, t->me };
    prefix(t, ps, pr, t->n, MPI_2INT, MPI_MAXLOC);
    long bad = 0;
    for (int i = 0; i < t->n && upto(t) > 0; i++) {
        pair_t w = { (0 * 13 + i) % 5, 0 };
        for (int s = 1; s < upto(t); s++) {
            int v = (s * 13 + i) % 5;
            if (v > w.v) w = (pair_t){ v, s };
        }
        bad += pr[i].v != w.v || pr[i].i != w.i;
    }
    mt_check(0 == bad, "%sscan maxloc: P=%d rank=%d n=%d: %ld wrong", t->ex ? "ex" : "", t->P,
             t->me, t->n, bad);
    free(ps);
    free(pr);

    MPI_Op op;
    MPI_Op_create(compose, 0, &op);
    for (int holes = 0; holes < 2; holes++) {
        /* holes: each pair is followed by two unsigned that must keep their values */
        int stride = holes ? 2 : 1;
        MPI_Datatype pairu, aff;
        MPI_Type_contiguous(2, MPI_UNSIGNED, &pairu);
        MPI_Type_create_resized(pairu, 0, (MPI_Aint)(stride * sizeof(affine_t)), &aff);
        MPI_Type_commit(&aff);
        MPI_Type_free(&pairu);
        affine_t *as = malloc(stride * len * sizeof *as), *ar = malloc(stride * len * sizeof *ar);
        for (size_t i = 0; i < stride * len; i++) ar[i] = (affine_t){ 7u, 7u };
        for (int i = 0; i < t->n; i++) as[(size_t)i * stride] = affine(t->me, i);
        prefix(t, as, ar, t->n, aff, op);
        bad = 0;
        long written = 0;
        for (int i = 0; i < t->n && upto(t) > 0; i++) {
            affine_t w = affine(0, i);
            for (int s = 1; s < upto(t); s++) {
                affine_t v = affine(s, i);
                int one = 1;
                compose(&w, &v, &one, NULL);
                w = v;
            }
            bad += ar[(size_t)i * stride].a != w.a || ar[(size_t)i * stride].b != w.b;
        }
        for (size_t i = 1; holes && i < stride * len; i += 2) written += ar[i].a != 7u || ar[i].b != 7u;
        mt_check(0 == bad && 0 == written,
                 "%sscan non-commutative%s: P=%d rank=%d n=%d: %ld wrong, %ld holes written",
                 t->ex ? "ex" : "", holes ? " with holes" : "", t->P, t->me, t->n, bad, written);
        MPI_Type_free(&aff);
        free(as);
        free(ar);
    }
    MPI_Op_free(&op);
}

static void requests(const run_t *t, size_t len)
{
    int *sb[3], *rb[3];
    MPI_Request req[3];
    for (int k = 0; k < 3; k++) {
        sb[k] = malloc(len * sizeof(int));
        rb[k] = malloc(len * sizeof(int));
        fill(t, sb[k], 1, 10 + k);
        if (t->ex) MPI_Iexscan(sb[k], rb[k], t->n, MPI_INT, MPI_SUM, t->comm, &req[k]);
        else MPI_Iscan(sb[k], rb[k], t->n, MPI_INT, MPI_SUM, t->comm, &req[k]);
    }
    for (int k = 2; k >= 0; k--) {
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        check_sum(t, rb[k], 1, 10 + k, "iscan");
    }
    MPI_Request preq;
    if (t->ex) Exscan_init(sb[0], rb[0], t->n, MPI_INT, MPI_SUM, t->comm, MPI_INFO_NULL, &preq);
    else Scan_init(sb[0], rb[0], t->n, MPI_INT, MPI_SUM, t->comm, MPI_INFO_NULL, &preq);
    for (int round = 0; round < 3; round++) {
        fill(t, sb[0], 1, 20 + round);
        MPI_Start(&preq);
        MPI_Wait(&preq, MPI_STATUS_IGNORE);
        check_sum(t, rb[0], 1, 20 + round, "scan_init");
    }
    MPI_Request_free(&preq);
    for (int k = 0; k < 3; k++) {
        free(sb[k]);
        free(rb[k]);
    }
}

/* ------------------------------------------------------------------ */
/* every predefined type with every op MPI allows on it               */
/* ------------------------------------------------------------------ */

enum kind { K_SINT, K_UINT, K_FLOAT, K_LDOUBLE, K_BOOL, K_BYTE, K_CPLX, K_PAIR };

/* small integer inputs, so that every prefix is exact in every type (a
 * sum of 9 ranks stays below 2^7, a product below 2^4) */
static int input(MPI_Op op, enum kind k, int s, int i)
{
    if (MPI_SUM == op) return (s * 7 + i * 3) % 5 + 1;
    if (MPI_PROD == op) return (s + i) % 7 == 0 ? 2 : K_SINT == k && (s + 2 * i) % 5 == 1 ? -1 : 1;
    if (MPI_MIN == op || MPI_MAX == op) return (s * 13 + i * 7) % 50 - (K_UINT == k ? 0 : 25);
    if (MPI_LAND == op || MPI_LOR == op || MPI_LXOR == op) return (s + i) % 3 ? 1 : 0;
    if (MPI_MINLOC == op || MPI_MAXLOC == op) return (s * 13 + i) % 5;
    return (s * 37 + i * 11) & 0x7f;   /* bitwise */
}

#define SETTER(tag, ctype)                                                                    \
    static void set_##tag(void *p, int v, int s) { (void)s, *(ctype *)p = (ctype)v; }          \
    static int eq_##tag(const void *a, const void *b) { return *(const ctype *)a == *(const ctype *)b; }
SETTER(i8, int8_t)
SETTER(u8, uint8_t)
SETTER(sh, short)
SETTER(ush, unsigned short)
SETTER(in, int)
SETTER(un, unsigned)
SETTER(lo, long)
SETTER(ulo, unsigned long)
SETTER(ll, long long)
SETTER(ull, unsigned long long)
SETTER(i16, int16_t)
SETTER(u16, uint16_t)
SETTER(i32, int32_t)
SETTER(u32, uint32_t)
SETTER(i64, int64_t)
SETTER(u64, uint64_t)
SETTER(fl, float)
SETTER(db, double)
SETTER(ld, long double)
SETTER(bo, _Bool)
SETTER(by, unsigned char)

/* complex: v + (v % 3) i for sums, 1 or 1 + i for products */
#define CSETTER(tag, ctype, re)                                                                   \
    static void set_##tag(void *p, int v, int s)                                                  \
    {                                                                                             \
        re *z = p;                                                                                \
        z[0] = (re)(v > 0 ? v : 1);                                                               \
        z[1] = (re)(v % 3);                                                                       \
        (void)s;                                                                                  \
    }                                                                                             \
    static int eq_##tag(const void *a, const void *b)                                             \
    {                                                                                             \
        const re *x = a, *y = b;                                                                  \
        return x[0] == y[0] && x[1] == y[1];                                                      \
    }
CSETTER(cf, float _Complex, float)
CSETTER(cd, double _Complex, double)
CSETTER(cld, long double _Complex, long double)

/* pairs: the value v at index s (the rank); compared field by field, the
 * padding some of them have being no part of the type */
#define PSETTER(tag, vtype)                                                                       \
    typedef struct { vtype v; int i; } tag##_t;                                                   \
    static void set_##tag(void *p, int v, int s) { ((tag##_t *)p)->v = (vtype)v, ((tag##_t *)p)->i = s; } \
    static int eq_##tag(const void *a, const void *b)                                             \
    {                                                                                             \
        const tag##_t *x = a, *y = b;                                                             \
        return x->v == y->v && x->i == y->i;                                                      \
    }
PSETTER(p2i, int)
PSETTER(pfi, float)
PSETTER(pdi, double)
PSETTER(pli, long)
PSETTER(psi, short)
PSETTER(pldi, long double)

typedef struct {
    const char *name;
    MPI_Datatype dt;
    enum kind kind;
    size_t size;   /* the C object's size (the type's extent) */
    void (*set)(void *p, int v, int s);
    int (*eq)(const void *a, const void *b);
} ttype_t;

#define T(tag, dt, kind, ctype) { #dt, dt, kind, sizeof(ctype), set_##tag, eq_##tag }
static ttype_t ttypes(int k)
{
    const ttype_t all[] = {
        T(i8, MPI_INT8_T, K_SINT, int8_t), T(u8, MPI_UINT8_T, K_UINT, uint8_t),
        T(sh, MPI_SHORT, K_SINT, short), T(ush, MPI_UNSIGNED_SHORT, K_UINT, unsigned short),
        T(in, MPI_INT, K_SINT, int), T(un, MPI_UNSIGNED, K_UINT, unsigned),
        T(lo, MPI_LONG, K_SINT, long), T(ulo, MPI_UNSIGNED_LONG, K_UINT, unsigned long),
        T(ll, MPI_LONG_LONG, K_SINT, long long),
        T(ull, MPI_UNSIGNED_LONG_LONG, K_UINT, unsigned long long),
        T(i16, MPI_INT16_T, K_SINT, int16_t), T(u16, MPI_UINT16_T, K_UINT, uint16_t),
        T(i32, MPI_INT32_T, K_SINT, int32_t), T(u32, MPI_UINT32_T, K_UINT, uint32_t),
        T(i64, MPI_INT64_T, K_SINT, int64_t), T(u64, MPI_UINT64_T, K_UINT, uint64_t),
        T(fl, MPI_FLOAT, K_FLOAT, float), T(db, MPI_DOUBLE, K_FLOAT, double),
        T(ld, MPI_LONG_DOUBLE, K_LDOUBLE, long double), T(bo, MPI_C_BOOL, K_BOOL, _Bool),
        T(by, MPI_BYTE, K_BYTE, unsigned char),
        T(cf, MPI_C_FLOAT_COMPLEX, K_CPLX, float _Complex),
        T(cd, MPI_C_DOUBLE_COMPLEX, K_CPLX, double _Complex),
        T(cld, MPI_C_LONG_DOUBLE_COMPLEX, K_CPLX, long double _Complex),
        T(p2i, MPI_2INT, K_PAIR, p2i_t), T(pfi, MPI_FLOAT_INT, K_PAIR, pfi_t),
        T(pdi, MPI_DOUBLE_INT, K_PAIR, pdi_t), T(pli, MPI_LONG_INT, K_PAIR, pli_t),
        T(psi, MPI_SHORT_INT, K_PAIR, psi_t), T(pldi, MPI_LONG_DOUBLE_INT, K_PAIR, pldi_t),
    };
    const ttype_t none = { NULL, MPI_DATATYPE_NULL, K_SINT, 0, NULL, NULL };
    return k < (int)(sizeof all / sizeof *all) ? all[k] : none;
}
#undef T

static int allowed(enum kind k, MPI_Op op)
{
    int arith = MPI_SUM == op || MPI_PROD == op, order = MPI_MIN == op || MPI_MAX == op;
    int logic = MPI_LAND == op || MPI_LOR == op || MPI_LXOR == op;
    int bits = MPI_BAND == op || MPI_BOR == op || MPI_BXOR == op;
    switch (k) {
    case K_SINT:
    case K_UINT: return arith || order || logic || bits;
    case K_FLOAT:
    case K_LDOUBLE: return arith || order;
    case K_BOOL: return logic;
    case K_BYTE: return bits;
    case K_CPLX: return arith;
    case K_PAIR: return MPI_MINLOC == op || MPI_MAXLOC == op;
    }
    return 0;
}

static void fill_typed(const ttype_t *ty, MPI_Op op, unsigned char *b, int s, int n)
{
    memset(b, 0, (size_t)n * ty->size);
    for (int i = 0; i < n; i++) ty->set(b + (size_t)i * ty->size, input(op, ty->kind, s, i), s);
}

/* the reference by MPI_Reduce_local over the inputs of ranks [0, upto):
 * x_0 op (x_1 op (... x_{upto-1})) */
static void one_typed(const run_t *t, const ttype_t *ty, MPI_Op op, const char *opname)
{
    size_t len = (size_t)t->n * ty->size;
    unsigned char *in = malloc(len), *out = malloc(len), *ref = malloc(len), *x = malloc(len);
    fill_typed(ty, op, in, t->me, t->n);
    memset(out, 0, len);
    prefix(t, in, out, t->n, ty->dt, op);
    int up = upto(t);
    if (up > 0) {
        fill_typed(ty, op, ref, up - 1, t->n);
        for (int s = up - 2; s >= 0; s--) {
            fill_typed(ty, op, x, s, t->n);
            MPI_Reduce_local(x, ref, t->n, ty->dt, op);
        }
        long bad = 0;
        int first = -1;
        for (int i = 0; i < t->n; i++)
            if (!ty->eq(out + (size_t)i * ty->size, ref + (size_t)i * ty->size) && 0 == bad++) first = i;
        mt_check(0 == bad, "%sscan %s %s: P=%d rank=%d n=%d: %ld wrong, the first at %d",
                 t->ex ? "ex" : "", ty->name, opname, t->P, t->me, t->n, bad, first);
    }
    free(in);
    free(out);
    free(ref);
    free(x);
}

static void predefined(const run_t *t)
{
    const MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR,
                           MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MINLOC, MPI_MAXLOC };
    const char *names[] = { "SUM", "PROD", "MIN", "MAX", "LAND", "LOR",
                            "LXOR", "BAND", "BOR", "BXOR", "MINLOC", "MAXLOC" };
    for (int k = 0; NULL != ttypes(k).name; k++) {
        ttype_t ty = ttypes(k);
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
            if (allowed(ty.kind, ops[o])) one_typed(t, &ty, ops[o], names[o]);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int P;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm comms[MT_NCOMMS];
    mt_comms(comms);
    int counts[] = { 0, 1, 3, P + 1, 1000, 40000 };
    for (int c = 0; c < MT_NCOMMS; c++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
            for (int ex = 0; ex < 2; ex++) {
                run_t t = { comms[c], 0, 0, counts[k], ex };
                MPI_Comm_size(t.comm, &t.P);
                MPI_Comm_rank(t.comm, &t.me);
                size_t len = (size_t)(t.n > 0 ? t.n : 1);
                plain(&t, len);
                pairs_and_user_op(&t, len);
                requests(&t, len);
                if (c < 2 && (1 == t.n || t.P + 1 == t.n || 1000 == t.n)) predefined(&t);
            }
    mt_comms_free(comms);
    return mt_finish("mpi_scan");
}
