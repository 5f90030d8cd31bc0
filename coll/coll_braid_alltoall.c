/*
 * coll_braid_alltoall.c - MPI_Alltoall, MPI_Ialltoall, MPI_Alltoall_init.
 *
 * The wire carries each block as packed bytes (recvcount x type size,
 * equal to sendcount x send type size by MPI's signature rule): contiguous
 * buffers are used as they are, other datatypes packed into scratch and
 * unpacked at the end; the send and receive types may differ. In place
 * the input is the receive buffer. Device buffers are exchanged through
 * host copies, whole. The choice depends only on the communicator and the
 * block's bytes, which MPI requires to match across ranks.
 */
#include "coll_braid_cuda.h"
#include "coll_braid_datatype.h"
#include "coll_braid_entry.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

/* An MPI code, or *fall_back when the previous module must run the call. */
static int alltoall_host(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r,
                         const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                         MPI_Datatype rdtype, bool *fall_back)
{
    size_t P = (size_t)m->bcomm.size, rn = rcount > 0 ? (size_t)rcount : 0;
    size_t block = rn * mca_coll_braid_type_size(rdtype);
    braid_call_t call;
    *fall_back = false;
    if (0 == block) return MPI_SUCCESS;
    if (!mca_coll_braid_call_begin(m, &call, BRAID_COLL_ALLTOALL, block, r)) {
        *fall_back = true;
        return MPI_SUCCESS;
    }
    bool in_place = MPI_IN_PLACE == sbuf;
    bool rcontig = mca_coll_braid_is_contiguous(rdtype, rn * P);
    char *base = rcontig ? mca_coll_braid_contig_base(rbuf, rdtype)
                         : braid_scratch_get(call.args.scratch, BRAID_SCRATCH_GLUE_OUT, block * P);
    if (NULL == base) return MPI_ERR_NO_MEM;
    const void *send = NULL;   /* NULL: in place, the input is at base */
    int rc = OMPI_SUCCESS;
    if (in_place && !rcontig) {
        rc = mca_coll_braid_pack(rbuf, rn * P, rdtype, base, block * P);
    } else if (!in_place && mca_coll_braid_is_contiguous(sdtype, (size_t)scount * P)) {
        send = mca_coll_braid_contig_base(sbuf, sdtype);
    } else if (!in_place) {
        char *packed = braid_scratch_get(call.args.scratch, BRAID_SCRATCH_GLUE_IN, block * P);
        rc = NULL == packed ? OMPI_ERR_OUT_OF_RESOURCE
                            : mca_coll_braid_pack(sbuf, (size_t)scount * P, sdtype, packed, block * P);
        send = packed;
    }
    if (OMPI_SUCCESS != rc) return OMPI_ERR_OUT_OF_RESOURCE == rc ? MPI_ERR_NO_MEM : MPI_ERR_INTERN;
    call.args.sbuf = send;
    call.args.rbuf = base;
    call.args.count = block;
    call.args.esize = 1;
    rc = mca_coll_braid_dispatched(braid_dispatch(&m->site, &call), fall_back);
    if (*fall_back) return rc;
    if (MPI_SUCCESS == rc && !rcontig &&
        OMPI_SUCCESS != mca_coll_braid_unpack(rbuf, rn * P, rdtype, base, block * P))
        rc = MPI_ERR_INTERN;
    return rc;
}

static int alltoall(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, const void *sbuf,
                    int scount, MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype)
{
    size_t P = (size_t)m->bcomm.size, rn = (rcount > 0 ? (size_t)rcount : 0) * P;
    bool in_place = MPI_IN_PLACE == sbuf, fall_back;
    bool rfill = in_place || !mca_coll_braid_is_contiguous(rdtype, rn);
    const void *none = NULL;
    mca_coll_braid_host_copies_t *hc;
    int rc = mca_coll_braid_host_copies_open(&hc, in_place ? &none : &sbuf,
                                             (scount > 0 ? (size_t)scount : 0) * P, sdtype, &rbuf,
                                             rn, rdtype, rfill);
    if (in_place) sbuf = MPI_IN_PLACE;
    if (MPI_SUCCESS == rc)
        rc = alltoall_host(m, r, sbuf, scount, sdtype, rbuf, rcount, rdtype, &fall_back);
    if (MPI_SUCCESS == rc && fall_back && !mca_coll_braid_fall_back_in_request(r))
        rc = m->prev.coll_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, m->comm,
                                   m->prev.coll_alltoall_module);
    return mca_coll_braid_host_copies_close(hc, rc);
}

static int run(mca_coll_braid_request_t *r)
{
    return alltoall(r->m, r, r->sbuf, r->a.scount, r->a.sdtype, r->rbuf, r->a.count, r->a.dtype);
}

static int prev_nonblocking(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_ialltoall(r->sbuf, r->a.scount, r->a.sdtype, r->rbuf, r->a.count,
                                  r->a.dtype, m->comm, req, m->prev.coll_ialltoall_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    size_t P = (size_t)r->m->bcomm.size;
    *sn = (r->a.scount > 0 ? (size_t)r->a.scount : 0) * P;
    *rn = (r->a.count > 0 ? (size_t)r->a.count : 0) * P;
    *rfill = MPI_IN_PLACE == r->sbuf || !mca_coll_braid_is_contiguous(r->a.dtype, *rn);
}

static const mca_coll_braid_family_t family = { BRAID_COLL_ALLTOALL, run, prev_nonblocking,
                                                copies };

static int mca_coll_braid_alltoall(const void *sbuf, braid_count_t scount,
                                   struct ompi_datatype_t *sdtype, void *rbuf, braid_count_t rcount,
                                   struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(scount, sdtype) && braid_count_fits(rcount, rdtype),
                         alltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    (void)comm;
    return alltoall((mca_coll_braid_module_t *)module, NULL, sbuf, scount, sdtype, rbuf, rcount,
                    rdtype);
}

static int mca_coll_braid_ialltoall(const void *sbuf, braid_count_t scount,
                                    struct ompi_datatype_t *sdtype, void *rbuf,
                                    braid_count_t rcount, struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm, ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(scount, sdtype) && braid_count_fits(rcount, rdtype),
                         ialltoall, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_blocks(sbuf, scount, sdtype, rbuf, rcount, rdtype, 0);
    (void)comm;
    return mca_coll_braid_request_post(module, &family, &a, request);
}

static int mca_coll_braid_alltoall_init(const void *sbuf, braid_count_t scount,
                                        struct ompi_datatype_t *sdtype, void *rbuf,
                                        braid_count_t rcount, struct ompi_datatype_t *rdtype,
                                        struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(scount, sdtype) && braid_count_fits(rcount, rdtype),
                         alltoall_init, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info,
                         request);
    mca_coll_braid_args_t a = mca_coll_braid_args_blocks(sbuf, scount, sdtype, rbuf, rcount, rdtype, 0);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &family, &a, request);
}

bool mca_coll_braid_alltoall_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = MCA_COLL_BRAID_TAKE(m, alltoall, mca_coll_braid_alltoall);
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, ialltoall, mca_coll_braid_ialltoall);
    (void)MCA_COLL_BRAID_TAKE(m, alltoall_init, mca_coll_braid_alltoall_init);
    return ok;
}
