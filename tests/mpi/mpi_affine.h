/*
 * mpi_affine.h - a non-commutative user op for the tests: composition of
 * affine maps x -> a x + b on unsigned pairs, in rank order, with each
 * rank's input and the reference of a reduction over P ranks.
 */
#ifndef MPI_AFFINE_H
#define MPI_AFFINE_H

#include <mpi.h>
#include <stddef.h>

typedef struct { unsigned a, b; } affine_t;
static MPI_Datatype affine_type;
static MPI_Op affine_op;

static void affine_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    affine_t *f = in, *g = inout;   /* in: the lower ranks' map, applied first */
    for (int i = 0; i < *len; i++) {
        affine_t h = { f[i].a * g[i].a, g[i].a * f[i].b + g[i].b };
        g[i] = h;
    }
}

/* rank r's map at element i of call k */
static inline affine_t affine_of(int r, size_t i, int k)
{
    affine_t f = { (unsigned)(2 * r + 3 + (int)(i % 5) + k), (unsigned)(r * 11 + (int)i + k) };
    return f;
}

/* the reduction over ranks 0 .. P-1 */
static inline affine_t affine_ref(int P, size_t i, int k)
{
    affine_t acc = affine_of(0, i, k);
    for (int r = 1; r < P; r++) {
        affine_t g = affine_of(r, i, k);
        int one = 1;
        affine_fn(&acc, &g, &one, NULL);
        acc = g;
    }
    return acc;
}

static inline void affine_setup(void)
{
    MPI_Type_contiguous(2, MPI_UNSIGNED, &affine_type);
    MPI_Type_commit(&affine_type);
    MPI_Op_create(affine_fn, 0, &affine_op);
}

static inline void affine_free(void)
{
    MPI_Op_free(&affine_op);
    MPI_Type_free(&affine_type);
}

#endif
