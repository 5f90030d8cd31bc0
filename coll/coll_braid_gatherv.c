/*
 * coll_braid_gatherv.c - MPI_Gatherv and MPI_Scatterv, with their MPI_I*
 * and _init forms.
 *
 * The algorithms take bytes: the root's blocks with their byte sizes and
 * byte displacements (the user's buffer when its type is dense, else
 * packed one after another in scratch and unpacked to their places at the
 * end, so gaps and holes keep their values), and every other rank's own
 * block (the user's buffer when contiguous, else packed). A rank knows
 * only its own count, so the selection size is 0 for every call and the
 * shm algorithms choose each block's way in the call; no rank may skip a
 * call whose own block is empty. In place: the gather root's block is
 * already at its displacement, the scatter root's stays in its send
 * buffer. Device buffers are exchanged through host copies of the spans
 * the displacements cover.
 */
#include "coll_braid_component.h"
#include "coll_braid_cuda.h"
#include "coll_braid_datatype.h"
#include "coll_braid_entry.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

static size_t elems(int n) { return n > 0 ? (size_t)n : 0; }

/* The root's blocks (gatherv: received, scatterv: sent) and this rank's
 * own block (gatherv: sent, scatterv: received). */
typedef struct vrooted {
    mca_coll_braid_blocks_t blocks;
    const void *own;          /* gatherv: sbuf; scatterv: rbuf (MPI_IN_PLACE at the root) */
    int own_count;
    MPI_Datatype own_dtype;
    int root;
} vrooted_t;

/* This rank's block as bytes: the user's buffer when contiguous, else
 * scratch slot `slot` (packed in when read). NULL with *rc set: no memory
 * or a failed pack. */
static char *own_bytes(braid_call_t *call, const vrooted_t *x, bool read, int slot, bool *packed,
                       int *rc)
{
    size_t n = elems(x->own_count), bytes = n * mca_coll_braid_type_size(x->own_dtype);
    *packed = !mca_coll_braid_is_contiguous(x->own_dtype, n);
    if (!*packed) return mca_coll_braid_contig_base(x->own, x->own_dtype);
    char *tmp = braid_scratch_get(call->args.scratch, slot, bytes ? bytes : 1);
    if (NULL == tmp) *rc = MPI_ERR_NO_MEM;
    else if (read && OMPI_SUCCESS != mca_coll_braid_pack(x->own, n, x->own_dtype, tmp, bytes))
        *rc = MPI_ERR_INTERN;
    return MPI_SUCCESS == *rc ? tmp : NULL;
}

/* An MPI code, or *fall_back when the previous module must run the call. */
static int vrooted_host(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, braid_coll_t coll,
                        const vrooted_t *x, bool *fall_back)
{
    int P = m->bcomm.size;
    bool gather = BRAID_COLL_GATHERV == coll, is_root = m->bcomm.rank == x->root;
    bool in_place = is_root && MPI_IN_PLACE == x->own;
    braid_call_t call;
    *fall_back = false;
    if (!mca_coll_braid_call_begin(m, &call, coll, 0, r)) {
        *fall_back = true;
        return MPI_SUCCESS;
    }
    int rc = MPI_SUCCESS;
    bool blocks_packed = false, own_packed = false;
    size_t *bc = NULL, *bd = NULL, own = elems(x->own_count) * mca_coll_braid_type_size(x->own_dtype);
    char *blocks = NULL, *mine = NULL;
    if (is_root) {
        bc = braid_call_counts(&m->site, call.req, 0, 2 * (size_t)P);
        if (NULL == bc) return MPI_ERR_NO_MEM;
        bd = bc + P;
        /* the gather root in place reads its own block from the blocks */
        blocks = mca_coll_braid_blocks_bytes(call.args.scratch, BRAID_SCRATCH_GLUE_OUT, &x->blocks, P,
                                             !gather || in_place, bc, bd, &blocks_packed, &rc);
        own = bc[x->root];
    }
    if (MPI_SUCCESS == rc && !in_place)
        mine = own_bytes(&call, x, gather, BRAID_SCRATCH_GLUE_IN, &own_packed, &rc);
    if (MPI_SUCCESS != rc) return rc;
    call.args.sbuf = gather ? mine : blocks;
    call.args.rbuf = gather ? blocks : mine;
    call.args.count = own;
    call.args.esize = 1;
    call.args.root = x->root;
    call.args.rcounts = gather ? bc : NULL;
    call.args.displs = gather ? bd : NULL;
    call.args.scounts = gather ? NULL : bc;
    call.args.sdispls = gather ? NULL : bd;
    rc = mca_coll_braid_dispatched(braid_dispatch(&m->site, &call), fall_back);
    if (*fall_back) return rc;
    if (MPI_SUCCESS != rc) return rc;
    if (gather && blocks_packed) return mca_coll_braid_blocks_unpack(&x->blocks, P, blocks, bc, bd);
    if (!gather && own_packed &&
        OMPI_SUCCESS != mca_coll_braid_unpack((void *)x->own, elems(x->own_count), x->own_dtype, mine, own))
        return MPI_ERR_INTERN;
    return MPI_SUCCESS;
}

/* Host copies of device buffers around the call: the root's blocks (the
 * whole span, read first: its gaps keep their values) and this rank's own
 * block (gatherv: sent; scatterv: received, read first when its type has
 * holes) */
static void copy_counts(bool gather, bool is_root, const vrooted_t *x, int P, size_t *blocks_n,
                        size_t *own_n, bool *own_fill)
{
    *blocks_n = is_root ? mca_coll_braid_device_span(&x->blocks, P) : 0;
    *own_n = MPI_IN_PLACE == x->own ? 0 : elems(x->own_count);
    *own_fill = !gather && !mca_coll_braid_is_contiguous(x->own_dtype, *own_n);
}

static int call_prev(mca_coll_braid_module_t *m, bool gather, const vrooted_t *x)
{
    const mca_coll_braid_blocks_t *b = &x->blocks;
    if (gather)
        return m->prev.coll_gatherv(x->own, x->own_count, x->own_dtype, (void *)b->buf,
                                    BRAID_COUNTS(b->counts), BRAID_DISPLS(b->displs), b->dtype,
                                    x->root, m->comm, m->prev.coll_gatherv_module);
    return m->prev.coll_scatterv(b->buf, BRAID_COUNTS(b->counts), BRAID_DISPLS(b->displs), b->dtype,
                                 (void *)x->own, x->own_count, x->own_dtype, x->root, m->comm,
                                 m->prev.coll_scatterv_module);
}

static int vrooted(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, braid_coll_t coll,
                   vrooted_t *x)
{
    bool gather = BRAID_COLL_GATHERV == coll, is_root = m->bcomm.rank == x->root, fall_back;
    size_t bn = 0, on = 0;
    bool ofill = false;
    /* the copies' sizes only where buffers may be on a device */
    if (mca_coll_braid_component.cuda_job)
        copy_counts(gather, is_root, x, m->bcomm.size, &bn, &on, &ofill);
    bool in_place = MPI_IN_PLACE == x->own;
    const void *none = NULL;
    /* the blocks' copy starts at the lowest one (a displacement may be
     * negative) */
    ptrdiff_t lo = bn ? mca_coll_braid_blocks_low(&x->blocks, m->bcomm.size) : 0;
    void *blocks = mca_coll_braid_shift(x->blocks.buf, lo, x->blocks.dtype), *own = (void *)x->own;
    mca_coll_braid_host_copies_t *hc;
    const void **sent_blocks = (const void **)&blocks;
    int rc = gather ? mca_coll_braid_host_copies_open(&hc, 0 == on ? &none : &x->own, on,
                                                      x->own_dtype, 0 == bn ? NULL : &blocks, bn,
                                                      x->blocks.dtype, true)
                    : mca_coll_braid_host_copies_open(&hc, 0 == bn ? &none : sent_blocks, bn,
                                                      x->blocks.dtype, 0 == on ? NULL : &own, on,
                                                      x->own_dtype, ofill);
    x->blocks.buf = mca_coll_braid_shift(blocks, -lo, x->blocks.dtype);
    if (!gather) x->own = own;
    if (in_place) x->own = MPI_IN_PLACE;
    if (MPI_SUCCESS == rc) rc = vrooted_host(m, r, coll, x, &fall_back);
    if (MPI_SUCCESS == rc && fall_back && !mca_coll_braid_fall_back_in_request(r))
        rc = call_prev(m, gather, x);
    return mca_coll_braid_host_copies_close(hc, rc);
}

/* ------------------------------------------------------------------ */
/* requests                                                            */
/* ------------------------------------------------------------------ */

/* gatherv: a.usbuf/scount/sdtype the own block, a.urbuf/rcounts/displs/
 * dtype the blocks; scatterv: a.usbuf/scounts/sdispls/sdtype the blocks,
 * a.urbuf/count/dtype the own block */
static vrooted_t of_request(const mca_coll_braid_request_t *r)
{
    if (BRAID_COLL_GATHERV == r->family->coll) {
        vrooted_t x = { { r->rbuf, r->a.rcounts, r->a.displs, r->a.dtype }, r->sbuf, r->a.scount,
                        r->a.sdtype, r->a.root };
        return x;
    }
    vrooted_t x = { { r->sbuf, r->a.scounts, r->a.sdispls, r->a.sdtype }, r->rbuf, r->a.count,
                    r->a.dtype, r->a.root };
    return x;
}

static int run(mca_coll_braid_request_t *r)
{
    vrooted_t x = of_request(r);
    return vrooted(r->m, r, r->family->coll, &x);
}

static int prev_igatherv(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_igatherv(r->sbuf, r->a.scount, r->a.sdtype, r->rbuf,
                                 BRAID_COUNTS(r->a.rcounts), BRAID_DISPLS(r->a.displs), r->a.dtype,
                                 r->a.root, m->comm, req, m->prev.coll_igatherv_module);
}

static int prev_iscatterv(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_iscatterv(r->sbuf, BRAID_COUNTS(r->a.scounts), BRAID_DISPLS(r->a.sdispls),
                                  r->a.sdtype, r->rbuf, r->a.count, r->a.dtype, r->a.root, m->comm,
                                  req, m->prev.coll_iscatterv_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    vrooted_t x = of_request(r);
    bool gather = BRAID_COLL_GATHERV == r->family->coll, fill;
    size_t bn, on;
    copy_counts(gather, r->m->bcomm.rank == x.root, &x, r->m->bcomm.size, &bn, &on, &fill);
    *sn = gather ? on : bn;
    *rn = gather ? bn : on;
    *rfill = gather || fill;
}

/* the root's blocks' copy starts at the lowest one */
static void copy_lows(const mca_coll_braid_request_t *r, ptrdiff_t *slo, ptrdiff_t *rlo)
{
    vrooted_t x = of_request(r);
    int P = r->m->bcomm.size;
    ptrdiff_t lo = r->m->bcomm.rank == x.root ? mca_coll_braid_blocks_low(&x.blocks, P) : 0;
    bool gather = BRAID_COLL_GATHERV == r->family->coll;
    *slo = gather ? 0 : lo;
    *rlo = gather ? lo : 0;
}

static const mca_coll_braid_family_t gatherv_family = { BRAID_COLL_GATHERV, run, prev_igatherv,
                                                        copies, copy_lows };
static const mca_coll_braid_family_t scatterv_family = { BRAID_COLL_SCATTERV, run, prev_iscatterv,
                                                         copies, copy_lows };

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

#define GATHERV_ARGS                                                                               \
    const void *sbuf, braid_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf,            \
        braid_counts_t rcounts, braid_displs_t displs, struct ompi_datatype_t *rdtype, int root,   \
        struct ompi_communicator_t *comm
#define SCATTERV_ARGS                                                                              \
    const void *sbuf, braid_counts_t scounts, braid_displs_t displs,                               \
        struct ompi_datatype_t *sdtype, void *rbuf, braid_count_t rcount,                          \
        struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm

static inline mca_coll_braid_args_t scatterv_args(const void *sbuf, const int *scounts,
                                                  const int *displs, struct ompi_datatype_t *sdtype,
                                                  void *rbuf, int rcount,
                                                  struct ompi_datatype_t *rdtype, int root)
{
    return (mca_coll_braid_args_t){
        .usbuf = sbuf,
        .scounts = scounts,
        .sdispls = displs,
        .sdtype = sdtype,
        .urbuf = rbuf,
        .count = rcount,
        .dtype = rdtype,
        .root = root,
    };
}

static int mca_coll_braid_gatherv(GATHERV_ARGS, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rootedv_fits(comm, root, sbuf, scount, rcounts, displs), gatherv,
                         sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm);
    (void)comm;
    vrooted_t x = { { rbuf, braid_counts_int(rcounts), braid_displs_int(displs), rdtype },
                    sbuf,
                    scount,
                    sdtype,
                    root };
    return vrooted((mca_coll_braid_module_t *)module, NULL, BRAID_COLL_GATHERV, &x);
}

static int mca_coll_braid_scatterv(SCATTERV_ARGS, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rootedv_fits(comm, root, rbuf, rcount, scounts, displs), scatterv,
                         sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm);
    (void)comm;
    vrooted_t x = { { sbuf, braid_counts_int(scounts), braid_displs_int(displs), sdtype },
                    rbuf,
                    rcount,
                    rdtype,
                    root };
    return vrooted((mca_coll_braid_module_t *)module, NULL, BRAID_COLL_SCATTERV, &x);
}

static int mca_coll_braid_igatherv(GATHERV_ARGS, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rootedv_fits(comm, root, sbuf, scount, rcounts, displs), igatherv,
                         sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_vblocks(sbuf, scount, sdtype, rbuf,
                                                          braid_counts_int(rcounts),
                                                          braid_displs_int(displs), rdtype, root);
    (void)comm;
    return mca_coll_braid_request_post(module, &gatherv_family, &a, request);
}

static int mca_coll_braid_iscatterv(SCATTERV_ARGS, ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rootedv_fits(comm, root, rbuf, rcount, scounts, displs), iscatterv,
                         sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, request);
    mca_coll_braid_args_t a = scatterv_args(sbuf, braid_counts_int(scounts),
                                            braid_displs_int(displs), sdtype, rbuf, rcount, rdtype,
                                            root);
    return mca_coll_braid_request_post(module, &scatterv_family, &a, request);
}

static int mca_coll_braid_gatherv_init(GATHERV_ARGS, struct ompi_info_t *info,
                                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rootedv_fits(comm, root, sbuf, scount, rcounts, displs),
                         gatherv_init, sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                         comm, info, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_vblocks(sbuf, scount, sdtype, rbuf,
                                                          braid_counts_int(rcounts),
                                                          braid_displs_int(displs), rdtype, root);
    (void)comm, (void)info;
    return mca_coll_braid_request_persist(module, &gatherv_family, &a, request);
}

static int mca_coll_braid_scatterv_init(SCATTERV_ARGS, struct ompi_info_t *info,
                                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rootedv_fits(comm, root, rbuf, rcount, scounts, displs),
                         scatterv_init, sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                         comm, info, request);
    mca_coll_braid_args_t a = scatterv_args(sbuf, braid_counts_int(scounts),
                                            braid_displs_int(displs), sdtype, rbuf, rcount, rdtype,
                                            root);
    (void)info;
    return mca_coll_braid_request_persist(module, &scatterv_family, &a, request);
}

bool mca_coll_braid_gatherv_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = true;
    ok = MCA_COLL_BRAID_TAKE(m, gatherv, mca_coll_braid_gatherv) && ok;
    ok = MCA_COLL_BRAID_TAKE(m, scatterv, mca_coll_braid_scatterv) && ok;
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, igatherv, mca_coll_braid_igatherv);
    (void)MCA_COLL_BRAID_TAKE(m, iscatterv, mca_coll_braid_iscatterv);
    (void)MCA_COLL_BRAID_TAKE(m, gatherv_init, mca_coll_braid_gatherv_init);
    (void)MCA_COLL_BRAID_TAKE(m, scatterv_init, mca_coll_braid_scatterv_init);
    return ok;
}
