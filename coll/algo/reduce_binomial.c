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

#include <string.h>

enum { STEP_TREE = 0, STEP_FWD = 1 };

int braid_reduce_binomial(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, rank = c->rank, root = a->root;
    size_t bytes = a->count * a->esize;
    bool is_root = rank == root, comm = a->op.commutative;
    if (is_root) braid_copy_input(a, bytes);
    if (P < 2 || 0 == bytes) return BRAID_OK;
    int tree_root = comm ? root : 0;
    int v = (rank - tree_root + P) % P;
    const char *in = is_root || NULL == a->sbuf ? a->rbuf : a->sbuf;
    /* cur: this rank's partial result; acc/tmp: where folds go */
    char *acc = braid_scratch_get(a->scratch, 0, bytes);
    char *tmp = braid_scratch_get(a->scratch, 1, bytes);
    if (NULL == acc || NULL == tmp) return BRAID_ERR_NOMEM;
    const char *cur = in;
    int rc = BRAID_OK;
    for (int mask = 1; mask < P; mask <<= 1) {
        if (v & mask) {
            int parent = (v - mask + tree_root) % P;
            rc = braid_send(c, parent, STEP_TREE, cur, bytes);
            break;
        }
        if (v + mask >= P) continue;
        rc = braid_recv(c, (v + mask + tree_root) % P, STEP_TREE, tmp, bytes);
        if (BRAID_OK != rc) return rc;
        if (cur != acc) { memcpy(acc, cur, bytes); cur = acc; }
        if (comm) {
            a->op.fn(tmp, acc, a->count, a->op.arg);
        } else {
            /* acc holds [v, v+mask), tmp [v+mask, ...): tmp = acc op tmp */
            a->op.fn(acc, tmp, a->count, a->op.arg);
            char *x = acc; acc = tmp; tmp = x;
            cur = acc;
        }
    }
    if (BRAID_OK != rc) return rc;
    if (0 == v && tree_root == root) {
        if (cur != a->rbuf) memcpy(a->rbuf, cur, bytes);
    } else if (0 == v) {
        rc = braid_send(c, root, STEP_FWD, cur, bytes);
    } else if (is_root) {
        rc = braid_recv(c, tree_root, STEP_FWD, a->rbuf, bytes);
    }
    return rc;
}
