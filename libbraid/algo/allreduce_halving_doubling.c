/*
 * allreduce halving_doubling (Gloo allreduce_halving_doubling; Thakur,
 * Rabenseifner and Gropp 2005): recursive vector halving / distance doubling
 * reduce-scatter, then the allgather in reverse.
 *
 *   P = 2^k:  steps 2k; bytes sent by rank r: RS (S - |seg_k|) + AG
 *             (|seg_1| + ... + |seg_k|) ~ 2S(P-1)/P, where seg_i is the
 *             rank's range after i halvings (P = 2: exactly S/2 each way per
 *             phase, up to one element)
 *   other P:  binary blocks P = 2^k0 + 2^k1 + ... (largest first, lowest
 *             ranks): intra-block reduce-scatter, a chain of exchanges from
 *             the smallest block up to the largest (each rank sends its
 *             piece, S/2^kj, up), the largest block now holding the full
 *             result, the chain back down (each rank sends its final piece
 *             to the next smaller block), then intra-block allgather. Steps
 *             2(kj + number of blocks - 1) at most; bytes per rank at most
 *             2S (RS + up: S; down + AG: S).
 *
 * The data is split into M0 = 2^k0 groups (braid_block_start(count, M0, g));
 * every halving splits a range of groups in two, so the pieces of all blocks
 * nest. Step i pairs ranks q and q ^ 2^i (distance doubling), so the lower
 * partner always holds the lower contiguous rank range and the reduction
 * keeps rank order: non-commutative ops are supported (the result is
 * x_0 op ... op x_{P-1}; ranks combine on the right with a scratch copy).
 * Each element is reduced at one rank and then copied, so every rank gets
 * identical bits for any op.
 *
 * Reduce-scatter receives go to scratch chunks (or, for the first step not
 * in place, straight into rbuf, reduced with sbuf there); allgather receives
 * land in rbuf regions whose reduce-scatter sends have completed, so the
 * mirrored steps never overwrite a region still being sent.
 */
#include "braid_blocks.h"
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

#define DOWN_BATCH 32

static size_t gelem(const braid_bblocks_t *bb, int g) { return bb->bound(bb->bound_ctx, g); }

/* receive this rank's piece (groups [g0, g1)) from the next larger block's
 * ranks: one message from each rank whose piece lies inside it */
static int recv_down(braid_comm_t *c, const braid_coll_args_t *a, const braid_bblocks_t *bb,
                     int g0, int g1)
{
    int lgl = bb->lg[bb->me - 1], width = bb->M0 >> lgl;
    char *rbuf = a->rbuf;
    size_t es = a->esize;
    int rc = BRAID_OK;
    for (int L0 = g0 / width; L0 < g1 / width && BRAID_OK == rc; L0 += DOWN_BATCH) {
        braid_req_t req[DOWN_BATCH] = { NULL };
        for (int j = 0; j < DOWN_BATCH && L0 + j < g1 / width && BRAID_OK == rc; j++) {
            int L = L0 + j;
            size_t e0 = gelem(bb, L * width), n = gelem(bb, (L + 1) * width) - e0;
            if (n > 0)
                rc = braid_irecv(c, bb->base[bb->me - 1] + braid_bitrev(L, lgl), BRAID_HD_STEP_DOWN,
                                 rbuf + e0 * es, n * es, &req[j]);
        }
        int wrc = braid_waitall(c, DOWN_BATCH, req);
        if (BRAID_OK == rc) rc = wrc;
    }
    return rc;
}

int braid_allreduce_halving_doubling(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t es = a->esize;
    if (P == 1) {
        braid_copy_input(a, a->count * es);
        return BRAID_OK;
    }
    if (0 == a->count) return BRAID_OK;
    bool in_place = NULL == a->sbuf || a->sbuf == a->rbuf;
    char *rbuf = a->rbuf;

    braid_even_t even = { a->count, 1 };
    braid_bblocks_t bb;
    braid_bblocks_init(&bb, P, r, braid_bound_even, &even);
    even.n = bb.M0;
    int me = bb.me, lg = bb.lg[me], q = bb.q, base = bb.base[me];

    int rc = braid_bblocks_reduce_scatter(c, a, &bb, in_place ? rbuf : (const char *)a->sbuf,
                                          rbuf, NULL);
    if (BRAID_OK != rc) return rc;

    int g0, g1;
    braid_bblocks_segment(&bb, lg, q, lg, &g0, &g1);
    /* down the chain: the final piece from the next larger block ... */
    if (me > 0) {
        rc = recv_down(c, a, &bb, g0, g1);
        if (BRAID_OK != rc) return rc;
    }
    /* ... and on to the next smaller block, while the allgather runs */
    braid_req_t down = NULL;
    if (me + 1 < bb.nblocks) {
        int lgs = bb.lg[me + 1];
        int peer = bb.base[me + 1] + braid_bitrev(braid_bitrev(q, lg) >> (lg - lgs), lgs);
        size_t e0 = gelem(&bb, g0), n = gelem(&bb, g1) - e0;
        if (n > 0) rc = braid_isend(c, peer, BRAID_HD_STEP_DOWN, rbuf + e0 * es, n * es, &down);
    }
    /* allgather in reverse: distance halving, vector doubling */
    for (int i = lg - 1; i >= 0 && BRAID_OK == rc; i--) {
        int peer = base + (q ^ (1 << i));
        int p0, p1;
        braid_bblocks_segment(&bb, lg, q ^ (1 << i), i + 1, &p0, &p1);
        size_t me0 = gelem(&bb, g0), men = gelem(&bb, g1) - me0;
        size_t pe0 = gelem(&bb, p0), pen = gelem(&bb, p1) - pe0;
        braid_req_t req[2] = { NULL, NULL };
        if (pen > 0) rc = braid_irecv(c, peer, (braid_step_t)(BRAID_HD_STEP_AG + i), rbuf + pe0 * es,
                                      pen * es, &req[0]);
        if (BRAID_OK == rc && men > 0)
            rc = braid_isend(c, peer, (braid_step_t)(BRAID_HD_STEP_AG + i), rbuf + me0 * es,
                             men * es, &req[1]);
        int wrc = braid_waitall(c, 2, req);
        if (BRAID_OK == rc) rc = wrc;
        g0 = g0 < p0 ? g0 : p0;
        g1 = g1 > p1 ? g1 : p1;
    }
    int wrc = braid_waitall(c, 1, &down);
    return BRAID_OK != rc ? rc : wrc;
}

/* 2 lg(p) alpha + 2(p-1)/p S beta + (p-1)/p S gamma, plus 2 alpha + 2 S beta
 * + S gamma when P != p (the extra ranks fold in and out, Thakur 2005) */
double braid_cost_allreduce_halving_doubling(int P, double S)
{
    int p = braid_cost_p(P);
    double t = 2 * braid_floor_log2(p) * BRAID_COST_ALPHA + 2.0 * (p - 1) / p * S * BRAID_COST_BETA
             + (double)(p - 1) / p * S * BRAID_COST_GAMMA;
    if (p != P) t += 2 * BRAID_COST_ALPHA + 2 * S * BRAID_COST_BETA + S * BRAID_COST_GAMMA;
    return t;
}
