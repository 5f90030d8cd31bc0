/*
 * scatter binomial: block i of the root's sbuf to rank i
 *
 *   steps: ceil(lg P)    messages per rank: 1 from the parent (the root:
 *                        none), one to each child
 *   bytes sent: each child's whole subtree, min(mask, P - child) S
 *   for the child at relative distance mask; (P-1) S leave the root
 *
 * The mirror of gather_binomial: relative rank v = rank - root (mod P)
 * receives the blocks of its subtree v .. v + n - 1 (n = min(lowbit(v),
 * P - v)) from v - lowbit(v) in one message and passes each child its
 * part, the largest subtree first so that the deepest branch starts
 * earliest. A leaf receives straight into rbuf. The root sends from sbuf
 * when it is rank 0, else from a copy rotated into relative order
 * (scratch slot 0); an inner rank holds its subtree in slot 0.
 * In place (the root's rbuf NULL) the root's block stays in sbuf.
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"

int braid_scatter_binomial(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank, root = a->root;
    size_t bytes = a->count * a->esize;
    if (0 == bytes) return BRAID_OK;
    braid_subtree_t t = braid_subtree_of(P, r, root);
    int v = t.v, n = t.n, low = t.low, abs_up = t.parent;
    if (1 == n && v)   /* a leaf */
        return braid_recv(c, abs_up, (braid_step_t)braid_floor_log2(low), a->rbuf, bytes);
    const char *held;
    if (0 == v && 0 == root) {
        held = a->sbuf;
    } else {
        char *tmp = braid_scratch_get(a->scratch, 0, (size_t)n * bytes);
        if (NULL == tmp) return BRAID_ERR_NOMEM;
        if (0 == v)   /* relative block j is rank j + root's */
            for (int j = 0; j < P; j++)
                braid_copy(tmp + (size_t)j * bytes, (const char *)a->sbuf + (size_t)((j + root) % P) * bytes,
                       bytes);
        else {
            int rc = braid_recv(c, abs_up, (braid_step_t)braid_floor_log2(low), tmp, (size_t)n * bytes);
            if (BRAID_OK != rc) return rc;
        }
        held = tmp;
    }
    braid_req_t reqs[32];
    int nreq = 0, rc = BRAID_OK;
    /* the children v + 2^k, 2^k < n, the largest subtree first */
    int top = 1, k = 0;
    while (2 * top < n) {
        top <<= 1;
        k++;
    }
    for (int mask = top; mask >= 1 && BRAID_OK == rc; mask >>= 1, k--) {
        int child = v + mask, cnt = mask < P - child ? mask : P - child;
        if (mask >= n || child >= P) continue;
        rc = braid_isend(c, (child + root) % P, (braid_step_t)k, held + (size_t)mask * bytes,
                         (size_t)cnt * bytes, &reqs[nreq++]);
    }
    if (NULL != a->rbuf && BRAID_OK == rc) braid_copy(a->rbuf, held, bytes);
    int wrc = braid_waitall(c, nreq, reqs);
    return BRAID_OK != rc ? rc : wrc;
}

/* L alpha + (P-1) S beta at the root */
double braid_cost_scatter_binomial(int P, double S)
{
    return braid_cost_L(P) * BRAID_COST_ALPHA + (P - 1) * S * BRAID_COST_BETA;
}
