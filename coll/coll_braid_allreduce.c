/*
 * coll_braid_allreduce.c - MPI_Allreduce and MPI_Reduce, with their
 * MPI_I* and _init forms, and the reduction path they share with MPI_Scan
 * and MPI_Exscan (coll_braid_scan.c): root < 0 meaning every rank
 * receives.
 *
 * The (datatype, op) pair is bound to a reduction (coll_braid_op.c); the
 * buffers are placed by the datatype's layout (coll_braid_module.h:
 * direct or staged); device buffers go through the staging pipeline. What
 * braid does not take - a layout, the table, an algorithm's declared
 * refusal (a non-commutative op) - goes to the previous module, the same
 * on every rank: every choice depends only on the datatype, the op, the
 * communicator and count x type size.
 */
#include "coll_braid.h"

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
                             MPI_Datatype dtype, MPI_Op op, int root, bool *hand_on)
{
    size_t n = count > 0 ? (size_t)count : 0;
    size_t bytes = n * mca_coll_braid_type_size(dtype);
    braid_call_t call;
    *hand_on = false;
    if (0 == bytes) return MPI_SUCCESS;
    mca_coll_braid_layout_t l = mca_coll_braid_layout(dtype, n);
    if (!mca_coll_braid_call_begin(m, &call, coll, bytes, r) || LAYOUT_UNSUPPORTED == l.kind) {
        *hand_on = true;
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
        *hand_on = true;
        return MPI_SUCCESS;
    }
    if (MPI_SUCCESS == (rc = mca_coll_braid_to_mpi_error(rc)) && !direct && receives)
        rc = mca_coll_braid_stage_out(call.args.scratch, dtype, n, rbuf, p.dst, p.out_dev);
    return rc;
}

/* The previous module on host copies of device buffers */
static int fallback(mca_coll_braid_module_t *m, const void *sbuf, void *rbuf, int count,
                    MPI_Datatype dtype, MPI_Op op, int root)
{
    size_t n = count > 0 ? (size_t)count : 0;
    bool receives = root < 0 || m->bcomm.rank == root;
    mca_coll_braid_host_copies_t *hc;
    int rc = mca_coll_braid_host_copies_open(&hc, &sbuf, n, dtype, receives ? &rbuf : NULL, n,
                                             dtype, true);
    if (MPI_SUCCESS == rc && root < 0)
        rc = m->prev.coll_allreduce(sbuf, rbuf, count, dtype, op, m->comm,
                                    m->prev.coll_allreduce_module);
    else if (MPI_SUCCESS == rc)
        rc = m->prev.coll_reduce(sbuf, rbuf, count, dtype, op, root, m->comm,
                                 m->prev.coll_reduce_module);
    return mca_coll_braid_host_copies_close(hc, rc);
}

static int reduce_any(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, const void *sbuf,
                      void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root)
{
    bool hand_on;
    int rc = mca_coll_braid_reduction(m, r, root < 0 ? BRAID_COLL_ALLREDUCE : BRAID_COLL_REDUCE,
                                      sbuf, rbuf, count, dtype, op, root, &hand_on);
    if (!hand_on || mca_coll_braid_handed_on(r)) return rc;
    return fallback(m, sbuf, rbuf, count, dtype, op, root);
}

/* ------------------------------------------------------------------ */
/* requests                                                            */
/* ------------------------------------------------------------------ */

static int run(mca_coll_braid_request_t *r)
{
    return reduce_any(r->m, r, r->sbuf, r->rbuf, r->a.count, r->a.dtype, r->a.op, r->a.root);
}

static int prev_iallreduce(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_iallreduce(r->sbuf, r->rbuf, r->a.count, r->a.dtype, r->a.op, m->comm, req,
                                   m->prev.coll_iallreduce_module);
}

static int prev_ireduce(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_ireduce(r->sbuf, r->rbuf, r->a.count, r->a.dtype, r->a.op, r->a.root, m->comm, req,
                                m->prev.coll_ireduce_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    bool receives = r->a.root < 0 || r->m->bcomm.rank == r->a.root;
    *sn = r->a.count > 0 ? (size_t)r->a.count : 0;
    *rn = receives ? *sn : 0;
    *rfill = MPI_IN_PLACE == r->sbuf || !mca_coll_braid_is_contiguous(r->a.dtype, *rn);
}

static const mca_coll_braid_family_t allreduce_family = { BRAID_COLL_ALLREDUCE, run,
                                                          prev_iallreduce, copies };
static const mca_coll_braid_family_t reduce_family = { BRAID_COLL_REDUCE, run, prev_ireduce,
                                                       copies };

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

static int mca_coll_braid_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    (void)comm;
    return reduce_any((mca_coll_braid_module_t *)module, NULL, sbuf, rbuf, count, dtype, op, -1);
}

static int mca_coll_braid_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module)
{
    (void)comm;
    return reduce_any((mca_coll_braid_module_t *)module, NULL, sbuf, rbuf, count, dtype, op, root);
}

static int mca_coll_braid_iallreduce(const void *sbuf, void *rbuf, int count,
                                     struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                     struct ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, -1);
    (void)comm;
    return mca_coll_braid_request_post(module, &allreduce_family, &a, request);
}

static int mca_coll_braid_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, root);
    (void)comm;
    return mca_coll_braid_request_post(module, &reduce_family, &a, request);
}

static int mca_coll_braid_allreduce_init(const void *sbuf, void *rbuf, int count,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, -1);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &allreduce_family, &a, request);
}

static int mca_coll_braid_reduce_init(const void *sbuf, void *rbuf, int count,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                      struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, root);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &reduce_family, &a, request);
}

bool mca_coll_braid_allreduce_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = true;
    ok = MCA_COLL_BRAID_TAKE(m, allreduce, mca_coll_braid_allreduce) && ok;
    ok = MCA_COLL_BRAID_TAKE(m, reduce, mca_coll_braid_reduce) && ok;
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, iallreduce, mca_coll_braid_iallreduce);
    (void)MCA_COLL_BRAID_TAKE(m, ireduce, mca_coll_braid_ireduce);
    (void)MCA_COLL_BRAID_TAKE(m, allreduce_init, mca_coll_braid_allreduce_init);
    (void)MCA_COLL_BRAID_TAKE(m, reduce_init, mca_coll_braid_reduce_init);
    return ok;
}
