/*
 * barrier dissemination (Hensgen, Finkel and Manber 1988)
 *
 *   steps: ceil(lg P)   messages sent per rank: ceil(lg P) (zero bytes)
 *
 * In round k rank r notifies (r + 2^k) mod P and waits for (r - 2^k) mod P.
 * After round k every rank has (transitively) heard from 2^(k+1) ranks.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"

int braid_barrier_dissemination(braid_comm_t *c, const braid_coll_args_t *a)
{
    (void)a;
    int P = c->size, r = c->rank;
    for (int k = 0, dist = 1; dist < P; k++, dist <<= 1) {
        int rc = braid_sendrecv(c, (r + dist) % P, (braid_step_t)k, NULL, 0,
                                (r - dist + P) % P, (braid_step_t)k, NULL, 0);
        if (BRAID_OK != rc) return rc;
    }
    return BRAID_OK;
}

/* L alpha */
double braid_cost_barrier_dissemination(int P, double S)
{
    return braid_cost_L(P) * BRAID_COST_ALPHA;
}
