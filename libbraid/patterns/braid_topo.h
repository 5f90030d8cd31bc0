/*
 * braid_topo.h - which ranks share a node, and views of a communicator in
 * which the algorithms run unchanged:
 *
 *  - braid_topo_t groups the ranks of a communicator by node: `order` lists
 *    node 0's ranks, then node 1's, ... (nodes numbered by their lowest
 *    rank, ranks ascending inside a node). A ring over `order` crosses
 *    between nodes exactly nnodes times, whatever the rank mapping
 *    (mpirun --map-by node interleaves them); contiguous rank ranges of it
 *    (bcube's first groups, the trees' low subtrees) stay inside a node.
 *  - braid_subcomm_t is a braid_comm_t made of some ranks of a parent
 *    communicator in a given order: view rank i is parent rank members[i].
 *    Messages go through the parent's transport with the parent's ranks,
 *    so every view of one communicator shares its tag space; a collective
 *    may run phases on different views one after the other (messages
 *    between one pair are matched in posting order, braid_algo.h).
 *
 * Pure C, no Open MPI or UCX: the component builds them from Open MPI's node
 * names, the unit tests and the simulator from a node map.
 */
#ifndef BRAID_TOPO_H
#define BRAID_TOPO_H

#include "braid_algo.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct braid_topo {
    int size;          /* ranks */
    int nnodes;        /* distinct nodes, >= 1 when size >= 1 */
    int *node_of;      /* node (0..nnodes-1) of each rank */
    int *order;        /* ranks grouped by node (size entries) */
    int *node_start;   /* node k's ranks are order[node_start[k] .. node_start[k+1]) */
} braid_topo_t;

/* node_keys[r]: any value naming rank r's node (equal = same node).
 * Returns BRAID_OK or BRAID_ERR_NOMEM / BRAID_ERR_ARG. */
int braid_topo_init(braid_topo_t *t, int size, const uint64_t *node_keys);
/* A node's key from its name (FNV-1a): equal names give equal keys; a
 * collision only merges two nodes in the grouping (slower, never wrong). */
uint64_t braid_topo_node_key(const char *name);
void braid_topo_fini(braid_topo_t *t);

/* `order` is 0, 1, ..., size-1: the ranks are already grouped by node */
bool braid_topo_is_grouped(const braid_topo_t *t);

/* ranks of node k and how many */
static inline const int *braid_topo_node_ranks(const braid_topo_t *t, int k)
{
    return t->order + t->node_start[k];
}
static inline int braid_topo_node_size(const braid_topo_t *t, int k)
{
    return t->node_start[k + 1] - t->node_start[k];
}

/* The first (lowest) rank of every node, in node order; out has nnodes
 * entries. Node leaders of the hierarchical allreduce. */
void braid_topo_leaders(const braid_topo_t *t, int *out);

/* A view of some ranks of a parent communicator. */
typedef struct braid_subcomm {
    braid_comm_t comm;    /* what algorithms get; comm.rank is -1 on a rank
                             that is not a member (it must not run on it) */
    braid_comm_t *parent;
    int *members;         /* members[i]: the parent rank of view rank i */
    int *view_rank;       /* view_rank[r]: the view rank of parent rank r, or -1 */
} braid_subcomm_t;

/* members: n distinct parent ranks (BRAID_ERR_ARG otherwise). Copies them. */
int braid_subcomm_init(braid_subcomm_t *s, braid_comm_t *parent, int n, const int *members);
void braid_subcomm_fini(braid_subcomm_t *s);

static inline bool braid_subcomm_is_member(const braid_subcomm_t *s)
{
    return s->comm.rank >= 0;
}

/* The view rank of parent rank r (a root), or -1 when r is not a member. */
static inline int braid_subcomm_rank_of(const braid_subcomm_t *s, int parent_rank)
{
    if (parent_rank < 0 || parent_rank >= s->parent->size) return -1;
    return s->view_rank[parent_rank];
}

/* Collectives that tie block i to rank i, run on a view v that permutes the
 * whole parent communicator (view rank i is parent rank v->members[i]): the
 * blocks are laid out in view order around the run, so every rank still
 * gets its own block. fn is the algorithm. */

/* Allgather of `block` bytes per rank (a->count = block, esize 1): this
 * rank's block is a->sbuf, or (in place, sbuf NULL) a->rbuf at its
 * parent-rank place; the algorithm gathers
 * into tmp (P blocks) in view order, then each block moves to its rank's
 * place (one extra copy of the result). */
int braid_view_allgather(braid_subcomm_t *v, const braid_comm_t *call, braid_algo_fn_t fn,
                         const braid_coll_args_t *a, size_t block, char *tmp);

/* Reduce-scatter: the input's blocks are copied into tmp (the whole input)
 * in view order (one extra copy of the input) and the algorithm runs with
 * the counts in that order (counts: 2P + 1 entries of workspace); view rank i's block is parent rank members[i]'s, so this
 * rank's result is its own block. */
int braid_view_reduce_scatter(braid_subcomm_t *v, const braid_comm_t *call, braid_algo_fn_t fn,
                              const braid_coll_args_t *a, char *tmp, size_t *counts);

#ifdef __cplusplus
}
#endif
#endif /* BRAID_TOPO_H */
