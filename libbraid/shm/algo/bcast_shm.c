/*
 * bcast shm: through the node's shared-memory segment
 *
 *   up to a slot (cells):  steps: 1   bytes: the root copies S in, every
 *                          other rank S out
 *   above (single copy):   steps: 2   bytes: every other rank reads S
 *                          straight from the root's buffer; two ranks
 *                          with a writer: the reader reads S / 2 while
 *                          the root writes S / 2 into the reader's rbuf
 *
 * Cells: the root does not wait for the readers: it returns as soon as its
 * slot is published, and only a root ncells calls ahead of a slow reader
 * waits (braid_shm_claim), so back-to-back broadcasts pipeline through the
 * cells. Single copy: the root publishes its buffer's address and waits
 * until every reader is done with it (the user may write the buffer once
 * the call returns); one copy per reader against two through the cells and
 * two (plus a rendezvous) through the message transport. At P = 2 the
 * root's core would only wait, so it copies half: the reader publishes its
 * rbuf and reads the first half, the root writes the second (s->write)
 * and both cores copy at once; a reader whose rbuf the writer cannot
 * reach offers none and reads everything. Above a slot
 * without a single-copy reader the call is not taken (UNSUPPORTED on every
 * rank; the dispatch picks a message algorithm there).
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

/* Two ranks with a writer (braid_shm_pairs) share the copy
 * (braid_shm_pair_*): the reader reads the first half, the root writes
 * the second. */
static size_t reader_part(size_t bytes) { return braid_shm_pair_split(bytes, 1, 2); }

static int direct_root(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, size_t bytes)
{
    uint64_t seq = braid_shm_begin(s);
    const void *pub = braid_shm_expose(s, a->rbuf, bytes, a->scratch);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    braid_shm_publish_addr(s, seq, pub);
    rc = braid_shm_give(s, seq, pub, reader_part(bytes), bytes, rc);
    braid_shm_done(s, seq);
    /* the user may write the buffer once the call returns */
    braid_shm_wait_all_done(s, seq);
    return rc;
}

int braid_bcast_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    braid_shm_t *s = braid_shm_direct(c, bytes);
    if (NULL != s) {
        if (1 == c->size) return BRAID_OK;
        return c->rank == a->root ? direct_root(c, a, s, bytes)
                                   : braid_shm_take_call(s, a->root, 0, a->rbuf, reader_part(bytes), bytes);
    }
    s = braid_shm_of(c, bytes);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes || 1 == c->size) return BRAID_OK;
    uint64_t seq = braid_shm_begin(s);
    if (c->rank == a->root) {
        braid_shm_publish(s, seq, a->rbuf, bytes);
    } else {
        braid_shm_wait_one(s, seq, a->root);
        braid_copy(a->rbuf, braid_shm_slot(s, seq, a->root), bytes);
    }
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_bcast_shm)
