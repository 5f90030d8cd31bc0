/*
 * gatherv linear: every rank sends its block, of its own size, to the root
 *
 *   steps: 1     messages: at most P - 1 (empty blocks are not sent), all
 *                received by the root at once
 *   bytes sent per rank: its block (the root: none); the root receives
 *   the sum of the others' blocks
 *
 * A rank knows only its own count, so no rank can forward another's block
 * without first learning its size: the root posts one receive per
 * non-empty block, straight to its displacement in rbuf, and waits for
 * them together. The same pattern serves MPICH and UCC for the v forms.
 * Request table: scratch slot 3 (braid_root_blocks).
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"

int braid_gatherv_linear(braid_comm_t *c, const braid_coll_args_t *a)
{
    int root = a->root;
    size_t es = a->esize;
    if (c->rank != root) return a->count ? braid_send(c, root, 0, a->sbuf, a->count * es) : BRAID_OK;
    char *out = a->rbuf;
    if (NULL != a->sbuf && a->rcounts[root])
        braid_copy(out + a->displs[root] * es, a->sbuf, a->rcounts[root] * es);
    return braid_root_blocks(c, a, false, out, a->rcounts, a->displs);
}

/* alpha + (P-2) o + (P-1) S beta at the root, S the mean block */
double braid_cost_gatherv_linear(int P, double S)
{
    return BRAID_COST_ALPHA + (P - 2) * BRAID_COST_O + (P - 1) * S * BRAID_COST_BETA;
}
