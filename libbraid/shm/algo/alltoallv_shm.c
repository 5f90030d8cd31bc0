/*
 * alltoallv shm: the blocks through the node's shared-memory segment,
 * each rank's through the cells when they fit its slots, else read
 * straight from its send buffer (single copy, where the node has a
 * reader); pairwise messages when neither way is open to some rank
 *
 *   cells:        steps: 1   bytes: each rank copies its blocks in (with
 *                 a table of P - 1 entries) and the blocks for it out
 *   single copy:  steps: 1   bytes: each reader reads its block from the
 *                 owner's buffer; the owner waits until all have read
 *                 (in place: P pairwise rounds, each block also copied
 *                 from scratch into place)
 *
 * A rank knows only its own blocks' sizes, so the way is chosen per owner
 * and published in the call: every rank writes its way word (cells,
 * single copy, or none, and the cells it spans) and a table with an entry
 * for each other rank in rank order - through the cells, the rest of its
 * first slot is then one fixed place per other rank, and a block that
 * fits its place lies there (the entry unused), a larger one in the
 * stream after the last place taken, at the offset its entry gives (4 bytes);
 * by single copy, the entry is the block's address in the owner's memory
 * (8 bytes). The stream runs on from the owner's slot of the call's first
 * cell into its slots of the next ones, up to ncells (with the default
 * 8 KiB slots and 4 cells, 32 KiB). An owner arrives at each cell it
 * wrote; every rank waits for all on the first, reads every owner's word
 * there, and waits for an owner's later cells one by one before it copies
 * out of them (arriving at the first says nothing of the others). The
 * ranks agree on how many call numbers the call took - the most any owner
 * spanned - without a word more, since every word is in the first cell.
 * Single copy is for owners sending the others more than 8 KiB beyond the
 * cells: below that, no way, and the call goes pairwise. An owner that
 * published addresses waits for every reader before returning (its buffer
 * may change after that). If some rank had no way (too large for its
 * cells, no reader), every rank, having seen the same ways, runs
 * alltoallv_pairwise instead. In place (sbuf NULL) the input is rbuf in
 * the receive layout: it is in the cells before any rank writes its rbuf;
 * an owner read by single copy straight from its rbuf (WAY_LIVE) makes
 * every rank swap blocks pairwise (braid_shm_swap: each overwrites its
 * block for q once q has read it, through scratch of its largest block),
 * the owners of cells among them. a->count is unused (0): the dispatch's
 * fit_shm asks the segment only for its existence; the word and a table
 * of P - 1 addresses must fit one slot (else every rank runs pairwise).
 * With 4-byte offsets (a stream is at most ncells slots) a place at P = 2
 * starts 12 bytes into the slot, and a block of up to 36 bytes shares the
 * first cache line with the stamp.
 */
#include <stdint.h>
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

enum { WAY_NONE = 0, WAY_CELLS = 1, WAY_DIRECT = 2 };
/* the way word: the way in its low bits, WAY_LIVE with WAY_DIRECT in place
 * when the others read the owner's receive buffer itself, the cells the
 * owner's stream spans (WAY_CELLS) above */
#define WAY_MASK 0x7fu
#define WAY_LIVE 0x80u
#define WAY_SPAN_SHIFT 8

/* An owner's table: one entry for each other rank q, in rank order (the
 * owner's own has none): the offset of q's block in the owner's stream
 * (cells) or its address (single copy), after the way word */
#define WORD_BYTES sizeof(uint64_t)
static size_t table_entry(int owner, int q) { return (size_t)(q - (q > owner)); }
static size_t head_bytes(uint64_t way, int P)
{
    return WORD_BYTES + (size_t)(P - 1) * (WAY_CELLS == way ? sizeof(uint32_t) : sizeof(uint64_t));
}

/* Through the cells, the rest of the first slot after the table is one
 * place per other rank, in table order, `place` bytes each: a block that
 * fits its place lies there, one that does not lies in the stream after
 * the last place a block took, at the offset its table entry gives. The reader
 * knows its block's size (its receive count), so it knows which: for a
 * block in its place it reads no table. That matters more than the
 * instructions: an address read from the table is known only once the
 * owner's first line has come over, and the block's lines are asked for
 * after it - a second line transfer, which a fixed address spares (the
 * far state: 0.56 against 0.45 us, docs/BENCHMARKS.md). */
static size_t place_bytes(const braid_shm_t *s, int P)
{
    size_t room = s->slot_bytes - head_bytes(WAY_CELLS, P);
    return P <= 2 ? room : room / (size_t)(P - 1);
}

/* One call's view of the first cell: where each owner's slot starts (the
 * slots of one cell lie `stride` apart, so one address and a multiply
 * find any), and the table's and places' sizes, worked out once for the
 * P words and P blocks the call reads rather than once for each. */
typedef struct view {
    braid_shm_t *s;
    uint64_t first;
    unsigned char *slot0;   /* rank 0's slot of cell first */
    size_t head, place;     /* head_bytes(WAY_CELLS, P), place_bytes */
} view_t;

static view_t view_of(braid_shm_t *s, uint64_t first)
{
    view_t v = { s, first, braid_shm_slot(s, first, 0), head_bytes(WAY_CELLS, s->size),
                 place_bytes(s, s->size) };
    return v;
}

static unsigned char *slot_of(const view_t *v, int q) { return v->slot0 + (size_t)q * v->s->stride; }

/* Single copy only for an owner sending the others more than this: below
 * it (and beyond the cells) the pairwise messages were faster at P = 2
 * (docs/BENCHMARKS.md, alltoallv). */
#define DIRECT_MIN ((size_t)8 << 10)

/* The input blocks: sbuf in the send layout, or (in place) rbuf in the
 * receive layout. */
typedef struct input {
    const char *buf;
    const size_t *counts, *displs;
} input_t;

/* An owner's stream - its way word, its table and (cells) its blocks -
 * runs on from its slot of cell `first` into its slots of the next cells;
 * these copy bytes in and out of it at a stream offset (`slot`: the
 * owner's slot of the first cell, where all but the largest calls stay). */
typedef struct stream {
    const braid_shm_t *s;
    uint64_t first;
    int owner;
    unsigned char *slot;
} stream_t;

static stream_t stream_of(const view_t *v, int owner)
{
    stream_t t = { v->s, v->first, owner, slot_of(v, owner) };
    return t;
}

/* Where stream offset `at` lies; *m of the n bytes from there run on in
 * that slot. */
static unsigned char *stream_at(const stream_t *t, size_t at, size_t n, size_t *m)
{
    size_t slot = t->s->slot_bytes, o = at % slot;
    if (at + n <= slot) {
        *m = n;
        return t->slot + at;
    }
    *m = slot - o < n ? slot - o : n;
    return braid_shm_slot(t->s, t->first + at / slot, t->owner) + o;
}

static void stream_put(const stream_t *t, size_t at, const char *src, size_t n)
{
    /* a small call's bytes all lie in the first slot */
    if (at + n <= t->s->slot_bytes) {
        braid_copy(t->slot + at, src, n);
        return;
    }
    while (n) {
        size_t m;
        unsigned char *p = stream_at(t, at, n, &m);
        braid_copy(p, src, m);
        at += m, src += m, n -= m;
    }
}

static void stream_get(const stream_t *t, size_t at, char *dst, size_t n)
{
    if (at + n <= t->s->slot_bytes) {
        braid_copy(dst, t->slot + at, n);
        return;
    }
    while (n) {
        size_t m;
        const unsigned char *p = stream_at(t, at, n, &m);
        braid_copy(dst, p, m);
        at += m, dst += m, n -= m;
    }
}

/* This rank's way: through k cells (*k set), single copy, or none. */
static uint64_t choose_way(braid_comm_t *c, braid_shm_t *s, size_t stream, size_t others, int *k)
{
    size_t piece;
    *k = stream <= s->slot_bytes ? 1 : braid_shm_span(s, 1, stream, &piece);
    if (0 != *k) return WAY_CELLS;
    return others > DIRECT_MIN && NULL != braid_shm_direct(c, SIZE_MAX) ? WAY_DIRECT : WAY_NONE;
}

/* The stream's bytes: the places up to the last one used, then the
 * blocks that do not fit their places (from *over_at on) */
static size_t stream_bytes(const view_t *v, int P, int me, const input_t *in, size_t es,
                           size_t *others, size_t *over_at)
{
    size_t place = v->place, head = v->head, over = 0;
    size_t end = head, last = head;
    *others = 0;
    for (int q = 0; q < P; q++) {
        size_t n = in->counts[q] * es;
        if (q == me || 0 == n) continue;
        *others += n;
        if (n > place) {
            over += n;
            continue;
        }
        size_t at = head + table_entry(me, q) * place;
        end = at + place;
        last = at + n;
    }
    *over_at = end;
    return over ? end + over : last;
}

/* Every block of this rank's into its place, in one pass over the counts
 * (the first cell claimed): true, or false at the first block that does
 * not fit (the stream's way is then worked out from all of them). A
 * small call's every block fits: it is done without stream_bytes' pass. */
static bool fill_places(const view_t *v, int P, int me, const input_t *in, size_t es)
{
    unsigned char *at = slot_of(v, me) + v->head;
    for (int q = 0; q < P; q++) {
        if (q == me) continue;   /* its own block it copies itself */
        size_t n = in->counts[q] * es;
        if (n > v->place) return false;
        braid_copy(at, in->buf + in->displs[q] * es, n);
        at += v->place;
    }
    return true;
}

/* Claim the cells of this rank's stream, write its way, table and (cells)
 * blocks into them, and arrive at each, the first last; its way word */
static uint64_t fill_stream(braid_comm_t *c, const braid_coll_args_t *a, const view_t *v,
                            const input_t *in)
{
    braid_shm_t *s = v->s;
    uint64_t first = v->first;
    int P = c->size, me = c->rank, k = 1;
    size_t es = a->esize, others, over;
    braid_shm_claim(s, first);
    if (fill_places(v, P, me, in, es)) {
        uint64_t word = WAY_CELLS | (uint64_t)1 << WAY_SPAN_SHIFT;
        memcpy(slot_of(v, me), &word, sizeof word);
        braid_shm_arrive(s, first);
        return word;
    }
    size_t stream = stream_bytes(v, P, me, in, es, &others, &over);
    uint64_t way = choose_way(c, s, stream, others, &k);
    const char *base = in->buf;
    if (WAY_DIRECT == way) {
        size_t span = 0;   /* the elements the others' blocks reach */
        for (int q = 0; q < P; q++)
            if (in->counts[q] && in->displs[q] + in->counts[q] > span) span = in->displs[q] + in->counts[q];
        base = braid_shm_expose(s, base, span * es, a->scratch);
        if (NULL == base && span) way = WAY_NONE;
    }
    /* in place, the others read rbuf itself: the call swaps (swap_in_place) */
    if (WAY_DIRECT == way && base == in->buf && NULL == a->sbuf) way |= WAY_LIVE;
    if (WAY_CELLS != way) k = 1;
    for (int j = 1; j < k; j++) braid_shm_claim(s, first + (uint64_t)j);
    uint64_t word = way | (uint64_t)k << WAY_SPAN_SHIFT;
    stream_t mine = stream_of(v, me);
    /* the word and the table lie in the first slot (the caller checked
     * that they fit one) */
    memcpy(mine.slot, &word, sizeof word);
    unsigned char *entry = mine.slot + WORD_BYTES;
    size_t place = v->place, at = v->head;
    for (int q = 0; q < P && WAY_NONE != way; q++) {
        if (q == me) continue;   /* its own block it copies itself */
        size_t n = in->counts[q] * es;
        const char *block = in->buf + in->displs[q] * es;
        if (WAY_CELLS != way) {
            uint64_t addr = (uint64_t)(uintptr_t)(base + in->displs[q] * es);
            memcpy(entry, &addr, sizeof addr);
            entry += sizeof addr;
            continue;
        }
        if (n <= place) {
            braid_copy(mine.slot + at, block, n);
        } else {
            uint32_t off = (uint32_t)over;
            memcpy(entry, &off, sizeof off);
            stream_put(&mine, over, block, n);
            over += n;
        }
        entry += sizeof(uint32_t);
        at += place;
    }
    for (int j = k - 1; j >= 0; j--) braid_shm_arrive(s, first + (uint64_t)j);
    return word;
}

static uint64_t word_of(const view_t *v, int q)
{
    uint64_t w;
    memcpy(&w, slot_of(v, q), sizeof w);
    return w;
}

/* q's block for this rank, out of q's stream (cells) or q's memory */
static int take_block(const view_t *v, int q, char *into, size_t n)
{
    braid_shm_t *s = v->s;
    unsigned char *slot = slot_of(v, q);
    const unsigned char *entry = slot + WORD_BYTES;
    uint64_t w;
    memcpy(&w, slot, sizeof w);
    size_t e = table_entry(q, s->rank);
    if (WAY_CELLS != (w & WAY_MASK)) {
        uint64_t at;
        memcpy(&at, entry + e * sizeof at, sizeof at);
        return s->read(s->read_arg, q, into, at, n);
    }
    if (n <= v->place) {
        braid_copy(into, slot + v->head + e * v->place, n);
        return BRAID_OK;
    }
    stream_t theirs = stream_of(v, q);
    uint32_t at;
    memcpy(&at, entry + e * sizeof at, sizeof at);
    /* the owner's later cells, one by one (arriving at the first says
     * nothing of them) */
    for (int j = 1; j < (int)(w >> WAY_SPAN_SHIFT); j++) braid_shm_wait_one(s, v->first + (uint64_t)j, q);
    stream_get(&theirs, at, into, n);
    return BRAID_OK;
}

/* In place with single copy: braid_shm_swap, each rank's blocks at its
 * receive displacements */
typedef struct v_swap {
    const view_t *v;
    const braid_coll_args_t *a;
} v_swap_t;

static char *swap_dst(void *arg, int q, size_t *bytes)
{
    const v_swap_t *w = arg;
    *bytes = w->a->rcounts[q] * w->a->esize;
    return (char *)w->a->rbuf + w->a->displs[q] * w->a->esize;
}

static int swap_take(void *arg, int q, char *into, size_t n)
{
    const v_swap_t *w = arg;
    return take_block(w->v, q, into, n);
}

static int swap_in_place(const view_t *v, const braid_coll_args_t *a, uint64_t mine)
{
    braid_shm_t *s = v->s;
    size_t most = 0;
    for (int q = 0; q < s->size; q++)
        if (q != s->rank && a->rcounts[q] * a->esize > most) most = a->rcounts[q] * a->esize;
    v_swap_t arg = { v, a };
    braid_shm_swap_t w = { swap_dst, swap_take, &arg, 0 != (mine & WAY_LIVE) };
    return braid_shm_swap(s, s->seq, &w, braid_scratch_get(a->scratch, 0, most));
}

int braid_alltoallv_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, me = c->rank;
    size_t es = a->esize;
    braid_shm_t *s = braid_shm_of(c, head_bytes(WAY_DIRECT, P));
    if (NULL == s) return braid_shm_of(c, 0) ? braid_alltoallv_pairwise(c, a) : BRAID_ERR_UNSUPPORTED;
    input_t in = { NULL != a->sbuf ? a->sbuf : a->rbuf, NULL != a->sbuf ? a->scounts : a->rcounts,
                   NULL != a->sbuf ? a->sdispls : a->displs };
    uint64_t first = braid_shm_begin(s);
    view_t v = view_of(s, first);
    uint64_t mine = fill_stream(c, a, &v, &in);
    braid_shm_wait_all(s, first);
    /* the words' bits ORed (a way is one bit, WAY_LIVE another), and
     * whether every owner has a way: no branch per owner */
    uint64_t any = mine, most = mine >> WAY_SPAN_SHIFT;
    bool all = WAY_NONE != (mine & WAY_MASK);
    for (int q = 0; q < P; q++) {
        /* not its own slot's word: the others' reads may have taken that
         * line away, and reading it back costs a miss (the far state's
         * quarter microsecond) */
        if (q == me) continue;
        uint64_t w = word_of(&v, q);
        any |= w;
        all &= WAY_NONE != (w & WAY_MASK);
        if (w >> WAY_SPAN_SHIFT > most) most = w >> WAY_SPAN_SHIFT;
    }
    bool direct = 0 != (any & WAY_DIRECT), live = 0 != (any & WAY_LIVE);
    int cells = (int)most;   /* the most any owner's stream spans: every rank numbers that many */
    s->seq = first + (uint64_t)cells - 1;
    int rc = BRAID_OK;
    if (all && live) {
        rc = swap_in_place(&v, a, mine);
        braid_shm_done(s, s->seq);
        /* a published copy: read in the readers' own rounds, not waited for */
        if (WAY_DIRECT == (mine & WAY_MASK) && 0 == (mine & WAY_LIVE)) braid_shm_wait_all_done(s, first);
        return rc;
    }
    /* its own block: in place it is where it belongs already */
    if (all && NULL != a->sbuf && a->rcounts[me])
        braid_copy((char *)a->rbuf + a->displs[me] * es, in.buf + in.displs[me] * es, a->rcounts[me] * es);
    for (int i = 1; i < P && all && BRAID_OK == rc; i++) {
        int q = braid_ring_after(me, i, P);
        size_t n = a->rcounts[q] * es;
        if (n) rc = take_block(&v, q, (char *)a->rbuf + a->displs[q] * es, n);
    }
    braid_shm_done(s, s->seq);
    if (direct && WAY_DIRECT == (mine & WAY_MASK)) braid_shm_wait_all_done(s, first);
    if (!all) return braid_alltoallv_pairwise(c, a);
    return rc;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_alltoallv_shm)
