/*
 * allreduce ring_chunked (Gloo allreduce_ring_chunked; the bandwidth-optimal
 * ring of Patarasuk and Yuan): ring reduce-scatter, then ring allgather.
 *
 *   steps: 2(P-1), each block cut into chunks of params.chunk_bytes
 *          (default 1 MiB, whole elements)
 *   bytes sent by rank r: (S - |block r|) + (S - |block r+1|) ~ 2S(P-1)/P,
 *          where block b = braid_block_start/count(count, P, b)
 *   messages: one per non-empty chunk sent
 *
 *  1. Reduce-scatter, step t = 0..P-2: send block r-t-1 to r+1, receive
 *     block r-t-2 from r-1 and fold this rank's input into it. After P-1
 *     steps rank r holds block r fully reduced.
 *  2. Allgather, step s = 0..P-2: send block r-s, receive block r-s-1.
 * Chunks flow through a pipeline (ring_pipeline.c): up to
 * BRAID_PIPE_DEPTH receives are posted ahead of the chunk being reduced, and
 * each reduced chunk is forwarded at once.
 *
 * Not in place, partials are received straight into rbuf and reduced with
 * sbuf there (no copy, no scratch); in place they are received into scratch
 * chunks and reduced into rbuf. Each element is reduced along one chain and
 * then copied, so every rank ends with identical bits for any op.
 *
 * Non-commutative ops: the chain of a block wraps from rank P-1 to rank 0,
 * so the rank order cannot be kept: returns BRAID_ERR_UNSUPPORTED (P > 1).
 */
#include "braid_blocks.h"
#include "braid_cost.h"
#include "braid_registry.h"

int braid_allreduce_ring_chunked(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    if (P == 1) {
        braid_copy_input(a, a->count * a->esize);
        return BRAID_OK;
    }
    if (!a->op.commutative) return BRAID_ERR_UNSUPPORTED;
    if (0 == a->count) return BRAID_OK;

    bool in_place = NULL == a->sbuf || a->sbuf == a->rbuf;
    const char *input = in_place ? (const char *)a->rbuf : (const char *)a->sbuf;
    braid_even_t even = { a->count, P };
    braid_ring_t ring = {
        .bound = braid_bound_even,
        .bound_ctx = &even,
        .rs_steps = P - 1,
        .ag_steps = P - 1,
        .first_src = input + braid_block_start(a->count, P, (r - 1 + P) % P) * a->esize,
        .in = in_place ? NULL : input,
        .work = a->rbuf,
        .own_dst = NULL,
    };
    return braid_ring_run(c, a, &ring);
}

/* 4(P-1) alpha + 2(P-1)/P S beta + S/(2P) gamma: 2 phases x (P-1) steps x 2
 * sub-phases; the reduction of one chunk overlaps
 * the transfer of the next, so only one chunk's is exposed */
double braid_cost_allreduce_ring_chunked(int P, double S)
{
    return 4 * (P - 1) * BRAID_COST_ALPHA + 2.0 * (P - 1) / P * S * BRAID_COST_BETA
           + S / (2.0 * P) * BRAID_COST_GAMMA;
}
