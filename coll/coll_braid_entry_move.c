/*
 * coll_braid_entry_move.c - the entry points of the collectives that move
 * data without reducing it: MPI_Barrier, MPI_Bcast and MPI_Allgather.
 * Each normalises its arguments to braid's byte view (datatypes packed when
 * not contiguous, device buffers marked) and hands the call to the dispatch
 * (coll_braid_dispatch.c). The reductions are in coll_braid_entry_reduce.c.
 *
 * Every choice depends only on what MPI requires to match across ranks:
 * the communicator, the root and count x type size.
 */
#include "coll_braid.h"

#include "ompi/datatype/ompi_datatype.h"

/* ------------------------------------------------------------------ */
/* barrier                                                             */
/* ------------------------------------------------------------------ */

int mca_coll_braid_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    mca_coll_braid_call_t call;
    if (!mca_coll_braid_call_init(m, &call, BRAID_COLL_BARRIER, 0))
        return mca_coll_braid_hand_on_nonblocking() ? MPI_SUCCESS
                                                    : m->prev.barrier(comm, m->prev.barrier_module);
    return mca_coll_braid_to_mpi_error(mca_coll_braid_dispatch(m, &call));
}

/* ------------------------------------------------------------------ */
/* bcast                                                               */
/* ------------------------------------------------------------------ */

int mca_coll_braid_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    size_t bytes = (size_t)(count > 0 ? count : 0) * mca_coll_braid_type_size(dtype);
    if (0 == bytes) return MPI_SUCCESS;
    mca_coll_braid_call_t call;
    if (!mca_coll_braid_call_init(m, &call, BRAID_COLL_BCAST, bytes)) {
        if (mca_coll_braid_hand_on_nonblocking()) return MPI_SUCCESS;
        /* the previous module gets host copies of a device buffer */
        const void *none = NULL;
        mca_coll_braid_host_copies_t *hc;
        int rc = mca_coll_braid_host_copies_open(&hc, &none, 0, dtype, &buf, (size_t)count, dtype,
                                                 true);
        if (MPI_SUCCESS == rc) rc = m->prev.bcast(buf, count, dtype, root, comm, m->prev.bcast_module);
        return mca_coll_braid_host_copies_close(hc, rc);
    }
    call.args.count = bytes;
    call.args.esize = 1;
    call.args.root = root;
    bool contiguous = mca_coll_braid_is_contiguous(dtype, (size_t)count);
    bool is_root = m->bcomm.rank == root;
    /* device buffers (coll_braid_cuda.c): staged by this rank alone, or
     * handed to UCX as they are when its context moves CUDA memory - never
     * to a shm algorithm, which copies with the CPU */
    bool dev = mca_coll_braid_is_device(buf);
    if (contiguous) {
        char *base = mca_coll_braid_contig_base(buf, dtype);
        const braid_algorithm_t *alg = braid_algorithm(BRAID_COLL_BCAST, call.choice.alg);
        bool shm = NULL != alg && (alg->options & BRAID_OPT_SHM);
        bool staged = dev && (!braid_ucx_supports_cuda() || shm);
        mca_coll_braid_call_buffers(&call, BRAID_DEVPIPE_BCAST, is_root ? base : NULL, staged,
                                    is_root ? NULL : base, staged);
        return mca_coll_braid_to_mpi_error(mca_coll_braid_dispatch(m, &call));
    }
    /* non-contiguous: the wire carries the packed bytes (device buffers:
     * packed from / unpacked into a host copy of the buffer) */
    void *shadow = NULL, *ubuf = buf;
    if (dev && NULL == (ubuf = mca_coll_braid_shadow_buffer(buf, (size_t)count, dtype, &shadow))) {
        mca_coll_braid_shadow_finish(shadow, false);
        return MPI_ERR_NO_MEM;
    }
    char *packed = braid_scratch_get(mca_coll_braid_scratch(m), 0, bytes);
    int rc = NULL == packed ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    if (MPI_SUCCESS == rc && is_root &&
        OMPI_SUCCESS != mca_coll_braid_pack(ubuf, (size_t)count, dtype, packed, bytes))
        rc = MPI_ERR_INTERN;
    if (MPI_SUCCESS == rc) {
        mca_coll_braid_call_buffers(&call, BRAID_DEVPIPE_BCAST, is_root ? packed : NULL, false,
                                    is_root ? NULL : packed, false);
        rc = mca_coll_braid_to_mpi_error(mca_coll_braid_dispatch(m, &call));
    }
    if (MPI_SUCCESS == rc && !is_root &&
        OMPI_SUCCESS != mca_coll_braid_unpack(ubuf, (size_t)count, dtype, packed, bytes))
        rc = MPI_ERR_INTERN;
    if (BRAID_OK != mca_coll_braid_shadow_finish(shadow, MPI_SUCCESS == rc && !is_root) &&
        MPI_SUCCESS == rc)
        rc = MPI_ERR_OTHER;
    return rc;
}

/* ------------------------------------------------------------------ */
/* allgather                                                           */
/* ------------------------------------------------------------------ */

/* The wire carries each rank's block as packed bytes (count x type size,
 * equal on every rank by MPI's signature rule); datatypes that are not
 * contiguous are packed into scratch and unpacked at the end. Host
 * buffers only (device buffers: mca_coll_braid_allgather). */
static int allgather_host(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    int P = m->bcomm.size, rank = m->bcomm.rank;
    size_t rn = rcount > 0 ? (size_t)rcount : 0;
    size_t block = rn * mca_coll_braid_type_size(rdtype);
    if (0 == block) return MPI_SUCCESS;
    mca_coll_braid_call_t call;
    if (!mca_coll_braid_call_init(m, &call, BRAID_COLL_ALLGATHER, block))
        return mca_coll_braid_hand_on_nonblocking() ? MPI_SUCCESS : m->prev.allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                 m->prev.allgather_module);

    bool contiguous = mca_coll_braid_is_contiguous(rdtype, rn * (size_t)P);
    char *base = contiguous ? mca_coll_braid_contig_base(rbuf, rdtype)
                            : braid_scratch_get(mca_coll_braid_scratch(m), BRAID_SCRATCH_GLUE_OUT,
                                                block * (size_t)P);
    if (NULL == base) return MPI_ERR_NO_MEM;
    char *mine = base + (size_t)rank * block;
    int rc = OMPI_SUCCESS;
    /* a contiguous send buffer goes to the algorithm as it is (the shm
     * algorithm's peers read it straight from there; the others copy it to
     * the rank's block themselves); otherwise it is packed into the block */
    const void *send = NULL;
    if (MPI_IN_PLACE != sbuf && scount > 0 && mca_coll_braid_is_contiguous(sdtype, (size_t)scount)) {
        send = mca_coll_braid_contig_base(sbuf, sdtype);
    } else if (MPI_IN_PLACE != sbuf) {
        rc = mca_coll_braid_pack(sbuf, (size_t)scount, sdtype, mine, block);
    } else if (!contiguous) {
        MPI_Aint lb, extent;
        PMPI_Type_get_extent(rdtype, &lb, &extent);
        rc = mca_coll_braid_pack((char *)rbuf + (size_t)rank * rn * (size_t)extent, rn, rdtype,
                                 mine, block);
    }
    if (OMPI_SUCCESS != rc) return MPI_ERR_INTERN;

    call.args.sbuf = send;
    call.args.rbuf = base;
    call.args.count = block;
    call.args.esize = 1;
    rc = mca_coll_braid_to_mpi_error(mca_coll_braid_dispatch(m, &call));
    if (MPI_SUCCESS == rc && !contiguous &&
        OMPI_SUCCESS != mca_coll_braid_unpack(rbuf, rn * (size_t)P, rdtype, base, block * (size_t)P))
        rc = MPI_ERR_INTERN;
    return rc;
}

/* Device buffers (a job that uses CUDA) are gathered through host copies
 * made here, whole and synchronously: the algorithms, and the previous
 * module braid may hand the call to, touch the buffers with the CPU. The
 * receive buffer is read from the device only when the call reads it (in
 * place: this rank's block; a datatype with holes: the holes). */
int mca_coll_braid_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    size_t rn = (rcount > 0 ? (size_t)rcount : 0) * (size_t)m->bcomm.size;
    bool rfill = MPI_IN_PLACE == sbuf || !mca_coll_braid_is_contiguous(rdtype, rn);
    mca_coll_braid_host_copies_t *hc;
    int rc = mca_coll_braid_host_copies_open(&hc, &sbuf, scount > 0 ? (size_t)scount : 0, sdtype,
                                             &rbuf, rn, rdtype, rfill);
    if (MPI_SUCCESS == rc)
        rc = allgather_host(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module);
    return mca_coll_braid_host_copies_close(hc, rc);
}
