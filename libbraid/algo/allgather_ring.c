/*
 * allgather ring: in step s = 0..P-2 rank r sends block r-s to r+1 and
 * receives block r-s-1 from r-1 (block b = rank b's count elements).
 *
 *   steps: P-1     bytes sent per rank: (P-1)*count*esize
 *   messages: (P-1) * chunks per block (params.chunk_bytes, default 1 MiB)
 *
 * Blocks are cut into chunks and each chunk is forwarded as soon as it
 * arrives (ring_pipeline.c), so a large block crosses the ring pipelined
 * instead of step by step. Not in place, step 0 sends straight from sbuf
 * and the own block is copied into rbuf once (the ring never reads it
 * there).
 */
#include "braid_blocks.h"
#include "braid_cost.h"
#include "braid_registry.h"

#include <string.h>

int braid_allgather_ring(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t bytes = a->count * a->esize;
    bool in_place = NULL == a->sbuf || a->sbuf == (char *)a->rbuf + (size_t)r * bytes;
    char *own = (char *)a->rbuf + (size_t)r * bytes;
    if (P == 1 || 0 == bytes) {
        if (!in_place && bytes > 0) braid_copy(own, a->sbuf, bytes);
        return BRAID_OK;
    }
    braid_even_t even = { (size_t)P * a->count, P };
    braid_ring_t ring = {
        .bound = braid_bound_even,
        .bound_ctx = &even,
        .rs_steps = 0,
        .ag_steps = P - 1,
        .first_src = in_place ? own : (const char *)a->sbuf,
        .in = NULL,
        .work = a->rbuf,
        .own_dst = NULL,
    };
    /* the ring sends the own block from first_src only, never from rbuf */
    if (!in_place) braid_copy(own, a->sbuf, bytes);
    return braid_ring_run(c, a, &ring);
}

/* (P-1)(alpha + S beta) */
double braid_cost_allgather_ring(int P, double S)
{
    return (P - 1) * (BRAID_COST_ALPHA + S * BRAID_COST_BETA);
}
