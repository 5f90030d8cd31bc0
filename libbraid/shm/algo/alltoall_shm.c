/*
 * alltoall shm: the blocks through the node's shared-memory segment
 *
 *   cells (k of them, 1..ncells):  steps: 1   bytes: each rank copies
 *                                  P S in and (P - 1) S out
 *   single copy:                   steps: 2   bytes: each rank reads
 *                                  (P - 1) S straight from the others'
 *                                  send buffers, one system call each
 *   single copy in place:          steps: P + 1 (pairwise)   bytes: each
 *                                  rank reads (P - 1) S and copies them
 *                                  from one block of scratch into place
 * (S = one block.)
 *
 * Cells: every rank writes its P blocks into its slot; rank r then copies
 * block r of every other rank's slot into its receive buffer. Blocks that
 * do not fit one slot span k consecutive cells (braid_shm_span), each cell
 * carrying the same piece of every block: a rank fills all k of its slots
 * before it reads any, so the call still synchronises once, and with the
 * default 8 KiB slots and 4 cells P blocks of up to 32 KiB / P go this
 * way. In place the slots hold the copy of the input that the receive
 * buffer loses.
 * Single copy, where the node has a reader, for blocks the cells cannot
 * hold (while they hold them the cells' two copies cost less than a
 * system call per block, also where two ranks pass lines slowly: at 8
 * KiB blocks on 2 ranks 1.0-1.7 us against 4.3-4.7 single copy, fresh
 * data or not, docs/SHM.md): every rank publishes
 * its send buffer's address and reads its own block from each of the
 * others, starting with the rank after its own so that P readers do not
 * all queue on rank 0, and returns only when every rank is done reading
 * (its buffer may change after that). In place
 * the send buffer is the receive buffer this rank overwrites while the
 * others read it: the ranks swap blocks pairwise (braid_shm_swap), each
 * overwriting its block for q once q has read it, through one block of
 * scratch (slot 0) rather than a published copy of all P.
 * The dispatch's fit_shm asks the same of the segment (braid_shm_spanned,
 * or a reader), so a call that fits neither way gets a message algorithm.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

/* In place by single copy (braid_shm_swap): rank q's block for this rank
 * lies at block `me` of the buffer q published. */
typedef struct a2a_swap {
    braid_shm_t *s;
    uint64_t seq;
    unsigned char *rbuf;
    size_t bytes;
} a2a_swap_t;

static char *swap_dst(void *arg, int q, size_t *bytes)
{
    a2a_swap_t *w = arg;
    *bytes = w->bytes;
    return (char *)w->rbuf + (size_t)q * w->bytes;
}

static int swap_take(void *arg, int q, char *into, size_t bytes)
{
    a2a_swap_t *w = arg;
    return w->s->read(w->s->read_arg, q, into,
                      braid_shm_addr(w->s, w->seq, q) + (uint64_t)w->s->rank * bytes, bytes);
}

static int alltoall_direct(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s,
                           size_t bytes, const unsigned char *in)
{
    int P = c->size, me = c->rank;
    unsigned char *out = a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    const void *pub = braid_shm_expose(s, in, (size_t)P * bytes, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    braid_shm_wait_all(s, seq);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    if (NULL == a->sbuf) {
        /* in place: every rank swaps (its own block is where it belongs) */
        a2a_swap_t arg = { s, seq, out, bytes };
        braid_shm_swap_t w = { swap_dst, swap_take, &arg, pub == in };
        int src = braid_shm_swap(s, seq, &w, braid_scratch_get(a->scratch, 0, bytes));
        braid_shm_done(s, seq);
        /* a published copy: read in the readers' own rounds, not waited for */
        if (!w.live) braid_shm_wait_all_done(s, seq);
        return BRAID_OK != rc ? rc : src;
    }
    for (int i = 1; i < P && BRAID_OK == rc; i++) {
        int r = braid_ring_after(me, i, P);
        rc = s->read(s->read_arg, r, out + (size_t)r * bytes,
                     braid_shm_addr(s, seq, r) + (uint64_t)me * bytes, bytes);
    }
    braid_copy(out + (size_t)me * bytes, in + (size_t)me * bytes, bytes);
    braid_shm_done(s, seq);
    braid_shm_wait_all_done(s, seq);
    return rc;
}

/* Through k cells, pieces of `piece` bytes of each block per cell: this
 * rank's block of q's slot, piece by piece, to block q of out */
typedef struct a2a_out {
    unsigned char *out;
    size_t bytes;
    int me;
} a2a_out_t;

static void take_piece(void *arg, int q, const unsigned char *slot, size_t off, size_t n)
{
    const a2a_out_t *o = arg;
    braid_copy(o->out + (size_t)q * o->bytes + off, slot + (size_t)o->me * n, n);
}

static int alltoall_cells(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, size_t bytes,
                          const unsigned char *in, int k, size_t piece)
{
    int P = c->size, me = c->rank;
    unsigned char *out = a->rbuf;
    uint64_t first = s->seq + 1;
    for (int j = 0; j < k; j++) {
        uint64_t seq = braid_shm_begin(s);
        size_t off, n = braid_shm_piece(bytes, piece, j, &off);
        braid_shm_claim(s, seq);
        unsigned char *slot = braid_shm_slot(s, seq, me);
        for (int r = 0; r < P; r++) braid_copy(slot + (size_t)r * n, in + (size_t)r * bytes + off, n);
        braid_shm_arrive(s, seq);
    }
    a2a_out_t o = { out, bytes, me };
    braid_shm_read_span(s, first, k, bytes, piece, me, take_piece, &o);
    if (in != out) braid_copy(out + (size_t)me * bytes, in + (size_t)me * bytes, bytes);
    braid_shm_done(s, first + (uint64_t)k - 1);
    return BRAID_OK;
}

int braid_alltoall_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size;
    size_t bytes = a->count * a->esize, piece;
    const unsigned char *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    braid_shm_t *s = c->shm;
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    /* the cells wherever they carry the blocks, single copy above */
    int k = braid_shm_span(s, P, bytes, &piece);
    if (NULL != s->read && 0 == k)
        return alltoall_direct(c, a, s, bytes, in);
    if (0 == k) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    if (k > 1) return alltoall_cells(c, a, s, bytes, in, k, piece);
    /* one cell: the P blocks as one contribution */
    int me = c->rank;
    unsigned char *out = a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, (size_t)P * bytes);
    braid_shm_wait_all(s, seq);
    for (int r = 0; r < P; r++)
        if (r != me) braid_copy(out + (size_t)r * bytes, braid_shm_slot(s, seq, r) + (size_t)me * bytes, bytes);
    if (in != out) braid_copy(out + (size_t)me * bytes, in + (size_t)me * bytes, bytes);
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_alltoall_shm)
