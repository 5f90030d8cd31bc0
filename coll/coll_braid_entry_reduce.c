/*
 * coll_braid_entry_reduce.c - the entry points of the reductions:
 * MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block and
 * MPI_Reduce_scatter. Each binds the (datatype, op) pair to a reduction,
 * places the buffers and hands the call to the dispatch
 * (coll_braid_dispatch.c). Barrier, bcast and allgather are in
 * coll_braid_entry_move.c.
 *
 * Buffers reach the algorithms in one of two layouts:
 *  - direct: the datatype is dense (contiguous, extent == size, lb == 0), so
 *    an element is `size` bytes and the user's buffers are used as they are;
 *  - staged: any other datatype whose elements each lie inside their extent
 *    (pair types such as MPI_DOUBLE_INT, vectors, resized structs). The
 *    input is copied into scratch laid out like the user's buffer, the
 *    algorithm runs in place there with extent-sized elements (holes travel
 *    but are never reduced), and only the datatype's own bytes are copied
 *    back, so holes in the user's receive buffer stay untouched.
 * Anything else goes to the previous module. Every choice depends only on
 * the datatype, the op, the communicator and count x type size, which MPI
 * requires to agree across ranks.
 */
#include "coll_braid.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"

typedef enum { LAYOUT_DIRECT, LAYOUT_STAGED, LAYOUT_UNSUPPORTED } layout_kind_t;

typedef struct layout {
    layout_kind_t kind;
    size_t extent;          /* bytes per element in the algorithm's view */
    ptrdiff_t true_lb;
    size_t true_extent;
} layout_t;

static layout_t classify(MPI_Datatype dtype, size_t count)
{
    layout_t l = { LAYOUT_UNSUPPORTED, 0, 0, 0 };
    size_t size = 0;
    ptrdiff_t lb, extent, true_lb, true_extent;
    ompi_datatype_type_size(dtype, &size);
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    l.true_lb = true_lb;
    l.true_extent = (size_t)true_extent;
    if (extent <= 0) return l;
    l.extent = (size_t)extent;
    if ((size_t)extent == size && 0 == lb && 0 == true_lb &&
        mca_coll_braid_is_contiguous(dtype, count > 0 ? count : 1)) {
        l.kind = LAYOUT_DIRECT;
    } else if (true_lb >= 0 && true_lb + true_extent <= extent) {
        l.kind = LAYOUT_STAGED;
    }
    return l;
}

/* bytes spanned by count elements, from the first element's first byte */
static size_t span_bytes(const layout_t *l, size_t count)
{
    return count ? (count - 1) * l->extent + l->true_extent : 0;
}

/* Copy count elements of user input into scratch slot `slot`, in the user's
 * layout. Returns the scratch base, or NULL when out of memory. */
static void *stage_in(mca_coll_braid_module_t *m, int slot, const layout_t *l, const void *in,
                      size_t count, bool in_dev)
{
    char *base = braid_scratch_get(mca_coll_braid_scratch(m), slot, count * l->extent + 64);
    if (NULL == base) return NULL;
    if (NULL != in && count > 0 &&
        BRAID_OK != mca_coll_braid_copy(base + l->true_lb, (const char *)in + l->true_lb,
                                        span_bytes(l, count), in_dev))
        return NULL;
    return base;
}

/* Device buffers: read the span into host scratch, write the datatype's
 * bytes there, and copy the span back (holes keep their values). */
static int stage_out(mca_coll_braid_module_t *m, MPI_Datatype dtype, size_t count, void *userbuf,
                     const void *base, bool out_dev)
{
    char *dst = userbuf;
    layout_t l = classify(dtype, count);
    size_t span = span_bytes(&l, count);
    if (out_dev) {
        dst = braid_scratch_get(mca_coll_braid_scratch(m), BRAID_SCRATCH_GLUE_OUT, count * l.extent + 64);
        if (NULL == dst) return MPI_ERR_NO_MEM;
        if (BRAID_OK != mca_coll_braid_copy(dst + l.true_lb, (char *)userbuf + l.true_lb, span, true))
            return MPI_ERR_OTHER;
    }
    int rc = ompi_datatype_copy_content_same_ddt(dtype, count, dst, (char *)base);
    if (OMPI_SUCCESS != rc) return MPI_ERR_INTERN;
    if (out_dev &&
        BRAID_OK != mca_coll_braid_copy((char *)userbuf + l.true_lb, dst + l.true_lb, span, true))
        return MPI_ERR_OTHER;
    return MPI_SUCCESS;
}

static void bind_op(mca_coll_braid_call_t *call, const mca_coll_braid_op_t *bop, size_t count,
                    size_t esize)
{
    call->args.count = count;
    call->args.esize = esize;
    call->args.op = bop->bop;
    call->args.exact = bop->exact;
}

/* Point the algorithm at the user's buffers (direct layout; the result goes
 * to direct_rbuf) or at a staged copy of the input (staged layout). */
static int place_buffers(mca_coll_braid_module_t *m, const layout_t *l, braid_coll_args_t *a,
                         const void *sbuf, void *rbuf, void *direct_rbuf, size_t n)
{
    const void *in = (MPI_IN_PLACE == sbuf) ? NULL : sbuf;
    if (LAYOUT_DIRECT == l->kind) {
        a->sbuf = in;
        a->rbuf = direct_rbuf;
        return MPI_SUCCESS;
    }
    a->rbuf = stage_in(m, BRAID_SCRATCH_GLUE_IN, l, in ? in : rbuf, n, false);
    return NULL == a->rbuf ? MPI_ERR_NO_MEM : MPI_SUCCESS;
}

/* Where a device-aware reduction reads its input and writes its result:
 * the user's buffers (direct layout; `result` is NULL on reduce's non-root
 * ranks) or a staged host copy of the input, reduced in place. Whether a
 * buffer is on a GPU is this rank's own business (coll_braid_cuda.c). */
typedef struct placed {
    const void *src;
    void *dst;
    bool in_dev, out_dev;
} placed_t;

static int place_device_aware(mca_coll_braid_module_t *m, const layout_t *l, const void *sbuf,
                              void *rbuf, void *result, size_t n, placed_t *p)
{
    const void *in = (MPI_IN_PLACE == sbuf) ? NULL : sbuf;
    p->src = in ? in : rbuf;
    p->dst = result;
    p->in_dev = mca_coll_braid_is_device(p->src);
    p->out_dev = NULL != result && mca_coll_braid_is_device(result);
    if (LAYOUT_STAGED == l->kind) {
        p->dst = stage_in(m, BRAID_SCRATCH_GLUE_IN, l, p->src, n, p->in_dev);
        if (NULL == p->dst) return MPI_ERR_NO_MEM;
        p->src = p->dst;
    }
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* MPI_Allreduce and MPI_Reduce                                         */
/* ------------------------------------------------------------------ */

/* Shared by both: root < 0 means every rank receives (allreduce). Returns
 * an MPI code, or sets *hand_on when the previous module must run the call
 * (the same on every rank: datatype layout, the table, or an algorithm
 * that declined before sending, e.g. for a non-commutative op). */
static int reduction(mca_coll_braid_module_t *m, braid_coll_t coll, const void *sbuf, void *rbuf,
                     int count, MPI_Datatype dtype, MPI_Op op, int root, bool *hand_on)
{
    size_t n = count > 0 ? (size_t)count : 0;
    size_t bytes = n * mca_coll_braid_type_size(dtype);
    *hand_on = false;
    if (0 == bytes) return MPI_SUCCESS;
    mca_coll_braid_call_t call;
    layout_t l = classify(dtype, n);
    if (!mca_coll_braid_call_init(m, &call, coll, bytes) || LAYOUT_UNSUPPORTED == l.kind) {
        *hand_on = true;
        return MPI_SUCCESS;
    }
    bool receives = root < 0 || m->bcomm.rank == root;
    mca_coll_braid_op_t storage;
    bind_op(&call, mca_coll_braid_call_op(m, &call, dtype, op, &storage), n, l.extent);
    call.args.root = root < 0 ? 0 : root;
    placed_t p;
    int rc = place_device_aware(m, &l, sbuf, rbuf, receives ? rbuf : NULL, n, &p);
    if (MPI_SUCCESS != rc) return rc;
    bool direct = LAYOUT_DIRECT == l.kind;
    mca_coll_braid_call_buffers(&call, root < 0 ? BRAID_DEVPIPE_ALLREDUCE : BRAID_DEVPIPE_REDUCE,
                                p.src, direct && p.in_dev, p.dst, direct && p.out_dev);
    rc = mca_coll_braid_dispatch(m, &call);
    if (BRAID_ERR_UNSUPPORTED == rc) {
        *hand_on = true;
        return MPI_SUCCESS;
    }
    if (MPI_SUCCESS == (rc = mca_coll_braid_to_mpi_error(rc)) && LAYOUT_STAGED == l.kind && receives)
        rc = stage_out(m, dtype, n, rbuf, p.dst, p.out_dev);
    return rc;
}

int mca_coll_braid_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    bool hand_on;
    (void)comm;
    int rc = reduction(m, BRAID_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, -1, &hand_on);
    return hand_on ? mca_coll_braid_prev_allreduce(m, sbuf, rbuf, count, dtype, op) : rc;
}

int mca_coll_braid_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    bool hand_on;
    (void)comm;
    int rc = reduction(m, BRAID_COLL_REDUCE, sbuf, rbuf, count, dtype, op, root, &hand_on);
    return hand_on ? mca_coll_braid_prev_reduce(m, sbuf, rbuf, count, dtype, op, root) : rc;
}

/* ------------------------------------------------------------------ */
/* MPI_Reduce_scatter_block and MPI_Reduce_scatter                      */
/* ------------------------------------------------------------------ */

/* Shared by both entry points: `rcounts` NULL means every rank receives
 * `count` elements. Returns a BRAID_* code (BRAID_ERR_UNSUPPORTED: the
 * caller falls back, on every rank alike). */
static int reduce_scatter_common(mca_coll_braid_module_t *m, const void *sbuf, void *rbuf,
                                 size_t count, const size_t *rcounts, size_t total,
                                 MPI_Datatype dtype, MPI_Op op)
{
    size_t bytes = total * mca_coll_braid_type_size(dtype);
    if (0 == bytes) return BRAID_OK;
    mca_coll_braid_call_t call;
    layout_t l = classify(dtype, total);
    if (!mca_coll_braid_call_init(m, &call, BRAID_COLL_REDUCE_SCATTER, bytes) ||
        LAYOUT_UNSUPPORTED == l.kind)
        return BRAID_ERR_UNSUPPORTED;
    mca_coll_braid_op_t storage;
    bind_op(&call, mca_coll_braid_call_op(m, &call, dtype, op, &storage), count, l.extent);
    braid_coll_args_t *a = &call.args;
    a->rcounts = rcounts;
    if (MPI_SUCCESS != place_buffers(m, &l, a, sbuf, rbuf, rbuf, total)) return BRAID_ERR_NOMEM;
    int rc = mca_coll_braid_dispatch(m, &call);
    size_t mine = rcounts ? rcounts[m->bcomm.rank] : count;
    if (BRAID_OK == rc && LAYOUT_STAGED == l.kind && mine > 0 &&
        MPI_SUCCESS != stage_out(m, dtype, mine, rbuf, a->rbuf, false))
        rc = BRAID_ERR_ARG;
    return rc;
}

/* Both entry points after reduce_scatter_common: device buffers get host
 * copies, whole (mca_coll_braid_host_copies_open): the send buffer (total
 * elements; in place the receive buffer holds them) in, this rank's block
 * out; what braid does not take goes to the previous module, on those
 * copies too. rcounts_int NULL: MPI_Reduce_scatter_block of count. */
static int reduce_scatter_entry(mca_coll_braid_module_t *m, const void *sbuf, void *rbuf,
                                size_t count, const size_t *rcounts, const int *rcounts_int,
                                size_t total, MPI_Datatype dtype, MPI_Op op)
{
    bool in_place = MPI_IN_PLACE == sbuf;
    size_t mine = rcounts ? rcounts[m->bcomm.rank] : count, rn = in_place ? total : mine;
    mca_coll_braid_host_copies_t *hc;
    int rc = mca_coll_braid_host_copies_open(&hc, &sbuf, total, dtype, &rbuf, rn, dtype,
                                             in_place || !mca_coll_braid_is_contiguous(dtype, rn));
    if (MPI_SUCCESS == rc) {
        int brc = reduce_scatter_common(m, sbuf, rbuf, count, rcounts, total, dtype, op);
        if (BRAID_ERR_UNSUPPORTED != brc)
            rc = mca_coll_braid_to_mpi_error(brc);
        else if (mca_coll_braid_hand_on_nonblocking())
            rc = MPI_SUCCESS;
        else if (NULL == rcounts_int)
            rc = m->prev.reduce_scatter_block(sbuf, rbuf, (int)count, dtype, op, m->comm,
                                              m->prev.reduce_scatter_block_module);
        else
            rc = m->prev.reduce_scatter(sbuf, rbuf, rcounts_int, dtype, op, m->comm,
                                        m->prev.reduce_scatter_module);
    }
    return mca_coll_braid_host_copies_close(hc, rc);
}

int mca_coll_braid_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    size_t n = rcount > 0 ? (size_t)rcount : 0;
    (void)comm;
    return reduce_scatter_entry(m, sbuf, rbuf, n, NULL, NULL, n * (size_t)m->bcomm.size, dtype,
                                op);
}

int mca_coll_braid_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    size_t total = 0;
    (void)comm;
    /* made by the communicator's (or the request's) first
     * MPI_Reduce_scatter (a failure is what a failed scratch allocation
     * is: MPI_ERR_NO_MEM) */
    size_t *counts = mca_coll_braid_counts(m, 0, (size_t)m->bcomm.size);
    if (NULL == counts) return MPI_ERR_NO_MEM;
    for (int i = 0; i < m->bcomm.size; i++) {
        counts[i] = rcounts[i] > 0 ? (size_t)rcounts[i] : 0;
        total += counts[i];
    }
    return reduce_scatter_entry(m, sbuf, rbuf, 0, counts, rcounts, total, dtype, op);
}
