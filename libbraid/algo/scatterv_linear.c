/*
 * scatterv linear: the root sends every rank its block, of that rank's size
 *
 *   steps: 1     messages: at most P - 1 (empty blocks are not sent), all
 *                sent by the root at once
 *   bytes sent: the root the sum of the others' blocks, the others none
 *
 * Only the root knows every count, so nobody but the root can forward a
 * block: it posts one send per non-empty block, straight from its
 * displacement in sbuf, and waits for them together. Request table:
 * scratch slot 3 (braid_root_blocks). In place (the root's rbuf NULL) the root's block stays
 * in sbuf.
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"

int braid_scatterv_linear(braid_comm_t *c, const braid_coll_args_t *a)
{
    int root = a->root;
    size_t es = a->esize;
    if (c->rank != root) return a->count ? braid_recv(c, root, 0, a->rbuf, a->count * es) : BRAID_OK;
    if (NULL != a->rbuf && a->scounts[root])
        braid_copy(a->rbuf, (const char *)a->sbuf + a->sdispls[root] * es, a->scounts[root] * es);
    return braid_root_blocks(c, a, true, a->sbuf, a->scounts, a->sdispls);
}

/* alpha + (P-2) o + (P-1) S beta at the root, S the mean block */
double braid_cost_scatterv_linear(int P, double S)
{
    return BRAID_COST_ALPHA + (P - 2) * BRAID_COST_O + (P - 1) * S * BRAID_COST_BETA;
}
