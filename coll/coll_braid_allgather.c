/*
 * coll_braid_allgather.c - MPI_Allgather, MPI_Iallgather,
 * MPI_Allgather_init.
 *
 * The wire carries each rank's block as packed bytes (count x type size,
 * equal on every rank by MPI's signature rule); datatypes that are not
 * contiguous are packed into scratch and unpacked at the end. Device
 * buffers are gathered through host copies, whole and synchronously: the
 * algorithms, and the previous module braid may hand the call to, touch
 * the buffers with the CPU. The receive buffer is read from the device
 * only when the call reads it (in place: this rank's block; a datatype
 * with holes: the holes).
 */
#include "coll_braid_cuda.h"
#include "coll_braid_datatype.h"
#include "coll_braid_entry.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

/* This rank's block: the send buffer as it is when contiguous (the shm
 * algorithm's peers read it straight from there; the others copy it to
 * the rank's block themselves), else packed into the block
 * (my_rblock: this rank's block of the receive buffer). */
static int place_mine(const void *sbuf, int scount, MPI_Datatype sdtype, void *my_rblock, size_t rn,
                      MPI_Datatype rdtype, bool contiguous, char *mine, size_t block,
                      const void **send)
{
    *send = NULL;
    if (MPI_IN_PLACE != sbuf && scount > 0 && mca_coll_braid_is_contiguous(sdtype, (size_t)scount)) {
        *send = mca_coll_braid_contig_base(sbuf, sdtype);
        return OMPI_SUCCESS;
    }
    if (MPI_IN_PLACE != sbuf) return mca_coll_braid_pack(sbuf, (size_t)scount, sdtype, mine, block);
    /* in place: the block is in the receive buffer already, or is packed
     * from there when that is not contiguous */
    if (contiguous) return OMPI_SUCCESS;
    return mca_coll_braid_pack(my_rblock, rn, rdtype, mine, block);
}

static int allgather_host(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r,
                          const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf,
                          int rcount, MPI_Datatype rdtype, bool *fall_back)
{
    int P = m->bcomm.size, rank = m->bcomm.rank;
    size_t rn = rcount > 0 ? (size_t)rcount : 0;
    size_t block = rn * mca_coll_braid_type_size(rdtype);
    braid_call_t call;
    *fall_back = false;
    if (0 == block) return MPI_SUCCESS;
    if (!mca_coll_braid_call_begin(m, &call, BRAID_COLL_ALLGATHER, block, r)) {
        *fall_back = true;
        return MPI_SUCCESS;
    }
    bool contiguous = mca_coll_braid_is_contiguous(rdtype, rn * (size_t)P);
    char *base = contiguous ? mca_coll_braid_contig_base(rbuf, rdtype)
                            : braid_scratch_get(call.args.scratch, BRAID_SCRATCH_GLUE_OUT,
                                                block * (size_t)P);
    if (NULL == base) return MPI_ERR_NO_MEM;
    char *mine = base + (size_t)rank * block;
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(rdtype, &lb, &extent);
    void *my_rblock = (char *)rbuf + (size_t)rank * rn * (size_t)extent;
    if (OMPI_SUCCESS != place_mine(sbuf, scount, sdtype, my_rblock, rn, rdtype, contiguous, mine,
                                   block, &call.args.sbuf))
        return MPI_ERR_INTERN;
    call.args.rbuf = base;
    call.args.count = block;
    call.args.esize = 1;
    int rc = mca_coll_braid_dispatched(braid_dispatch(&m->site, &call), fall_back);
    if (*fall_back) return rc;
    if (MPI_SUCCESS == rc && !contiguous &&
        OMPI_SUCCESS != mca_coll_braid_unpack(rbuf, rn * (size_t)P, rdtype, base, block * (size_t)P))
        rc = MPI_ERR_INTERN;
    return rc;
}

static int allgather(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, const void *sbuf,
                     int scount, MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype)
{
    size_t rn = (rcount > 0 ? (size_t)rcount : 0) * (size_t)m->bcomm.size;
    bool rfill = MPI_IN_PLACE == sbuf || !mca_coll_braid_is_contiguous(rdtype, rn), fall_back;
    mca_coll_braid_host_copies_t *hc;
    int rc = mca_coll_braid_host_copies_open(&hc, &sbuf, scount > 0 ? (size_t)scount : 0, sdtype,
                                             &rbuf, rn, rdtype, rfill);
    if (MPI_SUCCESS == rc)
        rc = allgather_host(m, r, sbuf, scount, sdtype, rbuf, rcount, rdtype, &fall_back);
    if (MPI_SUCCESS == rc && fall_back && !mca_coll_braid_fall_back_in_request(r))
        rc = m->prev.coll_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, m->comm,
                                    m->prev.coll_allgather_module);
    return mca_coll_braid_host_copies_close(hc, rc);
}

static int run(mca_coll_braid_request_t *r)
{
    return allgather(r->m, r, r->sbuf, r->a.scount, r->a.sdtype, r->rbuf, r->a.count, r->a.dtype);
}

static int prev_nonblocking(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_iallgather(r->sbuf, r->a.scount, r->a.sdtype, r->rbuf, r->a.count, r->a.dtype,
                                   m->comm, req, m->prev.coll_iallgather_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    *sn = r->a.scount > 0 ? (size_t)r->a.scount : 0;
    *rn = (r->a.count > 0 ? (size_t)r->a.count : 0) * (size_t)r->m->bcomm.size;
    *rfill = MPI_IN_PLACE == r->sbuf || !mca_coll_braid_is_contiguous(r->a.dtype, *rn);
}

static const mca_coll_braid_family_t family = { BRAID_COLL_ALLGATHER, run, prev_nonblocking,
                                                copies };

static int mca_coll_braid_allgather(const void *sbuf, braid_count_t scount,
                                    struct ompi_datatype_t *sdtype, void *rbuf,
                                    braid_count_t rcount, struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(scount, sdtype) && braid_count_fits(rcount, rdtype),
                         allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
    (void)comm;
    return allgather((mca_coll_braid_module_t *)module, NULL, sbuf, scount, sdtype, rbuf, rcount,
                     rdtype);
}

static int mca_coll_braid_iallgather(const void *sbuf, braid_count_t scount,
                                     struct ompi_datatype_t *sdtype, void *rbuf,
                                     braid_count_t rcount, struct ompi_datatype_t *rdtype,
                                     struct ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(scount, sdtype) && braid_count_fits(rcount, rdtype),
                         iallgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_blocks(sbuf, scount, sdtype, rbuf, rcount, rdtype, 0);
    (void)comm;
    return mca_coll_braid_request_post(module, &family, &a, request);
}

static int mca_coll_braid_allgather_init(const void *sbuf, braid_count_t scount,
                                         struct ompi_datatype_t *sdtype, void *rbuf,
                                         braid_count_t rcount, struct ompi_datatype_t *rdtype,
                                         struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(scount, sdtype) && braid_count_fits(rcount, rdtype),
                         allgather_init, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info,
                         request);
    mca_coll_braid_args_t a = mca_coll_braid_args_blocks(sbuf, scount, sdtype, rbuf, rcount, rdtype, 0);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &family, &a, request);
}

bool mca_coll_braid_allgather_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = true;
    ok = MCA_COLL_BRAID_TAKE(m, allgather, mca_coll_braid_allgather) && ok;
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, iallgather, mca_coll_braid_iallgather);
    (void)MCA_COLL_BRAID_TAKE(m, allgather_init, mca_coll_braid_allgather_init);
    return ok;
}
