/*
 * barrier shm: every rank raises its flag and waits for everyone's
 *
 *   steps: 1   flags written per rank: 2 (arrive, done)   bytes: 0
 *
 * The node's segment (libbraid/shm/braid_shm.h) replaces messages: a rank
 * arrives at call s by storing s in its own cache line and leaves when it
 * has seen every other rank's line reach s. Flat, not a tree: on one node
 * the P - 1 loads overlap in the core's memory pipeline, where a tree
 * would add a full cache-line hand-over per level. Sequence numbers never
 * reset, so the next barrier needs no second phase to clear the flags.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

int braid_barrier_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    (void)a;
    braid_shm_t *s = braid_shm_of(c, 0);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_arrive(s, seq);
    braid_shm_wait_all(s, seq);
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_barrier_shm)
