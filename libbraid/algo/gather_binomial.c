/*
 * gather binomial: block i of rank i into the root's rbuf
 *
 *   steps: ceil(lg P)    messages per rank: 1 up (the root: none), and
 *                        one from each child
 *   bytes sent: a rank's whole subtree, n S, where n = min(lowbit(v), P - v)
 *   for relative rank v = rank - root (mod P); S(P-1) reach the root
 *
 * Ranks are renumbered relative to the root, v = (rank - root) mod P.
 * Rank v collects the blocks of v .. v + n - 1 (its binomial subtree) in
 * relative order and sends them to v - lowbit(v) in one message, so the
 * root receives lg P messages instead of P - 1. A leaf sends straight
 * from its input; the receives from the children are all posted at once.
 * The root (when it is not rank 0) collects in scratch (slot 0) and
 * rotates the blocks into rank order at the end; rank 0 as the root
 * collects in rbuf itself. Its cost against linear: lg P message times
 * at the root against P - 1, for each block copied once per level.
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"

int braid_gather_binomial(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank, root = a->root;
    size_t bytes = a->count * a->esize;
    if (0 == bytes) return BRAID_OK;
    braid_subtree_t t = braid_subtree_of(P, r, root);
    int v = t.v, n = t.n, low = t.low, abs_up = t.parent;
    const char *mine = NULL != a->sbuf ? a->sbuf : (const char *)a->rbuf + (size_t)root * bytes;
    if (1 == n && v)   /* a leaf */
        return braid_send(c, abs_up, (braid_step_t)braid_floor_log2(low), mine, bytes);
    char *held = 0 == root && 0 == v ? a->rbuf : braid_scratch_get(a->scratch, 0, (size_t)n * bytes);
    if (NULL == held) return BRAID_ERR_NOMEM;
    if (held != mine) braid_copy(held, mine, bytes);
    braid_req_t reqs[32];
    int nreq = 0, rc = BRAID_OK;
    for (int mask = 1; mask < n && BRAID_OK == rc; mask <<= 1) {
        int child = v + mask, cnt = mask < P - child ? mask : P - child;
        rc = braid_irecv(c, (child + root) % P, (braid_step_t)braid_floor_log2(mask),
                         held + (size_t)mask * bytes, (size_t)cnt * bytes, &reqs[nreq++]);
    }
    int wrc = braid_waitall(c, nreq, reqs);
    if (BRAID_OK != rc || BRAID_OK != wrc) return BRAID_OK != rc ? rc : wrc;
    if (v) return braid_send(c, abs_up, (braid_step_t)braid_floor_log2(low), held, (size_t)n * bytes);
    if (held != a->rbuf)   /* relative block j belongs to rank j + root */
        for (int j = 0; j < P; j++)
            braid_copy((char *)a->rbuf + (size_t)((j + root) % P) * bytes, held + (size_t)j * bytes, bytes);
    return BRAID_OK;
}

/* L alpha + (P-1)/P S_all beta at the root, S_all = P S: every block
 * crosses lg P levels at most once each */
double braid_cost_gather_binomial(int P, double S)
{
    return braid_cost_L(P) * BRAID_COST_ALPHA + (P - 1) * S * BRAID_COST_BETA;
}
