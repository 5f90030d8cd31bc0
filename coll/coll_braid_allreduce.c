/*
 * coll_braid_allreduce.c - MPI_Allreduce and MPI_Reduce, with their
 * MPI_I* and _init forms, on the reduction path (coll_braid_reduction.c):
 * root < 0 meaning every rank receives. What braid does not take goes to
 * the previous module, the same on every rank.
 */
#include "coll_braid_cuda.h"
#include "coll_braid_datatype.h"
#include "coll_braid_entry.h"
#include "coll_braid_module.h"
#include "coll_braid_reduction.h"
#include "coll_braid_request.h"

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
    bool fall_back;
    int rc = mca_coll_braid_reduction(m, r, root < 0 ? BRAID_COLL_ALLREDUCE : BRAID_COLL_REDUCE,
                                      sbuf, rbuf, count, dtype, op, root, &fall_back);
    if (!fall_back || mca_coll_braid_fall_back_in_request(r)) return rc;
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

static int mca_coll_braid_allreduce(const void *sbuf, void *rbuf, braid_count_t count,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), allreduce, sbuf, rbuf, count, dtype, op,
                         comm);
    (void)comm;
    return reduce_any((mca_coll_braid_module_t *)module, NULL, sbuf, rbuf, count, dtype, op, -1);
}

static int mca_coll_braid_reduce(const void *sbuf, void *rbuf, braid_count_t count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), reduce, sbuf, rbuf, count, dtype, op, root,
                         comm);
    (void)comm;
    return reduce_any((mca_coll_braid_module_t *)module, NULL, sbuf, rbuf, count, dtype, op, root);
}

static int mca_coll_braid_iallreduce(const void *sbuf, void *rbuf, braid_count_t count,
                                     struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                     struct ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), iallreduce, sbuf, rbuf, count, dtype, op,
                         comm, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, -1);
    (void)comm;
    return mca_coll_braid_request_post(module, &allreduce_family, &a, request);
}

static int mca_coll_braid_ireduce(const void *sbuf, void *rbuf, braid_count_t count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), ireduce, sbuf, rbuf, count, dtype, op,
                         root, comm, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, root);
    (void)comm;
    return mca_coll_braid_request_post(module, &reduce_family, &a, request);
}

static int mca_coll_braid_allreduce_init(const void *sbuf, void *rbuf, braid_count_t count,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), allreduce_init, sbuf, rbuf, count, dtype,
                         op, comm, info, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, -1);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &allreduce_family, &a, request);
}

static int mca_coll_braid_reduce_init(const void *sbuf, void *rbuf, braid_count_t count,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                                      struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), reduce_init, sbuf, rbuf, count, dtype, op,
                         root, comm, info, request);
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
