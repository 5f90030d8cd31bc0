/*
 * coll_braid_op.c - binding an MPI (datatype, op) pair to braid's reduction
 * callback: braid's own kernels for every predefined pair (vectorised for
 * the C and Fortran integer and floating types; long double, complex and
 * the MINLOC/MAXLOC pairs too), PMPI_Reduce_local only for derived types
 * and user ops.
 *
 * Everything here depends only on the datatype and the op, which MPI
 * requires to be the same on every rank of a reduction, so the bindings
 * (and whether the result is order-independent) agree across ranks.
 */
#include "coll_braid_op.h"
#include "coll_braid_module.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <wchar.h>

#include "braid_kernels.h"

typedef struct { MPI_Op op; braid_kop_t kop; } op_map_t;

static braid_ktype_t int_ktype(size_t size, bool is_signed)
{
    switch (size) {
    case 1: return is_signed ? BRAID_KT_INT8 : BRAID_KT_UINT8;
    case 2: return is_signed ? BRAID_KT_INT16 : BRAID_KT_UINT16;
    case 4: return is_signed ? BRAID_KT_INT32 : BRAID_KT_UINT32;
    case 8: return is_signed ? BRAID_KT_INT64 : BRAID_KT_UINT64;
    default: return BRAID_KT_ALL;
    }
}

/* A predefined type of the size MPI gives it (the Fortran types' sizes
 * are the Fortran compiler's) */
static size_t type_size(MPI_Datatype t)
{
    int size = 0;
    PMPI_Type_size(t, &size);
    return size > 0 ? (size_t)size : 0;
}

/* The braid kernel type of a predefined datatype, or BRAID_KT_ALL
 * (no kernel). Every predefined type Open MPI reduces is here: the C and
 * Fortran integers (MPI_CHAR as C's char: signed on x86), the floating
 * types, long double, the complex types, the logical types and the pairs
 * of MINLOC/MAXLOC. */
static braid_ktype_t kernel_type(MPI_Datatype t)
{
    static const struct { MPI_Datatype type; size_t size; int is_signed; } ints[] = {
        { MPI_CHAR, sizeof(char), CHAR_MIN < 0 },
        { MPI_SIGNED_CHAR, sizeof(signed char), 1 },
        { MPI_UNSIGNED_CHAR, sizeof(unsigned char), 0 },
        { MPI_BYTE, 1, 0 },
        { MPI_WCHAR, sizeof(wchar_t), WCHAR_MIN < 0 },
        { MPI_SHORT, sizeof(short), 1 },
        { MPI_UNSIGNED_SHORT, sizeof(unsigned short), 0 },
        { MPI_INT, sizeof(int), 1 },
        { MPI_UNSIGNED, sizeof(unsigned), 0 },
        { MPI_LONG, sizeof(long), 1 },
        { MPI_UNSIGNED_LONG, sizeof(unsigned long), 0 },
        { MPI_LONG_LONG_INT, sizeof(long long), 1 },
        { MPI_UNSIGNED_LONG_LONG, sizeof(unsigned long long), 0 },
        { MPI_INT8_T, 1, 1 },
        { MPI_UINT8_T, 1, 0 },
        { MPI_INT16_T, 2, 1 },
        { MPI_UINT16_T, 2, 0 },
        { MPI_INT32_T, 4, 1 },
        { MPI_UINT32_T, 4, 0 },
        { MPI_INT64_T, 8, 1 },
        { MPI_UINT64_T, 8, 0 },
        { MPI_AINT, sizeof(MPI_Aint), 1 },
        { MPI_OFFSET, sizeof(MPI_Offset), 1 },
        { MPI_COUNT, sizeof(MPI_Count), 1 },
        /* Fortran: sizes from MPI (0); the sized ones only where Open MPI
         * was built with a Fortran compiler that has them */
        { MPI_INTEGER, 0, 1 },
#ifdef MPI_INTEGER1
        { MPI_INTEGER1, 0, 1 },
#endif
#ifdef MPI_INTEGER2
        { MPI_INTEGER2, 0, 1 },
#endif
#ifdef MPI_INTEGER4
        { MPI_INTEGER4, 0, 1 },
#endif
#ifdef MPI_INTEGER8
        { MPI_INTEGER8, 0, 1 },
#endif
        { MPI_LOGICAL, 0, 1 },   /* .TRUE. is 1: logical ops as on an integer */
    };
    static const struct { MPI_Datatype type; braid_ktype_t kt; } others[] = {
        { MPI_FLOAT, BRAID_KT_FLOAT }, { MPI_DOUBLE, BRAID_KT_DOUBLE },
        { MPI_REAL, BRAID_KT_FLOAT }, { MPI_DOUBLE_PRECISION, BRAID_KT_DOUBLE },
#ifdef MPI_REAL4
        { MPI_REAL4, BRAID_KT_FLOAT },
#endif
#ifdef MPI_REAL8
        { MPI_REAL8, BRAID_KT_DOUBLE },
#endif
        { MPI_LONG_DOUBLE, BRAID_KT_LDOUBLE },
        { MPI_C_FLOAT_COMPLEX, BRAID_KT_CFLOAT }, { MPI_C_DOUBLE_COMPLEX, BRAID_KT_CDOUBLE },
        { MPI_C_LONG_DOUBLE_COMPLEX, BRAID_KT_CLDOUBLE },
        { MPI_COMPLEX, BRAID_KT_CFLOAT }, { MPI_DOUBLE_COMPLEX, BRAID_KT_CDOUBLE },
        { MPI_FLOAT_INT, BRAID_KT_FLOAT_INT }, { MPI_DOUBLE_INT, BRAID_KT_DOUBLE_INT },
        { MPI_LONG_INT, BRAID_KT_LONG_INT }, { MPI_2INT, BRAID_KT_INT_INT },
        { MPI_SHORT_INT, BRAID_KT_SHORT_INT }, { MPI_LONG_DOUBLE_INT, BRAID_KT_LDOUBLE_INT },
        { MPI_2REAL, BRAID_KT_FLOAT_FLOAT }, { MPI_2DOUBLE_PRECISION, BRAID_KT_DOUBLE_DOUBLE },
        { MPI_2INTEGER, BRAID_KT_INT_INT },
    };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        if (t == ints[i].type) {
            size_t size = 0 != ints[i].size ? ints[i].size : type_size(t);
            return int_ktype(size, ints[i].is_signed);
        }
    if (t == MPI_C_BOOL && sizeof(_Bool) == 1) return BRAID_KT_BOOL;
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
        if (t == others[i].type) {
            /* the C layout braid's kernel assumes is the one MPI gives the type */
            MPI_Aint lb, extent;
            PMPI_Type_get_extent(t, &lb, &extent);
            size_t ks = braid_ktype_size(others[i].kt);
            return 0 == lb && (size_t)extent == ks && type_size(t) <= ks ? others[i].kt
                                                                          : BRAID_KT_ALL;
        }
    return BRAID_KT_ALL;
}

static braid_kop_t kernel_op(MPI_Op op)
{
    static const op_map_t ops[] = {
        { MPI_SUM, BRAID_KOP_SUM },   { MPI_PROD, BRAID_KOP_PROD }, { MPI_MIN, BRAID_KOP_MIN },
        { MPI_MAX, BRAID_KOP_MAX },   { MPI_LAND, BRAID_KOP_LAND }, { MPI_LOR, BRAID_KOP_LOR },
        { MPI_LXOR, BRAID_KOP_LXOR }, { MPI_BAND, BRAID_KOP_BAND }, { MPI_BOR, BRAID_KOP_BOR },
        { MPI_BXOR, BRAID_KOP_BXOR }, { MPI_MAXLOC, BRAID_KOP_MAXLOC },
        { MPI_MINLOC, BRAID_KOP_MINLOC },
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (op == ops[i].op) return ops[i].kop;
    return BRAID_KOP_ALL;
}

/* ---- callbacks ---- */

static void kernel_reduce(const void *in, void *inout, size_t n, void *arg)
{
    mca_coll_braid_op_t *b = arg;
    b->kernel(in, inout, n * b->kernel_elems);
}

/* PMPI_Reduce_local takes an int count: go in pieces for huge counts */
static void pmpi_reduce(const void *in, void *inout, size_t n, void *arg)
{
    mca_coll_braid_op_t *b = arg;
    const size_t piece = (size_t)INT_MAX / 2;
    while (n > 0) {
        size_t k = n < piece ? n : piece;
        PMPI_Reduce_local(in, inout, (int)k, b->dtype, b->op);
        in = (const char *)in + k * b->extent;
        inout = (char *)inout + k * b->extent;
        n -= k;
    }
}

static bool is_integer_like(MPI_Datatype t)
{
    braid_ktype_t k = kernel_type(t);
    return k < BRAID_KT_NTYPES && k != BRAID_KT_FLOAT && k != BRAID_KT_DOUBLE;
}

void mca_coll_braid_op_bind(mca_coll_braid_op_t *b, MPI_Datatype dtype, MPI_Op op)
{
    MPI_Aint lb, extent;
    int commute = 0;
    PMPI_Type_get_extent(dtype, &lb, &extent);
    PMPI_Op_commutative(op, &commute);
    b->dtype = dtype;
    b->op = op;
    b->extent = (size_t)extent;
    b->kernel = NULL;
    b->kernel_elems = 1;
    b->bop.arg = b;
    b->bop.commutative = commute != 0;

    braid_ktype_t kt = kernel_type(dtype);
    braid_kop_t ko = kernel_op(op);
    if (kt != BRAID_KT_ALL && ko != BRAID_KOP_ALL) b->kernel = braid_kernel_lookup(kt, ko);
    if (NULL != b->kernel) {
        b->bop.fn = kernel_reduce;
        b->exact = braid_kernel_is_exact(kt, ko);
        return;
    }
    b->bop.fn = pmpi_reduce;
    /* order-independent bits: predefined integer/logical/bitwise ops, min,
     * max and the loc ops; floating sums and user ops are not */
    b->exact = (op == MPI_MINLOC || op == MPI_MAXLOC || op == MPI_MIN || op == MPI_MAX ||
                op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR || op == MPI_LAND ||
                op == MPI_LOR || op == MPI_LXOR || op == MPI_REPLACE || op == MPI_NO_OP ||
                ((op == MPI_SUM || op == MPI_PROD) && is_integer_like(dtype)));
}

/* The bindings of the pairs with a braid kernel (predefined handles,
 * never freed), made once each and never changed until the component
 * closes: a call - or a request that yields - reads one in place, and
 * no later call on any communicator can change it under it. A list
 * pushed with a release store and read without a lock: a program reduces
 * few pairs. */
static mca_coll_braid_op_t *kernel_bindings;
static pthread_mutex_t kernel_bindings_lock = PTHREAD_MUTEX_INITIALIZER;

static const mca_coll_braid_op_t *kernel_binding(MPI_Datatype dtype, MPI_Op op)
{
    for (const mca_coll_braid_op_t *b = __atomic_load_n(&kernel_bindings, __ATOMIC_ACQUIRE);
         NULL != b; b = b->next)
        if (b->dtype == dtype && b->op == op) return b;
    return NULL;
}

/* The kernel binding of the pair, made on first use (NULL: the pair has
 * no kernel, or no memory) */
static const mca_coll_braid_op_t *kernel_binding_made(MPI_Datatype dtype, MPI_Op op)
{
    const mca_coll_braid_op_t *found = kernel_binding(dtype, op);
    if (NULL != found) return found;
    mca_coll_braid_op_t b;
    mca_coll_braid_op_bind(&b, dtype, op);
    if (NULL == b.kernel) return NULL;
    pthread_mutex_lock(&kernel_bindings_lock);
    mca_coll_braid_op_t *made = NULL;
    if (NULL == (found = kernel_binding(dtype, op)) && NULL != (made = malloc(sizeof(*made)))) {
        *made = b;
        made->bop.arg = made;
        made->next = kernel_bindings;
        __atomic_store_n(&kernel_bindings, made, __ATOMIC_RELEASE);
        found = made;
    }
    pthread_mutex_unlock(&kernel_bindings_lock);
    return found;
}

const mca_coll_braid_op_t *mca_coll_braid_op_miss(mca_coll_braid_module_t *m,
                                                  mca_coll_braid_op_t *own, MPI_Datatype dtype,
                                                  MPI_Op op, mca_coll_braid_op_t *storage)
{
    const mca_coll_braid_op_t *b = kernel_binding_made(dtype, op);
    if (NULL != b) {
        __atomic_store_n(&m->op_last, b, __ATOMIC_RELEASE);
        return b;
    }
    if (NULL == own) {
        mca_coll_braid_op_bind(storage, dtype, op);
        return storage;
    }
    if (own->dtype != dtype || own->op != op) mca_coll_braid_op_bind(own, dtype, op);
    return own;
}

void mca_coll_braid_op_fini(void)
{
    pthread_mutex_lock(&kernel_bindings_lock);
    for (mca_coll_braid_op_t *b = kernel_bindings, *n; NULL != b; b = n) {
        n = b->next;
        free(b);
    }
    kernel_bindings = NULL;
    pthread_mutex_unlock(&kernel_bindings_lock);
}
