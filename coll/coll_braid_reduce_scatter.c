/*
 * coll_braid_reduce_scatter.c - MPI_Reduce_scatter_block and
 * MPI_Reduce_scatter, with their MPI_I* and _init forms: one path,
 * `rcounts` NULL meaning every rank receives `count` elements.
 *
 * Layouts as for the other reductions (coll_braid_datatype.h). Device
 * buffers get host copies, whole: the send buffer (total elements; in
 * place the receive buffer holds them) in, this rank's block out; what
 * braid does not take goes to the previous module, on those copies too.
 */
#include "coll_braid_cuda.h"
#include "coll_braid_datatype.h"
#include "coll_braid_entry.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

/* A BRAID_* code (BRAID_ERR_UNSUPPORTED: hand it on, on every rank alike). */
static int run_host(mca_coll_braid_module_t *m, braid_call_t *call, const void *sbuf, void *rbuf,
                    size_t count, const size_t *rcounts, size_t total, MPI_Datatype dtype,
                    MPI_Op op, mca_coll_braid_request_t *r)
{
    mca_coll_braid_layout_t l = mca_coll_braid_layout(dtype, total);
    if (LAYOUT_UNSUPPORTED == l.kind) return BRAID_ERR_UNSUPPORTED;
    mca_coll_braid_op_t storage;
    const mca_coll_braid_op_t *b = mca_coll_braid_call_op(m, r, dtype, op, &storage);
    braid_coll_args_t *a = &call->args;
    a->count = count;
    a->esize = l.extent;
    a->op = b->bop;
    a->exact = b->exact;
    a->rcounts = rcounts;
    const void *in = MPI_IN_PLACE == sbuf ? NULL : sbuf;
    if (LAYOUT_DIRECT == l.kind) {
        a->sbuf = in;
        a->rbuf = rbuf;
    } else if (NULL == (a->rbuf = mca_coll_braid_stage_in(a->scratch, BRAID_SCRATCH_GLUE_IN, &l,
                                                         in ? in : rbuf, total, false))) {
        return BRAID_ERR_NOMEM;
    }
    int rc = braid_dispatch(&m->site, call);
    size_t mine = rcounts ? rcounts[m->bcomm.rank] : count;
    if (BRAID_OK == rc && LAYOUT_STAGED == l.kind && mine > 0 &&
        MPI_SUCCESS != mca_coll_braid_stage_out(a->scratch, dtype, mine, rbuf, a->rbuf, false))
        rc = BRAID_ERR_ARG;
    return rc;
}

/* rcounts_int NULL: MPI_Reduce_scatter_block of count */
static int reduce_scatter(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r,
                          const void *sbuf, void *rbuf, int count, const int *rcounts_int,
                          MPI_Datatype dtype, MPI_Op op)
{
    int P = m->bcomm.size;
    size_t n = count > 0 ? (size_t)count : 0, total = n * (size_t)P, *rcounts = NULL;
    if (NULL != rcounts_int) {
        /* kept by the communicator (or the request) from its first call; a
         * failure is what a failed scratch allocation is */
        rcounts = braid_call_counts(&m->site, NULL != r ? &r->core : NULL, 0, (size_t)P);
        if (NULL == rcounts) return MPI_ERR_NO_MEM;
        total = 0;
        for (int i = 0; i < P; i++) total += rcounts[i] = rcounts_int[i] > 0 ? (size_t)rcounts_int[i] : 0;
    }
    bool in_place = MPI_IN_PLACE == sbuf;
    size_t mine = rcounts ? rcounts[m->bcomm.rank] : n, rn = in_place ? total : mine;
    mca_coll_braid_host_copies_t *hc;
    int rc = mca_coll_braid_host_copies_open(&hc, &sbuf, total, dtype, &rbuf, rn, dtype,
                                             in_place || !mca_coll_braid_is_contiguous(dtype, rn));
    size_t bytes = total * mca_coll_braid_type_size(dtype);
    braid_call_t call;
    if (MPI_SUCCESS != rc || 0 == bytes) return mca_coll_braid_host_copies_close(hc, rc);
    int brc = BRAID_ERR_UNSUPPORTED;
    if (mca_coll_braid_call_begin(m, &call, BRAID_COLL_REDUCE_SCATTER, bytes, r))
        brc = run_host(m, &call, sbuf, rbuf, n, rcounts, total, dtype, op, r);
    if (BRAID_ERR_UNSUPPORTED != brc)
        rc = mca_coll_braid_to_mpi_error(brc);
    else if (mca_coll_braid_fall_back_in_request(r))
        rc = MPI_SUCCESS;
    else if (NULL == rcounts_int)
        rc = m->prev.coll_reduce_scatter_block(sbuf, rbuf, count, dtype, op, m->comm,
                                               m->prev.coll_reduce_scatter_block_module);
    else
        rc = m->prev.coll_reduce_scatter(sbuf, rbuf, BRAID_COUNTS(rcounts_int), dtype, op, m->comm,
                                         m->prev.coll_reduce_scatter_module);
    return mca_coll_braid_host_copies_close(hc, rc);
}

/* ------------------------------------------------------------------ */
/* requests                                                            */
/* ------------------------------------------------------------------ */

static int run(mca_coll_braid_request_t *r)
{
    return reduce_scatter(r->m, r, r->sbuf, r->rbuf, r->a.count, r->a.rcounts, r->a.dtype, r->a.op);
}

static int prev_nonblocking(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    if (NULL != r->a.rcounts)
        return m->prev.coll_ireduce_scatter(r->sbuf, r->rbuf, BRAID_COUNTS(r->a.rcounts),
                                            r->a.dtype, r->a.op, m->comm, req,
                                            m->prev.coll_ireduce_scatter_module);
    return m->prev.coll_ireduce_scatter_block(r->sbuf, r->rbuf, r->a.count, r->a.dtype, r->a.op,
                                              m->comm, req,
                                              m->prev.coll_ireduce_scatter_block_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    int P = r->m->bcomm.size, me = r->m->bcomm.rank;
    size_t n = r->a.count > 0 ? (size_t)r->a.count : 0, total = n * (size_t)P, mine = n;
    if (NULL != r->a.rcounts) {
        total = 0;
        for (int i = 0; i < P; i++) total += r->a.rcounts[i] > 0 ? (size_t)r->a.rcounts[i] : 0;
        mine = r->a.rcounts[me] > 0 ? (size_t)r->a.rcounts[me] : 0;
    }
    *sn = total;
    *rn = MPI_IN_PLACE == r->sbuf ? total : mine;
    *rfill = MPI_IN_PLACE == r->sbuf || !mca_coll_braid_is_contiguous(r->a.dtype, *rn);
}

static const mca_coll_braid_family_t family = { BRAID_COLL_REDUCE_SCATTER, run, prev_nonblocking,
                                                copies };

static inline mca_coll_braid_args_t args(const void *sbuf, void *rbuf, int count,
                 const int *rcounts, MPI_Datatype dtype, MPI_Op op)
{
    return (mca_coll_braid_args_t){
        .usbuf = sbuf,
        .urbuf = rbuf,
        .count = count,
        .rcounts = rcounts,
        .dtype = dtype,
        .op = op,
    };
}

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

static int mca_coll_braid_reduce_scatter_block(const void *sbuf, void *rbuf, braid_count_t rcount,
                                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                               struct ompi_communicator_t *comm,
                                               mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(rcount, dtype), reduce_scatter_block, sbuf, rbuf, rcount,
                         dtype, op, comm);
    (void)comm;
    return reduce_scatter((mca_coll_braid_module_t *)module, NULL, sbuf, rbuf, rcount, NULL, dtype,
                          op);
}

static int mca_coll_braid_reduce_scatter(const void *sbuf, void *rbuf, braid_counts_t rcounts,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_counts_are_int(rcounts), reduce_scatter, sbuf, rbuf, rcounts, dtype,
                         op, comm);
    (void)comm;
    return reduce_scatter((mca_coll_braid_module_t *)module, NULL, sbuf, rbuf, 0,
                          braid_counts_int(rcounts), dtype, op);
}

static int mca_coll_braid_ireduce_scatter_block(const void *sbuf, void *rbuf, braid_count_t rcount,
                                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                                struct ompi_communicator_t *comm,
                                                ompi_request_t **request,
                                                mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(rcount, dtype), ireduce_scatter_block, sbuf, rbuf, rcount,
                         dtype, op, comm, request);
    mca_coll_braid_args_t a = args(sbuf, rbuf, rcount, NULL, dtype, op);
    (void)comm;
    return mca_coll_braid_request_post(module, &family, &a, request);
}

static int mca_coll_braid_ireduce_scatter(const void *sbuf, void *rbuf, braid_counts_t rcounts,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm,
                                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_counts_are_int(rcounts), ireduce_scatter, sbuf, rbuf, rcounts, dtype,
                         op, comm, request);
    mca_coll_braid_args_t a = args(sbuf, rbuf, 0, braid_counts_int(rcounts), dtype, op);
    (void)comm;
    return mca_coll_braid_request_post(module, &family, &a, request);
}

static int
mca_coll_braid_reduce_scatter_block_init(const void *sbuf, void *rbuf, braid_count_t rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(rcount, dtype), reduce_scatter_block_init, sbuf, rbuf,
                         rcount, dtype, op, comm, info, request);
    mca_coll_braid_args_t a = args(sbuf, rbuf, rcount, NULL, dtype, op);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &family, &a, request);
}

static int mca_coll_braid_reduce_scatter_init(const void *sbuf, void *rbuf, braid_counts_t rcounts,
                                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                              struct ompi_communicator_t *comm,
                                              struct ompi_info_t *info, ompi_request_t **request,
                                              mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_counts_are_int(rcounts), reduce_scatter_init, sbuf, rbuf, rcounts,
                         dtype, op, comm, info, request);
    mca_coll_braid_args_t a = args(sbuf, rbuf, 0, braid_counts_int(rcounts), dtype, op);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &family, &a, request);
}

bool mca_coll_braid_reduce_scatter_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = true;
    ok = MCA_COLL_BRAID_TAKE(m, reduce_scatter, mca_coll_braid_reduce_scatter) && ok;
    ok = MCA_COLL_BRAID_TAKE(m, reduce_scatter_block, mca_coll_braid_reduce_scatter_block) && ok;
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, ireduce_scatter, mca_coll_braid_ireduce_scatter);
    (void)MCA_COLL_BRAID_TAKE(m, ireduce_scatter_block, mca_coll_braid_ireduce_scatter_block);
    (void)MCA_COLL_BRAID_TAKE(m, reduce_scatter_init, mca_coll_braid_reduce_scatter_init);
    (void)MCA_COLL_BRAID_TAKE(m, reduce_scatter_block_init, mca_coll_braid_reduce_scatter_block_init);
    return ok;
}
