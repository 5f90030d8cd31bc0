/*
 * allreduce recursive_doubling (latency-optimal, for small messages)
 *
 *   steps: lg P' (P' = largest power of two <= P), plus 2 when P is not a
 *          power of two (fold the extra ranks in, hand the result back)
 *   bytes sent per rank: lg P' * S (+ S for ranks in the fold)
 *
 * The first 2*rem ranks (rem = P - P') pair up: each even rank hands its
 * vector to the odd rank above it and sits out; the remaining P' ranks
 * (renumbered 0..P'-1, each standing for a contiguous run of original
 * ranks) exchange whole vectors with the partner at distance 1, 2, 4, ...
 * and reduce. Both partners compute lower (op) upper with the same
 * operands, so every rank holds bit-identical results and a
 * non-commutative op keeps rank order. Finally the odd ranks of the fold
 * send the result down to their even partner.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

enum { STEP_FOLD = 0, STEP_EXCHANGE = 1, STEP_UNFOLD = 1000 };

/* original rank of renumbered rank n */
static int original_rank(int n, int rem) { return n < rem ? 2 * n + 1 : n + rem; }

/* rbuf = lower (op) upper, where `theirs` came from `peer` */
static void combine(const braid_coll_args_t *a, int me, int peer, void *mine, void *theirs,
                    size_t bytes)
{
    if (peer < me) {
        a->op.fn(theirs, mine, a->count, a->op.arg);
    } else {
        a->op.fn(mine, theirs, a->count, a->op.arg);
        braid_copy(mine, theirs, bytes);
    }
}

int braid_allreduce_recursive_doubling(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t bytes = a->count * a->esize;
    braid_copy_input(a, bytes);
    if (P < 2 || 0 == bytes) return BRAID_OK;
    void *tmp = braid_scratch_get(a->scratch, 0, bytes);
    if (NULL == tmp) return BRAID_ERR_NOMEM;

    int pof2 = 1 << braid_floor_log2(P), rem = P - pof2, newrank, rc;
    if (r < 2 * rem) {
        if (0 == r % 2) {
            rc = braid_send(c, r + 1, STEP_FOLD, a->rbuf, bytes);
            if (BRAID_OK != rc) return rc;
            return braid_recv(c, r + 1, STEP_UNFOLD, a->rbuf, bytes);
        }
        rc = braid_recv(c, r - 1, STEP_FOLD, tmp, bytes);
        if (BRAID_OK != rc) return rc;
        a->op.fn(tmp, a->rbuf, a->count, a->op.arg);   /* x[r-1] op x[r] */
        newrank = r / 2;
    } else {
        newrank = r - rem;
    }

    for (int mask = 1, k = 0; mask < pof2; mask <<= 1, k++) {
        int peer = original_rank(newrank ^ mask, rem);
        rc = braid_sendrecv(c, peer, STEP_EXCHANGE + (braid_step_t)k, a->rbuf, bytes,
                            peer, STEP_EXCHANGE + (braid_step_t)k, tmp, bytes);
        if (BRAID_OK != rc) return rc;
        combine(a, r, peer, a->rbuf, tmp, bytes);
    }

    if (r < 2 * rem) return braid_send(c, r - 1, STEP_UNFOLD, a->rbuf, bytes);
    return BRAID_OK;
}

/* lg(p)(alpha + S(beta+gamma)), plus 2(alpha + S beta) + S gamma when P != p */
double braid_cost_allreduce_recursive_doubling(int P, double S)
{
    int p = braid_cost_p(P);
    double t = braid_floor_log2(p) * (BRAID_COST_ALPHA + S * (BRAID_COST_BETA + BRAID_COST_GAMMA));
    if (p != P) t += 2 * (BRAID_COST_ALPHA + S * BRAID_COST_BETA) + S * BRAID_COST_GAMMA;
    return t;
}
