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
 * scratch slot 3. In place (the root's rbuf NULL) the root's block stays
 * in sbuf.
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_engines.h"
#include "braid_registry.h"

int braid_scatterv_linear(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank, root = a->root;
    size_t es = a->esize;
    if (r != root) return a->count ? braid_recv(c, root, 0, a->rbuf, a->count * es) : BRAID_OK;
    const char *in = a->sbuf;
    if (NULL != a->rbuf && a->scounts[root])
        memcpy(a->rbuf, in + a->sdispls[root] * es, a->scounts[root] * es);
    if (1 == P) return BRAID_OK;
    braid_req_t *reqs = braid_scratch_get(a->scratch, BRAID_SLOT_TABLE, (size_t)P * sizeof *reqs);
    if (NULL == reqs) return BRAID_ERR_NOMEM;
    int nreq = 0, rc = BRAID_OK;
    for (int q = 0; q < P && BRAID_OK == rc; q++)
        if (q != root && a->scounts[q])
            rc = braid_isend(c, q, 0, in + a->sdispls[q] * es, a->scounts[q] * es, &reqs[nreq++]);
    int wrc = braid_waitall(c, nreq, reqs);
    return BRAID_OK != rc ? rc : wrc;
}

/* alpha + (P-2) o + (P-1) S beta at the root, S the mean block */
double braid_cost_scatterv_linear(int P, double S)
{
    return BRAID_COST_ALPHA + (P - 2) * BRAID_COST_O + (P - 1) * S * BRAID_COST_BETA;
}
