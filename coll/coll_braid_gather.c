/*
 * coll_braid_gather.c - MPI_Gather and MPI_Scatter, with their MPI_I* and
 * _init forms.
 *
 * The wire carries each block as packed bytes: the block's bytes are
 * recvcount x receive type size at the gather root and sendcount x send
 * type size elsewhere (scatter: the other way round), equal by MPI's
 * signature rule, so every rank chooses the same algorithm. Contiguous
 * buffers are used as they are, other datatypes packed into scratch and
 * unpacked at the end; the send and receive types may differ. In place:
 * the gather root's block is already in its receive buffer, the scatter
 * root's stays in its send buffer. Device buffers are exchanged through
 * host copies, whole.
 */
#include "coll_braid_component.h"
#include "coll_braid_cuda.h"
#include "coll_braid_datatype.h"
#include "coll_braid_entry.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

typedef struct rooted {
    const void *sbuf;
    int scount;
    MPI_Datatype sdtype;
    void *rbuf;
    int rcount;
    MPI_Datatype rdtype;
    int root;
} rooted_t;

static size_t elems(int n) { return n > 0 ? (size_t)n : 0; }

/* The root's P blocks as the algorithms see them: the user's buffer when
 * contiguous, else packed (when read) in scratch slot `slot`. */
static char *root_blocks(braid_call_t *call, size_t P, const void *buf, int count, MPI_Datatype dt,
                         size_t all, bool read, int slot, bool *packed, int *rc)
{
    *packed = !mca_coll_braid_is_contiguous(dt, elems(count) * P);
    if (!*packed) return mca_coll_braid_contig_base(buf, dt);
    char *tmp = braid_scratch_get(call->args.scratch, slot, all);
    if (NULL == tmp) *rc = MPI_ERR_NO_MEM;
    else if (read && OMPI_SUCCESS != mca_coll_braid_pack(buf, elems(count) * P, dt, tmp, all))
        *rc = MPI_ERR_INTERN;
    return tmp;
}

/* One rank's block: as for root_blocks, one block. */
static char *own_block(braid_call_t *call, const void *buf, int count, MPI_Datatype dt,
                       size_t block, bool read, int slot, bool *packed, int *rc)
{
    *packed = !mca_coll_braid_is_contiguous(dt, elems(count));
    if (!*packed) return mca_coll_braid_contig_base(buf, dt);
    char *tmp = braid_scratch_get(call->args.scratch, slot, block);
    if (NULL == tmp) *rc = MPI_ERR_NO_MEM;
    else if (read && OMPI_SUCCESS != mca_coll_braid_pack(buf, elems(count), dt, tmp, block))
        *rc = MPI_ERR_INTERN;
    return tmp;
}

/* An MPI code, or *fall_back when the previous module must run the call. */
static int rooted_host(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, braid_coll_t coll,
                       const rooted_t *x, bool *fall_back)
{
    bool gather = BRAID_COLL_GATHER == coll, is_root = m->bcomm.rank == x->root;
    size_t P = (size_t)m->bcomm.size;
    /* the block's bytes, from the side this rank's arguments describe */
    bool from_recv = gather ? is_root : !is_root;
    size_t block = from_recv ? elems(x->rcount) * mca_coll_braid_type_size(x->rdtype)
                             : elems(x->scount) * mca_coll_braid_type_size(x->sdtype);
    braid_call_t call;
    *fall_back = false;
    if (0 == block) return MPI_SUCCESS;
    if (!mca_coll_braid_call_begin(m, &call, coll, block, r)) {
        *fall_back = true;
        return MPI_SUCCESS;
    }
    int rc = MPI_SUCCESS;
    bool out_packed = false, in_packed;
    char *in = NULL, *out = NULL;
    if (gather) {
        bool in_place = is_root && MPI_IN_PLACE == x->sbuf;
        if (is_root) out = root_blocks(&call, P, x->rbuf, x->rcount, x->rdtype, block * P, in_place,
                                       BRAID_SCRATCH_GLUE_OUT, &out_packed, &rc);
        if (!in_place && MPI_SUCCESS == rc)
            in = own_block(&call, x->sbuf, x->scount, x->sdtype, block, true, BRAID_SCRATCH_GLUE_IN,
                           &in_packed, &rc);
    } else {
        bool in_place = is_root && MPI_IN_PLACE == x->rbuf;
        if (is_root) in = root_blocks(&call, P, x->sbuf, x->scount, x->sdtype, block * P, true,
                                      BRAID_SCRATCH_GLUE_IN, &in_packed, &rc);
        if (!in_place && MPI_SUCCESS == rc)
            out = own_block(&call, x->rbuf, x->rcount, x->rdtype, block, false,
                            BRAID_SCRATCH_GLUE_OUT, &out_packed, &rc);
    }
    if (MPI_SUCCESS != rc) return rc;
    call.args.sbuf = in;
    call.args.rbuf = out;
    call.args.count = block;
    call.args.esize = 1;
    call.args.root = x->root;
    rc = mca_coll_braid_dispatched(braid_dispatch(&m->site, &call), fall_back);
    if (*fall_back) return rc;
    if (MPI_SUCCESS == rc && out_packed) {
        size_t n = gather ? elems(x->rcount) * P : elems(x->rcount);
        if (OMPI_SUCCESS != mca_coll_braid_unpack(x->rbuf, n, x->rdtype, out, gather ? block * P : block))
            rc = MPI_ERR_INTERN;
    }
    return rc;
}

/* Host copies of device buffers around the call: the send side (the
 * scatter root's P blocks), the receive side (the gather root's P
 * blocks), read first when the call reads it */
static void copy_counts(bool gather, bool is_root, const rooted_t *x, size_t P, size_t *sn,
                        size_t *rn, bool *rfill)
{
    bool s_in_place = MPI_IN_PLACE == x->sbuf, r_in_place = MPI_IN_PLACE == x->rbuf;
    if (gather) {
        *sn = s_in_place ? 0 : elems(x->scount);
        *rn = is_root ? elems(x->rcount) * P : 0;
    } else {
        *sn = is_root ? elems(x->scount) * P : 0;
        *rn = r_in_place ? 0 : elems(x->rcount);
    }
    /* the gather root's own block in place, or the holes of a receive type */
    *rfill = (gather && s_in_place) || !mca_coll_braid_is_contiguous(x->rdtype, *rn);
}

/* x: the caller's, its buffers moved to host copies where they are on a
 * device */
static int rooted(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, braid_coll_t coll,
                  rooted_t *x)
{
    bool gather = BRAID_COLL_GATHER == coll, is_root = m->bcomm.rank == x->root, fall_back;
    size_t sn = 0, rn = 0;
    bool rfill = false;
    /* the copies' sizes only where buffers may be on a device: in a job
     * without CUDA that is one load, not the datatype queries */
    if (mca_coll_braid_component.cuda_job)
        copy_counts(gather, is_root, x, (size_t)m->bcomm.size, &sn, &rn, &rfill);
    const void *none = NULL;
    bool s_in_place = MPI_IN_PLACE == x->sbuf, r_in_place = MPI_IN_PLACE == x->rbuf;
    mca_coll_braid_host_copies_t *hc;
    int rc = mca_coll_braid_host_copies_open(&hc, 0 == sn ? &none : &x->sbuf, sn, x->sdtype,
                                             0 == rn ? NULL : &x->rbuf, rn, x->rdtype, rfill);
    if (s_in_place) x->sbuf = MPI_IN_PLACE;
    if (r_in_place) x->rbuf = MPI_IN_PLACE;
    if (MPI_SUCCESS == rc) rc = rooted_host(m, r, coll, x, &fall_back);
    if (MPI_SUCCESS == rc && fall_back && !mca_coll_braid_fall_back_in_request(r)) {
        if (gather)
            rc = m->prev.coll_gather(x->sbuf, x->scount, x->sdtype, x->rbuf, x->rcount, x->rdtype,
                                     x->root, m->comm, m->prev.coll_gather_module);
        else
            rc = m->prev.coll_scatter(x->sbuf, x->scount, x->sdtype, x->rbuf, x->rcount, x->rdtype,
                                      x->root, m->comm, m->prev.coll_scatter_module);
    }
    return mca_coll_braid_host_copies_close(hc, rc);
}

/* ------------------------------------------------------------------ */
/* requests                                                            */
/* ------------------------------------------------------------------ */

static rooted_t of_request(const mca_coll_braid_request_t *r)
{
    rooted_t x = { r->sbuf, r->a.scount, r->a.sdtype, r->rbuf, r->a.count, r->a.dtype, r->a.root };
    return x;
}

static int run(mca_coll_braid_request_t *r)
{
    rooted_t x = of_request(r);
    return rooted(r->m, r, r->family->coll, &x);
}

static int prev_igather(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_igather(r->sbuf, r->a.scount, r->a.sdtype, r->rbuf, r->a.count, r->a.dtype,
                                r->a.root, m->comm, req, m->prev.coll_igather_module);
}

static int prev_iscatter(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_iscatter(r->sbuf, r->a.scount, r->a.sdtype, r->rbuf, r->a.count, r->a.dtype,
                                 r->a.root, m->comm, req, m->prev.coll_iscatter_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    rooted_t x = of_request(r);
    copy_counts(BRAID_COLL_GATHER == r->family->coll, r->m->bcomm.rank == x.root, &x,
                (size_t)r->m->bcomm.size, sn, rn, rfill);
}

static const mca_coll_braid_family_t gather_family = { BRAID_COLL_GATHER, run, prev_igather,
                                                       copies };
static const mca_coll_braid_family_t scatter_family = { BRAID_COLL_SCATTER, run, prev_iscatter,
                                                        copies };

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

#define ROOTED_ARGS                                                                                \
    const void *sbuf, braid_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf,            \
        braid_count_t rcount, struct ompi_datatype_t *rdtype, int root,                            \
        struct ompi_communicator_t *comm

static int mca_coll_braid_gather(ROOTED_ARGS, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rooted_fits(comm, root, sbuf, scount, rcount), gather, sbuf, scount,
                         sdtype, rbuf, rcount, rdtype, root, comm);
    (void)comm;
    rooted_t x = { sbuf, scount, sdtype, rbuf, rcount, rdtype, root };
    return rooted((mca_coll_braid_module_t *)module, NULL, BRAID_COLL_GATHER, &x);
}

static int mca_coll_braid_scatter(ROOTED_ARGS, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rooted_fits(comm, root, rbuf, rcount, scount), scatter, sbuf, scount,
                         sdtype, rbuf, rcount, rdtype, root, comm);
    (void)comm;
    rooted_t x = { sbuf, scount, sdtype, rbuf, rcount, rdtype, root };
    return rooted((mca_coll_braid_module_t *)module, NULL, BRAID_COLL_SCATTER, &x);
}

static int mca_coll_braid_igather(ROOTED_ARGS, ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rooted_fits(comm, root, sbuf, scount, rcount), igather, sbuf, scount,
                         sdtype, rbuf, rcount, rdtype, root, comm, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_blocks(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    (void)comm;
    return mca_coll_braid_request_post(module, &gather_family, &a, request);
}

static int mca_coll_braid_iscatter(ROOTED_ARGS, ompi_request_t **request, mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rooted_fits(comm, root, rbuf, rcount, scount), iscatter, sbuf,
                         scount, sdtype, rbuf, rcount, rdtype, root, comm, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_blocks(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    (void)comm;
    return mca_coll_braid_request_post(module, &scatter_family, &a, request);
}

static int mca_coll_braid_gather_init(ROOTED_ARGS, struct ompi_info_t *info, ompi_request_t **request,
                                      mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rooted_fits(comm, root, sbuf, scount, rcount), gather_init, sbuf,
                         scount, sdtype, rbuf, rcount, rdtype, root, comm, info, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_blocks(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &gather_family, &a, request);
}

static int mca_coll_braid_scatter_init(ROOTED_ARGS, struct ompi_info_t *info, ompi_request_t **request,
                                       mca_coll_base_module_t *module)
{
    BRAID_FALL_BACK_UNLESS(braid_rooted_fits(comm, root, rbuf, rcount, scount), scatter_init, sbuf,
                         scount, sdtype, rbuf, rcount, rdtype, root, comm, info, request);
    mca_coll_braid_args_t a = mca_coll_braid_args_blocks(sbuf, scount, sdtype, rbuf, rcount, rdtype, root);
    (void)comm;
    (void)info;
    return mca_coll_braid_request_persist(module, &scatter_family, &a, request);
}

bool mca_coll_braid_gather_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = true;
    ok = MCA_COLL_BRAID_TAKE(m, gather, mca_coll_braid_gather) && ok;
    ok = MCA_COLL_BRAID_TAKE(m, scatter, mca_coll_braid_scatter) && ok;
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, igather, mca_coll_braid_igather);
    (void)MCA_COLL_BRAID_TAKE(m, iscatter, mca_coll_braid_iscatter);
    (void)MCA_COLL_BRAID_TAKE(m, gather_init, mca_coll_braid_gather_init);
    (void)MCA_COLL_BRAID_TAKE(m, scatter_init, mca_coll_braid_scatter_init);
    return ok;
}
