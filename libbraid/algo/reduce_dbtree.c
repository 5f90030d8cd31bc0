/*
 * reduce dbtree (NCCL's double binary tree, any root)
 *
 *   steps: K + ceil(lg P) + 1 lock steps for K chunks per tree
 *   bytes sent per rank: S for every rank but the root (each half once, up
 *     its tree); the root sends nothing for commutative ops.
 *
 * Commutative ops: both trees rooted at the root as in bcast_dbtree; tree 0
 * reduces the first half of the elements and tree 1 the second, chunked
 * (a->params.chunk_bytes) and pipelined, both trees at once
 * (dbtree_pipeline.h).
 * Non-commutative ops: renumbering ranks would break rank order, so the
 * reduction runs over the in-order trees with their own roots
 * (BRAID_DBTREE_INORDER: the btree, root 0, and a mirrored btree) folding
 * (lower child, node, upper child),
 * and each tree's root forwards its half to the root chunk by chunk; the
 * root then sends up to S (its halves) and 0 and P-1 forward theirs.
 * Non-root ranks may pass rbuf NULL: they accumulate in scratch chunks.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "dbtree_pipeline.h"

#include <math.h>

int braid_reduce_dbtree(braid_comm_t *c, const braid_coll_args_t *a)
{
    bool is_root = c->rank == a->root;
    if (is_root) braid_copy_input(a, a->count * a->esize);
    if (c->size < 2 || 0 == a->count) return BRAID_OK;
    bool comm = a->op.commutative;
    braid_dbtree_t trees = { c->size, comm ? BRAID_DBTREE_NCCL : BRAID_DBTREE_INORDER,
                             comm ? a->root : -1 };
    braid_dbt_opts_t o = {
        .up = true, .down = false, .ordered = !comm,
        .in = is_root || NULL == a->sbuf ? a->rbuf : a->sbuf, /* NULL: in place */
        .acc = is_root ? a->rbuf : NULL,
        .fwd_root = comm ? -1 : a->root,
        .chunk = braid_dbt_chunk_elems(a, c->size),
    };
    return braid_dbt_run(c, a, &trees, &o);
}

/* (L + k - 1)(alpha + o + S/k (beta+gamma)), k = ceil(S / 64K) pipeline chunks */
double braid_cost_reduce_dbtree(int P, double S)
{
    double k = S > 65536.0 ? ceil(S / 65536.0) : 1;
    return (braid_cost_L(P) + k - 1)
         * (BRAID_COST_ALPHA + BRAID_COST_O + S / k * (BRAID_COST_BETA + BRAID_COST_GAMMA));
}
