/*
 * gather shm: the blocks through the node's shared-memory segment
 *
 *   up to a slot (cells):  steps: 1   bytes: each rank copies S in, the
 *                          root copies (P - 1) S out
 *   above a slot (single copy, where the node has a reader):
 *                          steps: 1   bytes: the root reads (P - 1) S
 *                          straight from the others' send buffers
 * (two ranks far apart: single copy above the single-copy threshold too,
 * braid_shm_cells)
 *
 * Cells: every rank writes its block into its slot and is done; the root
 * waits for all and copies the slots into rbuf. Nobody waits for the
 * root: the cells' rotation keeps a slot until the root has read it.
 * Single copy: every rank publishes its send buffer's address; the root
 * reads each block into rbuf, starting with the rank after it so that
 * the readers of several gathers in flight do not queue on one rank, and
 * the others return once the root is done (their buffers may change after
 * that). In place the root's block is already in rbuf.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

static int gather_direct(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, size_t bytes)
{
    int P = c->size, me = c->rank, root = a->root;
    uint64_t seq = braid_shm_begin(s);
    const void *pub = NULL;
    if (me != root) pub = braid_shm_expose(s, a->sbuf, bytes, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    int rc = me != root && NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    char *out = a->rbuf;
    if (me == root) {
        braid_shm_wait_all(s, seq);
        for (int i = 1; i < P && BRAID_OK == rc; i++) {
            int q = braid_ring_after(root, i, P);
            rc = s->read(s->read_arg, q, out + (size_t)q * bytes, braid_shm_addr(s, seq, q), bytes);
        }
    }
    braid_shm_done(s, seq);
    /* the root's own block after the others are released: they wait for
     * the reads alone */
    if (me == root && NULL != a->sbuf) braid_copy(out + (size_t)root * bytes, a->sbuf, bytes);
    if (me != root) braid_shm_wait_done(s, seq, root);
    return rc;
}

int braid_gather_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, me = c->rank, root = a->root;
    size_t bytes = a->count * a->esize;
    /* the cells wherever they carry the block (two copies at cache speed
     * against a system call per block; braid_shm_cells), single copy above */
    braid_shm_t *s = braid_shm_cells(c, bytes);
    if (NULL == s && NULL != (s = braid_shm_direct(c, bytes))) return gather_direct(c, a, s, bytes);
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
