/*
 * braid_registry.h - the one list of braid's collectives and algorithms.
 *
 * Each algorithm is one row below and one file in libbraid/algo/ (the shm
 * tier's in libbraid/shm/algo/) that defines
 *
 *   int    braid_<coll>_<name>(braid_comm_t *c, const braid_coll_args_t *a);
 *   double braid_cost_<coll>_<name>(int P, double S);
 *
 * the algorithm and its alpha-beta-gamma cost (braid_cost.h). From the rows
 * come the algorithm ids (BRAID_<COLL>_<NAME>, 1..; 0 is "auto"), the names
 * that MCA parameters and rules files accept, the functions the glue and the
 * simulator run, the cost model the built-in table was derived from, the
 * option keys an algorithm reads, and which reduction ops it takes. The
 * whole recipe for adding an algorithm (file, row, Makefile.am line, the
 * unit test's contract row, the forced MPI case, the documents) is in
 * docs/DESIGN.md, "Adding an algorithm"; the build or the unit tests fail
 * until the first five steps are done.
 *
 * Row: X(COLL, coll, ID, name, options, noncomm)
 *   options: the braid_params_t fields the algorithm reads (BRAID_OPT_*),
 *   so that MCA overrides and rules-file keys reach only those;
 *   noncomm: what it does with a non-commutative op (BRAID_NONCOMM_*),
 *   as the header of its file documents.
 *
 * Pure C: no Open MPI, no UCX.
 */
#ifndef BRAID_REGISTRY_H
#define BRAID_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "braid_algo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum braid_coll {
    BRAID_COLL_BARRIER = 0,
    BRAID_COLL_BCAST,
    BRAID_COLL_ALLREDUCE,
    BRAID_COLL_REDUCE,
    BRAID_COLL_REDUCE_SCATTER,
    BRAID_COLL_ALLGATHER,
    BRAID_COLL_ALLTOALL,
    BRAID_COLL_SCAN,
    BRAID_COLL_EXSCAN,
    BRAID_COLL_GATHER,
    BRAID_COLL_SCATTER,
    BRAID_COLL_ALLGATHERV,
    BRAID_COLL_ALLTOALLV,
    BRAID_COLL_GATHERV,
    BRAID_COLL_SCATTERV,
    BRAID_COLL_N
} braid_coll_t;

enum { BRAID_ALG_AUTO = 0 };

/* What an algorithm reads besides the buffers (bit set). */
enum {
    BRAID_OPT_NONE = 0,
    BRAID_OPT_CHUNK = 1u << 0,      /* params.chunk_bytes: pipeline chunk (coll_braid_chunk_size) */
    BRAID_OPT_TREE_CHUNK = 1u << 1, /* params.chunk_bytes: tree pipeline chunk
                                       (coll_braid_dbtree_chunk_size) */
    BRAID_OPT_BASE = 1u << 2,       /* params.bcube_base (coll_braid_bcube_base) */
    BRAID_OPT_HIER = 1u << 3,       /* needs a->hier: the node and leader views */
    BRAID_OPT_SHM = 1u << 4,        /* needs c->shm: the node's shared-memory segment,
                                       and one rank's bytes within its slot */
    BRAID_OPT_SHM_DIRECT = 1u << 5, /* with BRAID_OPT_SHM: any size when the segment has a
                                       single-copy reader (braid_shm_direct) */
    BRAID_OPT_SHM_MESSAGES = 1u << 6 /* with BRAID_OPT_SHM: blocks its slots cannot hold go as
                                       messages where the segment has no single-copy reader */
};

/* What an algorithm does with a non-commutative op (braid_alg_takes_op). */
typedef enum braid_noncomm {
    BRAID_NONCOMM_UNSET = 0,      /* not stated: test_registry fails */
    BRAID_NONCOMM_NO_OP,          /* the collective reduces nothing (barrier, bcast, allgather) */
    BRAID_NONCOMM_KEPT,           /* any op: the rank order is kept */
    BRAID_NONCOMM_EXACT,          /* a non-commutative op only when exact (a->exact);
                                     otherwise BRAID_ERR_UNSUPPORTED on every rank, P > 1 */
    BRAID_NONCOMM_REFUSED,        /* BRAID_ERR_UNSUPPORTED on every rank for a
                                     non-commutative op, P > 1 */
    BRAID_NONCOMM_REFUSED_ALL_P   /* the same at every P, P = 1 included */
} braid_noncomm_t;

#define BRAID_BARRIER_ALGORITHMS(X)                                             \
    X(BARRIER, barrier, ALL_TO_ALL, all_to_all, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP) \
    X(BARRIER, barrier, ALL_TO_ONE, all_to_one, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP) \
    X(BARRIER, barrier, DISSEMINATION, dissemination, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP) \
    X(BARRIER, barrier, SHM, shm, BRAID_OPT_SHM, BRAID_NONCOMM_NO_OP)

#define BRAID_BCAST_ALGORITHMS(X)                                               \
    X(BCAST, bcast, ONE_TO_ALL, one_to_all, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP) \
    X(BCAST, bcast, BINOMIAL, binomial, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP)    \
    X(BCAST, bcast, SCATTER_ALLGATHER, scatter_allgather, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP) \
    X(BCAST, bcast, DBTREE, dbtree, BRAID_OPT_TREE_CHUNK, BRAID_NONCOMM_NO_OP)  \
    X(BCAST, bcast, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT, BRAID_NONCOMM_NO_OP)

#define BRAID_ALLREDUCE_ALGORITHMS(X)                                           \
    X(ALLREDUCE, allreduce, RING, ring, BRAID_OPT_NONE, BRAID_NONCOMM_EXACT)    \
    X(ALLREDUCE, allreduce, RING_CHUNKED, ring_chunked, BRAID_OPT_CHUNK, BRAID_NONCOMM_REFUSED) \
    X(ALLREDUCE, allreduce, HALVING_DOUBLING, halving_doubling, BRAID_OPT_CHUNK, BRAID_NONCOMM_KEPT) \
    X(ALLREDUCE, allreduce, BCUBE, bcube, BRAID_OPT_BASE, BRAID_NONCOMM_KEPT)   \
    X(ALLREDUCE, allreduce, DBTREE, dbtree, BRAID_OPT_TREE_CHUNK, BRAID_NONCOMM_KEPT) \
    X(ALLREDUCE, allreduce, RECURSIVE_DOUBLING, recursive_doubling, BRAID_OPT_NONE, BRAID_NONCOMM_KEPT) \
    X(ALLREDUCE, allreduce, HIERARCHICAL, hierarchical, BRAID_OPT_HIER, BRAID_NONCOMM_REFUSED_ALL_P) \
    X(ALLREDUCE, allreduce, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT, BRAID_NONCOMM_KEPT)

#define BRAID_REDUCE_ALGORITHMS(X)                                              \
    X(REDUCE, reduce, BINOMIAL, binomial, BRAID_OPT_NONE, BRAID_NONCOMM_KEPT)   \
    X(REDUCE, reduce, DBTREE, dbtree, BRAID_OPT_TREE_CHUNK, BRAID_NONCOMM_KEPT) \
    X(REDUCE, reduce, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT, BRAID_NONCOMM_KEPT)

#define BRAID_REDUCE_SCATTER_ALGORITHMS(X)                                      \
    X(REDUCE_SCATTER, reduce_scatter, RING, ring, BRAID_OPT_CHUNK, BRAID_NONCOMM_REFUSED) \
    X(REDUCE_SCATTER, reduce_scatter, HALVING_DOUBLING, halving_doubling, BRAID_OPT_CHUNK, BRAID_NONCOMM_KEPT) \
    X(REDUCE_SCATTER, reduce_scatter, SHM, shm, BRAID_OPT_SHM, BRAID_NONCOMM_KEPT)

#define BRAID_ALLGATHER_ALGORITHMS(X)                                           \
    X(ALLGATHER, allgather, RING, ring, BRAID_OPT_CHUNK, BRAID_NONCOMM_NO_OP)   \
    X(ALLGATHER, allgather, RECURSIVE_DOUBLING, recursive_doubling, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP) \
    X(ALLGATHER, allgather, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT, BRAID_NONCOMM_NO_OP)

#define BRAID_ALLTOALL_ALGORITHMS(X)                                            \
    X(ALLTOALL, alltoall, PAIRWISE, pairwise, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP) \
    X(ALLTOALL, alltoall, BRUCK, bruck, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP)      \
    X(ALLTOALL, alltoall, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT, BRAID_NONCOMM_NO_OP)

#define BRAID_SCAN_ALGORITHMS(X)                                                \
    X(SCAN, scan, RECURSIVE_DOUBLING, recursive_doubling, BRAID_OPT_NONE, BRAID_NONCOMM_KEPT) \
    X(SCAN, scan, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT, BRAID_NONCOMM_KEPT)

#define BRAID_EXSCAN_ALGORITHMS(X)                                              \
    X(EXSCAN, exscan, RECURSIVE_DOUBLING, recursive_doubling, BRAID_OPT_NONE, BRAID_NONCOMM_KEPT) \
    X(EXSCAN, exscan, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT, BRAID_NONCOMM_KEPT)

#define BRAID_GATHER_ALGORITHMS(X)                                              \
    X(GATHER, gather, BINOMIAL, binomial, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP)  \
    X(GATHER, gather, LINEAR, linear, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP)      \
    X(GATHER, gather, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT, BRAID_NONCOMM_NO_OP)

#define BRAID_SCATTER_ALGORITHMS(X)                                             \
    X(SCATTER, scatter, BINOMIAL, binomial, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP) \
    X(SCATTER, scatter, LINEAR, linear, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP)    \
    X(SCATTER, scatter, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT, BRAID_NONCOMM_NO_OP)

#define BRAID_ALLGATHERV_ALGORITHMS(X)                                          \
    X(ALLGATHERV, allgatherv, RING, ring, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP)  \
    X(ALLGATHERV, allgatherv, BRUCK, bruck, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP) \
    X(ALLGATHERV, allgatherv, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT, BRAID_NONCOMM_NO_OP)

#define BRAID_ALLTOALLV_ALGORITHMS(X)                                           \
    X(ALLTOALLV, alltoallv, PAIRWISE, pairwise, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP) \
    X(ALLTOALLV, alltoallv, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT | BRAID_OPT_SHM_MESSAGES, \
      BRAID_NONCOMM_NO_OP)

#define BRAID_GATHERV_ALGORITHMS(X)                                             \
    X(GATHERV, gatherv, LINEAR, linear, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP)    \
    X(GATHERV, gatherv, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT | BRAID_OPT_SHM_MESSAGES, \
      BRAID_NONCOMM_NO_OP)

#define BRAID_SCATTERV_ALGORITHMS(X)                                            \
    X(SCATTERV, scatterv, LINEAR, linear, BRAID_OPT_NONE, BRAID_NONCOMM_NO_OP)  \
    X(SCATTERV, scatterv, SHM, shm, BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT | BRAID_OPT_SHM_MESSAGES, \
      BRAID_NONCOMM_NO_OP)

/* Every collective's list, in braid_coll_t order. */
#define BRAID_ALL_ALGORITHMS(X)                                                   \
    BRAID_BARRIER_ALGORITHMS(X) BRAID_BCAST_ALGORITHMS(X)                         \
    BRAID_ALLREDUCE_ALGORITHMS(X) BRAID_REDUCE_ALGORITHMS(X)                      \
    BRAID_REDUCE_SCATTER_ALGORITHMS(X) BRAID_ALLGATHER_ALGORITHMS(X)              \
    BRAID_ALLTOALL_ALGORITHMS(X) BRAID_SCAN_ALGORITHMS(X) BRAID_EXSCAN_ALGORITHMS(X)   \
    BRAID_GATHER_ALGORITHMS(X) BRAID_SCATTER_ALGORITHMS(X) BRAID_ALLGATHERV_ALGORITHMS(X) \
    BRAID_ALLTOALLV_ALGORITHMS(X) BRAID_GATHERV_ALGORITHMS(X) BRAID_SCATTERV_ALGORITHMS(X)

/* ids: BRAID_ALLREDUCE_RING = 1, ..., BRAID_ALLREDUCE_NALGS (one past the last) */
#define BRAID_REGISTRY_ID(C, c, ID, name, opts, noncomm) BRAID_##C##_##ID,
enum { BRAID_BARRIER_AUTO_ = 0, BRAID_BARRIER_ALGORITHMS(BRAID_REGISTRY_ID) BRAID_BARRIER_NALGS };
enum { BRAID_BCAST_AUTO_ = 0, BRAID_BCAST_ALGORITHMS(BRAID_REGISTRY_ID) BRAID_BCAST_NALGS };
enum { BRAID_ALLREDUCE_AUTO_ = 0, BRAID_ALLREDUCE_ALGORITHMS(BRAID_REGISTRY_ID)
       BRAID_ALLREDUCE_NALGS };
enum { BRAID_REDUCE_AUTO_ = 0, BRAID_REDUCE_ALGORITHMS(BRAID_REGISTRY_ID) BRAID_REDUCE_NALGS };
enum { BRAID_REDUCE_SCATTER_AUTO_ = 0, BRAID_REDUCE_SCATTER_ALGORITHMS(BRAID_REGISTRY_ID)
       BRAID_REDUCE_SCATTER_NALGS };
enum { BRAID_ALLGATHER_AUTO_ = 0, BRAID_ALLGATHER_ALGORITHMS(BRAID_REGISTRY_ID)
       BRAID_ALLGATHER_NALGS };
enum { BRAID_ALLTOALL_AUTO_ = 0, BRAID_ALLTOALL_ALGORITHMS(BRAID_REGISTRY_ID)
       BRAID_ALLTOALL_NALGS };
enum { BRAID_SCAN_AUTO_ = 0, BRAID_SCAN_ALGORITHMS(BRAID_REGISTRY_ID) BRAID_SCAN_NALGS };
enum { BRAID_EXSCAN_AUTO_ = 0, BRAID_EXSCAN_ALGORITHMS(BRAID_REGISTRY_ID) BRAID_EXSCAN_NALGS };
enum { BRAID_GATHER_AUTO_ = 0, BRAID_GATHER_ALGORITHMS(BRAID_REGISTRY_ID) BRAID_GATHER_NALGS };
enum { BRAID_SCATTER_AUTO_ = 0, BRAID_SCATTER_ALGORITHMS(BRAID_REGISTRY_ID) BRAID_SCATTER_NALGS };
enum { BRAID_ALLGATHERV_AUTO_ = 0, BRAID_ALLGATHERV_ALGORITHMS(BRAID_REGISTRY_ID)
       BRAID_ALLGATHERV_NALGS };
enum { BRAID_ALLTOALLV_AUTO_ = 0, BRAID_ALLTOALLV_ALGORITHMS(BRAID_REGISTRY_ID)
       BRAID_ALLTOALLV_NALGS };
enum { BRAID_GATHERV_AUTO_ = 0, BRAID_GATHERV_ALGORITHMS(BRAID_REGISTRY_ID) BRAID_GATHERV_NALGS };
enum { BRAID_SCATTERV_AUTO_ = 0, BRAID_SCATTERV_ALGORITHMS(BRAID_REGISTRY_ID)
       BRAID_SCATTERV_NALGS };

/* At least as many ids as any collective has, "auto" included (for arrays
 * indexed by id across collectives; braid_registry.c checks the bound at
 * compile time). */
#define BRAID_MAX_ALGS 32

/* Estimated microseconds of one call on P ranks with S message bytes
 * (libbraid/selection/RULES.md says what S is per collective), or a negative value
 * when the model does not consider the algorithm for P (braid_cost.h). */
typedef double (*braid_cost_fn_t)(int P, double S);

/* the prototypes of every row */
#define BRAID_REGISTRY_PROTO(C, c, ID, name, opts, noncomm)                               \
    int braid_##c##_##name(braid_comm_t *comm, const braid_coll_args_t *a);      \
    double braid_cost_##c##_##name(int P, double S);
BRAID_ALL_ALGORITHMS(BRAID_REGISTRY_PROTO)

typedef struct braid_algorithm {
    const char *name;       /* as in coll_braid_<coll>_algorithm and rules files */
    braid_algo_fn_t run;
    braid_cost_fn_t cost;
    unsigned options;       /* BRAID_OPT_* */
    braid_noncomm_t noncomm; /* BRAID_NONCOMM_* */
} braid_algorithm_t;

/* The row of algorithm id alg of coll; NULL for auto or an invalid id. */
const braid_algorithm_t *braid_algorithm(braid_coll_t coll, int alg);
/* Whether algorithm alg of coll runs an op that is (or is not) commutative
 * on P ranks; false where it returns BRAID_ERR_UNSUPPORTED on every rank
 * (its noncomm fact). exact: a->exact. False for auto or an invalid id. */
bool braid_alg_takes_op(braid_coll_t coll, int alg, int P, bool commutative, bool exact);
/* The same of a row (not NULL); inline, the dispatch asks it of every
 * call */
static inline bool braid_row_takes_op(const braid_algorithm_t *a, int P, bool commutative, bool exact)
{
    switch (a->noncomm) {
    case BRAID_NONCOMM_NO_OP:
    case BRAID_NONCOMM_KEPT: return true;
    case BRAID_NONCOMM_EXACT: return commutative || P <= 1 || exact;
    case BRAID_NONCOMM_REFUSED: return commutative || P <= 1;
    case BRAID_NONCOMM_REFUSED_ALL_P: return commutative;
    default: return commutative;
    }
}
/* One past the largest algorithm id of coll (BRAID_<COLL>_NALGS); 0 if invalid. */
int braid_alg_count(braid_coll_t coll);

/* "allreduce", ... (the word in coll_braid_<word>_algorithm) */
const char *braid_coll_name(braid_coll_t coll);
/* "MPI_Allreduce", ... */
const char *braid_coll_mpi_name(braid_coll_t coll);
/* NULL-terminated list of algorithm names, index = id, [0] = "auto" */
const char *const *braid_alg_names(braid_coll_t coll);
const char *braid_alg_name(braid_coll_t coll, int alg);
/* id of name ("auto" = 0), or -1 */
int braid_alg_lookup(braid_coll_t coll, const char *name);
/* "auto | ring | ..." into out */
void braid_alg_names_joined(braid_coll_t coll, char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* BRAID_REGISTRY_H */
