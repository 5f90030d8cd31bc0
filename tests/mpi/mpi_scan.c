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
 *   - MPI_Scan_init / MPI_Exscan_init started three times with new values.
 * Exscan's rank 0 result is undefined in MPI and not checked.
 */
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
            }
    mt_comms_free(comms);
    return mt_finish("mpi_scan");
}
