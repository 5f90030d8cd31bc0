/*
 * bcast shm: the root writes its slot once, every other rank copies it out
 *
 *   steps: 1   bytes: the root copies S in, every other rank S out
 *
 * The root does not wait for the readers: it returns as soon as its slot
 * is published, and only a root ncells calls ahead of a slow reader waits
 * (braid_shm_claim), so back-to-back broadcasts pipeline through the
 * cells. A message larger than a slot is not taken (UNSUPPORTED on every
 * rank; the table does not pick shm there).
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

int braid_bcast_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    braid_shm_t *s = braid_shm_of(c, bytes);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes || 1 == c->size) return BRAID_OK;
    uint64_t seq = braid_shm_begin(s);
    if (c->rank == a->root) {
        braid_shm_publish(s, seq, a->rbuf, bytes);
    } else {
        braid_shm_wait_one(s, seq, a->root);
        memcpy(a->rbuf, braid_shm_slot(s, seq, a->root), bytes);
    }
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_bcast_shm)
