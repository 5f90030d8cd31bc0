/*
 * gather shm: the blocks through the node's shared-memory segment
 *
 *   cells (k of them, 1..ncells, while the root's (P - 1) S fit k slots):
 *                          steps: 1   bytes: each rank copies S in, the
 *                          root copies (P - 1) S out
 *   above (single copy, where the node has a reader and writer):
 *                          steps: 1   bytes: each other rank writes its S
 *                          straight into the root's rbuf while the root
 *                          copies its own (P = 2: the root reads S / 3 of
 *                          the other's block, which writes 2 S / 3); where
 *                          the root's rbuf cannot take writes the root
 *                          reads (P - 1) S itself
 *
 * Cells: every rank writes its block into its slot and is done; the root
 * waits for all and copies the slots into rbuf. Nobody waits for the
 * root: the cells' rotation keeps a slot until the root has read it. A
 * block above a slot spans k consecutive cells (braid_shm_span), a piece
 * in each, as long as the (P - 1) blocks the root copies out fit k slots:
 * two copies at cache speed cost less than a system call per block (8
 * KiB slots and 4 cells: blocks of up to 32 KiB at P = 2), while beyond
 * that the root's copies, one after another on its core, would cost more
 * than the others' single-copy writes, one per core.
 * Single copy: the root publishes its rbuf, every other rank its send
 * buffer. With the root's rbuf offered, the P - 1 copies run at once, one
 * per core, in parallel with the root's own block (read by the root they
 * would run one after another on its core). At P = 2 the root's core
 * would idle once its own block is copied (a local copy, several times
 * faster here than one between processes), so it also reads the first
 * third of the other's block (braid_shm_pair_*): both cores finish
 * together. A writer returns once its write is done (at P = 2 once the
 * root has read its part), the root once every write is. Without
 * (memory the writer cannot reach) the root reads each block, starting
 * with the rank after it so that the readers of several gathers in flight
 * do not queue on one rank, and the others return once it is done. In
 * place the root's block is already in rbuf.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

/* The root's part of each block (braid_shm_pair_*): at P = 2 a third
 * (the root also copies its own block; thirds measured, docs/
 * BENCHMARKS.md), else none - the writers copy everything, each on its
 * own core. The same on every rank. */
static size_t root_part(const braid_comm_t *c, size_t bytes)
{
    return 2 == c->size ? braid_shm_pair_split(bytes, 1, 3) : 0;
}

/* Single copy, the root: offers rbuf where the writers can reach it,
 * copies its own block, then takes every other block (its part read, the
 * rest written by the block's owner; everything read without an offer) */
static int direct_root(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, size_t bytes)
{
    int P = c->size, root = a->root, rc = BRAID_OK;
    char *out = a->rbuf;
    bool give = braid_shm_writable(s, out, (size_t)P * bytes);
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish_addr(s, seq, give ? out : NULL);
    /* without an offer the others wait for the reads alone: the root's
     * own block after they are released */
    if (give && NULL != a->sbuf) braid_copy(out + (size_t)root * bytes, a->sbuf, bytes);
    size_t m = root_part(c, bytes);
    for (int i = 1; i < P; i++) {
        int q = braid_ring_after(root, i, P);
        braid_shm_wait_one(s, seq, q);
        int rq = braid_shm_pair_read(s, seq, q, braid_shm_addr(s, seq, q), out + (size_t)q * bytes, m,
                                     bytes, give);
        if (BRAID_OK == rc) rc = rq;
    }
    braid_shm_done(s, seq);
    if (!give && NULL != a->sbuf) braid_copy(out + (size_t)root * bytes, a->sbuf, bytes);
    return rc;
}

/* Single copy, the others: publish the send buffer, write the part the
 * root offers room for, and return once nobody reads the buffer any more */
static int direct_other(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, size_t bytes)
{
    int root = a->root;
    uint64_t seq = braid_shm_begin(s);
    const void *pub = braid_shm_expose(s, a->sbuf, bytes, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    size_t m = root_part(c, bytes);
    braid_shm_wait_one(s, seq, root);
    uint64_t at = braid_shm_addr(s, seq, root);
    rc = braid_shm_pair_write(s, seq, root, at ? at + (uint64_t)c->rank * bytes : 0, pub, m, bytes, rc);
    braid_shm_done(s, seq);
    if (0 == at || m > 0) braid_shm_wait_done(s, seq, root);
    return rc;
}

/* Through k cells, `piece` bytes of each block in each: every rank writes
 * its pieces, the root copies the others' out, cell by cell */
typedef struct gather_out {
    unsigned char *out;
    size_t bytes;
} gather_out_t;

static void take_piece(void *arg, int q, const unsigned char *slot, size_t off, size_t n)
{
    const gather_out_t *o = arg;
    braid_copy(o->out + (size_t)q * o->bytes + off, slot, n);
}

static int gather_cells(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, size_t bytes,
                        int k, size_t piece)
{
    int root = a->root;
    const unsigned char *in =
        NULL != a->sbuf ? a->sbuf : (const unsigned char *)a->rbuf + (size_t)root * bytes;
    uint64_t first = s->seq + 1;
    for (int j = 0; j < k; j++) {
        uint64_t seq = braid_shm_begin(s);
        size_t off, n = braid_shm_piece(bytes, piece, j, &off);
        /* the root's own block goes straight to rbuf */
        braid_shm_claim(s, seq);
        if (c->rank != root) braid_copy(braid_shm_slot(s, seq, c->rank), in + off, n);
        braid_shm_arrive(s, seq);
    }
    if (c->rank == root) {
        gather_out_t o = { a->rbuf, bytes };
        braid_shm_read_span(s, first, k, bytes, piece, root, take_piece, &o);
        if (NULL != a->sbuf) braid_copy(o.out + (size_t)root * bytes, a->sbuf, bytes);
    }
    braid_shm_done(s, first + (uint64_t)k - 1);
    return BRAID_OK;
}

int braid_gather_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, me = c->rank;
    size_t bytes = a->count * a->esize, piece;
    braid_shm_t *s = c->shm;
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    /* the cells wherever they carry the blocks, single copy above */
    int k = braid_shm_rooted_span(s, P, bytes, true, &piece);
    if (0 == k && NULL != braid_shm_direct(c, bytes))
        return me == a->root ? direct_root(c, a, s, bytes) : direct_other(c, a, s, bytes);
    if (0 == k) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    return gather_cells(c, a, s, bytes, k, piece);
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_gather_shm)
