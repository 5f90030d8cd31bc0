/*
 * braid_registry.c - the tables generated from the rows of braid_registry.h,
 * and the look-ups by id and name.
 */
#include "braid_registry.h"

#include <string.h>

typedef struct braid_collective {
    const char *name;
    const char *mpi_name;
    int nalgs;                         /* ids 1..nalgs-1 are algorithms */
    const braid_algorithm_t *algs;     /* index = id; [0] is auto (no function) */
    const char *const *names;          /* index = id, NULL-terminated */
} braid_collective_t;

#define ROW(C, c, ID, nm, opts, noncomm) \
    [BRAID_##C##_##ID] = { #nm, braid_##c##_##nm, braid_cost_##c##_##nm, (opts), (noncomm) },
#define NAME(C, c, ID, nm, opts, noncomm) [BRAID_##C##_##ID] = #nm,
#define AUTO_ROW [0] = { "auto", NULL, NULL, 0, BRAID_NONCOMM_UNSET },

/* One row table and one name list per collective. */
#define TABLES(C, c)                                                                   \
    static const braid_algorithm_t c##_algs[BRAID_##C##_NALGS] = {                      \
        AUTO_ROW BRAID_##C##_ALGORITHMS(ROW)                                            \
    };                                                                                  \
    static const char *const c##_names[BRAID_##C##_NALGS + 1] = {                       \
        [0] = "auto", BRAID_##C##_ALGORITHMS(NAME)[BRAID_##C##_NALGS] = NULL            \
    };
/* every collective's ids fit arrays of BRAID_MAX_ALGS */
_Static_assert(BRAID_BARRIER_NALGS <= BRAID_MAX_ALGS && BRAID_BCAST_NALGS <= BRAID_MAX_ALGS
                   && BRAID_ALLREDUCE_NALGS <= BRAID_MAX_ALGS && BRAID_REDUCE_NALGS <= BRAID_MAX_ALGS
                   && BRAID_REDUCE_SCATTER_NALGS <= BRAID_MAX_ALGS
                   && BRAID_ALLGATHER_NALGS <= BRAID_MAX_ALGS
                   && BRAID_ALLTOALL_NALGS <= BRAID_MAX_ALGS && BRAID_SCAN_NALGS <= BRAID_MAX_ALGS
                   && BRAID_EXSCAN_NALGS <= BRAID_MAX_ALGS && BRAID_GATHER_NALGS <= BRAID_MAX_ALGS
                   && BRAID_SCATTER_NALGS <= BRAID_MAX_ALGS
                   && BRAID_ALLGATHERV_NALGS <= BRAID_MAX_ALGS
                   && BRAID_ALLTOALLV_NALGS <= BRAID_MAX_ALGS
                   && BRAID_GATHERV_NALGS <= BRAID_MAX_ALGS
                   && BRAID_SCATTERV_NALGS <= BRAID_MAX_ALGS,
               "a collective has more algorithms than BRAID_MAX_ALGS");

TABLES(BARRIER, barrier)
TABLES(BCAST, bcast)
TABLES(ALLREDUCE, allreduce)
TABLES(REDUCE, reduce)
TABLES(REDUCE_SCATTER, reduce_scatter)
TABLES(ALLGATHER, allgather)
TABLES(ALLTOALL, alltoall)
TABLES(SCAN, scan)
TABLES(EXSCAN, exscan)
TABLES(GATHER, gather)
TABLES(SCATTER, scatter)
TABLES(ALLGATHERV, allgatherv)
TABLES(ALLTOALLV, alltoallv)
TABLES(GATHERV, gatherv)
TABLES(SCATTERV, scatterv)

#define COLL(C, c, mpi) [BRAID_COLL_##C] = { #c, mpi, BRAID_##C##_NALGS, c##_algs, c##_names }
static const braid_collective_t collectives[BRAID_COLL_N] = {
    COLL(BARRIER, barrier, "MPI_Barrier"),
    COLL(BCAST, bcast, "MPI_Bcast"),
    COLL(ALLREDUCE, allreduce, "MPI_Allreduce"),
    COLL(REDUCE, reduce, "MPI_Reduce"),
    COLL(REDUCE_SCATTER, reduce_scatter, "MPI_Reduce_scatter / MPI_Reduce_scatter_block"),
    COLL(ALLGATHER, allgather, "MPI_Allgather"),
    COLL(ALLTOALL, alltoall, "MPI_Alltoall"),
    COLL(SCAN, scan, "MPI_Scan"),
    COLL(EXSCAN, exscan, "MPI_Exscan"),
    COLL(GATHER, gather, "MPI_Gather"),
    COLL(SCATTER, scatter, "MPI_Scatter"),
    COLL(ALLGATHERV, allgatherv, "MPI_Allgatherv"),
    COLL(ALLTOALLV, alltoallv, "MPI_Alltoallv"),
    COLL(GATHERV, gatherv, "MPI_Gatherv"),
    COLL(SCATTERV, scatterv, "MPI_Scatterv"),
};

static const braid_collective_t *coll_of(braid_coll_t coll)
{
    return (unsigned)coll < BRAID_COLL_N ? &collectives[coll] : NULL;
}

const braid_algorithm_t *braid_algorithm(braid_coll_t coll, int alg)
{
    const braid_collective_t *c = coll_of(coll);
    if (NULL == c || alg <= BRAID_ALG_AUTO || alg >= c->nalgs) return NULL;
    return &c->algs[alg];
}

bool braid_alg_takes_op(braid_coll_t coll, int alg, int P, bool commutative, bool exact)
{
    const braid_algorithm_t *a = braid_algorithm(coll, alg);
    return NULL != a && braid_row_takes_op(a, P, commutative, exact);
}

int braid_alg_count(braid_coll_t coll)
{
    const braid_collective_t *c = coll_of(coll);
    return c ? c->nalgs : 0;
}

const char *braid_coll_name(braid_coll_t coll)
{
    const braid_collective_t *c = coll_of(coll);
    return c ? c->name : "?";
}

const char *braid_coll_mpi_name(braid_coll_t coll)
{
    const braid_collective_t *c = coll_of(coll);
    return c ? c->mpi_name : "?";
}

const char *const *braid_alg_names(braid_coll_t coll)
{
    const braid_collective_t *c = coll_of(coll);
    return c ? c->names : NULL;
}

const char *braid_alg_name(braid_coll_t coll, int alg)
{
    const braid_collective_t *c = coll_of(coll);
    if (NULL == c || alg < 0 || alg >= c->nalgs) return "?";
    return c->names[alg];
}

int braid_alg_lookup(braid_coll_t coll, const char *name)
{
    const braid_collective_t *c = coll_of(coll);
    if (NULL == c || NULL == name) return -1;
    for (int k = 0; k < c->nalgs; k++)
        if (0 == strcmp(c->names[k], name)) return k;
    return -1;
}

void braid_alg_names_joined(braid_coll_t coll, char *out, size_t len)
{
    const char *const *names = braid_alg_names(coll);
    if (0 == len) return;
    out[0] = '\0';
    for (int k = 0; names && names[k]; k++) {
        if (k) strncat(out, " | ", len - strlen(out) - 1);
        strncat(out, names[k], len - strlen(out) - 1);
    }
}
