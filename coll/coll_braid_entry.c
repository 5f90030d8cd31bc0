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

static void trace_call(mca_coll_braid_module_t *m, const char *coll, const char *alg, size_t bytes)
{
    if (cmp()->verbose >= 20 && 0 == m->bcomm.rank)
        opal_output(0, "braid: %s %s np=%d bytes=%zu", coll, alg, m->bcomm.size, bytes);
}

/* Run one algorithm as a new collective on this communicator. */
static int run(mca_coll_braid_module_t *m, braid_algo_fn_t fn, const braid_coll_args_t *a)
{
    braid_ucx_comm_begin(m->tcomm);
    int rc = fn(&m->bcomm, a);
    if (BRAID_OK != rc)
        opal_output_verbose(1, cmp()->output, "braid: collective on %s failed (braid code %d)",
                            m->comm->c_name, rc);
    return mca_coll_braid_to_mpi_error(rc);
}

/* ------------------------------------------------------------------ */
/* barrier                                                             */
/* ------------------------------------------------------------------ */

static int barrier_auto(int P) { return P <= 4 ? BRAID_BARRIER_ALL_TO_ALL : BRAID_BARRIER_DISSEMINATION; }

int mca_coll_braid_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    int alg = cmp()->forced_algorithm[BRAID_COLL_BARRIER];
    if (BRAID_ALG_AUTO == alg) alg = barrier_auto(m->bcomm.size);
    static const braid_algo_fn_t fns[BRAID_BARRIER_NALGS] = {
        [BRAID_BARRIER_ALL_TO_ALL] = braid_barrier_all_to_all,
        [BRAID_BARRIER_ALL_TO_ONE] = braid_barrier_all_to_one,
        [BRAID_BARRIER_DISSEMINATION] = braid_barrier_dissemination,
    };
    trace_call(m, "barrier", braid_alg_name(BRAID_COLL_BARRIER, alg), 0);
    return run(m, fns[alg], NULL);
}

/* ------------------------------------------------------------------ */
/* bcast                                                               */
/* ------------------------------------------------------------------ */

#define BRAID_BCAST_LARGE (64 * 1024)

static int bcast_auto(int P, size_t bytes)
{
    return (P <= 2 || bytes < BRAID_BCAST_LARGE) ? BRAID_BCAST_BINOMIAL
                                                 : BRAID_BCAST_SCATTER_ALLGATHER;
}

int mca_coll_braid_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    size_t tsize = 0;
    ompi_datatype_type_size(dtype, &tsize);
    size_t bytes = (size_t)(count > 0 ? count : 0) * tsize;
    if (0 == bytes) return MPI_SUCCESS;

    int alg = cmp()->forced_algorithm[BRAID_COLL_BCAST];
    if (BRAID_ALG_AUTO == alg) alg = bcast_auto(m->bcomm.size, bytes);
    static const braid_algo_fn_t fns[BRAID_BCAST_NALGS] = {
        [BRAID_BCAST_ONE_TO_ALL] = braid_bcast_one_to_all,
        [BRAID_BCAST_BINOMIAL] = braid_bcast_binomial,
        [BRAID_BCAST_SCATTER_ALLGATHER] = braid_bcast_scatter_allgather,
    };
    if (NULL == fns[alg])   /* not built in this version: same on every rank */
        return m->prev.bcast(buf, count, dtype, root, comm, m->prev.bcast_module);
    trace_call(m, "bcast", braid_alg_name(BRAID_COLL_BCAST, alg), bytes);

    braid_coll_args_t a = { 0 };
    a.count = bytes;
    a.esize = 1;
    a.root = root;
    a.scratch = &m->scratch;
    bool contiguous = mca_coll_braid_is_contiguous(dtype, (size_t)count);
    if (contiguous) {
        a.rbuf = mca_coll_braid_contig_base(buf, dtype);
        return run(m, fns[alg], &a);
    }
    /* non-contiguous: the wire carries the packed bytes */
    a.rbuf = braid_scratch_get(&m->scratch, 0, bytes);
    if (NULL == a.rbuf) return MPI_ERR_NO_MEM;   /* TODO: rank-consistent */
    if (m->bcomm.rank == root && OMPI_SUCCESS != mca_coll_braid_pack(buf, (size_t)count, dtype, a.rbuf, bytes))
        return MPI_ERR_INTERN;
    int rc = run(m, fns[alg], &a);
    if (MPI_SUCCESS == rc && m->bcomm.rank != root &&
        OMPI_SUCCESS != mca_coll_braid_unpack(buf, (size_t)count, dtype, a.rbuf, bytes))
        rc = MPI_ERR_INTERN;
    return rc;
}
