/*
 * coll_braid_allgatherv.c - MPI_Allgatherv, MPI_Iallgatherv,
 * MPI_Allgatherv_init.
 *
 * The algorithms take each rank's block as bytes at a byte displacement.
 * A receive type whose elements lie next to each other (contiguous over
 * two elements: extent = size) is used in place, its displacements scaled
 * by the size; any other is gathered packed in scratch, block after
 * block, and each block unpacked to its displacement at the end, so the
 * gaps and holes of the receive buffer keep their values. The send side
 * is used as it is when contiguous, else packed. The selection size is the
 * mean block, the same on every rank (every rank has every count); the
 * largest block is what a shm slot must hold. Device buffers are gathered
 * through host copies of the whole span of the receive buffer.
 */
#include "coll_braid_cuda.h"
#include "coll_braid_datatype.h"
#include "coll_braid_entry.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

static size_t elems(int n) { return n > 0 ? (size_t)n : 0; }

typedef struct vargs {
    const void *sbuf;
    int scount;
    MPI_Datatype sdtype;
    void *rbuf;
    const int *rcounts, *displs;
    MPI_Datatype rdtype;
} vargs_t;

/* This rank's block for the algorithms: the send buffer as it is, or
 * packed into `mine` (its place in the packed receive layout, or scratch) */
static int place_mine(const vargs_t *x, bool packed, char *mine, size_t n, ptrdiff_t extent,
                      int rank, const void **send)
{
    *send = NULL;
    if (MPI_IN_PLACE != x->sbuf && mca_coll_braid_is_contiguous(x->sdtype, elems(x->scount))) {
        *send = mca_coll_braid_contig_base(x->sbuf, x->sdtype);
        return OMPI_SUCCESS;
    }
    if (MPI_IN_PLACE != x->sbuf) {
        *send = mine;
        return mca_coll_braid_pack(x->sbuf, elems(x->scount), x->sdtype, mine, n);
    }
    if (!packed) return OMPI_SUCCESS;   /* in place: already at its displacement */
    const char *at = (const char *)x->rbuf + (ptrdiff_t)x->displs[rank] * extent;
    return mca_coll_braid_pack(at, elems(x->rcounts[rank]), x->rdtype, mine, n);
}

/* An MPI code, or *fall_back when the previous module must run the call. */
static int allgatherv_host(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r,
                           const vargs_t *x, bool *fall_back)
{
    int P = m->bcomm.size, rank = m->bcomm.rank;
    size_t tsize = mca_coll_braid_type_size(x->rdtype), total = 0;
    for (int i = 0; i < P; i++) total += elems(x->rcounts[i]) * tsize;
    braid_call_t call;
    *fall_back = false;
    if (0 == total) return MPI_SUCCESS;
    if (!mca_coll_braid_call_begin(m, &call, BRAID_COLL_ALLGATHERV, total / (size_t)P, r)) {
        *fall_back = true;
        return MPI_SUCCESS;
    }
    size_t *bc = braid_call_counts(&m->site, call.req, 0, 2 * (size_t)P), *bd = bc + P, largest = 0;
    if (NULL == bc) return MPI_ERR_NO_MEM;
    bool packed = !mca_coll_braid_is_contiguous(x->rdtype, 2);
    ptrdiff_t lo = mca_coll_braid_blocks_layout(x->rcounts, x->displs, P, tsize, packed, bc, bd);
    for (int i = 0; i < P; i++) largest = bc[i] > largest ? bc[i] : largest;
    char *base = packed ? braid_scratch_get(call.args.scratch, BRAID_SCRATCH_GLUE_OUT, total)
                        : mca_coll_braid_contig_base(mca_coll_braid_shift(x->rbuf, lo, x->rdtype),
                                                     x->rdtype);
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(x->rdtype, &lb, &extent);
    char *mine = packed ? base + bd[rank]
                        : braid_scratch_get(call.args.scratch, BRAID_SCRATCH_GLUE_IN, bc[rank]);
    if (NULL == base || (NULL == mine && bc[rank])) return MPI_ERR_NO_MEM;
    if (OMPI_SUCCESS != place_mine(x, packed, mine, bc[rank], extent, rank, &call.args.sbuf))
        return MPI_ERR_INTERN;
    call.args.rbuf = base;
    call.args.count = largest;
    call.args.esize = 1;
    call.args.rcounts = bc;
    call.args.displs = bd;
    int rc = mca_coll_braid_dispatched(braid_dispatch(&m->site, &call), fall_back);
    if (*fall_back) return rc;
    mca_coll_braid_blocks_t blocks = { x->rbuf, x->rcounts, x->displs, x->rdtype };
    if (MPI_SUCCESS == rc && packed) rc = mca_coll_braid_blocks_unpack(&blocks, P, base, bc, bd);
    return rc;
}

static mca_coll_braid_blocks_t rblocks(const vargs_t *x)
{
    mca_coll_braid_blocks_t b = { x->rbuf, x->rcounts, x->displs, x->rdtype };
    return b;
}

static int allgatherv(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, vargs_t *x)
{
    bool fall_back;
    mca_coll_braid_host_copies_t *hc;
    const void *none = NULL;
    bool in_place = MPI_IN_PLACE == x->sbuf;
    /* the whole span of the receive buffer, from its lowest block (a
     * displacement may be negative), is read first: the gaps between
     * blocks keep their values */
    mca_coll_braid_blocks_t rb = rblocks(x);
    size_t rn = mca_coll_braid_device_span(&rb, m->bcomm.size);
    ptrdiff_t lo = rn ? mca_coll_braid_blocks_low(&rb, m->bcomm.size) : 0;
    x->rbuf = mca_coll_braid_shift(x->rbuf, lo, x->rdtype);
    int rc = mca_coll_braid_host_copies_open(&hc, in_place ? &none : &x->sbuf, elems(x->scount),
                                             x->sdtype, &x->rbuf, rn, x->rdtype, true);
    x->rbuf = mca_coll_braid_shift(x->rbuf, -lo, x->rdtype);
    if (in_place) x->sbuf = MPI_IN_PLACE;
    if (MPI_SUCCESS == rc) rc = allgatherv_host(m, r, x, &fall_back);
    if (MPI_SUCCESS == rc && fall_back && !mca_coll_braid_fall_back_in_request(r))
        rc = m->prev.coll_allgatherv(x->sbuf, x->scount, x->sdtype, x->rbuf,
                                     BRAID_COUNTS(x->rcounts), BRAID_DISPLS(x->displs), x->rdtype,
                                     m->comm, m->prev.coll_allgatherv_module);
    return mca_coll_braid_host_copies_close(hc, rc);
}

/* ------------------------------------------------------------------ */
/* requests                                                            */
/* ------------------------------------------------------------------ */

static vargs_t of_request(const mca_coll_braid_request_t *r)
{
    vargs_t x = { r->sbuf, r->a.scount, r->a.sdtype, r->rbuf, r->a.rcounts, r->a.displs, r->a.dtype };
    return x;
}

static int run(mca_coll_braid_request_t *r)
{
    vargs_t x = of_request(r);
    return allgatherv(r->m, r, &x);
}

static int prev_nonblocking(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_iallgatherv(r->sbuf, r->a.scount, r->a.sdtype, r->rbuf,
                                    BRAID_COUNTS(r->a.rcounts), BRAID_DISPLS(r->a.displs),
                                    r->a.dtype, m->comm, req, m->prev.coll_iallgatherv_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    vargs_t x = of_request(r);
    *sn = elems(x.scount);
    mca_coll_braid_blocks_t rb = rblocks(&x);
    *rn = mca_coll_braid_device_span(&rb, r->m->bcomm.size);
    *rfill = true;
}

static void copy_lows(const mca_coll_braid_request_t *r, ptrdiff_t *slo, ptrdiff_t *rlo)
{
    vargs_t x = of_request(r);
    mca_coll_braid_blocks_t rb = rblocks(&x);
    *slo = 0;
    *rlo = mca_coll_braid_blocks_low(&rb, r->m->bcomm.size);
}

static const mca_coll_braid_family_t family = { BRAID_COLL_ALLGATHERV, run, prev_nonblocking,
                                                copies, copy_lows };

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

#define VARGS                                                                                      \
    const void *sbuf, braid_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf,            \
        braid_counts_t rcounts, braid_displs_t displs, struct ompi_datatype_t *rdtype,             \
        struct ompi_communicator_t *comm

static int mca_coll_braid_allgatherv(VARGS, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(scount, sdtype) && braid_counts_are_int(rcounts)
                             && braid_displs_are_int(displs),
                         allgatherv, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm);
    (void)comm;
    vargs_t x = { sbuf,  scount, sdtype, rbuf, braid_counts_int(rcounts), braid_displs_int(displs),
                  rdtype };
    return allgatherv((mca_coll_braid_module_t *)module, NULL, &x);
}

static int mca_coll_braid_iallgatherv(VARGS, ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(scount, sdtype) && braid_counts_are_int(rcounts)
                             && braid_displs_are_int(displs),
                         iallgatherv, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                         request);
    mca_coll_braid_args_t a = mca_coll_braid_args_vblocks(
        sbuf, scount, sdtype, rbuf, braid_counts_int(rcounts), braid_displs_int(displs), rdtype, 0);
    (void)comm;
    return mca_coll_braid_request_post(module, &family, &a, request);
}

static int mca_coll_braid_allgatherv_init(VARGS, struct ompi_info_t *info, ompi_request_t **request,
                                          mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_count_fits(scount, sdtype) && braid_counts_are_int(rcounts)
                             && braid_displs_are_int(displs),
                         allgatherv_init, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                         info, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_vblocks(
        sbuf, scount, sdtype, rbuf, braid_counts_int(rcounts), braid_displs_int(displs), rdtype, 0);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &family, &a, request);
}

bool mca_coll_braid_allgatherv_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = MCA_COLL_BRAID_TAKE(m, allgatherv, mca_coll_braid_allgatherv);
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, iallgatherv, mca_coll_braid_iallgatherv);
    (void)MCA_COLL_BRAID_TAKE(m, allgatherv_init, mca_coll_braid_allgatherv_init);
    return ok;
}
