/*
 * unit_ops.h - reduction callbacks and reference results for the
 * in-process allreduce / reduce / reduce_scatter tests.
 *
 * Inputs are deterministic per (rank, element); references are computed
 * locally in rank order 0, 1, ..., P-1, so a test can compare an algorithm's
 * result bit for bit.
 */
#ifndef UNIT_OPS_H
#define UNIT_OPS_H

#include <stdint.h>
#include <string.h>

#include "braid_algo.h"

/* ---- int64 sum (exact, commutative) ---- */
static void unit_sum_i64(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    const int64_t *a = in;
    int64_t *b = inout;
    for (size_t i = 0; i < n; i++) b[i] = a[i] + b[i];
}

static inline int64_t unit_input_i64(int rank, size_t i)
{
    return (int64_t)((i * 2654435761u + (size_t)rank * 40503u) % 100003u) - 50000;
}

/* ---- double sum (inexact: checks that every rank gets identical bits) ---- */
static void unit_sum_f64(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    const double *a = in;
    double *b = inout;
    for (size_t i = 0; i < n; i++) b[i] = a[i] + b[i];
}

static inline double unit_input_f64(int rank, size_t i)
{
    return 1.0 / (double)(1 + rank) + (double)(i % 97) * 1e-3 + (double)rank * 1e10;
}

/* ---- 2x2 integer matrix product (associative, NOT commutative) ----
 * element = 4 int64 (a b; c d), entries kept small mod 1000003. */
typedef struct unit_mat2 { int64_t a, b, c, d; } unit_mat2_t;
#define UNIT_MOD 1000003

static inline unit_mat2_t unit_mat2_mul(unit_mat2_t x, unit_mat2_t y)
{
    unit_mat2_t r;
    r.a = (x.a * y.a + x.b * y.c) % UNIT_MOD;
    r.b = (x.a * y.b + x.b * y.d) % UNIT_MOD;
    r.c = (x.c * y.a + x.d * y.c) % UNIT_MOD;
    r.d = (x.c * y.b + x.d * y.d) % UNIT_MOD;
    return r;
}

/* inout = in * inout: `in` is the lower-ranked operand (MPI's order) */
static void unit_matmul(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    const unit_mat2_t *a = in;
    unit_mat2_t *b = inout;
    for (size_t i = 0; i < n; i++) b[i] = unit_mat2_mul(a[i], b[i]);
}

static inline unit_mat2_t unit_input_mat2(int rank, size_t i)
{
    unit_mat2_t m = { (int64_t)(rank + 1), (int64_t)((i + 2) % 7), (int64_t)(rank % 3),
                      (int64_t)((i * 5 + (size_t)rank) % 11 + 1) };
    return m;
}

/* Fill one rank's input of `count` elements of the given kind. */
typedef enum { UNIT_OP_SUM_I64, UNIT_OP_SUM_F64, UNIT_OP_MATMUL } unit_op_kind_t;

static inline size_t unit_op_esize(unit_op_kind_t k)
{
    return k == UNIT_OP_MATMUL ? sizeof(unit_mat2_t) : 8;
}

static inline braid_op_t unit_op(unit_op_kind_t k)
{
    braid_op_t op;
    op.arg = NULL;
    op.commutative = (k != UNIT_OP_MATMUL);
    op.fn = k == UNIT_OP_SUM_I64 ? unit_sum_i64 : k == UNIT_OP_SUM_F64 ? unit_sum_f64 : unit_matmul;
    return op;
}

static inline void unit_fill(unit_op_kind_t k, int rank, void *buf, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (k == UNIT_OP_SUM_I64) ((int64_t *)buf)[i] = unit_input_i64(rank, i);
        else if (k == UNIT_OP_SUM_F64) ((double *)buf)[i] = unit_input_f64(rank, i);
        else ((unit_mat2_t *)buf)[i] = unit_input_mat2(rank, i);
    }
}

/* Reference: x_0 op x_1 op ... op x_{P-1}, elements [first, first+count).
 * For SUM_F64 the order matters for bits; tests of inexact ops compare
 * ranks against each other and against this reference with a tolerance. */
static inline void unit_reference(unit_op_kind_t k, int P, size_t first, size_t count, void *out)
{
    size_t es = unit_op_esize(k);
    unsigned char tmp[sizeof(unit_mat2_t)];
    for (size_t i = 0; i < count; i++) {
        unsigned char *o = (unsigned char *)out + i * es;
        /* right fold from the top keeps `in` as the lower-ranked operand */
        if (k == UNIT_OP_SUM_I64) *(int64_t *)o = unit_input_i64(P - 1, first + i);
        else if (k == UNIT_OP_SUM_F64) *(double *)o = unit_input_f64(P - 1, first + i);
        else *(unit_mat2_t *)o = unit_input_mat2(P - 1, first + i);
        for (int r = P - 2; r >= 0; r--) {
            if (k == UNIT_OP_SUM_I64) { int64_t v = unit_input_i64(r, first + i); memcpy(tmp, &v, 8); }
            else if (k == UNIT_OP_SUM_F64) { double v = unit_input_f64(r, first + i); memcpy(tmp, &v, 8); }
            else { unit_mat2_t v = unit_input_mat2(r, first + i); memcpy(tmp, &v, sizeof v); }
            unit_op(k).fn(tmp, o, 1, NULL);
        }
    }
}

#endif
