/*
 * scatter linear: the root sends every rank its block
 *
 *   steps: 1     messages: P - 1, all sent by the root at once
 *   bytes sent: the root (P-1) S, the others none
 *
 * The root posts every send straight from its sbuf and waits for them
 * together: no copy and no forwarding, at the price of P - 1 messages
 * leaving one rank. Request table: scratch slot 3.
 * In place (the root's rbuf NULL) the root's block stays in sbuf.
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"

int braid_scatter_linear(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank, root = a->root;
    size_t bytes = a->count * a->esize;
    if (0 == bytes) return BRAID_OK;
    if (r != root) return braid_recv(c, root, 0, a->rbuf, bytes);
    const char *in = a->sbuf;
    if (NULL != a->rbuf) braid_copy(a->rbuf, in + (size_t)root * bytes, bytes);
    if (1 == P) return BRAID_OK;
    braid_req_t *reqs = braid_scratch_get(a->scratch, BRAID_SLOT_TABLE, (size_t)P * sizeof *reqs);
    if (NULL == reqs) return BRAID_ERR_NOMEM;
    int nreq = 0, rc = BRAID_OK;
    for (int q = 0; q < P && BRAID_OK == rc; q++)
        if (q != root) rc = braid_isend(c, q, 0, in + (size_t)q * bytes, bytes, &reqs[nreq++]);
    int wrc = braid_waitall(c, nreq, reqs);
    return BRAID_OK != rc ? rc : wrc;
}

/* alpha + (P-2) o + (P-1) S beta at the root */
double braid_cost_scatter_linear(int P, double S)
{
    return BRAID_COST_ALPHA + (P - 2) * BRAID_COST_O + (P - 1) * S * BRAID_COST_BETA;
}
