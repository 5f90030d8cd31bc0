/*
 * coll_braid_alltoallv.c - MPI_Alltoallv, MPI_Ialltoallv,
 * MPI_Alltoallv_init.
 *
 * The algorithms take each block as bytes at a byte displacement. A type
 * whose elements lie next to each other (contiguous over two elements:
 * extent = size) is used in place, its displacements scaled by the size;
 * any other is packed block after block into scratch (the send side) or
 * received packed and each block unpacked to its displacement at the end
 * (the receive side), so gaps and holes keep their values. In place the
 * input is the receive buffer in the receive layout. The selection size
 * is 0 for every call: ranks know only their own counts, and the choice
 * must be the same on all of them (alltoallv_shm agrees in the call
 * whether its cells carry the blocks). Device buffers are exchanged through
 * host copies of the spans the displacements cover.
 */
#include "coll_braid_cuda.h"
#include "coll_braid_datatype.h"
#include "coll_braid_entry.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

typedef mca_coll_braid_blocks_t side_t;

typedef struct vvargs {
    side_t s, r;
} vvargs_t;

/* An MPI code, or *fall_back when the previous module must run the call. */
static int alltoallv_host(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r,
                          const vvargs_t *x, bool *fall_back)
{
    int P = m->bcomm.size;
    bool in_place = MPI_IN_PLACE == x->s.buf;
    braid_call_t call;
    *fall_back = false;
    if (!mca_coll_braid_call_begin(m, &call, BRAID_COLL_ALLTOALLV, 0, r)) {
        *fall_back = true;
        return MPI_SUCCESS;
    }
    size_t *bc = braid_call_counts(&m->site, call.req, 0, 4 * (size_t)P);
    if (NULL == bc) return MPI_ERR_NO_MEM;
    size_t *bd = bc + P, *sc = bc + 2 * P, *sd = bc + 3 * P;
    int rc = MPI_SUCCESS;
    bool rpacked, spacked = false;
    /* in place the receive side is the input: packed in too */
    char *out = mca_coll_braid_blocks_bytes(call.args.scratch, BRAID_SCRATCH_GLUE_OUT, &x->r, P,
                                            in_place, bc, bd, &rpacked, &rc);
    const char *in = NULL;
    if (NULL != out && !in_place)
        in = mca_coll_braid_blocks_bytes(call.args.scratch, BRAID_SCRATCH_GLUE_IN, &x->s, P, true, sc,
                                         sd, &spacked, &rc);
    if (MPI_SUCCESS != rc) return rc;
    call.args.sbuf = in;
    call.args.rbuf = out;
    call.args.count = 0;
    call.args.esize = 1;
    call.args.rcounts = bc;
    call.args.displs = bd;
    call.args.scounts = in_place ? NULL : sc;
    call.args.sdispls = in_place ? NULL : sd;
    rc = mca_coll_braid_dispatched(braid_dispatch(&m->site, &call), fall_back);
    if (*fall_back) return rc;
    if (MPI_SUCCESS == rc && rpacked) rc = mca_coll_braid_blocks_unpack(&x->r, P, out, bc, bd);
    return rc;
}

/* x: the caller's, its buffers moved to host copies where they are on a
 * device */
static int alltoallv(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, vvargs_t *x)
{
    int P = m->bcomm.size;
    bool in_place = MPI_IN_PLACE == x->s.buf, fall_back;
    const void *none = NULL;
    size_t sn = in_place ? 0 : mca_coll_braid_device_span(&x->s, P);
    size_t rn = mca_coll_braid_device_span(&x->r, P);
    /* each copy starts at its side's lowest block (a displacement may be
     * negative) */
    ptrdiff_t slo = sn ? mca_coll_braid_blocks_low(&x->s, P) : 0;
    ptrdiff_t rlo = rn ? mca_coll_braid_blocks_low(&x->r, P) : 0;
    const void *sbuf = mca_coll_braid_shift(x->s.buf, slo, x->s.dtype);
    void *rbuf = mca_coll_braid_shift(x->r.buf, rlo, x->r.dtype);
    mca_coll_braid_host_copies_t *hc;
    /* the receive span is read first: its gaps keep their values */
    int rc = mca_coll_braid_host_copies_open(&hc, in_place ? &none : &sbuf, sn, x->s.dtype, &rbuf,
                                             rn, x->r.dtype, true);
    x->s.buf = in_place ? MPI_IN_PLACE : mca_coll_braid_shift(sbuf, -slo, x->s.dtype);
    x->r.buf = mca_coll_braid_shift(rbuf, -rlo, x->r.dtype);
    if (MPI_SUCCESS == rc) rc = alltoallv_host(m, r, x, &fall_back);
    if (MPI_SUCCESS == rc && fall_back && !mca_coll_braid_fall_back_in_request(r))
        rc = m->prev.coll_alltoallv(x->s.buf, BRAID_COUNTS(x->s.counts), BRAID_DISPLS(x->s.displs),
                                    x->s.dtype, (void *)x->r.buf, BRAID_COUNTS(x->r.counts),
                                    BRAID_DISPLS(x->r.displs), x->r.dtype, m->comm,
                                    m->prev.coll_alltoallv_module);
    return mca_coll_braid_host_copies_close(hc, rc);
}

/* ------------------------------------------------------------------ */
/* requests                                                            */
/* ------------------------------------------------------------------ */

static vvargs_t of_request(const mca_coll_braid_request_t *r)
{
    vvargs_t x = { { r->sbuf, r->a.scounts, r->a.sdispls, r->a.sdtype },
                   { r->rbuf, r->a.rcounts, r->a.displs, r->a.dtype } };
    return x;
}

static int run(mca_coll_braid_request_t *r)
{
    vvargs_t x = of_request(r);
    return alltoallv(r->m, r, &x);
}

static int prev_nonblocking(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_ialltoallv(r->sbuf, BRAID_COUNTS(r->a.scounts), BRAID_DISPLS(r->a.sdispls),
                                   r->a.sdtype, r->rbuf, BRAID_COUNTS(r->a.rcounts),
                                   BRAID_DISPLS(r->a.displs), r->a.dtype, m->comm, req,
                                   m->prev.coll_ialltoallv_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    vvargs_t x = of_request(r);
    int P = r->m->bcomm.size;
    *sn = MPI_IN_PLACE == r->sbuf ? 0 : mca_coll_braid_device_span(&x.s, P);
    *rn = mca_coll_braid_device_span(&x.r, P);
    *rfill = true;
}

static void copy_lows(const mca_coll_braid_request_t *r, ptrdiff_t *slo, ptrdiff_t *rlo)
{
    vvargs_t x = of_request(r);
    int P = r->m->bcomm.size;
    *slo = MPI_IN_PLACE == r->sbuf ? 0 : mca_coll_braid_blocks_low(&x.s, P);
    *rlo = mca_coll_braid_blocks_low(&x.r, P);
}

static const mca_coll_braid_family_t family = { BRAID_COLL_ALLTOALLV, run, prev_nonblocking,
                                                copies, copy_lows };

static inline mca_coll_braid_args_t args(const void *sbuf, const int *scounts,
                 const int *sdispls, MPI_Datatype sdtype, void *rbuf, const int *rcounts,
                 const int *rdispls, MPI_Datatype rdtype)
{
    return (mca_coll_braid_args_t){
        .usbuf = sbuf,
        .scounts = scounts,
        .sdispls = sdispls,
        .sdtype = sdtype,
        .urbuf = rbuf,
        .rcounts = rcounts,
        .displs = rdispls,
        .dtype = rdtype,
    };
}

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

#define VVARGS                                                                                     \
    const void *sbuf, braid_counts_t scounts, braid_displs_t sdispls,                              \
        struct ompi_datatype_t *sdtype, void *rbuf, braid_counts_t rcounts,                        \
        braid_displs_t rdispls, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm

static int mca_coll_braid_alltoallv(VVARGS, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_counts_are_int(scounts) && braid_displs_are_int(sdispls)
                             && braid_counts_are_int(rcounts) && braid_displs_are_int(rdispls),
                         alltoallv, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype,
                         comm);
    (void)comm;
    vvargs_t x = { { sbuf, braid_counts_int(scounts), braid_displs_int(sdispls), sdtype },
                   { rbuf, braid_counts_int(rcounts), braid_displs_int(rdispls), rdtype } };
    return alltoallv((mca_coll_braid_module_t *)module, NULL, &x);
}

static int mca_coll_braid_ialltoallv(VVARGS, ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_counts_are_int(scounts) && braid_displs_are_int(sdispls)
                             && braid_counts_are_int(rcounts) && braid_displs_are_int(rdispls),
                         ialltoallv, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype,
                         comm, request);
    mca_coll_braid_args_t a = args(sbuf, braid_counts_int(scounts), braid_displs_int(sdispls),
                                   sdtype, rbuf, braid_counts_int(rcounts),
                                   braid_displs_int(rdispls), rdtype);
    (void)comm;
    return mca_coll_braid_request_post(module, &family, &a, request);
}

static int mca_coll_braid_alltoallv_init(VVARGS, struct ompi_info_t *info, ompi_request_t **request,
                                         mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_counts_are_int(scounts) && braid_displs_are_int(sdispls)
                             && braid_counts_are_int(rcounts) && braid_displs_are_int(rdispls),
                         alltoallv_init, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                         rdtype, comm, info, request);
    mca_coll_braid_args_t a = args(sbuf, braid_counts_int(scounts), braid_displs_int(sdispls),
                                   sdtype, rbuf, braid_counts_int(rcounts),
                                   braid_displs_int(rdispls), rdtype);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &family, &a, request);
}

bool mca_coll_braid_alltoallv_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = MCA_COLL_BRAID_TAKE(m, alltoallv, mca_coll_braid_alltoallv);
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, ialltoallv, mca_coll_braid_ialltoallv);
    (void)MCA_COLL_BRAID_TAKE(m, alltoallv_init, mca_coll_braid_alltoallv_init);
    return ok;
}
