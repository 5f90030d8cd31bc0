/*
 * coll_braid_barrier.c - MPI_Barrier, MPI_Ibarrier, MPI_Barrier_init.
 */
#include "coll_braid_entry.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

/* r: the request running the call, NULL when blocking */
static int barrier(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r)
{
    braid_call_t call;
    bool fall_back = false;
    if (!mca_coll_braid_call_begin(m, &call, BRAID_COLL_BARRIER, 0, r)) goto fallback;
    int rc = mca_coll_braid_dispatched(braid_dispatch(&m->site, &call), &fall_back);
    if (!fall_back) return rc;
fallback:
    if (mca_coll_braid_fall_back_in_request(r)) return MPI_SUCCESS;
    return m->prev.coll_barrier(m->comm, m->prev.coll_barrier_module);
}

static int run(mca_coll_braid_request_t *r) { return barrier(r->m, r); }

static int prev_nonblocking(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_ibarrier(m->comm, req, m->prev.coll_ibarrier_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    (void)r, (void)sn, (void)rn, (void)rfill;   /* no buffers */
}

static const mca_coll_braid_family_t family = { BRAID_COLL_BARRIER, run, prev_nonblocking, copies };

static int mca_coll_braid_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    (void)comm;
    return barrier((mca_coll_braid_module_t *)module, NULL);
}

static int mca_coll_braid_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    (void)comm;
    return mca_coll_braid_request_post(module, &family, NULL, request);
}

static int mca_coll_braid_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &family, NULL, request);
}

bool mca_coll_braid_barrier_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = true;
    ok = MCA_COLL_BRAID_TAKE(m, barrier, mca_coll_braid_barrier) && ok;
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, ibarrier, mca_coll_braid_ibarrier);
    (void)MCA_COLL_BRAID_TAKE(m, barrier_init, mca_coll_braid_barrier_init);
    return ok;
}
