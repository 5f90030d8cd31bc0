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
#include "coll_braid.h"

static size_t elems(int n) { return n > 0 ? (size_t)n : 0; }

typedef struct side {
    const void *buf;
    const int *counts, *displs;
    MPI_Datatype dtype;
} side_t;

typedef struct vvargs {
    side_t s, r;
} vvargs_t;

/* elements of a side's buffer from its start to the end of its last block */
static size_t span_of(const side_t *x, int P)
{
    size_t end = 0;
    for (int i = 0; i < P; i++) {
        size_t e = (size_t)(x->displs[i] > 0 ? x->displs[i] : 0) + elems(x->counts[i]);
        if (elems(x->counts[i]) && e > end) end = e;
    }
    return end;
}

/* A side's blocks as bytes: in the user's buffer (dense type) or packed
 * in scratch slot `slot` (packed in when `read`); counts and byte
 * displacements into bc, bd. NULL: out of memory or a pack failed (*rc). */
static char *side_bytes(braid_call_t *call, const side_t *x, int P, bool read, int slot,
                        size_t *bc, size_t *bd, bool *packed, int *rc)
{
    size_t tsize = mca_coll_braid_type_size(x->dtype), total = 0;
    *packed = !mca_coll_braid_is_contiguous(x->dtype, 2);
    for (int i = 0; i < P; i++) {
        bc[i] = elems(x->counts[i]) * tsize;
        bd[i] = *packed ? total : (size_t)(x->displs[i] > 0 ? x->displs[i] : 0) * tsize;
        total += bc[i];
    }
    if (!*packed) return mca_coll_braid_contig_base(x->buf, x->dtype);
    char *tmp = braid_scratch_get(call->args.scratch, slot, total ? total : 1);
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(x->dtype, &lb, &extent);
    for (int i = 0; read && NULL != tmp && i < P; i++) {
        const char *at = (const char *)x->buf + (ptrdiff_t)x->displs[i] * extent;
        if (bc[i] && OMPI_SUCCESS != mca_coll_braid_pack(at, elems(x->counts[i]), x->dtype, tmp + bd[i], bc[i]))
            *rc = MPI_ERR_INTERN;
    }
    if (NULL == tmp) *rc = MPI_ERR_NO_MEM;
    return MPI_SUCCESS == *rc ? tmp : NULL;
}

/* An MPI code, or *hand_on when the previous module must run the call. */
static int alltoallv_host(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r,
                          const vvargs_t *x, bool *hand_on)
{
    int P = m->bcomm.size;
    bool in_place = MPI_IN_PLACE == x->s.buf;
    braid_call_t call;
    *hand_on = false;
    if (!mca_coll_braid_call_begin(m, &call, BRAID_COLL_ALLTOALLV, 0, r)) {
        *hand_on = true;
        return MPI_SUCCESS;
    }
    size_t *bc = braid_call_counts(&m->site, call.req, 0, 4 * (size_t)P);
    if (NULL == bc) return MPI_ERR_NO_MEM;
    size_t *bd = bc + P, *sc = bc + 2 * P, *sd = bc + 3 * P;
    int rc = MPI_SUCCESS;
    bool rpacked, spacked = false;
    /* in place the receive side is the input: packed in too */
    char *out = side_bytes(&call, &x->r, P, in_place, BRAID_SCRATCH_GLUE_OUT, bc, bd, &rpacked, &rc);
    const char *in = NULL;
    if (NULL != out && !in_place)
        in = side_bytes(&call, &x->s, P, true, BRAID_SCRATCH_GLUE_IN, sc, sd, &spacked, &rc);
    if (MPI_SUCCESS != rc) return rc;
    call.args.sbuf = in;
    call.args.rbuf = out;
    call.args.count = 0;
    call.args.esize = 1;
    call.args.rcounts = bc;
    call.args.displs = bd;
    call.args.scounts = in_place ? NULL : sc;
    call.args.sdispls = in_place ? NULL : sd;
    rc = mca_coll_braid_to_mpi_error(braid_dispatch(&m->site, &call));
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(x->r.dtype, &lb, &extent);
    for (int i = 0; rpacked && MPI_SUCCESS == rc && i < P; i++) {
        char *at = (char *)x->r.buf + (ptrdiff_t)x->r.displs[i] * extent;
        if (bc[i] && OMPI_SUCCESS != mca_coll_braid_unpack(at, elems(x->r.counts[i]), x->r.dtype, out + bd[i], bc[i]))
            rc = MPI_ERR_INTERN;
    }
    return rc;
}

static int alltoallv(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, vvargs_t x)
{
    int P = m->bcomm.size;
    bool in_place = MPI_IN_PLACE == x.s.buf, hand_on;
    const void *none = NULL;
    void *rbuf = (void *)x.r.buf;
    mca_coll_braid_host_copies_t *hc;
    /* the receive span is read first: its gaps keep their values */
    int rc = mca_coll_braid_host_copies_open(&hc, in_place ? &none : &x.s.buf,
                                             in_place ? 0 : span_of(&x.s, P), x.s.dtype, &rbuf,
                                             span_of(&x.r, P), x.r.dtype, true);
    x.r.buf = rbuf;
    if (in_place) x.s.buf = MPI_IN_PLACE;
    if (MPI_SUCCESS == rc) rc = alltoallv_host(m, r, &x, &hand_on);
    if (MPI_SUCCESS == rc && hand_on && !mca_coll_braid_handed_on(r))
        rc = m->prev.coll_alltoallv(x.s.buf, x.s.counts, x.s.displs, x.s.dtype, rbuf, x.r.counts,
                                    x.r.displs, x.r.dtype, m->comm, m->prev.coll_alltoallv_module);
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

static int run(mca_coll_braid_request_t *r) { return alltoallv(r->m, r, of_request(r)); }

static int prev_nonblocking(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    return m->prev.coll_ialltoallv(r->sbuf, r->a.scounts, r->a.sdispls, r->a.sdtype, r->rbuf,
                                   r->a.rcounts, r->a.displs, r->a.dtype, m->comm, req,
                                   m->prev.coll_ialltoallv_module);
}

static void copies(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill)
{
    vvargs_t x = of_request(r);
    int P = r->m->bcomm.size;
    *sn = MPI_IN_PLACE == r->sbuf ? 0 : span_of(&x.s, P);
    *rn = span_of(&x.r, P);
    *rfill = true;
}

static const mca_coll_braid_family_t family = { BRAID_COLL_ALLTOALLV, run, prev_nonblocking,
                                                copies };

static void args(mca_coll_braid_request_t *r, const void *sbuf, const int *scounts,
                 const int *sdispls, MPI_Datatype sdtype, void *rbuf, const int *rcounts,
                 const int *rdispls, MPI_Datatype rdtype)
{
    r->a.usbuf = sbuf;
    r->a.scounts = scounts;
    r->a.sdispls = sdispls;
    r->a.sdtype = sdtype;
    r->a.urbuf = rbuf;
    r->a.rcounts = rcounts;
    r->a.displs = rdispls;
    r->a.dtype = rdtype;
}

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

#define VVARGS                                                                                  \
    const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype,   \
        void *rbuf, const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype,     \
        struct ompi_communicator_t *comm

static int mca_coll_braid_alltoallv(VVARGS, mca_coll_base_module_t *module)
{
    (void)comm;
    vvargs_t x = { { sbuf, scounts, sdispls, sdtype }, { rbuf, rcounts, rdispls, rdtype } };
    return alltoallv((mca_coll_braid_module_t *)module, NULL, x);
}

static int mca_coll_braid_ialltoallv(VVARGS, ompi_request_t **request, mca_coll_base_module_t *module)
{
    MCA_COLL_BRAID_REQUEST_NEW(r, family, BRAID_TASK_NONBLOCKING);
    args(r, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
    return mca_coll_braid_request_post(r, request);
}

static int mca_coll_braid_alltoallv_init(VVARGS, struct ompi_info_t *info, ompi_request_t **request,
                                         mca_coll_base_module_t *module)
{
    MCA_COLL_BRAID_REQUEST_NEW(r, family, BRAID_TASK_PERSISTENT);
    (void)info;
    args(r, sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype);
    return mca_coll_braid_request_persist(r, request);
}

bool mca_coll_braid_alltoallv_install(mca_coll_braid_module_t *m, bool requests)
{
    bool ok = MCA_COLL_BRAID_TAKE(m, alltoallv, mca_coll_braid_alltoallv);
    if (!requests) return ok;
    (void)MCA_COLL_BRAID_TAKE(m, ialltoallv, mca_coll_braid_ialltoallv);
    (void)MCA_COLL_BRAID_TAKE(m, alltoallv_init, mca_coll_braid_alltoallv_init);
    return ok;
}
