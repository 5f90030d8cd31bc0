/*
 * allgatherv bruck: every rank's block to every rank in ceil(lg P) steps,
 * for any P
 *
 *   steps: ceil(lg P)     messages per rank: at most ceil(lg P) (none
 *                         for a window of empty blocks)
 *   bytes sent per rank: the whole result but its last window,
 *   at most sum(rcounts) - rcounts[rank] elements; plus one local copy of
 *   the result (the rotation)
 *
 * Each rank gathers the blocks in rotated order, its own first, in a
 * scratch buffer: after step k it holds blocks r .. r + 2^k - 1 (mod P)
 * next to each other. In step k it sends its first min(2^k, P - 2^k)
 * blocks to r - 2^k and receives as many from r + 2^k, which are that
 * rank's first blocks and this rank's next ones. Every rank knows every
 * count, so both ends of a message know its size without a header, and a
 * window of empty blocks is neither sent nor received. At the end the
 * blocks are copied from the rotated buffer to their displacements.
 * Against the ring's P - 1 steps this pays lg P latencies, at the price of
 * the copy: the small totals' algorithm (MPICH's choice for short
 * allgatherv, UCC's knomial for the same reason). Scratch: the rotated
 * result (slot 1) and its P + 1 offsets (slot 2).
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"

int braid_allgatherv_bruck(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t es = a->esize;
    char *out = a->rbuf;
    const char *mine = NULL != a->sbuf ? a->sbuf : out + a->displs[r] * es;
    size_t *off = braid_scratch_get(a->scratch, BRAID_SLOT_BLOCK, ((size_t)P + 1) * sizeof *off);
    if (NULL == off) return BRAID_ERR_NOMEM;
    /* off[i]: where block r + i (mod P) starts in the rotated buffer */
    off[0] = 0;
    for (int i = 0; i < P; i++) off[i + 1] = off[i] + a->rcounts[(r + i) % P] * es;
    if (0 == off[P]) return BRAID_OK;
    char *rot = braid_scratch_get(a->scratch, BRAID_SLOT_WORK, off[P]);
    if (NULL == rot) return BRAID_ERR_NOMEM;
    braid_copy(rot, mine, off[1]);
    for (int have = 1, k = 0; have < P; have *= 2, k++) {
        int n = have < P - have ? have : P - have;
        int to = (r - have + P) % P, from = (r + have) % P;
        size_t sn = off[n], rn = off[have + n] - off[have];
        braid_req_t reqs[2] = { NULL, NULL };
        int rc = BRAID_OK;
        if (rn) rc = braid_irecv(c, from, (braid_step_t)k, rot + off[have], rn, &reqs[0]);
        if (sn && BRAID_OK == rc) rc = braid_isend(c, to, (braid_step_t)k, rot, sn, &reqs[1]);
        int wrc = braid_waitall(c, 2, reqs);
        if (BRAID_OK != rc || BRAID_OK != wrc) return BRAID_OK != rc ? rc : wrc;
    }
    for (int i = 0; i < P; i++) {
        int q = (r + i) % P;
        /* in place its own block is where it belongs already */
        if (q != r || NULL != a->sbuf) braid_copy(out + a->displs[q] * es, rot + off[i], off[i + 1] - off[i]);
    }
    return BRAID_OK;
}

/* L alpha + (P-1) S beta + P S gamma (the rotation), S the mean block */
double braid_cost_allgatherv_bruck(int P, double S)
{
    return braid_cost_L(P) * BRAID_COST_ALPHA + (P - 1) * S * BRAID_COST_BETA + P * S * BRAID_COST_GAMMA;
}
