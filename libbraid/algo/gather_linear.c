/*
 * gather linear: every rank sends its block to the root
 *
 *   steps: 1     messages: P - 1, all received by the root at once
 *   bytes sent per rank: S (the root: none); the root receives (P-1) S
 *
 * The root posts every receive straight into its rbuf and waits for them
 * together: no copy and no intermediate rank, at the price of P - 1
 * messages arriving at one rank. Best for few ranks or large blocks,
 * where binomial's extra copies per level cost more than the root's
 * per-message overhead. Request table: scratch slot 3.
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_blocks.h"
#include "braid_registry.h"

int braid_gather_linear(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank, root = a->root;
    size_t bytes = a->count * a->esize;
    if (0 == bytes) return BRAID_OK;
    if (r != root) return braid_send(c, root, 0, a->sbuf, bytes);
    char *out = a->rbuf;
    if (NULL != a->sbuf) braid_copy(out + (size_t)root * bytes, a->sbuf, bytes);
    if (1 == P) return BRAID_OK;
    braid_req_t *reqs = braid_scratch_get(a->scratch, BRAID_SLOT_TABLE, (size_t)P * sizeof *reqs);
    if (NULL == reqs) return BRAID_ERR_NOMEM;
    int nreq = 0, rc = BRAID_OK;
    for (int q = 0; q < P && BRAID_OK == rc; q++)
        if (q != root) rc = braid_irecv(c, q, 0, out + (size_t)q * bytes, bytes, &reqs[nreq++]);
    int wrc = braid_waitall(c, nreq, reqs);
    return BRAID_OK != rc ? rc : wrc;
}

/* alpha + (P-2) o + (P-1) S beta at the root */
double braid_cost_gather_linear(int P, double S)
{
    return BRAID_COST_ALPHA + (P - 2) * BRAID_COST_O + (P - 1) * S * BRAID_COST_BETA;
}
