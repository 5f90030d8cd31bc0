/*
 * coll_braid_scan.c - MPI_Scan and MPI_Exscan, with their MPI_I* and _init
 * forms, on the reduction path (coll_braid_reduction.c): the same op
 * binding, datatype layouts and device staging as allreduce, and the same
 * fallback (every choice depends only on the datatype, the op, the
 * communicator and count x type size). Exscan's rank 0 receives nothing:
 * MPI leaves its buffer undefined, and braid leaves it as it was.
 */
#include "coll_braid_cuda.h"
#include "coll_braid_entry.h"
#include "coll_braid_module.h"
#include "coll_braid_reduction.h"
#include "coll_braid_request.h"

/* The previous module on host copies of device buffers */
static int fallback(mca_coll_braid_module_t *m, braid_coll_t coll, const void *sbuf, void *rbuf,
                    int count, MPI_Datatype dtype, MPI_Op op)
{
    size_t n = count > 0 ? (size_t)count : 0;
    mca_coll_braid_host_copies_t *hc;
    int rc = mca_coll_braid_host_copies_open(&hc, &sbuf, n, dtype, &rbuf, n, dtype, true);
    if (MPI_SUCCESS == rc && BRAID_COLL_SCAN == coll)
        rc = m->prev.coll_scan(sbuf, rbuf, count, dtype, op, m->comm, m->prev.coll_scan_module);
    else if (MPI_SUCCESS == rc)
        rc = m->prev.coll_exscan(sbuf, rbuf, count, dtype, op, m->comm,
                                 m->prev.coll_exscan_module);
    return mca_coll_braid_host_copies_close(hc, rc);
}

static int scan_any(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, braid_coll_t coll,
                    const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op)
{
    bool fall_back;
    int rc = mca_coll_braid_reduction(m, r, coll, sbuf, rbuf, count, dtype, op, -1, &fall_back);
    if (!fall_back || mca_coll_braid_fall_back_in_request(r)) return rc;
    return fallback(m, coll, sbuf, rbuf, count, dtype, op);
}

/* ------------------------------------------------------------------ */
/* requests                                                            */
/* ------------------------------------------------------------------ */

static int run(mca_coll_braid_request_t *r)
{
    return scan_any(r->m, r, r->family->coll, r->sbuf, r->rbuf, r->a.count, r->a.dtype, r->a.op);
}

static int prev_iscan(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_iscan(r->sbuf, r->rbuf, r->a.count, r->a.dtype, r->a.op, m->comm, req,
                              m->prev.coll_iscan_module);
}

static int prev_iexscan(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_iexscan(r->sbuf, r->rbuf, r->a.count, r->a.dtype, r->a.op, m->comm, req,
                                m->prev.coll_iexscan_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    *sn = *rn = r->a.count > 0 ? (size_t)r->a.count : 0;
    *rfill = true;
}

static const mca_coll_braid_family_t scan_family = { BRAID_COLL_SCAN, run, prev_iscan, copies };
static const mca_coll_braid_family_t exscan_family = { BRAID_COLL_EXSCAN, run, prev_iexscan,
                                                       copies };

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

static int mca_coll_braid_scan(const void *sbuf, void *rbuf, braid_count_t count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), scan, sbuf, rbuf, count, dtype, op, comm);
    (void)comm;
    return scan_any((mca_coll_braid_module_t *)module, NULL, BRAID_COLL_SCAN, sbuf, rbuf, count,
                    dtype, op);
}

static int mca_coll_braid_exscan(const void *sbuf, void *rbuf, braid_count_t count,
                                 struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), exscan, sbuf, rbuf, count, dtype, op,
                         comm);
    (void)comm;
    return scan_any((mca_coll_braid_module_t *)module, NULL, BRAID_COLL_EXSCAN, sbuf, rbuf, count,
                    dtype, op);
}

static int mca_coll_braid_iscan(const void *sbuf, void *rbuf, braid_count_t count,
                                struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                struct ompi_communicator_t *comm, ompi_request_t **request,
                                mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), iscan, sbuf, rbuf, count, dtype, op, comm,
                         request);
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, 0);
    (void)comm;
    return mca_coll_braid_request_post(module, &scan_family, &a, request);
}

static int mca_coll_braid_iexscan(const void *sbuf, void *rbuf, braid_count_t count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), iexscan, sbuf, rbuf, count, dtype, op,
                         comm, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, 0);
    (void)comm;
    return mca_coll_braid_request_post(module, &exscan_family, &a, request);
}

static int mca_coll_braid_scan_init(const void *sbuf, void *rbuf, braid_count_t count,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                    ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), scan_init, sbuf, rbuf, count, dtype, op,
                         comm, info, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, 0);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &scan_family, &a, request);
}

static int mca_coll_braid_exscan_init(const void *sbuf, void *rbuf, braid_count_t count,
                                      struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                      struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), exscan_init, sbuf, rbuf, count, dtype, op,
                         comm, info, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_reduce(sbuf, rbuf, count, dtype, op, 0);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &exscan_family, &a, request);
}

bool mca_coll_braid_scan_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = true;
    ok = MCA_COLL_BRAID_TAKE(m, scan, mca_coll_braid_scan) && ok;
    ok = MCA_COLL_BRAID_TAKE(m, exscan, mca_coll_braid_exscan) && ok;
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, iscan, mca_coll_braid_iscan);
    (void)MCA_COLL_BRAID_TAKE(m, iexscan, mca_coll_braid_iexscan);
    (void)MCA_COLL_BRAID_TAKE(m, scan_init, mca_coll_braid_scan_init);
    (void)MCA_COLL_BRAID_TAKE(m, exscan_init, mca_coll_braid_exscan_init);
    return ok;
}
