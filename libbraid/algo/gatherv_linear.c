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
 * Request table: scratch slot 3.
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_engines.h"
#include "braid_registry.h"

int braid_gatherv_linear(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank, root = a->root;
    size_t es = a->esize;
    if (r != root) return a->count ? braid_send(c, root, 0, a->sbuf, a->count * es) : BRAID_OK;
    char *out = a->rbuf;
    if (NULL != a->sbuf && a->rcounts[root])
        memcpy(out + a->displs[root] * es, a->sbuf, a->rcounts[root] * es);
    if (1 == P) return BRAID_OK;
    braid_req_t *reqs = braid_scratch_get(a->scratch, BRAID_SLOT_TABLE, (size_t)P * sizeof *reqs);
    if (NULL == reqs) return BRAID_ERR_NOMEM;
    int nreq = 0, rc = BRAID_OK;
    for (int q = 0; q < P && BRAID_OK == rc; q++)
        if (q != root && a->rcounts[q])
            rc = braid_irecv(c, q, 0, out + a->displs[q] * es, a->rcounts[q] * es, &reqs[nreq++]);
    int wrc = braid_waitall(c, nreq, reqs);
    return BRAID_OK != rc ? rc : wrc;
}

/* alpha + (P-2) o + (P-1) S beta at the root, S the mean block */
double braid_cost_gatherv_linear(int P, double S)
{
    return BRAID_COST_ALPHA + (P - 2) * BRAID_COST_O + (P - 1) * S * BRAID_COST_BETA;
}
