/*
 * allgather shm: every rank's block through the node's shared-memory segment
 *
 *   up to a slot (cells):  steps: 1   bytes: each rank copies S in and
 *                          (P - 1) S out (S = one block)
 *   above (single copy):   steps: 2   bytes: each rank reads (P - 1) S
 *                          straight from the others' buffers
 *
 * The blocks land in rank order in every rank's receive buffer; in place,
 * a rank's own block is already there (and the others read it from there:
 * the blocks are disjoint, so a rank writing the others' blocks never
 * touches the one being read). Single copy: each rank starts with the block
 * after its own so that P readers do not all queue on rank 0, and returns
 * only when every rank is done reading its block.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

static int allgather_direct(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s,
                            size_t bytes, const void *in, unsigned char *mine)
{
    unsigned char *out = a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    const void *pub = braid_shm_expose(s, in, bytes, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    braid_shm_wait_all(s, seq);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    for (int i = 1; i < c->size && BRAID_OK == rc; i++) {
        int r = braid_ring_after(c->rank, i, c->size);
        rc = s->read(s->read_arg, r, out + (size_t)r * bytes, braid_shm_addr(s, seq, r), bytes);
    }
    if (in != mine) braid_copy(mine, in, bytes);
    braid_shm_done(s, seq);
    braid_shm_wait_all_done(s, seq);
    return rc;
}

int braid_allgather_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    unsigned char *out = a->rbuf, *mine = out + (size_t)c->rank * bytes;
    const void *in = NULL != a->sbuf ? a->sbuf : mine;
    /* the cells wherever they carry the block, single copy above */
    braid_shm_t *s = braid_shm_of(c, bytes);
    if (NULL == s && NULL != (s = braid_shm_direct(c, bytes)))
        return allgather_direct(c, a, s, bytes, in, mine);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, bytes);
    braid_shm_wait_all(s, seq);
    for (int r = 0; r < c->size; r++)
        if (r != c->rank) braid_copy(out + (size_t)r * bytes, braid_shm_slot(s, seq, r), bytes);
    if (in != mine) braid_copy(mine, in, bytes);
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_allgather_shm)
