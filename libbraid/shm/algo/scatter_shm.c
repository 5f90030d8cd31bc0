/*
 * scatter shm: the blocks through the node's shared-memory segment
 *
 *   the others' P - 1 blocks within a slot (cells):  steps: 1   bytes:
 *                                        the root copies (P - 1) S in,
 *                                        each other rank S out
 *   above a slot (single copy):          steps: 1   bytes: each rank
 *                                        reads its S straight from the
 *                                        root's send buffer (P = 2 with
 *                                        a writer: 2 S / 3, the root
 *                                        writes S / 3 into its rbuf)
 *
 * Cells: the root writes the other ranks' blocks into its slot, in rank
 * order without its own (which it copies straight into rbuf), and is
 * done; every other rank waits for the root and copies its block out.
 * The root waits for nobody: the cells' rotation keeps its slot until all
 * have read it. Single copy: the root publishes its send buffer's
 * address, every rank reads its own block from it, and the root returns
 * once all are done (its buffer may change after that). At P = 2 the
 * root's core would idle once its own block is copied (a local copy,
 * several times faster here than one between processes): the other rank
 * offers its rbuf and the root writes the last third of its block there
 * (braid_shm_pair_*), so both cores finish together; where the rbuf
 * cannot take writes the other reads it all. The segment must
 * hold the P - 1 blocks in a slot for the cells, and the single-copy
 * threshold applies to them: the dispatch's fit_shm asks the same of the
 * segment. In place (the root's rbuf NULL) the root's block stays in
 * sbuf.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

/* Two ranks with a writer (braid_shm_pairs) share the other rank's block
 * (braid_shm_pair_*): it reads two thirds, the root, which also copies
 * its own block, writes the rest (thirds measured, docs/BENCHMARKS.md). */
static size_t reader_part(size_t bytes) { return braid_shm_pair_split(bytes, 2, 3); }

static int direct_root(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, size_t bytes)
{
    int P = c->size, root = a->root;
    uint64_t seq = braid_shm_begin(s);
    const unsigned char *pub = braid_shm_expose(s, a->sbuf, (size_t)P * bytes, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    if (NULL != a->rbuf) braid_copy(a->rbuf, (const char *)a->sbuf + (size_t)root * bytes, bytes);
    const unsigned char *theirs = NULL == pub ? NULL : pub + (size_t)(1 - root) * bytes; /* P = 2 */
    rc = braid_shm_give(s, seq, theirs, reader_part(bytes), bytes, rc);
    braid_shm_done(s, seq);
    /* the caller may change sbuf once the call returns */
    braid_shm_wait_all_done(s, seq);
    return rc;
}

int braid_scatter_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, me = c->rank, root = a->root;
    size_t bytes = a->count * a->esize, others = (size_t)(P - 1) * bytes;
    /* the cells wherever they carry the others' blocks, single copy above */
    braid_shm_t *s = braid_shm_of(c, others);
    if (NULL == s && NULL != (s = braid_shm_direct(c, others))) {
        if (me == root) return direct_root(c, a, s, bytes);
        return braid_shm_take_call(s, root, (uint64_t)me * bytes, a->rbuf, reader_part(bytes), bytes);
    }
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    uint64_t seq = braid_shm_begin(s);
    if (me == root) {
        const unsigned char *in = a->sbuf;
        unsigned char *slot = braid_shm_slot(s, seq, root);
        size_t before = (size_t)root * bytes;
        braid_shm_claim(s, seq);
        braid_copy(slot, in, before);
        braid_copy(slot + before, in + before + bytes, others - before);
        braid_shm_arrive(s, seq);
        if (NULL != a->rbuf) braid_copy(a->rbuf, in + before, bytes);
    } else {
        braid_shm_wait_one(s, seq, root);
        braid_copy(a->rbuf, braid_shm_slot(s, seq, root) + (size_t)(me - (me > root)) * bytes, bytes);
    }
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_scatter_shm)
