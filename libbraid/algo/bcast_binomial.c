/*
 * bcast binomial tree
 *
 *   steps: ceil(lg P)   bytes sent: up to ceil(lg P)*S (root), leaves 0
 *
 * Ranks are renumbered relative to the root (v = (r - root) mod P). Rank v
 * receives the whole buffer from v with its lowest set bit cleared, then
 * sends it to v + 2^k for every 2^k below that bit, largest subtree first.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"

int braid_bcast_binomial(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, root = a->root;
    int v = (c->rank - root + P) % P;
    size_t bytes = a->count * a->esize;
    int mask = 1;
    /* receive from the parent: clear the lowest set bit of v */
    while (mask < P) {
        if (v & mask) {
            int parent = ((v - mask) + root) % P;
            int rc = braid_recv(c, parent, 0, a->rbuf, bytes);
            if (BRAID_OK != rc) return rc;
            break;
        }
        mask <<= 1;
    }
    /* send to the children v + m for m below the bit we received on */
    braid_req_t reqs[32];
    int n = 0, rc = BRAID_OK;
    for (mask >>= 1; mask > 0 && BRAID_OK == rc; mask >>= 1) {
        if (v + mask < P) {
            int child = (v + mask + root) % P;
            reqs[n] = NULL;
            rc = braid_isend(c, child, 0, a->rbuf, bytes, &reqs[n++]);
        }
    }
    int wrc = braid_waitall(c, n, reqs);
    return BRAID_OK != rc ? rc : wrc;
}

/* L (alpha + S beta) */
double braid_cost_bcast_binomial(int P, double S)
{
    return braid_cost_L(P) * (BRAID_COST_ALPHA + S * BRAID_COST_BETA);
}
