/*
 * scatterv shm: the root's blocks through the node's shared-memory
 * segment, by the way their total allows
 *
 *   cells (the others' blocks within the root's slot, each in a fixed
 *                place when every one fits its place, else packed after a
 *                table of P + 1 words): the root copies them in and
 *                returns; each rank copies its block out
 *   single copy (above a slot, where the node has a reader): the root
 *                publishes each block's address; each rank reads its
 *                block straight from the root's send buffer, and the root
 *                returns once all are done (P = 2 with a writer: the
 *                other rank then offers its rbuf and reads two thirds,
 *                the root writes the last third)
 *   message (above a slot, no reader): the root sends every rank its
 *                block, as scatterv_linear does
 *
 *   steps: 1   bytes: each block once (cells: twice, at cache speed)
 *
 * Only the root knows every count, so the root alone chooses the way and
 * writes it in its slot, first word, with (but for fixed places) a table
 * of where each rank's block lies (its offset in the slot, or its address
 * in the root's memory); a rank waits for the root's slot and follows the
 * way it finds there. A rank with an empty block reads nothing and waits for nothing.
 * In place (the root's rbuf NULL) the root's block stays in sbuf.
 */
#include <stdint.h>
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"
#include "braid_shm.h"

enum { WAY_CELLS = 1, WAY_DIRECT = 2, WAY_MESSAGE = 3, WAY_PLACES = 4 };

/* WAY_PLACES: after the way word the root's slot is one fixed place per
 * other rank, in rank order, of an equal share of the slot; the root takes
 * it when every block fits its place. A rank then finds its block without
 * reading an offset the root wrote: an address that depends on data from
 * the root's line is known only once that line has come over, and the
 * block's lines are asked for after it (a second line transfer in the
 * far state, docs/BENCHMARKS.md); a fixed address lets the processor ask
 * for them at once. */
static size_t place_bytes(const braid_shm_t *s, int P)
{
    size_t room = s->slot_bytes - sizeof(uint64_t);
    return P <= 2 ? room : room / (size_t)(P - 1);
}
static size_t place_of(const braid_shm_t *s, int P, int root, int q)
{
    return sizeof(uint64_t) + (size_t)(q - (q > root)) * place_bytes(s, P);
}

/* bytes of sbuf from its start to the end of its last block */
static size_t span_of(const braid_coll_args_t *a, int P)
{
    size_t end = 0;
    for (int q = 0; q < P; q++)
        if (a->scounts[q] && a->sdispls[q] + a->scounts[q] > end) end = a->sdispls[q] + a->scounts[q];
    return end * a->esize;
}

/* WAY_PLACES in one pass over the root's counts: every other rank's
 * block copied into its place; false at the first block that does not
 * fit (the places lie within the slot, so nothing else is needed). A
 * small call's every block fits: it is done without a pass that sizes
 * them first. */
static bool fill_places(const braid_comm_t *c, const braid_coll_args_t *a, const braid_shm_t *s,
                        unsigned char *slot)
{
    int P = c->size, root = a->root;
    size_t es = a->esize, place = place_bytes(s, P);
    unsigned char *at = slot + sizeof(uint64_t);
    for (int q = 0; q < P; q++) {
        if (q == root) continue;
        size_t n = a->scounts[q] * es;
        if (n > place) return false;
        braid_copy(at, (const char *)a->sbuf + a->sdispls[q] * es, n);
        at += place;
    }
    return true;
}

/* The root's way and table (and, for the cells, the blocks) in its slot. */
static uint64_t fill_slot(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s,
                          unsigned char *slot)
{
    int P = c->size, root = a->root;
    size_t es = a->esize, head = (size_t)(P + 1) * sizeof(uint64_t), others = 0;
    if (fill_places(c, a, s, slot)) {
        memcpy(slot, &(uint64_t){ WAY_PLACES }, sizeof(uint64_t));
        return WAY_PLACES;
    }
    for (int q = 0; q < P; q++)
        if (q != root) others += a->scounts[q] * es;
    uint64_t way = NULL != braid_shm_of(c, head + others)         ? WAY_CELLS
                   : NULL != braid_shm_direct(c, head + others)      ? WAY_DIRECT
                                                                     : WAY_MESSAGE;
    const char *base = a->sbuf;
    if (WAY_DIRECT == way) base = braid_shm_expose(s, a->sbuf, span_of(a, P), a->scratch);
    if (NULL == base) way = WAY_MESSAGE;   /* no memory for a readable copy */
    memcpy(slot, &way, sizeof way);
    uint64_t off = head;
    for (int q = 0; q < P && WAY_MESSAGE != way; q++) {
        size_t n = a->scounts[q] * es;
        if (q == root) continue;
        uint64_t at = (uint64_t)(uintptr_t)(base + a->sdispls[q] * es);
        if (WAY_CELLS == way) {
            at = off;
            braid_copy(slot + off, (const char *)a->sbuf + a->sdispls[q] * es, n);
            off += n;
        }
        memcpy(slot + (size_t)(q + 1) * sizeof(uint64_t), &at, sizeof at);
    }
    return way;
}

/* Single copy at P = 2 with a writer (braid_shm_pairs): the other rank
 * offers its rbuf and reads the first two thirds of its block while the
 * root, which also copies its own block, writes the rest
 * (braid_shm_pair_*, as scatter_shm.c does). */
static size_t reader_part(size_t bytes) { return braid_shm_pair_split(bytes, 2, 3); }

/* the root's half of the pair: the other's block, from the address the
 * root's table gives it */
static int write_pair(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s, uint64_t seq)
{
    int other = 1 - c->rank;
    size_t n = a->scounts[other] * a->esize;
    if (0 == n) return BRAID_OK;
    uint64_t from;
    memcpy(&from, braid_shm_slot(s, seq, c->rank) + (size_t)(other + 1) * sizeof from, sizeof from);
    return braid_shm_give(s, seq, (const void *)(uintptr_t)from, reader_part(n), n, BRAID_OK);
}

static int send_blocks(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s)
{
    int root = a->root;
    size_t es = a->esize;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_claim(s, seq);
    uint64_t way = fill_slot(c, a, s, braid_shm_slot(s, seq, root));
    braid_shm_arrive(s, seq);
    if (WAY_MESSAGE == way) {
        braid_shm_done(s, seq);
        return braid_scatterv_linear(c, a);
    }
    if (NULL != a->rbuf && a->scounts[root])
        braid_copy(a->rbuf, (const char *)a->sbuf + a->sdispls[root] * es, a->scounts[root] * es);
    int rc = WAY_DIRECT == way && braid_shm_pairs(s) ? write_pair(c, a, s, seq) : BRAID_OK;
    braid_shm_done(s, seq);
    if (WAY_DIRECT == way) braid_shm_wait_all_done(s, seq);
    return rc;
}

static int receive_block(braid_comm_t *c, const braid_coll_args_t *a, braid_shm_t *s)
{
    int me = c->rank, root = a->root, rc = BRAID_OK;
    size_t n = a->count * a->esize;
    uint64_t seq = braid_shm_begin(s), way = 0, at = 0;
    if (n) {
        braid_shm_wait_one(s, seq, root);
        const unsigned char *slot = braid_shm_slot(s, seq, root);
        memcpy(&way, slot, sizeof way);
        if (WAY_PLACES == way) braid_copy(a->rbuf, slot + place_of(s, c->size, root, me), n);
        else memcpy(&at, slot + (size_t)(me + 1) * sizeof(uint64_t), sizeof at);
        if (WAY_CELLS == way) braid_copy(a->rbuf, slot + at, n);
        if (WAY_DIRECT == way) rc = braid_shm_take(s, seq, root, at, a->rbuf, reader_part(n), n);
    }
    braid_shm_done(s, seq);
    if (WAY_MESSAGE == way) rc = braid_scatterv_linear(c, a);
    return rc;
}

int braid_scatterv_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    braid_shm_t *s = braid_shm_of(c, (size_t)(c->size + 1) * sizeof(uint64_t));
    if (NULL == s) return braid_shm_of(c, 0) ? braid_scatterv_linear(c, a) : BRAID_ERR_UNSUPPORTED;
    return c->rank == a->root ? send_blocks(c, a, s) : receive_block(c, a, s);
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_scatterv_shm)
