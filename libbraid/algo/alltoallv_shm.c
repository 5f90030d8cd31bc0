/*
 * alltoallv shm: the blocks through the node's shared-memory segment,
 * each rank's through the cells when they fit its slot, else read
 * straight from its send buffer (single copy, where the node has a
 * reader); pairwise messages when neither way is open to some rank
 *
 *   cells:        steps: 1   bytes: each rank copies its blocks in (with
 *                 a table of P offsets) and the blocks for it out
 *   single copy:  steps: 1   bytes: each reader reads its block from the
 *                 owner's buffer; the owner waits until all have read
 *
 * A rank knows only its own blocks' sizes, so the way is chosen per owner
 * and published in the call: every rank writes into its slot its way
 * (cells, single copy, or none) and a table with, for each other rank,
 * the block's offset in the slot or its address in the owner's memory,
 * then its blocks for the others when they go through the cells, and
 * arrives. Single copy is for owners sending the others more than 8 KiB:
 * between a slot and that, no way, and the call goes pairwise. Once all
 * have arrived every rank sees every owner's way: it copies or reads the
 * block for it from each owner; an owner that published addresses waits
 * for every reader before returning (its buffer may change after that).
 * If some rank had no way (too large for its slot, no reader), every rank,
 * having seen the same ways, runs alltoallv_pairwise instead. In place
 * (sbuf NULL) the input is rbuf in the receive layout: it is in the slot
 * before any rank writes its rbuf, and single copy publishes a copy
 * (scratch slot 0) since rbuf changes while the others read. a->count is
 * unused (0): the dispatch's fit_shm asks the segment only for its
 * existence.
 */
#include <stdint.h>
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

enum { WAY_NONE = 0, WAY_CELLS = 1, WAY_DIRECT = 2 };

/* Single copy only for an owner sending the others more than this: below
 * it (and above a slot) the pairwise messages were faster at P = 2
 * (docs/BENCHMARKS.md, alltoallv). */
#define DIRECT_MIN ((size_t)8 << 10)

/* The input blocks: sbuf in the send layout, or (in place) rbuf in the
 * receive layout. */
typedef struct input {
    const char *buf;
    const size_t *counts, *displs;
} input_t;

/* Write this rank's way, table and (cells) blocks into its slot. */
static uint64_t fill_slot(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s,
                          unsigned char *slot, const input_t *in)
{
    int P = c->size;
    size_t es = a->esize, head = (size_t)(P + 1) * sizeof(uint64_t), others = 0, span = 0;
    for (int q = 0; q < P; q++) {
        if (q != c->rank) others += in->counts[q] * es;
        if (in->counts[q] && in->displs[q] + in->counts[q] > span) span = in->displs[q] + in->counts[q];
    }
    uint64_t way = NULL != braid_shm_of(c, head + others) ? WAY_CELLS
                   : others > DIRECT_MIN && NULL != braid_shm_direct(c, SIZE_MAX) ? WAY_DIRECT
                                                                                 : WAY_NONE;
    const char *base = in->buf;
    if (WAY_DIRECT == way && NULL == a->sbuf) {
        /* in place: rbuf changes while the others read it */
        char *copy = braid_scratch_get(a->scratch, 0, span * es);
        if (NULL != copy) memcpy(copy, base, span * es);
        base = copy;
    }
    if (WAY_DIRECT == way && NULL != base) base = braid_shm_expose(s, base, span * es, a->scratch);
    if (WAY_DIRECT == way && NULL == base && span) way = WAY_NONE;
    memcpy(slot, &way, sizeof way);
    uint64_t off = head;
    for (int q = 0; q < P && WAY_NONE != way; q++) {
        if (q == c->rank) continue;   /* its own block it copies itself */
        uint64_t at = WAY_CELLS == way ? off : (uint64_t)(uintptr_t)(base + in->displs[q] * es);
        memcpy(slot + (size_t)(q + 1) * sizeof(uint64_t), &at, sizeof at);
        if (WAY_CELLS == way) memcpy(slot + off, in->buf + in->displs[q] * es, in->counts[q] * es);
        off += WAY_CELLS == way ? in->counts[q] * es : 0;
    }
    return way;
}

static uint64_t way_of(const braid_shm_t *s, uint64_t seq, int q)
{
    uint64_t w;
    memcpy(&w, braid_shm_slot(s, seq, q), sizeof w);
    return w;
}

int braid_alltoallv_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, me = c->rank;
    size_t es = a->esize;
    braid_shm_t *s = braid_shm_of(c, (size_t)(P + 1) * sizeof(uint64_t));
    if (NULL == s) return braid_shm_of(c, 0) ? braid_alltoallv_pairwise(c, a) : BRAID_ERR_UNSUPPORTED;
    input_t in = { NULL != a->sbuf ? a->sbuf : a->rbuf, NULL != a->sbuf ? a->scounts : a->rcounts,
                   NULL != a->sbuf ? a->sdispls : a->displs };
    uint64_t seq = braid_shm_begin(s);
    braid_shm_claim(s, seq);
    uint64_t mine = fill_slot(c, a, s, braid_shm_slot(s, seq, me), &in);
    braid_shm_arrive(s, seq);
    braid_shm_wait_all(s, seq);
    bool all = true, direct = false;
    for (int q = 0; q < P; q++) {
        all = all && WAY_NONE != way_of(s, seq, q);
        direct = direct || WAY_DIRECT == way_of(s, seq, q);
    }
    int rc = BRAID_OK;
    /* its own block: in place it is where it belongs already */
    if (all && NULL != a->sbuf && a->rcounts[me])
        memcpy((char *)a->rbuf + a->displs[me] * es, in.buf + in.displs[me] * es, a->rcounts[me] * es);
    for (int i = 1; i < P && all && BRAID_OK == rc; i++) {
        int q = (me + i) % P;
        const unsigned char *theirs = braid_shm_slot(s, seq, q);
        uint64_t at;
        size_t n = a->rcounts[q] * es;
        char *dst = (char *)a->rbuf + a->displs[q] * es;
        memcpy(&at, theirs + (size_t)(me + 1) * sizeof(uint64_t), sizeof at);
        if (0 == n) continue;
        if (WAY_CELLS == way_of(s, seq, q)) memcpy(dst, theirs + at, n);
        else rc = s->read(s->read_arg, q, dst, at, n);
    }
    braid_shm_done(s, seq);
    if (direct && WAY_DIRECT == mine) braid_shm_wait_all_done(s, seq);
    if (!all) return braid_alltoallv_pairwise(c, a);
    return rc;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_alltoallv_shm)
