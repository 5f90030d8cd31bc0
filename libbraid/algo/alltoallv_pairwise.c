/*
 * alltoallv pairwise exchange, any P: block i of sbuf (scounts[i]
 * elements at sdispls[i]) to rank i, rank i's block (rcounts[i] at
 * displs[i]) into rbuf
 *
 *   steps: P-1      messages per rank: one to each other rank whose block
 *                   is not empty
 *   bytes sent per rank: its blocks for the others, sum(scounts) - scounts[r]
 *
 * In step k = 1..P-1 rank r sends its block for r+k and receives the
 * block of r-k (mod P), each straight from and into its place: one
 * partner to send to and one to receive from per step, as alltoall's
 * pairwise. Both ends of a pair know the block's size, so an empty block
 * is neither sent nor received. In place (sbuf NULL) the input is rbuf
 * in the receive layout, and a block received must not land on one still
 * to be sent: the ranks swap blocks pairwise (in_place, below), the same
 * messages in P rounds, through one block of scratch.
 */
#include <string.h>

#include "braid_cost.h"
#include "braid_registry.h"

/* In place: round k = 0..P-1 pairs r with q = (k - r) mod P both ways (the
 * pairing is symmetric; r's own round is idle). MPI makes the pair's blocks
 * the same size (rcounts[q] at r is rcounts[r] at q), so r's block for q
 * goes to scratch and q's arrives in its place: one block of scratch, the
 * largest. */
static int in_place(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t es = a->esize, most = 0;
    for (int q = 0; q < P; q++)
        if (q != r && a->rcounts[q] * es > most) most = a->rcounts[q] * es;
    char *tmp = braid_scratch_get(a->scratch, 0, most);
    if (NULL == tmp) return BRAID_ERR_NOMEM;
    for (int k = 0; k < P; k++) {
        int q = (k - r + P) % P;
        size_t n = a->rcounts[q] * es;
        if (q == r || 0 == n) continue;
        char *block = (char *)a->rbuf + a->displs[q] * es;
        braid_copy(tmp, block, n);
        int rc = braid_sendrecv(c, q, (braid_step_t)k, tmp, n, q, (braid_step_t)k, block, n);
        if (BRAID_OK != rc) return rc;
    }
    return BRAID_OK;
}

int braid_alltoallv_pairwise(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, r = c->rank;
    size_t es = a->esize;
    char *out = a->rbuf;
    const char *in = a->sbuf;
    const size_t *sc = a->scounts, *sd = a->sdispls;
    if (NULL == in) return in_place(c, a);
    if (sc[r]) memmove(out + a->displs[r] * es, in + sd[r] * es, sc[r] * es);
    for (int k = 1; k < P; k++) {
        int to = (r + k) % P, from = (r - k + P) % P;
        braid_req_t reqs[2] = { NULL, NULL };
        int rc = BRAID_OK;
        if (a->rcounts[from])
            rc = braid_irecv(c, from, (braid_step_t)k, out + a->displs[from] * es,
                             a->rcounts[from] * es, &reqs[0]);
        if (sc[to] && BRAID_OK == rc)
            rc = braid_isend(c, to, (braid_step_t)k, in + sd[to] * es, sc[to] * es, &reqs[1]);
        int wrc = braid_waitall(c, 2, reqs);
        if (BRAID_OK != rc || BRAID_OK != wrc) return BRAID_OK != rc ? rc : wrc;
    }
    return BRAID_OK;
}

/* (P-1) (alpha + S beta), S the mean block */
double braid_cost_alltoallv_pairwise(int P, double S)
{
    return (P - 1) * (BRAID_COST_ALPHA + S * BRAID_COST_BETA);
}
