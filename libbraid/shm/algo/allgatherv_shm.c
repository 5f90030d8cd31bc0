/*
 * allgatherv shm: the blocks through the node's shared-memory segment
 *
 *   the largest block within a slot (cells):  steps: 1   bytes: each rank
 *                                             copies its block in and the
 *                                             others' out
 *   above a slot (single copy):               steps: 1   bytes: each rank
 *                                             reads the others' blocks
 *                                             straight from their buffers
 *
 * The same as allgather_shm with blocks of their own sizes and places:
 * every rank writes its block into its slot, waits for all, and copies
 * each other block to its displacement; single copy reads each block
 * from its owner's send buffer (the rank after its own first) and
 * returns when every rank is done reading its own. In place the block is
 * read from rbuf at the rank's displacement. a->count is the largest
 * block (what a slot must hold; the dispatch's fit_shm asks it).
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

static int allgatherv_direct(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s,
                             const char *mine)
{
    int P = c->size, me = c->rank;
    size_t es = a->esize;
    char *out = a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    const void *pub = braid_shm_expose(s, mine, a->rcounts[me] * es, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    braid_shm_wait_all(s, seq);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    for (int i = 1; i < P && BRAID_OK == rc; i++) {
        int q = braid_ring_after(me, i, P);
        if (a->rcounts[q])
            rc = s->read(s->read_arg, q, out + a->displs[q] * es, braid_shm_addr(s, seq, q),
                         a->rcounts[q] * es);
    }
    if (NULL != a->sbuf) braid_copy(out + a->displs[me] * es, a->sbuf, a->rcounts[me] * es);
    braid_shm_done(s, seq);
    braid_shm_wait_all_done(s, seq);
    return rc;
}

int braid_allgatherv_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, me = c->rank;
    size_t es = a->esize, largest = a->count * es;
    char *out = a->rbuf;
    const char *mine = NULL != a->sbuf ? a->sbuf : out + a->displs[me] * es;
    braid_shm_t *s = braid_shm_of(c, largest);
    if (NULL == s && NULL != (s = braid_shm_direct(c, largest)))
        return allgatherv_direct(c, a, s, mine);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == largest) return BRAID_OK;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, mine, a->rcounts[me] * es);
    braid_shm_wait_all(s, seq);
    for (int q = 0; q < P; q++)
        if (q != me) braid_copy(out + a->displs[q] * es, braid_shm_slot(s, seq, q), a->rcounts[q] * es);
    if (NULL != a->sbuf) braid_copy(out + a->displs[me] * es, a->sbuf, a->rcounts[me] * es);
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_allgatherv_shm)
