/*
 * gatherv shm: each rank's block through the node's shared-memory
 * segment, by the way its size allows
 *
 *   cells (a block within a slot):  the rank copies its block into its
 *                slot and returns; the root copies it out
 *   single copy (above a slot, where the node has a reader and writer):
 *                the rank writes its block straight into the root's rbuf
 *                at the place the root's slot names, in parallel with the
 *                others and with the root's own copies, and returns (at
 *                P = 2 the root reads the block's first third meanwhile,
 *                as gather's does, and the rank returns once it has); where
 *                the root's rbuf cannot take writes (or its slot cannot
 *                hold P places) the root reads the block from the rank's
 *                send buffer, and the rank returns once the root is done
 *   message (above a slot, no reader): the rank sends its block to the
 *                root, as gatherv_linear does
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
 * ranks). The root publishes its table of places first and copies its
 * own block while the writers write; it is done once every writer is.
 * Nobody waits for the root but the single-copy owners it reads: the
 * cells' rotation keeps a slot until the root has read it. Empty blocks
 * go no way at all. In place (the root's sbuf NULL) its block is already
 * in rbuf.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"
#include "braid_shm.h"

enum { WAY_CELLS, WAY_DIRECT, WAY_MESSAGE };

/* the way of a block of `bytes`: the same answer on the sender and the root */
static int way_of(const braid_comm_t *c, size_t bytes)
{
    if (NULL != braid_shm_of(c, bytes)) return WAY_CELLS;
    return NULL != braid_shm_direct(c, bytes) ? WAY_DIRECT : WAY_MESSAGE;
}

/* The root's slot holds, one word per rank, where a single-copy rank
 * writes its block (0: the root reads it) - where the slot has room for
 * P words, which every rank knows alike. */
static bool table_fits(const braid_shm_t *s) { return (size_t)s->size * sizeof(uint64_t) <= s->slot_bytes; }

static uint64_t table_entry(const braid_shm_t *s, uint64_t seq, int root, int q)
{
    uint64_t w;
    memcpy(&w, braid_shm_slot(s, seq, root) + (size_t)q * sizeof w, sizeof w);
    return w;
}

/* The root's part of a single-copy block it was offered room for: at
 * P = 2 a third, read while the owner writes the rest (as gather_shm.c
 * does), else none. The same on both ranks. */
static size_t root_part(const braid_comm_t *c, size_t bytes)
{
    return 2 == c->size ? braid_shm_pair_split(bytes, 1, 3) : 0;
}

/* A single-copy block: publish the send buffer; write it where the root's
 * table says, or wait until the root has read it. */
static int send_direct(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, uint64_t seq, size_t bytes)
{
    const void *pub = braid_shm_expose(s, a->sbuf, bytes, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    uint64_t dst = 0;
    if (table_fits(s)) {
        braid_shm_wait_one(s, seq, a->root);
        dst = table_entry(s, seq, a->root, c->rank);
    }
    if (0 == dst) {
        braid_shm_done(s, seq);
        /* the root reads this buffer until it is done; the caller may reuse it after */
        braid_shm_wait_done(s, seq, a->root);
        return rc;
    }
    size_t m = root_part(c, bytes);
    rc = braid_shm_pair_write(s, seq, a->root, dst, pub, m, bytes, rc);
    braid_shm_done(s, seq);
    /* at P = 2 the root reads the first part of the buffer */
    if (m > 0) braid_shm_wait_done(s, seq, a->root);
    return rc;
}

static int send_block(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s)
{
    size_t bytes = a->count * a->esize;
    int way = way_of(c, bytes);
    uint64_t seq = braid_shm_begin(s);
    if (0 == bytes) {
        braid_shm_done(s, seq);
        return BRAID_OK;
    }
    if (WAY_DIRECT == way) return send_direct(c, a, s, seq, bytes);
    if (WAY_CELLS == way) braid_shm_publish(s, seq, a->sbuf, bytes);
    braid_shm_done(s, seq);
    return WAY_MESSAGE == way ? braid_send(c, a->root, 0, a->sbuf, bytes) : BRAID_OK;
}

/* whether rank q's block goes single copy */
static bool direct_block(const braid_comm_t *c, const braid_coll_args_t *a, int q)
{
    size_t n = a->rcounts[q] * a->esize;
    return q != a->root && n && WAY_DIRECT == way_of(c, n);
}

/* The root's table (where the table fits and a block goes single copy:
 * only then does a rank look for it): each single-copy block's place in
 * rbuf where the writers can reach rbuf, else zeros. Whether it offered
 * rbuf. */
static bool offer_table(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, uint64_t seq)
{
    int P = c->size;
    size_t es = a->esize, end = 0;
    for (int q = 0; q < P; q++)
        if (direct_block(c, a, q) && (a->displs[q] + a->rcounts[q]) * es > end)
            end = (a->displs[q] + a->rcounts[q]) * es;
    if (!table_fits(s) || 0 == end) return false;
    bool give = braid_shm_writable(s, a->rbuf, end);
    braid_shm_claim(s, seq);
    unsigned char *w = braid_shm_slot(s, seq, c->rank);
    for (int q = 0; q < P; q++) {
        uint64_t at = give && direct_block(c, a, q)
                          ? (uint64_t)(uintptr_t)((char *)a->rbuf + a->displs[q] * es) : 0;
        memcpy(w + (size_t)q * sizeof at, &at, sizeof at);
    }
    braid_shm_arrive(s, seq);
    return give;
}

static int receive_blocks(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s)
{
    int P = c->size, root = a->root;
    size_t es = a->esize;
    char *out = a->rbuf;
    braid_req_t *reqs = braid_scratch_get(a->scratch, BRAID_SLOT_TABLE, (size_t)P * sizeof *reqs);
    uint64_t seq = braid_shm_begin(s);
    bool give = offer_table(c, a, s, seq);
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
        if (0 == n || WAY_MESSAGE == way || (give && WAY_DIRECT == way)) continue;
        braid_shm_wait_one(s, seq, q);
        char *dst = out + a->displs[q] * es;
        if (WAY_CELLS == way) braid_copy(dst, braid_shm_slot(s, seq, q), n);
        else rc = s->read(s->read_arg, q, dst, braid_shm_addr(s, seq, q), n);
    }
    /* the root's own block while the writers write, or after the readers'
     * owners are released */
    if (!give) braid_shm_done(s, seq);
    if (NULL != a->sbuf && a->rcounts[root])
        braid_copy(out + a->displs[root] * es, a->sbuf, a->rcounts[root] * es);
    if (give) {
        /* each writer's block (at P = 2 the root reads a part), its
         * status word before this rank is done */
        for (int q = 0; q < P; q++) {
            if (!direct_block(c, a, q)) continue;
            size_t n = a->rcounts[q] * es;
            braid_shm_wait_one(s, seq, q);
            int rq = braid_shm_pair_read(s, seq, q, braid_shm_addr(s, seq, q), out + a->displs[q] * es,
                                         root_part(c, n), n, true);
            if (BRAID_OK == rc) rc = rq;
        }
        braid_shm_done(s, seq);
    }
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
