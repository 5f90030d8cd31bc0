/*
 * braid_select.c - collective and algorithm names (see braid_select.h).
 */
#include "braid_select.h"

#include <string.h>

static const char *const coll_names[BRAID_COLL_N] = {
    "barrier", "bcast", "allreduce", "reduce", "reduce_scatter", "allgather",
};
static const char *const coll_mpi_names[BRAID_COLL_N] = {
    "MPI_Barrier", "MPI_Bcast", "MPI_Allreduce", "MPI_Reduce",
    "MPI_Reduce_scatter / MPI_Reduce_scatter_block", "MPI_Allgather",
};

static const char *const barrier_algs[] = { "auto", "all_to_all", "all_to_one", "dissemination", NULL };
static const char *const bcast_algs[] = { "auto", "one_to_all", "binomial", "scatter_allgather",
                                          "dbtree", NULL };
static const char *const allreduce_algs[] = { "auto", "ring", "ring_chunked", "halving_doubling",
                                              "bcube", "dbtree", "recursive_doubling",
                                              "hierarchical", NULL };
static const char *const reduce_algs[] = { "auto", "binomial", "dbtree", NULL };
static const char *const reduce_scatter_algs[] = { "auto", "ring", "halving_doubling", NULL };
static const char *const allgather_algs[] = { "auto", "ring", "recursive_doubling", NULL };

static const char *const *const alg_names[BRAID_COLL_N] = {
    barrier_algs, bcast_algs, allreduce_algs, reduce_algs, reduce_scatter_algs, allgather_algs,
};

const char *braid_coll_name(braid_coll_t coll)
{
    return (unsigned)coll < BRAID_COLL_N ? coll_names[coll] : "?";
}

const char *braid_coll_mpi_name(braid_coll_t coll)
{
    return (unsigned)coll < BRAID_COLL_N ? coll_mpi_names[coll] : "?";
}

const char *const *braid_alg_names(braid_coll_t coll)
{
    return (unsigned)coll < BRAID_COLL_N ? alg_names[coll] : NULL;
}

const char *braid_alg_name(braid_coll_t coll, int alg)
{
    const char *const *names = braid_alg_names(coll);
    if (NULL == names || alg < 0) return "?";
    for (int k = 0; names[k]; k++)
        if (k == alg) return names[k];
    return "?";
}

int braid_alg_lookup(braid_coll_t coll, const char *name)
{
    const char *const *names = braid_alg_names(coll);
    if (NULL == names || NULL == name) return -1;
    for (int k = 0; names[k]; k++)
        if (0 == strcmp(names[k], name)) return k;
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
