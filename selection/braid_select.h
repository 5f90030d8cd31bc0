/*
 * braid_select.h - braid's collectives, their algorithm names, and the
 * selection table that picks an algorithm per call from the communicator
 * size and the message size. Pure C: no Open MPI, no UCX.
 *
 * Algorithm ids are indexes into the name lists below; id 0 is always
 * "auto" (ask the table). The glue maps ids to functions.
 */
#ifndef BRAID_SELECT_H
#define BRAID_SELECT_H

#include <stddef.h>
#include <stdio.h>

#include "braid_algo.h"

typedef enum braid_coll {
    BRAID_COLL_BARRIER = 0,
    BRAID_COLL_BCAST,
    BRAID_COLL_ALLREDUCE,
    BRAID_COLL_REDUCE,
    BRAID_COLL_REDUCE_SCATTER,
    BRAID_COLL_ALLGATHER,
    BRAID_COLL_N
} braid_coll_t;

enum { BRAID_ALG_AUTO = 0 };

/* algorithm ids per collective (order = name lists in braid_select.c) */
enum { BRAID_BARRIER_ALL_TO_ALL = 1, BRAID_BARRIER_ALL_TO_ONE, BRAID_BARRIER_DISSEMINATION,
       BRAID_BARRIER_NALGS };
enum { BRAID_BCAST_ONE_TO_ALL = 1, BRAID_BCAST_BINOMIAL, BRAID_BCAST_SCATTER_ALLGATHER,
       BRAID_BCAST_DBTREE, BRAID_BCAST_NALGS };
enum { BRAID_ALLREDUCE_RING = 1, BRAID_ALLREDUCE_RING_CHUNKED, BRAID_ALLREDUCE_HALVING_DOUBLING,
       BRAID_ALLREDUCE_BCUBE, BRAID_ALLREDUCE_DBTREE, BRAID_ALLREDUCE_NALGS };
enum { BRAID_REDUCE_BINOMIAL = 1, BRAID_REDUCE_DBTREE, BRAID_REDUCE_NALGS };
enum { BRAID_REDUCE_SCATTER_RING = 1, BRAID_REDUCE_SCATTER_HALVING_DOUBLING,
       BRAID_REDUCE_SCATTER_NALGS };
enum { BRAID_ALLGATHER_RING = 1, BRAID_ALLGATHER_RECURSIVE_DOUBLING, BRAID_ALLGATHER_NALGS };

/* "allreduce", ... (the word in coll_braid_<word>_algorithm) */
const char *braid_coll_name(braid_coll_t coll);
/* "MPI_Allreduce", ... */
const char *braid_coll_mpi_name(braid_coll_t coll);
/* NULL-terminated list of algorithm names, index = id, [0] = "auto" */
const char *const *braid_alg_names(braid_coll_t coll);
const char *braid_alg_name(braid_coll_t coll, int alg);
/* id of name, or -1 */
int braid_alg_lookup(braid_coll_t coll, const char *name);
/* "auto | ring | ..." into out */
void braid_alg_names_joined(braid_coll_t coll, char *out, size_t len);

#endif /* BRAID_SELECT_H */
