/*
 * gatherv shm: each rank's block through the node's shared-memory
 * segment, by the way its size allows
 *
 *   cells (a block within a slot):  the rank copies its block into its
 *                slot and returns; the root copies it out
 *   single copy (above a slot, where the node has a reader): the rank
 *                publishes its send buffer's address; the root reads the
 *                block straight from it, and the rank returns once the
 *                root is done
 *   message (above a slot, no reader): the rank sends its block to the
 *                root, as gatherv_linear does
 * (two ranks far apart: single copy above the single-copy threshold too,
 * braid_shm_cells)
 *
 *   steps: 1   bytes: each rank its block once (cells: twice, at cache
 *   speed); messages: only the blocks that neither way carries
 *
 * A rank knows only its own count and the root knows them all, so the way
 * is a function of a block's size alone - the segment's slot and reader
 * are the same on every rank - and the root infers each rank's way
 * from its count without a word exchanged. Blocks of different sizes go
 * different ways in one call. The root posts the receives of the message
 * blocks first, then takes the others in rank order from the one after
 * it (the readers of several gathers in flight then start on different
 * ranks). Nobody waits for the root but the single-copy owners: the
 * cells' rotation keeps a slot until the root has read it. Empty blocks
 * go no way at all. In place (the root's sbuf NULL) its block is already
 * in rbuf.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_engines.h"
#include "braid_registry.h"
#include "braid_shm.h"

enum { WAY_CELLS, WAY_DIRECT, WAY_MESSAGE };

/* the way of a block of `bytes`: the same answer on the sender and the root */
static int way_of(const braid_comm_t *c, size_t bytes)
{
    if (NULL != braid_shm_cells(c, bytes)) return WAY_CELLS;
    return NULL != braid_shm_direct(c, bytes) ? WAY_DIRECT : WAY_MESSAGE;
}

static int send_block(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s)
{
    size_t bytes = a->count * a->esize;
    int way = way_of(c, bytes), rc = BRAID_OK;
    uint64_t seq = braid_shm_begin(s);
    if (0 == bytes) {
        braid_shm_done(s, seq);
        return BRAID_OK;
    }
    if (WAY_CELLS == way) braid_shm_publish(s, seq, a->sbuf, bytes);
    if (WAY_DIRECT == way) {
        const void *pub = braid_shm_expose(s, a->sbuf, bytes, a->scratch);
        braid_shm_publish_addr(s, seq, pub);
        if (NULL == pub) rc = BRAID_ERR_NOMEM;
    }
    braid_shm_done(s, seq);
    /* the root reads this buffer until it is done; the caller may reuse it after */
    if (WAY_DIRECT == way) braid_shm_wait_done(s, seq, a->root);
    if (WAY_MESSAGE == way) rc = braid_send(c, a->root, 0, a->sbuf, bytes);
    return rc;
}

static int receive_blocks(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s)
{
    int P = c->size, root = a->root;
    size_t es = a->esize;
    char *out = a->rbuf;
    braid_req_t *reqs = braid_scratch_get(a->scratch, BRAID_SLOT_TABLE, (size_t)P * sizeof *reqs);
    uint64_t seq = braid_shm_begin(s);
    int nreq = 0, rc = NULL == reqs ? BRAID_ERR_NOMEM : BRAID_OK;
    for (int q = 0; q < P && BRAID_OK == rc; q++) {
        size_t n = a->rcounts[q] * es;
        if (q != root && n && WAY_MESSAGE == way_of(c, n))
            rc = braid_irecv(c, q, 0, out + a->displs[q] * es, n, &reqs[nreq++]);
    }
    for (int i = 1; i < P && BRAID_OK == rc; i++) {
        int q = braid_ring_after(root, i, P);
        size_t n = a->rcounts[q] * es;
        int way = way_of(c, n);
        if (0 == n || WAY_MESSAGE == way) continue;
        braid_shm_wait_one(s, seq, q);
        char *dst = out + a->displs[q] * es;
        if (WAY_CELLS == way) braid_copy(dst, braid_shm_slot(s, seq, q), n);
        else rc = s->read(s->read_arg, q, dst, braid_shm_addr(s, seq, q), n);
    }
    braid_shm_done(s, seq);
    /* the root's own block after the others are released */
    if (NULL != a->sbuf && a->rcounts[root])
        braid_copy(out + a->displs[root] * es, a->sbuf, a->rcounts[root] * es);
    int wrc = braid_waitall(c, nreq, reqs);
    return BRAID_OK != rc ? rc : wrc;
}

int braid_gatherv_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    braid_shm_t *s = braid_shm_of(c, 0);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    return c->rank == a->root ? receive_blocks(c, a, s) : send_block(c, a, s);
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_gatherv_shm)
