/*
 * reduce binomial tree (small messages, any root)
 *
 *   steps: ceil(lg P)   bytes sent: S by every rank except the tree root
 *
 * Rank v receives, for each bit 2^k below its lowest set bit with
 * v + 2^k < P, the partial result of ranks [v + 2^k, v + 2^(k+1)) from
 * v + 2^k, folds it into its own, then sends its result to v - lowbit.
 * Commutative ops: v = (r - root) mod P, so the root is v = 0.
 * Non-commutative ops: v = r (rank order needs an unrotated tree); the
 * partial result of [v, v + 2^k) is the left operand of [v + 2^k, ...), and
 * when root != 0, rank 0 sends the result to the root (one extra S).
 * Non-root ranks may pass rbuf NULL: partial results live in scratch, and
 * leaves send straight from their input.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

enum { STEP_TREE = 0, STEP_FWD = 1 };

/* Commutative ops: the tree is rooted at the real root and folds need no
 * order, so the first child's partial result is received straight into the
 * accumulator (the root's rbuf, else scratch) and this rank's input is folded
 * into it: no copies. Later children arrive in scratch and fold into it. */
static int reduce_commutative(braid_comm_t *c, const braid_coll_args_t *a, const char *in,
                              size_t bytes)
{
    int P = c->size, root = a->root;
    int v = (c->rank - root + P) % P;
    bool is_root = 0 == v;
    /* in place at the root: the accumulator already holds this rank's input */
    bool acc_holds_input = is_root && in == (const char *)a->rbuf;
    char *acc = is_root ? (char *)a->rbuf : NULL;
    char *tmp = NULL;
    const char *cur = in;
    for (int mask = 1; mask < P; mask <<= 1) {
        if (v & mask)   /* send the partial result to the parent; done */
            return braid_send(c, (v - mask + root) % P, STEP_TREE, cur, bytes);
        if (v + mask >= P) continue;
        int child = (v + mask + root) % P;
        int rc;
        if (cur == in && !acc_holds_input) {
            /* first fold: child's partial straight into the accumulator */
            if (NULL == acc && NULL == (acc = braid_scratch_get(a->scratch, 0, bytes)))
                return BRAID_ERR_NOMEM;
            rc = braid_recv(c, child, STEP_TREE, acc, bytes);
            if (BRAID_OK != rc) return rc;
            a->op.fn(in, acc, a->count, a->op.arg);
        } else {
            if (NULL == tmp && NULL == (tmp = braid_scratch_get(a->scratch, 1, bytes)))
                return BRAID_ERR_NOMEM;
            rc = braid_recv(c, child, STEP_TREE, tmp, bytes);
            if (BRAID_OK != rc) return rc;
            a->op.fn(tmp, acc, a->count, a->op.arg);
        }
        cur = acc;
    }
    /* the root: a leaf root (P == 1) still owes the copy */
    if (cur != (const char *)a->rbuf) braid_copy(a->rbuf, cur, bytes);
    return BRAID_OK;
}

int braid_reduce_binomial(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, rank = c->rank, root = a->root;
    size_t bytes = a->count * a->esize;
    bool is_root = rank == root, comm = a->op.commutative;
    const char *in = NULL == a->sbuf ? a->rbuf : a->sbuf;
    if (0 == bytes) return BRAID_OK;
    if (comm) return reduce_commutative(c, a, in, bytes);
    if (is_root) braid_copy_input(a, bytes);
    if (P < 2) return BRAID_OK;
    int tree_root = 0;
    int v = rank;
    in = is_root || NULL == a->sbuf ? a->rbuf : a->sbuf;
    /* cur: this rank's partial result; acc/tmp: where folds go */
    char *acc = braid_scratch_get(a->scratch, 0, bytes);
    char *tmp = braid_scratch_get(a->scratch, 1, bytes);
    if (NULL == acc || NULL == tmp) return BRAID_ERR_NOMEM;
    const char *cur = in;
    int rc = BRAID_OK;
    for (int mask = 1; mask < P; mask <<= 1) {
        if (v & mask) {
            rc = braid_send(c, v - mask, STEP_TREE, cur, bytes);
            break;
        }
        if (v + mask >= P) continue;
        rc = braid_recv(c, v + mask, STEP_TREE, tmp, bytes);
        if (BRAID_OK != rc) return rc;
        if (cur != acc) braid_copy(acc, cur, bytes);
        /* acc holds [v, v+mask), tmp [v+mask, ...): tmp = acc op tmp */
        a->op.fn(acc, tmp, a->count, a->op.arg);
        char *x = acc; acc = tmp; tmp = x;
        cur = acc;
    }
    if (BRAID_OK != rc) return rc;
    if (0 == v && tree_root == root) {
        if (cur != a->rbuf) braid_copy(a->rbuf, cur, bytes);
    } else if (0 == v) {
        rc = braid_send(c, root, STEP_FWD, cur, bytes);
    } else if (is_root) {
        rc = braid_recv(c, tree_root, STEP_FWD, a->rbuf, bytes);
    }
    return rc;
}

/* L (alpha + S(beta+gamma)) */
double braid_cost_reduce_binomial(int P, double S)
{
    return braid_cost_L(P) * (BRAID_COST_ALPHA + S * (BRAID_COST_BETA + BRAID_COST_GAMMA));
}
