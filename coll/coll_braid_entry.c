/*
 * coll_braid_entry.c - the MPI entry points braid installs: normalise the
 * arguments to braid's byte view, choose an algorithm, run it on the
 * transport, or hand the call to the previous module.
 *
 * Every choice depends only on what MPI requires to match across ranks:
 * the communicator, the root, the op and count x type size.
 */
#include "coll_braid.h"

#include "opal/util/output.h"
#include "ompi/datatype/ompi_datatype.h"

static inline mca_coll_braid_component_t *cmp(void) { return &mca_coll_braid_component; }

size_t mca_coll_braid_type_size(struct ompi_datatype_t *dtype)
{
    size_t size = 0;
    ompi_datatype_type_size(dtype, &size);
    return size;
}

braid_choice_t mca_coll_braid_choose(mca_coll_braid_module_t *m, braid_coll_t coll, size_t bytes)
{
    mca_coll_braid_component_t *c = cmp();
    if (m->choice_cache[coll].valid && m->choice_cache[coll].bytes == bytes)
        return m->choice_cache[coll].choice;
    braid_choice_t ch = braid_select(coll, m->bcomm.size, bytes, c->forced_algorithm[coll],
                                     c->rules);
    mca_coll_braid_apply_param_overrides(coll, &ch);
    m->choice_cache[coll].valid = true;
    m->choice_cache[coll].bytes = bytes;
    m->choice_cache[coll].choice = ch;
    return ch;
}

void mca_coll_braid_trace(mca_coll_braid_module_t *m, braid_coll_t coll, const char *alg,
                          size_t bytes)
{
    if (cmp()->verbose >= 20 && 0 == m->bcomm.rank)
        opal_output(0, "braid: %s %s np=%d bytes=%zu", braid_coll_name(coll), alg, m->bcomm.size,
                    bytes);
}

int mca_coll_braid_run(mca_coll_braid_module_t *m, braid_coll_t coll, int alg, braid_algo_fn_t fn,
                       const braid_coll_args_t *a, size_t bytes)
{
    mca_coll_braid_trace(m, coll, braid_alg_name(coll, alg), bytes);
    braid_ucx_comm_begin(m->tcomm);
    int root;
    braid_comm_t *view = mca_coll_braid_view_for(m, coll, a, &root);
    braid_coll_args_t rerooted;
    if (NULL != a && root != a->root) {
        rerooted = *a;
        rerooted.root = root;
        a = &rerooted;
    }
    int rc = fn(view, a);
    if (BRAID_OK != rc && BRAID_ERR_UNSUPPORTED != rc)
        opal_output_verbose(1, cmp()->output, "braid: %s %s on %s failed (braid code %d)",
                            braid_coll_name(coll), braid_alg_name(coll, alg), m->comm->c_name, rc);
    return rc;
}

/* ------------------------------------------------------------------ */
/* barrier                                                             */
/* ------------------------------------------------------------------ */

int mca_coll_braid_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    int alg = mca_coll_braid_choose(m, BRAID_COLL_BARRIER, 0).alg;
    static const braid_algo_fn_t fns[BRAID_BARRIER_NALGS] = {
        [BRAID_BARRIER_ALL_TO_ALL] = braid_barrier_all_to_all,
        [BRAID_BARRIER_ALL_TO_ONE] = braid_barrier_all_to_one,
        [BRAID_BARRIER_DISSEMINATION] = braid_barrier_dissemination,
    };
    return mca_coll_braid_to_mpi_error(mca_coll_braid_run(m, BRAID_COLL_BARRIER, alg, fns[alg],
                                                          NULL, 0));
}

/* ------------------------------------------------------------------ */
/* bcast                                                               */
/* ------------------------------------------------------------------ */

const braid_algo_fn_t mca_coll_braid_bcast_fns[BRAID_BCAST_NALGS] = {
    [BRAID_BCAST_ONE_TO_ALL] = braid_bcast_one_to_all,
    [BRAID_BCAST_BINOMIAL] = braid_bcast_binomial,
    [BRAID_BCAST_SCATTER_ALLGATHER] = braid_bcast_scatter_allgather,
    [BRAID_BCAST_DBTREE] = braid_bcast_dbtree,
};

int mca_coll_braid_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    size_t bytes = (size_t)(count > 0 ? count : 0) * mca_coll_braid_type_size(dtype);
    if (0 == bytes) return MPI_SUCCESS;
    braid_choice_t choice = mca_coll_braid_choose(m, BRAID_COLL_BCAST, bytes);
    int alg = choice.alg;
    const braid_algo_fn_t *fns = mca_coll_braid_bcast_fns;

    braid_coll_args_t a = { 0 };
    a.count = bytes;
    a.esize = 1;
    a.root = root;
    a.scratch = &m->scratch;
    a.params = choice.params;
    bool contiguous = mca_coll_braid_is_contiguous(dtype, (size_t)count);
    bool is_root = m->bcomm.rank == root;
    /* device buffers (coll_braid_cuda.c): staged by this rank alone, or
     * handed to UCX as they are when its context moves CUDA memory */
    bool dev = mca_coll_braid_is_device(buf);
    if (contiguous) {
        char *base = mca_coll_braid_contig_base(buf, dtype);
        bool staged = dev && !braid_ucx_supports_cuda();
        return mca_coll_braid_to_mpi_error(mca_coll_braid_run_segments(
            m, BRAID_COLL_BCAST, alg, fns[alg], &a, bytes, BRAID_DEVPIPE_BCAST,
            is_root ? base : NULL, staged, is_root ? NULL : base, staged));
    }
    /* non-contiguous: the wire carries the packed bytes (device buffers:
     * packed from / unpacked into a host copy of the buffer) */
    void *shadow = NULL, *ubuf = buf;
    if (dev && NULL == (ubuf = mca_coll_braid_shadow_buffer(buf, (size_t)count, dtype, &shadow))) {
        mca_coll_braid_shadow_finish(shadow, false);
        return MPI_ERR_NO_MEM;
    }
    char *packed = braid_scratch_get(&m->scratch, 0, bytes);
    int rc = NULL == packed ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    if (MPI_SUCCESS == rc && is_root &&
        OMPI_SUCCESS != mca_coll_braid_pack(ubuf, (size_t)count, dtype, packed, bytes))
        rc = MPI_ERR_INTERN;
    if (MPI_SUCCESS == rc)
        rc = mca_coll_braid_to_mpi_error(mca_coll_braid_run_segments(
            m, BRAID_COLL_BCAST, alg, fns[alg], &a, bytes, BRAID_DEVPIPE_BCAST,
            is_root ? packed : NULL, false, is_root ? NULL : packed, false));
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
 * contiguous are packed into scratch and unpacked at the end. */
int mca_coll_braid_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    static const braid_algo_fn_t fns[BRAID_ALLGATHER_NALGS] = {
        [BRAID_ALLGATHER_RING] = braid_allgather_ring,
        [BRAID_ALLGATHER_RECURSIVE_DOUBLING] = braid_allgather_recursive_doubling,
    };
    int P = m->bcomm.size, rank = m->bcomm.rank;
    size_t rn = rcount > 0 ? (size_t)rcount : 0;
    size_t block = rn * mca_coll_braid_type_size(rdtype);
    if (0 == block) return MPI_SUCCESS;
    braid_choice_t choice = mca_coll_braid_choose(m, BRAID_COLL_ALLGATHER, block);
    if (NULL == fns[choice.alg])
        return m->prev.allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                 m->prev.allgather_module);

    bool contiguous = mca_coll_braid_is_contiguous(rdtype, rn * (size_t)P);
    char *base = contiguous ? mca_coll_braid_contig_base(rbuf, rdtype)
                            : braid_scratch_get(&m->scratch, BRAID_SCRATCH_GLUE_OUT, block * (size_t)P);
    if (NULL == base) return MPI_ERR_NO_MEM;
    char *mine = base + (size_t)rank * block;
    int rc = OMPI_SUCCESS;
    if (MPI_IN_PLACE != sbuf) {
        rc = mca_coll_braid_pack(sbuf, (size_t)scount, sdtype, mine, block);
    } else if (!contiguous) {
        MPI_Aint lb, extent;
        PMPI_Type_get_extent(rdtype, &lb, &extent);
        rc = mca_coll_braid_pack((char *)rbuf + (size_t)rank * rn * (size_t)extent, rn, rdtype,
                                 mine, block);
    }
    if (OMPI_SUCCESS != rc) return MPI_ERR_INTERN;

    braid_coll_args_t a = { 0 };
    a.rbuf = base;
    a.count = block;
    a.esize = 1;
    a.scratch = &m->scratch;
    a.params = choice.params;
    if (mca_coll_braid_node_ordered(m, BRAID_COLL_ALLGATHER, &a))
        rc = mca_coll_braid_allgather_node_order(m, choice.alg, fns[choice.alg], &a, block);
    else
        rc = mca_coll_braid_run(m, BRAID_COLL_ALLGATHER, choice.alg, fns[choice.alg], &a, block);
    rc = mca_coll_braid_to_mpi_error(rc);
    if (MPI_SUCCESS == rc && !contiguous &&
        OMPI_SUCCESS != mca_coll_braid_unpack(rbuf, rn * (size_t)P, rdtype, base, block * (size_t)P))
        rc = MPI_ERR_INTERN;
    return rc;
}
