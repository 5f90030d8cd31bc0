/*
 * exscan recursive_doubling (MPI_Exscan): rbuf = in[0] op ... op in[r-1];
 * rank 0's rbuf is not written (MPI leaves it undefined)
 *
 *   steps: ceil(lg P)   bytes sent per rank: at most ceil(lg P) S
 *   reductions per rank: at most 2 ceil(lg P) S (window and result)
 *
 * Rank r exchanges its window's reduction with r XOR 2^k in step k
 * (libbraid/blocks/prefix.c): lg P message times, against the P - 1 of a
 * chain, for a second fold per step. Any op: windows are folded in rank
 * order.
 */
#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"

int braid_exscan_recursive_doubling(braid_comm_t *c, const braid_coll_args_t *a)
{
    return braid_prefix_doubling(c, a, true);
}

/* ceil(lg P) (alpha + S beta + 2 S gamma) */
double braid_cost_exscan_recursive_doubling(int P, double S)
{
    return braid_cost_L(P) * (BRAID_COST_ALPHA + S * BRAID_COST_BETA + 2 * S * BRAID_COST_GAMMA);
}
