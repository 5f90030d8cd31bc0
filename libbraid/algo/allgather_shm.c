/*
 * allgather shm: every rank publishes its block and copies all of them
 *
 *   steps: 1   bytes: each rank copies S in and P S out (S = one block)
 *
 * The blocks land in rank order in every rank's receive buffer straight
 * from the slots; in place, a rank's own block is already there.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

int braid_allgather_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    braid_shm_t *s = braid_shm_of(c, bytes);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    unsigned char *out = a->rbuf, *mine = out + (size_t)c->rank * bytes;
    const void *in = NULL != a->sbuf ? a->sbuf : mine;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, bytes);
    braid_shm_wait_all(s, seq);
    for (int r = 0; r < c->size; r++)
        if (r != c->rank) memcpy(out + (size_t)r * bytes, braid_shm_slot(s, seq, r), bytes);
    if (in != mine) memcpy(mine, in, bytes);
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_allgather_shm)
