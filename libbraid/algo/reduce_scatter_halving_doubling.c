/*
 * reduce_scatter halving_doubling (Gloo reduce_scatter_halving_doubling;
 * Thakur et al. 2005 binary blocks; reordering as in Sack and Gropp 2012).
 *
 * Block b is rank b's share (rcounts[b], or count for the block variant).
 *   P = 2^k:  k steps of recursive vector halving / distance doubling over
 *             the P blocks; rank r then holds block bitrev(r) fully reduced
 *             and sends it to rank bitrev(r) (the bit-reversal fix-up; no
 *             message when bitrev(r) == r). Steps k + 1.
 *             bytes sent by rank r: N - |block bitrev(r)| + (bitrev(r) != r ?
 *             |block bitrev(r)| : 0) ~ S(P-1)/P (+ S/P for the fix-up), with
 *             N = sum of rcounts.
 *   other P:  binary blocks (see halving_doubling_common.c): the P blocks
 *             are grouped into M0 = 2^k0 (largest power of two <= P) groups
 *             of one or two consecutive blocks; intra-block reduce-scatter,
 *             the chain of exchanges up to the largest block, whose ranks
 *             then hold whole groups and send each block of their group to
 *             its owner. Bytes per rank at most N.
 *
 * Distance doubling keeps rank order, so non-commutative ops are supported.
 * Uneven rcounts (zeros included) only change the element boundaries of the
 * groups; zero-length messages are never sent.
 *
 * Partial results live in a work buffer in scratch (slot 1, the input's
 * size), the input is only read, and rbuf[0, mine) is the only part of
 * rbuf written (in place, the rest of the input stays as it was, as in
 * other MPI implementations). Not in place, when P is a power of two and
 * bitrev(r) == r (e.g. P = 2) the last step reduces straight into rbuf.
 * In place, the own block is copied from the work buffer at the end: rbuf
 * is still the input until every exchange has completed. The fix-up
 * receives straight into rbuf in both cases: by then nothing reads the
 * input, and the fix-up sends come from the work buffer.
 */
#include "braid_blocks.h"
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

typedef struct groups {
    const size_t *off;   /* P+1 block offsets */
    int P, M0;
} groups_t;

/* element offset of group g: blocks [braid_block_start(P, M0, g), ...) */
static size_t group_bound(const void *ctx, int g)
{
    const groups_t *gr = ctx;
    return gr->off[braid_block_start((size_t)gr->P, gr->M0, g)];
}

/* the group holding block b */
static int group_of(int P, int M0, int b)
{
    size_t qd = (size_t)P / (size_t)M0, rem = (size_t)P % (size_t)M0;
    size_t big = rem * (qd + 1);
    return (size_t)b < big ? (int)((size_t)b / (qd + 1)) : (int)(rem + ((size_t)b - big) / qd);
}

int braid_reduce_scatter_halving_doubling(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t es = a->esize;
    bool in_place = NULL == a->sbuf || a->sbuf == a->rbuf;
    if (P == 1) return braid_rs_single(a);
    size_t *off = braid_rs_offsets(a, P, BRAID_SLOT_TABLE);
    if (NULL == off) return BRAID_ERR_NOMEM;
    size_t N = off[P], mine = off[r + 1] - off[r];
    if (0 == N) return BRAID_OK;

    groups_t gr = { off, P, 1 };
    braid_bblocks_t bb;
    braid_bblocks_init(&bb, P, r, group_bound, &gr);
    gr.M0 = bb.M0;
    char *rbuf = a->rbuf;
    const char *input = in_place ? rbuf : (const char *)a->sbuf;

    /* where this rank's block comes from */
    int gown = group_of(P, bb.M0, r);
    int holder = braid_bitrev(gown, bb.k0);   /* a rank of block 0 (base 0) */
    bool direct_last = !in_place && 1 == bb.nblocks && holder == r;

    /* a rank alone in its block (lg 0) only sends its input up: no partials */
    char *work = NULL;
    if (bb.lg[bb.me] > 0) {
        work = braid_scratch_get(a->scratch, BRAID_SLOT_WORK, N * es);
        if (NULL == work) return BRAID_ERR_NOMEM;
    }
    int rc = braid_bblocks_reduce_scatter(c, a, &bb, input, work, direct_last ? rbuf : NULL);
    if (BRAID_OK != rc) return rc;

    /* fix-up: block 0's ranks send the blocks of their group to the owners */
    braid_req_t req[3] = { NULL, NULL, NULL };
    if (holder != r && mine > 0)
        rc = braid_irecv(c, holder, BRAID_HD_STEP_FIX, rbuf, mine * es, &req[0]);
    if (0 == bb.me) {
        int g = braid_bitrev(bb.q, bb.k0);
        int b0 = (int)braid_block_start((size_t)P, bb.M0, g), b1 = (int)braid_block_start((size_t)P, bb.M0, g + 1);
        for (int b = b0, j = 1; b < b1 && BRAID_OK == rc; b++) {
            size_t n = off[b + 1] - off[b];
            if (b == r || 0 == n) continue;
            rc = braid_isend(c, b, BRAID_HD_STEP_FIX, work + off[b] * es, n * es, &req[j++]);
        }
    }
    int wrc = braid_waitall(c, 3, req);
    if (BRAID_OK == rc) rc = wrc;
    if (BRAID_OK != rc || 0 == mine) return rc;
    if (holder == r && !direct_last) braid_copy(rbuf, work + off[r] * es, mine * es);
    return BRAID_OK;
}

/* lg(P) alpha + (P-1)/P S (beta+gamma), P a power of two; not considered
 * otherwise (the bit-reversal fix-up is not modelled) */
double braid_cost_reduce_scatter_halving_doubling(int P, double S)
{
    if (braid_cost_p(P) != P) return BRAID_COST_NONE;
    return braid_floor_log2(P) * BRAID_COST_ALPHA
         + (double)(P - 1) / P * S * (BRAID_COST_BETA + BRAID_COST_GAMMA);
}
