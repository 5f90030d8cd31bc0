/*
 * coll_braid_reduction.c - the reduction path of allreduce, reduce, scan
 * and exscan (coll_braid_allreduce.c, coll_braid_scan.c).
 *
 * The (datatype, op) pair is bound to a reduction (coll_braid_op.c); the
 * buffers are placed by the datatype's layout (coll_braid_datatype.h:
 * direct or staged); device buffers go through the staging pipeline. What
 * braid does not take - a layout, the table, an algorithm's declared
 * refusal (a non-commutative op) - goes to the previous module, the same
 * on every rank: every choice depends only on the datatype, the op, the
 * communicator and count x type size.
 */
#include "coll_braid_reduction.h"
#include "coll_braid_component.h"
#include "coll_braid_datatype.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

/* Where the algorithm reads its input and writes its result: the user's
 * buffers (direct layout; `result` is NULL on reduce's non-root ranks) or
 * a staged host copy of the input, reduced in place. Whether a buffer is
 * on a GPU is this rank's own business (coll_braid_cuda.c). */
typedef struct placed {
    const void *src;
    void *dst;
    bool in_dev, out_dev;
} placed_t;

static int place(braid_scratch_t *s, const mca_coll_braid_layout_t *l, const void *sbuf,
                 void *rbuf, void *result, size_t n, placed_t *p)
{
    const void *in = (MPI_IN_PLACE == sbuf) ? NULL : sbuf;
    p->src = in ? in : rbuf;
    p->dst = result;
    p->in_dev = mca_coll_braid_is_device(p->src);
    p->out_dev = NULL != result && mca_coll_braid_is_device(result);
    if (LAYOUT_STAGED == l->kind) {
        p->dst = mca_coll_braid_stage_in(s, BRAID_SCRATCH_GLUE_IN, l, p->src, n, p->in_dev);
        if (NULL == p->dst) return MPI_ERR_NO_MEM;
        p->src = p->dst;
    }
    return MPI_SUCCESS;
}

int mca_coll_braid_reduction(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r,
                             braid_coll_t coll, const void *sbuf, void *rbuf, int count,
                             MPI_Datatype dtype, MPI_Op op, int root, bool *fall_back)
{
    size_t n = count > 0 ? (size_t)count : 0;
    size_t bytes = n * mca_coll_braid_type_size(dtype);
    braid_call_t call;
    *fall_back = false;
    if (0 == bytes) return MPI_SUCCESS;
    mca_coll_braid_layout_t l = mca_coll_braid_layout(dtype, n);
    if (!mca_coll_braid_call_begin(m, &call, coll, bytes, r) || LAYOUT_UNSUPPORTED == l.kind) {
        *fall_back = true;
        return MPI_SUCCESS;
    }
    /* exscan's rank 0 receives nothing (MPI leaves its buffer undefined) */
    bool receives = BRAID_COLL_REDUCE == coll    ? m->bcomm.rank == root
                    : BRAID_COLL_EXSCAN == coll ? m->bcomm.rank > 0
                                                : true;
    bool all = BRAID_COLL_ALLREDUCE == coll || BRAID_COLL_SCAN == coll;
    mca_coll_braid_op_t storage;
    const mca_coll_braid_op_t *b = mca_coll_braid_call_op(m, r, dtype, op, &storage);
    call.args.count = n;
    call.args.esize = l.extent;
    call.args.op = b->bop;
    call.args.exact = b->exact;
    call.args.root = BRAID_COLL_REDUCE == coll ? root : 0;
    placed_t p;
    int rc = place(call.args.scratch, &l, sbuf, rbuf, receives ? rbuf : NULL, n, &p);
    if (MPI_SUCCESS != rc) return rc;
    bool direct = LAYOUT_DIRECT == l.kind;
    braid_call_buffers(&call, all ? BRAID_DEVPIPE_ALLREDUCE : BRAID_DEVPIPE_REDUCE, p.src,
                       direct && p.in_dev, p.dst, direct && p.out_dev);
    rc = braid_dispatch(&m->site, &call);
    if (BRAID_ERR_UNSUPPORTED == rc) {
        *fall_back = true;
        return MPI_SUCCESS;
    }
    if (MPI_SUCCESS == (rc = mca_coll_braid_to_mpi_error(rc)) && !direct && receives)
        rc = mca_coll_braid_stage_out(call.args.scratch, dtype, n, rbuf, p.dst, p.out_dev);
    return rc;
}
