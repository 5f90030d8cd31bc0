/*
 * barrier all_to_all (Gloo barrier_all_to_all)
 *
 *   steps: 1            messages sent per rank: P-1 (zero bytes each)
 *
 * Every rank posts a receive from, and sends a notification to, every other
 * rank, then waits for all of them.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"

#include <stdlib.h>

#define BARRIER_STACK_PEERS 64

int braid_barrier_all_to_all(braid_comm_t *c, const braid_coll_args_t *a)
{
    (void)a;
    int P = c->size, n = 2 * (P - 1);
    if (P < 2) return BRAID_OK;
    braid_req_t stack_reqs[2 * BARRIER_STACK_PEERS];
    braid_req_t *reqs = stack_reqs;
    if (P > BARRIER_STACK_PEERS) {
        reqs = calloc((size_t)n, sizeof(*reqs));
        if (NULL == reqs) return BRAID_ERR_NOMEM;
    }
    int rc = BRAID_OK, k = 0;
    for (int i = 1; i < P && BRAID_OK == rc; i++) {
        int peer = (c->rank + P - i) % P;
        reqs[k] = NULL;
        rc = braid_irecv(c, peer, 0, NULL, 0, &reqs[k++]);
    }
    for (int i = 1; i < P && BRAID_OK == rc; i++) {
        int peer = (c->rank + i) % P;
        reqs[k] = NULL;
        rc = braid_isend(c, peer, 0, NULL, 0, &reqs[k++]);
    }
    int wrc = braid_waitall(c, k, reqs);
    if (reqs != stack_reqs) free(reqs);
    return BRAID_OK != rc ? rc : wrc;
}

/* alpha + (P-2) o */
double braid_cost_barrier_all_to_all(int P, double S)
{
    return BRAID_COST_ALPHA + (P - 2) * BRAID_COST_O;
}
