/*
 * allreduce dbtree (NCCL's double binary tree)
 *
 *   steps: K + 2*ceil(lg P) lock steps for K chunks per tree
 *   bytes sent per rank: ((rank is not the tree's root) + its children)
 *     * (half of S) summed over both trees; at most 2S (an interior rank of
 *     one tree sends 3 halves in it and 1 in the other, where it is a leaf).
 *
 * Tree 0 carries the first half of the elements and tree 1 the second. Each
 * half is cut into chunks (a->params.chunk_bytes, default adaptive around
 * 256 KiB) and reduced up its tree, then the root's result is broadcast back
 * down; both phases and both trees run in one lock-step pipeline (see
 * dbtree_pipeline.h), so chunk k+1 is reduced while chunk k goes down. Every
 * element is reduced once, at its tree's root, and broadcast: all ranks end
 * with identical bits.
 *
 * Non-commutative ops: the btree is an in-order tree (every subtree a
 * contiguous range of ranks), so folding (lower child, node, upper child)
 * keeps rank order. NCCL's shifted second tree for odd P is not in-order, so
 * non-commutative ops use BRAID_DBTREE_INORDER: the mirror for even P (as
 * NCCL) and for odd P the mirror of the btree over P+1 ranks without its
 * phantom root, which is in-order and still interior exactly where tree 0
 * has leaves. Same bytes bound.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "dbtree_pipeline.h"

int braid_allreduce_dbtree(braid_comm_t *c, const braid_coll_args_t *a)
{
    braid_copy_input(a, a->count * a->esize);
    if (c->size < 2 || 0 == a->count) return BRAID_OK;
    braid_dbtree_t trees = { c->size, a->op.commutative ? BRAID_DBTREE_NCCL : BRAID_DBTREE_INORDER, -1 };
    braid_dbt_opts_t o = {
        .up = true, .down = true, .ordered = !a->op.commutative,
        .in = a->rbuf, .acc = a->rbuf, .fwd_root = -1,
        .chunk = braid_dbt_chunk_elems(a, c->size),
    };
    return braid_dbt_run(c, a, &trees, &o);
}

/* not considered by the model: its trees pay off on networks; on one node its cost is not yet known */
double braid_cost_allreduce_dbtree(int P, double S)
{
    (void)P;
    (void)S;
    return BRAID_COST_NONE;
}
