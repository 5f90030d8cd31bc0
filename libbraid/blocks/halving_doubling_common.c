/*
 * halving_doubling_common.c - binary blocks (Thakur, Rabenseifner and Gropp,
 * "Optimization of Collective Communication Operations in MPICH", IJHPCA
 * 2005; Gloo's allreduce_halving_doubling) and the chunked pairwise
 * reduce-exchange shared by allreduce_halving_doubling and
 * reduce_scatter_halving_doubling.
 *
 * Binary-block reduce-scatter (braid_bblocks_reduce_scatter):
 *  1. within each power-of-two block of 2^k ranks, k steps of recursive
 *     vector halving / distance doubling: in step i index q exchanges with
 *     q ^ 2^i; the index with bit i clear keeps the lower half of the
 *     current group range, the other the upper half; each receives the
 *     peer's copy of its kept half and reduces it in. Pairs at distance 2^i
 *     join aligned, contiguous rank ranges, so operands stay in rank order.
 *  2. between blocks, from the smallest up: a block receives the pieces of
 *     the next smaller block (each of its ranks gets exactly its piece from
 *     one rank there), reduces them in on the right (the smaller block holds
 *     higher ranks), then sends its own pieces on to the next larger block.
 *     Block 0 (the largest, lowest ranks) ends with the full reduction.
 * Every exchange is cut into chunks (params.chunk_bytes): up to
 * BRAID_PIPE_DEPTH chunk receives and sends are in flight while one chunk
 * is reduced.
 */
#include "braid_blocks.h"

#include <string.h>

void braid_bblocks_init(braid_bblocks_t *bb, int P, int rank, braid_bound_fn_t bound,
                        const void *bound_ctx)
{
    bb->P = P;
    bb->rank = rank;
    bb->nblocks = 0;
    bb->me = bb->q = 0;   /* set in the loop: every rank below P lies in one block */
    bb->bound = bound;
    bb->bound_ctx = bound_ctx;
    int base = 0;
    for (int bit = 30; bit >= 0; bit--) {
        if (!(P & (1 << bit))) continue;
        bb->base[bb->nblocks] = base;
        bb->lg[bb->nblocks] = bit;
        if (rank >= base && rank < base + (1 << bit)) {
            bb->me = bb->nblocks;
            bb->q = rank - base;
        }
        base += 1 << bit;
        bb->nblocks++;
    }
    bb->k0 = bb->lg[0];
    bb->M0 = 1 << bb->k0;
}

void braid_bblocks_segment(const braid_bblocks_t *bb, int lg, int q, int level, int *g0, int *g1)
{
    (void)lg;
    int lo = 0, len = bb->M0;
    for (int i = 0; i < level; i++) {
        len >>= 1;
        if ((q >> i) & 1) lo += len;
    }
    *g0 = lo;
    *g1 = lo + len;
}

static size_t elem(const braid_bblocks_t *bb, int g) { return bb->bound(bb->bound_ctx, g); }

int braid_reduce_exchange(braid_comm_t *c, const braid_coll_args_t *a, int peer,
                          braid_step_t step, const char *sptr, size_t sn,
                          char *dst, const char *mine, size_t n, bool peer_lower)
{
    const int D = BRAID_PIPE_DEPTH;
    size_t ce = braid_chunk_elems(a), es = a->esize;
    size_t cs = braid_nchunks(sn, ce), cr = braid_nchunks(n, ce);
    /* receive straight into dst when dst does not hold our operand and the
     * op lets ours go on the left */
    bool direct = mine != dst && (a->op.commutative || !peer_lower);
    size_t stride = n < ce ? n : ce;
    char *scr = NULL;
    if (!direct && cr > 0) {
        scr = braid_scratch_get(a->scratch, BRAID_SLOT_CHUNKS, (size_t)D * stride * es);
        if (NULL == scr) return BRAID_ERR_NOMEM;
    }
    braid_req_t rreq[BRAID_PIPE_DEPTH] = { NULL }, sreq[BRAID_PIPE_DEPTH] = { NULL };
    int rc = BRAID_OK;
    size_t nmax = cs > cr ? cs : cr;

    for (size_t i = 0; i < nmax + (size_t)D && BRAID_OK == rc; i++) {
        /* post chunk i (receive first), then complete chunk i-D+1 */
        if (i < cr) {
            char *at = direct ? dst + i * ce * es : scr + (i % (size_t)D) * stride * es;
            rc = braid_irecv(c, peer, step, at, braid_chunk_len(n, ce, i) * es, &rreq[i % (size_t)D]);
        }
        if (BRAID_OK == rc && i < cs)
            rc = braid_isend(c, peer, step, sptr + i * ce * es, braid_chunk_len(sn, ce, i) * es,
                             &sreq[i % (size_t)D]);
        if (BRAID_OK != rc || i + 1 < (size_t)D) continue;
        /* complete chunk j, whose slot the next iteration reuses */
        size_t j = i + 1 - (size_t)D;
        if (j < cr) {
            rc = braid_waitall(c, 1, &rreq[j % (size_t)D]);
            if (BRAID_OK != rc) break;
            size_t len = braid_chunk_len(n, ce, j);
            char *d = dst + j * ce * es;
            const char *m = mine + j * ce * es;
            char *got = direct ? d : scr + (j % (size_t)D) * stride * es;
            if (direct) {
                a->op.fn(m, d, len, a->op.arg);             /* mine op theirs */
            } else if (peer_lower || a->op.commutative) {
                if (m != d) braid_copy(d, m, len * es);
                a->op.fn(got, d, len, a->op.arg);           /* theirs op mine */
            } else {
                a->op.fn(m, got, len, a->op.arg);           /* mine op theirs */
                braid_copy(d, got, len * es);
            }
        }
        if (j < cs) rc = braid_waitall(c, 1, &sreq[j % (size_t)D]);
    }
    int w1 = braid_waitall(c, D, rreq), w2 = braid_waitall(c, D, sreq);
    if (BRAID_OK == rc) rc = w1;
    if (BRAID_OK == rc) rc = w2;
    return rc;
}

int braid_send_chunked(braid_comm_t *c, const braid_coll_args_t *a, int peer,
                       braid_step_t step, const char *ptr, size_t n)
{
    const int D = BRAID_PIPE_DEPTH;
    size_t ce = braid_chunk_elems(a), es = a->esize, nch = braid_nchunks(n, ce);
    braid_req_t req[BRAID_PIPE_DEPTH] = { NULL };
    int rc = BRAID_OK;
    for (size_t i = 0; i < nch && BRAID_OK == rc; i++) {
        if (i >= (size_t)D) rc = braid_waitall(c, 1, &req[i % (size_t)D]);
        if (BRAID_OK == rc)
            rc = braid_isend(c, peer, step, ptr + i * ce * es, braid_chunk_len(n, ce, i) * es,
                             &req[i % (size_t)D]);
    }
    int wrc = braid_waitall(c, D, req);
    return BRAID_OK != rc ? rc : wrc;
}

int braid_bblocks_reduce_scatter(braid_comm_t *c, const braid_coll_args_t *a,
                                 const braid_bblocks_t *bb, const char *input, char *work,
                                 char *last_dst)
{
    size_t es = a->esize;
    int me = bb->me, lg = bb->lg[me], q = bb->q, base = bb->base[me];
    const char *cur = input;
    int g0 = 0, g1 = bb->M0;
    int rc = BRAID_OK;

    /* 1. within the block: vector halving, distance doubling */
    for (int i = 0; i < lg && BRAID_OK == rc; i++) {
        int peer = base + (q ^ (1 << i));
        bool upper = (q >> i) & 1;
        int mid = g0 + (g1 - g0) / 2;
        int k0 = upper ? mid : g0, k1 = upper ? g1 : mid;   /* kept */
        int s0 = upper ? g0 : mid, s1 = upper ? mid : g1;   /* sent */
        size_t ke = elem(bb, k0), kn = elem(bb, k1) - ke;
        size_t se = elem(bb, s0), sn = elem(bb, s1) - se;
        char *dst = work + ke * es;
        if (i == lg - 1 && NULL != last_dst && 1 == bb->nblocks) dst = last_dst;
        rc = braid_reduce_exchange(c, a, peer, (braid_step_t)(BRAID_HD_STEP_RS + i),
                                   cur + se * es, sn, dst, cur + ke * es, kn, upper);
        cur = work;
        g0 = k0;
        g1 = k1;
    }
    if (BRAID_OK != rc) return rc;

    /* 2a. fold in the next smaller block's pieces (its ranks are higher) */
    if (me + 1 < bb->nblocks) {
        int lgs = bb->lg[me + 1];
        int piece = braid_bitrev(q, lg);
        int peer = bb->base[me + 1] + braid_bitrev(piece >> (lg - lgs), lgs);
        size_t e0 = elem(bb, g0), n = elem(bb, g1) - e0;
        rc = braid_reduce_exchange(c, a, peer, BRAID_HD_STEP_UP, NULL, 0, work + e0 * es,
                                   cur + e0 * es, n, false);
        cur = work;
        if (BRAID_OK != rc) return rc;
    }
    /* 2b. send this rank's piece on to the next larger block: each of the
     * sub-pieces to the rank there that holds it */
    if (me > 0) {
        int lgl = bb->lg[me - 1];
        int piece = braid_bitrev(q, lg), sub = 1 << (lgl - lg);
        int width = bb->M0 >> lgl;   /* groups per larger-block piece */
        for (int L = piece * sub; L < (piece + 1) * sub && BRAID_OK == rc; L++) {
            size_t e0 = elem(bb, L * width), n = elem(bb, (L + 1) * width) - e0;
            int peer = bb->base[me - 1] + braid_bitrev(L, lgl);
            rc = braid_send_chunked(c, a, peer, BRAID_HD_STEP_UP, cur + e0 * es, n);
        }
    }
    return rc;
}
