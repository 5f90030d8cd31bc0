/*
 * bcast dbtree (NCCL's double binary tree, any root)
 *
 *   steps: K + ceil(lg P) + 1 lock steps for K chunks per tree
 *   bytes sent per rank: (its children in tree 0) * (first half of S)
 *     + (its children in tree 1) * (second half); at most S for every rank
 *     but the root, which sends S (even P) or 3S/2 (odd P).
 *
 * Both trees are rooted at the root: ranks are renumbered relative to it,
 * which makes the root tree 0's root, and tree 1 is re-rooted by cutting
 * the root from its parent there and hanging tree 1's own root under it
 * (braid_dbtree_t.root in braid_trees.h). Tree 0 carries the first half of
 * the bytes, tree 1 the second; each half is pipelined down its tree in
 * chunks (a->params.chunk_bytes, default adaptive around 256 KiB), both
 * trees at once (dbtree_pipeline.h).
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "dbtree_pipeline.h"

int braid_bcast_dbtree(braid_comm_t *c, const braid_coll_args_t *a)
{
    if (c->size < 2 || 0 == a->count) return BRAID_OK;
    braid_dbtree_t trees = { c->size, BRAID_DBTREE_NCCL, a->root };
    braid_dbt_opts_t o = {
        .up = false, .down = true, .ordered = false,
        .in = a->rbuf, .acc = a->rbuf, .fwd_root = -1,
        .chunk = braid_dbt_chunk_elems(a, c->size),
    };
    return braid_dbt_run(c, a, &trees, &o);
}

/* not considered by the model: its trees pay off on networks; on one node its cost is not yet known */
double braid_cost_bcast_dbtree(int P, double S)
{
    (void)P;
    (void)S;
    return BRAID_COST_NONE;
}
