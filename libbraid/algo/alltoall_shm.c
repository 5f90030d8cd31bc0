/*
 * alltoall shm: the blocks through the node's shared-memory segment
 *
 *   all P blocks within a slot (cells):  steps: 1   bytes: each rank copies
 *                                        P S in and (P - 1) S out
 *   above (single copy):                 steps: 2   bytes: each rank reads
 *                                        (P - 1) S straight from the
 *                                        others' send buffers
 * (S = one block.)
 *
 * Cells: every rank writes its P blocks into its slot; rank r then copies
 * block r of every other rank's slot into its receive buffer. In place the
 * slot holds the copy of the input that the receive buffer loses.
 * Single copy: every rank publishes its send buffer's address and reads
 * its own block from each of the others, starting with the rank after its
 * own so that P readers do not all queue on rank 0, and returns only when
 * every rank is done reading (its buffer may change after that). In place
 * the send buffer is the receive buffer this rank overwrites while the
 * others read it, so a copy in scratch (slot 0) is published instead.
 * The segment must hold P blocks per rank in a slot for the cells, and the
 * single-copy threshold applies to P blocks: the dispatch's fit_shm asks
 * the same of the segment, so a call that fits neither gets a message
 * algorithm.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

static int alltoall_direct(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s,
                           size_t bytes, const unsigned char *in)
{
    int P = c->size, me = c->rank;
    unsigned char *out = a->rbuf;
    if (NULL == a->sbuf) {
        unsigned char *copy = braid_scratch_get(a->scratch, 0, (size_t)P * bytes);
        if (NULL != copy) memcpy(copy, in, (size_t)P * bytes);
        in = copy;   /* NULL: published anyway, the readers fail */
    }
    uint64_t seq = braid_shm_begin(s);
    const void *pub = NULL == in ? NULL : braid_shm_expose(s, in, (size_t)P * bytes, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    braid_shm_wait_all(s, seq);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    for (int i = 1; i < P && BRAID_OK == rc; i++) {
        int r = (me + i) % P;
        rc = s->read(s->read_arg, r, out + (size_t)r * bytes,
                     braid_shm_addr(s, seq, r) + (uint64_t)me * bytes, bytes);
    }
    if (NULL != in && in + (size_t)me * bytes != out + (size_t)me * bytes)
        memcpy(out + (size_t)me * bytes, in + (size_t)me * bytes, bytes);
    braid_shm_done(s, seq);
    braid_shm_wait_all_done(s, seq);
    return rc;
}

int braid_alltoall_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, me = c->rank;
    size_t bytes = a->count * a->esize, all = (size_t)P * bytes;
    unsigned char *out = a->rbuf;
    const unsigned char *in = NULL != a->sbuf ? a->sbuf : out;
    braid_shm_t *s = braid_shm_direct(c, all);
    if (NULL != s) return alltoall_direct(c, a, s, bytes, in);
    s = braid_shm_of(c, all);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, all);
    braid_shm_wait_all(s, seq);
    for (int r = 0; r < P; r++)
        if (r != me) memcpy(out + (size_t)r * bytes, braid_shm_slot(s, seq, r) + (size_t)me * bytes, bytes);
    if (in != out) memcpy(out + (size_t)me * bytes, in + (size_t)me * bytes, bytes);
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_alltoall_shm)
