/*
 * gather shm: the blocks through the node's shared-memory segment
 *
 *   up to a slot (cells):  steps: 1   bytes: each rank copies S in, the
 *                          root copies (P - 1) S out
 *   above a slot (single copy, where the node has a reader and writer):
 *                          steps: 1   bytes: each other rank writes its S
 *                          straight into the root's rbuf while the root
 *                          copies its own (P = 2: the root reads S / 3 of
 *                          the other's block, which writes 2 S / 3); where
 *                          the root's rbuf cannot take writes the root
 *                          reads (P - 1) S itself
 *
 * Cells: every rank writes its block into its slot and is done; the root
 * waits for all and copies the slots into rbuf. Nobody waits for the
 * root: the cells' rotation keeps a slot until the root has read it.
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

int braid_gather_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, me = c->rank, root = a->root;
    size_t bytes = a->count * a->esize;
    /* the cells wherever they carry the block (two copies at cache speed
     * against a system call per block), single copy above */
    braid_shm_t *s = braid_shm_of(c, bytes);
    if (NULL == s && NULL != (s = braid_shm_direct(c, bytes)))
        return me == root ? direct_root(c, a, s, bytes) : direct_other(c, a, s, bytes);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    const void *in = NULL != a->sbuf ? a->sbuf : (const char *)a->rbuf + (size_t)root * bytes;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, bytes);
    if (me == root) {
        braid_shm_wait_all(s, seq);
        char *out = a->rbuf;
        for (int q = 0; q < P; q++)
            if (q != root) braid_copy(out + (size_t)q * bytes, braid_shm_slot(s, seq, q), bytes);
        if (NULL != a->sbuf) braid_copy(out + (size_t)root * bytes, a->sbuf, bytes);
    }
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_gather_shm)
