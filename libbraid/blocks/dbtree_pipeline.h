/*
 * dbtree_pipeline.h - the pipelined double-binary-tree engine behind
 * allreduce_dbtree, bcast_dbtree and reduce_dbtree (internal to coll/algo).
 *
 * The element range is cut in two halves, tree 0 carrying the first and
 * tree 1 the second, and each half into chunks. Both trees advance together
 * in lock step: in step s every rank posts the receives and sends of both
 * trees that belong to step s, then waits for all of them. A rank at depth d
 * of a tree whose depth bound is D
 *   - up (reduce):  receives its children's chunk k in step k + D-d-1,
 *                   folds them into its own in step k + D-d and sends the
 *                   result to its parent in that same step;
 *   - down (bcast): receives chunk k from its parent in step k + B+d-1 and
 *                   forwards it to its children in step k + B+d, where B is
 *                   D when the up phase ran first and 0 otherwise.
 * Every receive is posted in the same step as its send, and a send only uses
 * data completed in an earlier step, so the lock step cannot deadlock; in
 * any step a rank may be reducing chunk k+1 while broadcasting chunk k, in
 * both trees at once. Children's chunks land in two alternating buffers per
 * child, so the receive of step s never touches what step s-1 received.
 */
#ifndef BRAID_DBTREE_PIPELINE_H
#define BRAID_DBTREE_PIPELINE_H

#include "braid_algo.h"
#include "braid_trees.h"

/* default chunk: 256 KiB, halved (not below 16 KiB) until each tree has
 * enough chunks to fill its depth a few times */
#define BRAID_DBTREE_CHUNK_DEFAULT ((size_t)256 * 1024)
#define BRAID_DBTREE_CHUNK_MIN ((size_t)16 * 1024)

typedef struct braid_dbt_opts {
    bool up;              /* reduce towards each tree's root */
    bool down;            /* broadcast from each tree's root */
    bool ordered;         /* fold children in rank order (trees must be in-order) */
    const char *in;       /* the input elements (may equal acc) */
    char *acc;            /* count elements: accumulator and output; NULL on a
                             reduce's non-root ranks (chunks go via scratch) */
    int fwd_root;         /* up only: after the reduction each tree root sends
                             its half to this rank (-1: none) */
    size_t chunk;         /* elements per chunk, >= 1 */
} braid_dbt_opts_t;

/* Elements per chunk for count elements of esize bytes over P ranks. */
size_t braid_dbt_chunk_elems(const braid_coll_args_t *a, int P);

int braid_dbt_run(braid_comm_t *c, const braid_coll_args_t *a, const braid_dbtree_t *trees,
                  const braid_dbt_opts_t *o);

#endif
