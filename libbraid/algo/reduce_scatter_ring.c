/*
 * reduce_scatter ring: the reduce-scatter half of the bandwidth-optimal ring
 * (as allreduce_ring_chunked), with block b = rank b's share (rcounts[b],
 * or count for reduce_scatter_block).
 *
 *   steps: P-1 (each block in chunks of params.chunk_bytes)
 *   bytes sent by rank r: N - |block r| ~ S(P-1)/P, N = sum of rcounts
 *   messages: one per non-empty chunk sent
 *
 * Step t = 0..P-2: send block r-t-1 to r+1, receive block r-t-2 from r-1
 * and fold this rank's input into it; the last step delivers block r.
 * Chunks are pipelined (ring_pipeline.c).
 *
 * Partials are received into a work buffer in scratch (slot 1, the input's
 * size, indexed like the input) and reduced there with the input, which is
 * only read. Not in place, the own block is received straight into rbuf
 * (no work buffer when P = 2: only the own block is received). In place,
 * it is completed in the work buffer too and copied to the start of rbuf
 * at the end: rbuf[0, mine) is then the only part of rbuf written, as in
 * other MPI implementations, and writing it earlier would overwrite input
 * blocks still to be sent or reduced.
 *
 * Non-commutative ops: returns BRAID_ERR_UNSUPPORTED (P > 1), as the ring
 * cannot keep the rank order.
 */
#include "braid_blocks.h"
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

int braid_reduce_scatter_ring(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t es = a->esize;
    bool in_place = NULL == a->sbuf || a->sbuf == a->rbuf;
    if (P == 1) return braid_rs_single(a);
    if (!a->op.commutative) return BRAID_ERR_UNSUPPORTED;
    size_t *off = braid_rs_offsets(a, P, BRAID_SLOT_BLOCK);
    if (NULL == off) return BRAID_ERR_NOMEM;
    size_t N = off[P], mine = off[r + 1] - off[r];
    if (0 == N) return BRAID_OK;

    const char *input = in_place ? (const char *)a->rbuf : (const char *)a->sbuf;
    braid_ring_t ring = {
        .bound = braid_bound_table,
        .bound_ctx = off,
        .rs_steps = P - 1,
        .ag_steps = 0,
        .first_src = input + off[(r - 1 + P) % P] * es,
        .in = input,
        .work = a->rbuf,
        .own_dst = in_place ? NULL : a->rbuf,
    };
    if (in_place || P > 2) {
        /* partials of other ranks' blocks (in place: the own one too) */
        ring.work = braid_scratch_get(a->scratch, BRAID_SLOT_WORK, N * es);
        if (NULL == ring.work) return BRAID_ERR_NOMEM;
    }
    int rc = braid_ring_run(c, a, &ring);
    if (BRAID_OK == rc && in_place && mine > 0)
        braid_copy(a->rbuf, ring.work + off[r] * es, mine * es);
    return rc;
}

/* (P-1)(alpha + S/P (beta+gamma)) */
double braid_cost_reduce_scatter_ring(int P, double S)
{
    return (P - 1) * (BRAID_COST_ALPHA + S / P * (BRAID_COST_BETA + BRAID_COST_GAMMA));
}
