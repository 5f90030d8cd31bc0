/*
 * braid_trees.h - communication trees shared by the tree-based algorithms:
 * NCCL's double binary tree (allreduce, bcast, reduce) and bcube's group
 * factorisation (allreduce bcube).
 *
 * Pure integer arithmetic, no transport: every rank computes its own
 * neighbours in O(log P), and tests can check the whole structure.
 */
#ifndef BRAID_TREES_H
#define BRAID_TREES_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A binary tree has at most 2 children; the re-rooted second tree of
 * braid_dbtree_rooted() gives its root one more. */
#define BRAID_TREE_MAX_CHILDREN 3

typedef struct braid_tree_node {
    int parent;                            /* -1 at the root */
    int child[BRAID_TREE_MAX_CHILDREN];    /* -1 past nchildren */
    int nchildren;
} braid_tree_node_t;

/* ------------------------------------------------------------------ */
/* NCCL's binary tree and double binary tree                           */
/* ------------------------------------------------------------------ */

/*
 * Tree 1 (NCCL's btree), root 0. For r > 0 with lowest set bit b:
 *   parent(r) = (r ^ b) | (b << 1), or r ^ b when that is >= P;
 * rank 0 has the single child 2^floor(lg(P-1)). Children are listed in
 * increasing rank order, and every subtree is a contiguous range of ranks
 * with the lower child's range below its parent and the upper one above
 * (an in-order tree), so a reduction combining (lower child, node, upper
 * child) keeps rank order. Depth (edges from the root to the deepest leaf)
 * is exactly ceil(lg P).
 */
void braid_btree_node(int P, int rank, braid_tree_node_t *out);

/*
 * NCCL's double binary tree (NCCL >= 2.8.3): tree 0 is the btree above,
 * tree 1 is its mirror r -> P-1-r when P is even, and its shift
 * r -> (r+1) mod P when P is odd. For even P no rank is interior in both
 * trees; for odd P only rank 0 is (it is the root of tree 0, with a single
 * child). Roots: 0 and P-1 (even P) or 1 (odd P).
 */
void braid_dbtree_node(int P, int rank, int which, braid_tree_node_t *out);
int braid_dbtree_root(int P, int which);

/* Variants of the double tree, for algorithms that need more than NCCL's. */
typedef enum braid_dbtree_kind {
    BRAID_DBTREE_NCCL = 0,   /* tree 1 mirror (even P) or shift (odd P) */
    BRAID_DBTREE_INORDER = 1 /* both trees in-order (non-commutative ops):
                                tree 1 is the mirror for even P, and for odd P
                                the mirror of the btree over P+1 ranks with its
                                root (rank P, absent) removed; its interior
                                ranks are the odd ones, tree 0's the even ones */
} braid_dbtree_kind_t;

typedef struct braid_dbtree {
    int P;
    braid_dbtree_kind_t kind;
    /* -1: the trees' own roots (0 and the second tree's root). Otherwise
     * both trees are rooted at this rank: ranks are renumbered
     * v = (r - root) mod P, and the second tree is re-rooted by cutting
     * `root` from its parent and hanging the second tree's old root under
     * it (depth grows by at most one, `root` may get 3 children). */
    int root;
} braid_dbtree_t;

void braid_dbtree_get(const braid_dbtree_t *t, int which, int rank, braid_tree_node_t *out);
int braid_dbtree_get_root(const braid_dbtree_t *t, int which);
/* edges from the root to rank */
int braid_dbtree_get_depth(const braid_dbtree_t *t, int which, int rank);
/* an upper bound of every rank's depth, the same on every rank:
 * ceil(lg P), plus one for the re-rooted second tree */
int braid_dbtree_max_depth(const braid_dbtree_t *t, int which);

/* ------------------------------------------------------------------ */
/* bcube groups                                                        */
/* ------------------------------------------------------------------ */

#define BRAID_BCUBE_MAX_STEPS 32
#define BRAID_BCUBE_DEFAULT_BASE 4
/* bcube_base < 0: two steps, groups of the divisor of P nearest sqrt(P)
 * and its cofactor (one group when P is prime) */
#define BRAID_BCUBE_AUTO (-1)

/*
 * Factor P into group sizes g[0..m) with g[0]*...*g[m-1] = P, m returned.
 * base >= 2: P's prime factors are packed, largest first, into as few
 * groups of product <= base as first fit finds; a prime larger than base is
 * a group of its own (a prime P is one group of P). base 0 means
 * BRAID_BCUBE_DEFAULT_BASE, base < 0 BRAID_BCUBE_AUTO. The sizes are sorted
 * in decreasing order so the biggest fan-out meets the most data. P = 1
 * gives m = 0.
 */
int braid_bcube_factor(int P, int base, int *g);

/*
 * Mixed-radix digits: rank = d0 + g0*(d1 + g1*(d2 + ...)). The group of
 * `rank` at step s is the g[s] ranks that differ from it only in digit s;
 * member j has digit j. Groups of early steps are contiguous blocks of
 * ranks, which keeps a reduction in digit order in rank order.
 */
int braid_bcube_digit(const int *g, int step, int rank);
int braid_bcube_member(const int *g, int step, int rank, int j);

#ifdef __cplusplus
}
#endif
#endif /* BRAID_TREES_H */
