/*
 * reduce shm: every rank's vector through the node's shared-memory segment,
 * reduced by the root
 *
 *   up to a slot (cells):  steps: 1   bytes: each rank copies S in; the
 *                          root reads P S
 *   above (single copy):   steps: 2   bytes: the root reads (P - 1) S
 *                          straight from the others' buffers
 *   reductions: (P - 1) S at the root
 *
 * Cells: only the root waits. The others leave once their slot is
 * published and may run up to ncells calls ahead (braid_shm_claim stops
 * them from overwriting a slot the root has not read), which is what makes
 * a loop of reduces cheap for them.
 *
 * Single copy: the others publish their buffers' addresses and wait until
 * the root is done reading them. The root works through the vectors a
 * chunk at a time (params.chunk_bytes, default 256 KiB: the accumulator and
 * one operand, 512 KiB, stay in a server core's L2) so each element is read
 * from a peer once and reduced while it is still in cache. Measured at P=2
 * (README): 64 KiB chunks lost 4-13% to tuned from 128 KiB to 1 MiB (one
 * process_vm_readv per chunk costs page pinning and a system call), 256 KiB
 * and 512 KiB were equal and 1 MiB lost 10% from 2 MiB up (out of cache).
 *
 * Both fold in rank order, out = v0 op (v1 op (... op v(P-1))), so
 * non-commutative ops get the order MPI wants.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

#define REDUCE_SHM_CHUNK ((size_t)256 << 10)

/* rank r's n bytes at byte offset off: this rank's straight from in,
 * another's read into tmp */
static int operand(braid_shm_t *s, uint64_t seq, int r, const unsigned char *in, size_t off,
                   size_t n, void *tmp, const void **src)
{
    if (r == s->rank) {
        *src = in + off;
        return BRAID_OK;
    }
    *src = tmp;
    return s->read(s->read_arg, r, tmp, braid_shm_addr(s, seq, r) + off, n);
}

/* The root's fold of one chunk: elements [first, first + n) */
static int fold_chunk(braid_shm_t *s, uint64_t seq, const braid_coll_args_t *a,
                      const unsigned char *in, size_t first, size_t n, void *acc, void *tmp)
{
    size_t off = first * a->esize, b = n * a->esize;
    const void *src;
    int rc = operand(s, seq, s->size - 1, in, off, b, acc, &src);
    if (BRAID_OK != rc) return rc;
    if (src != acc) memcpy(acc, src, b);
    for (int r = s->size - 2; r >= 0; r--) {
        rc = operand(s, seq, r, in, off, b, tmp, &src);
        if (BRAID_OK != rc) return rc;
        a->op.fn(src, acc, n, a->op.arg);
    }
    if (acc != (unsigned char *)a->rbuf + off) memcpy((unsigned char *)a->rbuf + off, acc, b);
    return BRAID_OK;
}

static int reduce_root(braid_shm_t *s, uint64_t seq, const braid_coll_args_t *a,
                       const unsigned char *in)
{
    size_t chunk_bytes = a->params.chunk_bytes ? a->params.chunk_bytes : REDUCE_SHM_CHUNK;
    size_t chunk = chunk_bytes / a->esize ? chunk_bytes / a->esize : 1;
    if (chunk > a->count) chunk = a->count;
    /* in place the input is the output: accumulate apart, or the root's
     * own operand would be overwritten before it is used */
    bool in_place = in == (const unsigned char *)a->rbuf;
    void *tmp = braid_scratch_get(a->scratch, 0, chunk * a->esize);
    void *acc = in_place ? braid_scratch_get(a->scratch, 1, chunk * a->esize) : NULL;
    if (NULL == tmp || (in_place && NULL == acc)) return BRAID_ERR_NOMEM;
    int rc = BRAID_OK;
    for (size_t first = 0; first < a->count && BRAID_OK == rc; first += chunk) {
        size_t n = a->count - first < chunk ? a->count - first : chunk;
        void *out = in_place ? acc : (unsigned char *)a->rbuf + first * a->esize;
        rc = fold_chunk(s, seq, a, in, first, n, out, tmp);
    }
    return rc;
}

static int reduce_direct(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s,
                         const unsigned char *in)
{
    uint64_t seq = braid_shm_begin(s);
    /* the root reads its own input in place; the others expose theirs */
    const void *pub = c->rank == a->root ? in : braid_shm_expose(s, in, a->count * a->esize,
                                                                  a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    if (c->rank == a->root) {
        braid_shm_wait_all(s, seq);
        rc = reduce_root(s, seq, a, in);
        braid_shm_done(s, seq);
    } else {
        braid_shm_done(s, seq);
        braid_shm_wait_done(s, seq, a->root);
    }
    return rc;
}

int braid_reduce_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    const void *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    braid_shm_t *s = braid_shm_direct(c, bytes);
    if (NULL != s) {
        return reduce_direct(c, a, s, in);
    }
    s = braid_shm_of(c, bytes);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, bytes);
    if (c->rank == a->root) {
        braid_shm_wait_all(s, seq);
        braid_shm_fold(s, seq, 0, a->count, a->esize, &a->op, a->rbuf);
    }
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_reduce_shm)
