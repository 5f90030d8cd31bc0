/*
 * coll_braid_bcast.c - MPI_Bcast, MPI_Ibcast, MPI_Bcast_init.
 *
 * The wire carries count x type size bytes: a contiguous buffer as it is
 * (on a device: staged by this rank alone, or handed to UCX as it is when
 * its context moves CUDA memory - never to a shm algorithm, which copies
 * with the CPU), any other datatype packed into scratch (device buffers:
 * packed from / unpacked into a host copy). The choice depends only on the
 * communicator, the root and count x type size, which MPI requires to
 * match across ranks.
 */
#include "coll_braid_component.h"
#include "coll_braid_cuda.h"
#include "coll_braid_datatype.h"
#include "coll_braid_entry.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

/* a datatype that is not contiguous: packed, run, unpacked (a device
 * buffer through a host copy of it) */
static int bcast_packed(mca_coll_braid_module_t *m, braid_call_t *call, void *buf, int count,
                        MPI_Datatype dtype, bool *fall_back)
{
    size_t bytes = call->bytes;
    bool is_root = m->bcomm.rank == call->args.root;
    const void *none = NULL;
    mca_coll_braid_host_copies_t *hc;
    int rc = mca_coll_braid_host_copies_open(&hc, &none, 0, dtype, &buf, (size_t)count, dtype, true);
    char *packed = braid_scratch_get(call->args.scratch, BRAID_SCRATCH_GLUE_IN, bytes);
    if (MPI_SUCCESS == rc && NULL == packed) rc = MPI_ERR_NO_MEM;
    if (MPI_SUCCESS == rc && is_root &&
        OMPI_SUCCESS != mca_coll_braid_pack(buf, (size_t)count, dtype, packed, bytes))
        rc = MPI_ERR_INTERN;
    if (MPI_SUCCESS == rc) {
        braid_call_buffers(call, BRAID_DEVPIPE_BCAST, is_root ? packed : NULL, false,
                           is_root ? NULL : packed, false);
        rc = mca_coll_braid_dispatched(braid_dispatch(&m->site, call), fall_back);
    }
    if (MPI_SUCCESS == rc && !is_root && !*fall_back &&
        OMPI_SUCCESS != mca_coll_braid_unpack(buf, (size_t)count, dtype, packed, bytes))
        rc = MPI_ERR_INTERN;
    return mca_coll_braid_host_copies_close(hc, rc);
}

static int bcast(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, void *buf, int count,
                 MPI_Datatype dtype, int root)
{
    size_t bytes = (size_t)(count > 0 ? count : 0) * mca_coll_braid_type_size(dtype);
    if (0 == bytes) return MPI_SUCCESS;
    braid_call_t call;
    bool fall_back = false;
    int rc;
    if (!mca_coll_braid_call_begin(m, &call, BRAID_COLL_BCAST, bytes, r)) goto fallback;
    call.args.count = bytes;
    call.args.esize = 1;
    call.args.root = root;
    if (!mca_coll_braid_is_contiguous(dtype, (size_t)count)) {
        rc = bcast_packed(m, &call, buf, count, dtype, &fall_back);
        if (!fall_back) return rc;
        goto fallback;
    }
    bool dev = mca_coll_braid_is_device(buf);
    bool is_root = m->bcomm.rank == root;
    char *base = mca_coll_braid_contig_base(buf, dtype);
    const braid_algorithm_t *alg = call.alg;
    bool staged = dev && (!braid_ucx_supports_cuda() || (alg->options & BRAID_OPT_SHM));
    braid_call_buffers(&call, BRAID_DEVPIPE_BCAST, is_root ? base : NULL, staged,
                       is_root ? NULL : base, staged);
    rc = mca_coll_braid_dispatched(braid_dispatch(&m->site, &call), &fall_back);
    if (!fall_back) return rc;
fallback:
    if (mca_coll_braid_fall_back_in_request(r)) return MPI_SUCCESS;
    /* the previous module gets host copies of a device buffer */
    const void *none = NULL;
    mca_coll_braid_host_copies_t *hc;
    rc = mca_coll_braid_host_copies_open(&hc, &none, 0, dtype, &buf, (size_t)count, dtype,
                                             true);
    if (MPI_SUCCESS == rc)
        rc = m->prev.coll_bcast(buf, count, dtype, root, m->comm, m->prev.coll_bcast_module);
    return mca_coll_braid_host_copies_close(hc, rc);
}

static int run(mca_coll_braid_request_t *r)
{
    return bcast(r->m, r, r->rbuf, r->a.count, r->a.dtype, r->a.root);
}

static int prev_nonblocking(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_ibcast(r->rbuf, r->a.count, r->a.dtype, r->a.root, m->comm, req,
                               m->prev.coll_ibcast_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    *sn = 0;
    *rn = r->a.count > 0 ? (size_t)r->a.count : 0;
    *rfill = true;
}

static const mca_coll_braid_family_t family = { BRAID_COLL_BCAST, run, prev_nonblocking, copies };

static inline mca_coll_braid_args_t args(void *buf, int count, MPI_Datatype dtype, int root)
{
    return (mca_coll_braid_args_t){
        .urbuf = buf,
        .count = count,
        .dtype = dtype,
        .root = root,
    };
}

static int mca_coll_braid_bcast(void *buf, braid_count_t count, struct ompi_datatype_t *dtype,
                                int root, struct ompi_communicator_t *comm,
                                mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), bcast, buf, count, dtype, root, comm);
    (void)comm;
    return bcast((mca_coll_braid_module_t *)module, NULL, buf, count, dtype, root);
}

static int mca_coll_braid_ibcast(void *buf, braid_count_t count, struct ompi_datatype_t *dtype,
                                 int root, struct ompi_communicator_t *comm,
                                 ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), ibcast, buf, count, dtype, root, comm,
                         request);
    mca_coll_braid_args_t a = args(buf, count, dtype, root);
    (void)comm;
    return mca_coll_braid_request_post(module, &family, &a, request);
}

static int mca_coll_braid_bcast_init(void *buf, braid_count_t count, struct ompi_datatype_t *dtype,
                                     int root, struct ompi_communicator_t *comm,
                                     struct ompi_info_t *info, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(count, dtype), bcast_init, buf, count, dtype, root, comm,
                         info, request);
    mca_coll_braid_args_t a = args(buf, count, dtype, root);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &family, &a, request);
}

bool mca_coll_braid_bcast_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = true;
    ok = MCA_COLL_BRAID_TAKE(m, bcast, mca_coll_braid_bcast) && ok;
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, ibcast, mca_coll_braid_ibcast);
    (void)MCA_COLL_BRAID_TAKE(m, bcast_init, mca_coll_braid_bcast_init);
    return ok;
}
