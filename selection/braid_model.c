/*
 * braid_model.c - the alpha-beta-gamma cost model the built-in selection table
 * (braid_table.c) is derived from. Pure C.
 *
 * Constants, for this machine's shared memory through UCX:
 *   alpha = 1.5 us       one step: one message to and from one peer (latency
 *                        plus the send and receive overheads);
 *   o     = 0.75 us      each further message a rank exchanges in the same
 *                        step (the overheads serialise on the rank's core, the
 *                        latencies overlap);
 *   beta  = 1/(8 GB/s)   per byte a rank sends;
 *   gamma = 1/(10 GB/s)  per byte a rank reduces.
 *
 * P ranks, S = the collective's message size in bytes (selection/RULES.md),
 * L = ceil(lg P), p = 2^floor(lg P) (the largest power of two <= P).
 *
 *   allreduce ring              (P-1)(alpha + S(beta+gamma))
 *             ring_chunked      4(P-1) alpha + 2(P-1)/P S beta + S/(2P) gamma
 *                               (2 phases x (P-1) steps x 2 sub-phases; the
 *                               reduction of one chunk overlaps the transfer of
 *                               the next, so only one chunk's is exposed)
 *             halving_doubling  2 lg(p) alpha + 2(p-1)/p S beta + (p-1)/p S gamma,
 *                               plus 2 alpha + 2 S beta + S gamma when P != p
 *                               (the extra ranks fold in and out, Thakur 2005)
 *             recursive_doubling lg(p)(alpha + S(beta+gamma)), plus
 *                               2(alpha + S beta) + S gamma when P != p
 *             bcube (base 4)    P = g_1 g_2 ... g_m (factors <= 4 where possible):
 *                               sum_i 2(alpha + (g_i - 2) o)
 *                               + 2(P-1)/P S beta + (P-1)/P S gamma
 *   bcast     binomial          L (alpha + S beta)
 *             scatter_allgather (L + P-1) alpha + 2(P-1)/P S beta
 *   reduce    binomial          L (alpha + S(beta+gamma))
 *             dbtree            (L + k - 1)(alpha + o + S/k (beta+gamma)),
 *                               k = ceil(S / 64K) pipeline chunks
 *   reduce_scatter ring         (P-1)(alpha + S/P (beta+gamma))
 *             halving_doubling  lg(P) alpha + (P-1)/P S (beta+gamma), P = p only
 *   allgather ring              (P-1)(alpha + S beta)
 *             recursive_doubling lg(p) alpha + (P-1) S beta,
 *                               plus 2 alpha + P S beta when P != p
 *   barrier   all_to_all        alpha + (P-2) o
 *             dissemination     L alpha
 *
 * Not considered (negative result), because another algorithm in the list is
 * never slower in this model or the cost on one node is not yet known:
 * allreduce ring (dominated by ring_chunked) and dbtree, bcast one_to_all
 * (= binomial at P = 2, worse beyond) and dbtree, barrier all_to_one (twice
 * all_to_all's cost at the root), reduce_scatter halving_doubling for P not a
 * power of two. dbtree trees pay off on networks; measurements decide later.
 *
 * Crossovers that follow (S*, bytes):
 *   allreduce P = 2: ring_chunked beats halving_doubling when
 *     S/2 gamma - S/4 gamma > 4 alpha - 2 alpha, i.e. S* = 8 alpha/gamma = 120K;
 *     S* grows about linearly with P (~4 P alpha / gamma), so for large P the
 *     log-step algorithms keep the middle sizes.
 *   bcast P = 4: scatter_allgather beats binomial above S* = 6 alpha/beta = 72K.
 *   barrier: all_to_all <= dissemination up to P = 6.
 */
#include "braid_select.h"

#define ALPHA 1.5
#define OVERHEAD 0.75
#define BETA (1.0 / 8000.0)   /* us per byte: 8 GB/s = 8000 bytes per us */
#define GAMMA (1.0 / 10000.0) /* us per byte: 10 GB/s */
#define DBTREE_CHUNK 65536.0
#define BCUBE_BASE 4

static int ceil_lg(int P) { return braid_ceil_log2(P); }
static int floor_pow2(int P) { return 1 << braid_floor_log2(P); }

/* latency part of bcube: factor P into groups, largest factor <= base first,
 * else the smallest prime factor (a group larger than base) */
static double bcube_latency(int P, int base)
{
    double t = 0;
    while (P > 1) {
        int g = 0;
        for (int d = base < P ? base : P; d >= 2 && !g; d--)
            if (0 == P % d) g = d;
        if (!g)
            for (int d = base + 1; d <= P && !g; d++)
                if (0 == P % d) g = d;
        t += 2.0 * (ALPHA + (g - 2) * OVERHEAD);
        P /= g;
    }
    return t;
}

static double allreduce_time(int alg, double P, int p, double S)
{
    switch (alg) {
    case BRAID_ALLREDUCE_RING_CHUNKED:
        return 4 * (P - 1) * ALPHA + 2 * (P - 1) / P * S * BETA + S / (2 * P) * GAMMA;
    case BRAID_ALLREDUCE_HALVING_DOUBLING: {
        double t = 2 * braid_floor_log2(p) * ALPHA + 2.0 * (p - 1) / p * S * BETA
                 + (double)(p - 1) / p * S * GAMMA;
        if (p != (int)P) t += 2 * ALPHA + 2 * S * BETA + S * GAMMA;
        return t;
    }
    case BRAID_ALLREDUCE_BCUBE:
        return bcube_latency((int)P, BCUBE_BASE) + 2 * (P - 1) / P * S * BETA
             + (P - 1) / P * S * GAMMA;
    case BRAID_ALLREDUCE_RECURSIVE_DOUBLING: {
        double t = braid_floor_log2(p) * (ALPHA + S * (BETA + GAMMA));
        if (p != (int)P) t += 2 * (ALPHA + S * BETA) + S * GAMMA;
        return t;
    }
    default:
        return -1;
    }
}

double braid_model_time_us(braid_coll_t coll, int alg, int comm_size, size_t msg_bytes)
{
    if (comm_size < 2) return comm_size == 1 ? 0.0 : -1.0;
    double P = comm_size, S = (double)msg_bytes;
    int L = ceil_lg(comm_size), p = floor_pow2(comm_size);
    switch (coll) {
    case BRAID_COLL_ALLREDUCE:
        return allreduce_time(alg, P, p, S);
    case BRAID_COLL_BCAST:
        if (BRAID_BCAST_BINOMIAL == alg) return L * (ALPHA + S * BETA);
        if (BRAID_BCAST_SCATTER_ALLGATHER == alg)
            return (L + P - 1) * ALPHA + 2 * (P - 1) / P * S * BETA;
        return -1;
    case BRAID_COLL_REDUCE:
        if (BRAID_REDUCE_BINOMIAL == alg) return L * (ALPHA + S * (BETA + GAMMA));
        if (BRAID_REDUCE_DBTREE == alg) {
            double k = S > DBTREE_CHUNK ? (double)((msg_bytes + 65535) / 65536) : 1;
            return (L + k - 1) * (ALPHA + OVERHEAD + S / k * (BETA + GAMMA));
        }
        return -1;
    case BRAID_COLL_REDUCE_SCATTER:
        if (BRAID_REDUCE_SCATTER_RING == alg) return (P - 1) * (ALPHA + S / P * (BETA + GAMMA));
        if (BRAID_REDUCE_SCATTER_HALVING_DOUBLING == alg && p == comm_size)
            return braid_floor_log2(p) * ALPHA + (P - 1) / P * S * (BETA + GAMMA);
        return -1;
    case BRAID_COLL_ALLGATHER:
        if (BRAID_ALLGATHER_RING == alg) return (P - 1) * (ALPHA + S * BETA);
        if (BRAID_ALLGATHER_RECURSIVE_DOUBLING == alg) {
            double t = braid_floor_log2(p) * ALPHA + (P - 1) * S * BETA;
            if (p != comm_size) t += 2 * ALPHA + P * S * BETA;
            return t;
        }
        return -1;
    case BRAID_COLL_BARRIER:
        if (BRAID_BARRIER_ALL_TO_ALL == alg) return ALPHA + (P - 2) * OVERHEAD;
        if (BRAID_BARRIER_DISSEMINATION == alg) return L * ALPHA;
        return -1;
    default:
        return -1;
    }
}
