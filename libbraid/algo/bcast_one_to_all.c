/*
 * bcast one_to_all (Gloo broadcast_one_to_all)
 *
 *   steps: 1            bytes sent: root (P-1)*S, others 0
 *
 * The root posts one send of the whole buffer to every other rank at once;
 * every other rank receives it.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"

#include <stdlib.h>

#define BCAST_STACK_PEERS 64

int braid_bcast_one_to_all(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size;
    size_t bytes = a->count * a->esize;
    if (P < 2) return BRAID_OK;
    if (c->rank != a->root)
        return braid_recv(c, a->root, 0, a->rbuf, bytes);

    /* no allocation per call where the table picks it (P = 4, 8) */
    braid_req_t stack_reqs[BCAST_STACK_PEERS];
    braid_req_t *reqs = stack_reqs;
    if (P > BCAST_STACK_PEERS) {
        reqs = calloc((size_t)P, sizeof(*reqs));
        if (NULL == reqs) return BRAID_ERR_NOMEM;
    }
    int rc = BRAID_OK, k = 0;
    for (int i = 1; i < P && BRAID_OK == rc; i++) {
        int peer = (a->root + i) % P;
        rc = braid_isend(c, peer, 0, a->rbuf, bytes, &reqs[k++]);
    }
    int wrc = braid_waitall(c, k, reqs);
    if (reqs != stack_reqs) free(reqs);
    return BRAID_OK != rc ? rc : wrc;
}

/* not considered by the model: = binomial at P = 2, worse beyond */
double braid_cost_bcast_one_to_all(int P, double S)
{
    (void)P;
    (void)S;
    return BRAID_COST_NONE;
}
