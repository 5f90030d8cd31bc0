/*
 * scatter shm: the blocks through the node's shared-memory segment
 *
 *   the others' P - 1 blocks within k slots (cells, k = 1..ncells):
 *                                        steps: 1   bytes: the root
 *                                        copies (P - 1) S in, each other
 *                                        rank S out
 *   above (single copy):                 steps: 1   bytes: each rank
 *                                        reads its S straight from the
 *                                        root's send buffer (P = 2 with
 *                                        a writer: 2 S / 3, the root
 *                                        writes S / 3 into its rbuf)
 *
 * Cells: the root writes the other ranks' blocks into its slot, in rank
 * order without its own (which it copies straight into rbuf), and is
 * done; every other rank waits for the root and copies its block out.
 * The root waits for nobody: the cells' rotation keeps its slot until all
 * have read it. Blocks the slot cannot hold span k consecutive cells
 * (braid_shm_rooted_span), each carrying the same piece of every block,
 * as long as k is at most the cells' number (8 KiB slots and 4 cells:
 * blocks of up to 32 KiB at P = 2): two copies at cache speed cost less
 * than a system call. Single copy: the root publishes its send buffer's
 * address, every rank reads its own block from it, and the root returns
 * once all are done (its buffer may change after that). At P = 2 the
 * root's core would idle once its own block is copied (a local copy,
 * several times faster here than one between processes): the other rank
 * offers its rbuf and the root writes the last third of its block there
 * (braid_shm_pair_*), so both cores finish together; where the rbuf
 * cannot take writes the other reads it all. The dispatch's fit_shm
 * asks the same of the segment. In place (the root's rbuf NULL) the root's block stays in
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

/* Through k cells, `piece` bytes of each of the others' blocks in each:
 * the root writes them, rank order without its own, every other rank
 * copies its pieces out */
static int scatter_cells(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, size_t bytes,
                         int k, size_t piece)
{
    int P = c->size, me = c->rank, root = a->root;
    uint64_t first = s->seq + 1;
    for (int j = 0; j < k; j++) {
        uint64_t seq = braid_shm_begin(s);
        size_t off, n = braid_shm_piece(bytes, piece, j, &off);
        if (me == root) {
            const unsigned char *in = a->sbuf;
            unsigned char *slot = braid_shm_slot(s, seq, root);
            braid_shm_claim(s, seq);
            for (int q = 0, cell = 0; q < P; q++)
                if (q != root) braid_copy(slot + (size_t)cell++ * n, in + (size_t)q * bytes + off, n);
            braid_shm_arrive(s, seq);
        } else {
            braid_shm_wait_one(s, seq, root);
            braid_copy((unsigned char *)a->rbuf + off,
                       braid_shm_slot(s, seq, root) + (size_t)(me - (me > root)) * n, n);
        }
    }
    if (me == root && NULL != a->rbuf)
        braid_copy(a->rbuf, (const char *)a->sbuf + (size_t)root * bytes, bytes);
    braid_shm_done(s, first + (uint64_t)k - 1);
    return BRAID_OK;
}

int braid_scatter_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, me = c->rank, root = a->root;
    size_t bytes = a->count * a->esize, piece;
    braid_shm_t *s = c->shm;
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    /* the cells wherever they carry the others' blocks, single copy above */
    int k = braid_shm_rooted_span(s, P, bytes, false, &piece);
    if (0 == k && NULL != braid_shm_direct(c, (size_t)(P - 1) * bytes)) {
        if (me == root) return direct_root(c, a, s, bytes);
        return braid_shm_take_call(s, root, (uint64_t)me * bytes, a->rbuf, reader_part(bytes), bytes);
    }
    if (0 == k) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    return scatter_cells(c, a, s, bytes, k, piece);
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_scatter_shm)
