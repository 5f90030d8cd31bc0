/*
 * barrier all_to_one (Gloo barrier_all_to_one)
 *
 *   steps: 2            messages sent: 1 per non-root rank, P-1 by the root
 *
 * Non-root ranks notify rank 0 and wait for its release; rank 0 waits for
 * P-1 notifications, then releases everyone.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"

enum { STEP_ARRIVE = 0, STEP_RELEASE = 1 };

int braid_barrier_all_to_one(braid_comm_t *c, const braid_coll_args_t *a)
{
    (void)a;
    int P = c->size, rc;
    if (P < 2) return BRAID_OK;
    if (0 != c->rank) {
        rc = braid_send(c, 0, STEP_ARRIVE, NULL, 0);
        if (BRAID_OK != rc) return rc;
        return braid_recv(c, 0, STEP_RELEASE, NULL, 0);
    }
    for (int peer = 1; peer < P; peer++) {
        rc = braid_recv(c, peer, STEP_ARRIVE, NULL, 0);
        if (BRAID_OK != rc) return rc;
    }
    for (int peer = 1; peer < P; peer++) {
        rc = braid_send(c, peer, STEP_RELEASE, NULL, 0);
        if (BRAID_OK != rc) return rc;
    }
    return BRAID_OK;
}

/* not considered by the model: twice all_to_all's cost at the root */
double braid_cost_barrier_all_to_one(int P, double S)
{
    (void)P;
    (void)S;
    return BRAID_COST_NONE;
}
