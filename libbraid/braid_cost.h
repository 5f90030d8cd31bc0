/*
 * braid_cost.h - the alpha-beta-gamma cost model behind the built-in
 * selection table. Every algorithm file defines braid_cost_<coll>_<name>(P, S)
 * next to the steps and bytes in its header; libbraid/selection/braid_model.c reads
 * them through the registry.
 *
 * Constants, for one node's shared memory through UCX (2-core VM, measured):
 *   alpha = 1.5 us       one step: one message to and from one peer (latency
 *                        plus the send and receive overheads);
 *   o     = 0.75 us      each further message a rank exchanges in the same
 *                        step (the overheads serialise on the rank's core, the
 *                        latencies overlap);
 *   beta  = 1/(8 GB/s)   per byte a rank sends;
 *   gamma = 1/(10 GB/s)  per byte a rank reduces.
 *
 * P ranks, S = the collective's message size in bytes (libbraid/selection/RULES.md),
 * L = ceil(lg P), p = 2^floor(lg P) (the largest power of two <= P).
 *
 * A cost function returns a negative value where the model does not
 * consider the algorithm, because another algorithm of the collective is
 * never slower in this model or its cost on one node is not yet known
 * (trees pay off on networks; measurements decide).
 *
 * Crossovers that follow (S*, bytes):
 *   allreduce P = 2: ring_chunked beats halving_doubling when
 *     S/2 gamma - S/4 gamma > 4 alpha - 2 alpha, i.e. S* = 8 alpha/gamma = 120K;
 *     S* grows about linearly with P (~4 P alpha / gamma), so for large P the
 *     log-step algorithms keep the middle sizes.
 *   bcast P = 4: scatter_allgather beats binomial above S* = 6 alpha/beta = 72K.
 *   barrier: all_to_all <= dissemination up to P = 6.
 */
#ifndef BRAID_COST_H
#define BRAID_COST_H

#include "braid_algo.h"

#define BRAID_COST_ALPHA 1.5
#define BRAID_COST_O 0.75
#define BRAID_COST_BETA (1.0 / 8000.0)   /* us per byte: 8 GB/s = 8000 bytes per us */
#define BRAID_COST_GAMMA (1.0 / 10000.0) /* us per byte: 10 GB/s */
#define BRAID_COST_NONE (-1.0)           /* not considered by the model */

/* The cost function of an algorithm the model does not consider (its
 * rows come from measurements): defines fn(P, S) returning BRAID_COST_NONE. */
#define BRAID_COST_NOT_MODELLED(fn)           \
    double fn(int P, double S)                \
    {                                         \
        (void)P;                              \
        (void)S;                              \
        return BRAID_COST_NONE;               \
    }

/* L = ceil(lg P) */
static inline double braid_cost_L(int P) { return braid_ceil_log2(P); }
/* p = the largest power of two <= P */
static inline int braid_cost_p(int P) { return 1 << braid_floor_log2(P); }

#endif /* BRAID_COST_H */
