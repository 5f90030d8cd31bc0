/*
 * alltoallv shm: the blocks through the node's shared-memory cells, when
 * every rank's blocks fit its slot; pairwise messages otherwise
 *
 *   cells:  steps: 1   bytes: each rank copies its blocks in (with P
 *           offsets) and the blocks for it out
 *
 * A rank knows only its own blocks' sizes, so whether the cells carry the
 * call is agreed in the call itself: every rank writes into its slot a
 * flag (its blocks and a table of where each starts fit the slot), the
 * table and the blocks, and arrives; once all have arrived each rank sees
 * every flag. If all are set it copies the block for it out of every
 * slot, at the offset the owner's table gives; otherwise every rank, having
 * seen the same flags, runs alltoallv_pairwise instead. In place (sbuf
 * NULL) the input is rbuf in the receive layout; it is in the slot before
 * any rank writes its rbuf. a->count is unused (0): the dispatch's fit_shm
 * asks the segment only for its existence.
 */
#include <stdint.h>
#include <string.h>

#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

int braid_alltoallv_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size, me = c->rank;
    size_t es = a->esize;
    braid_shm_t *s = braid_shm_of(c, 0);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    const char *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    const size_t *sc = NULL != a->sbuf ? a->scounts : a->rcounts;
    const size_t *sd = NULL != a->sbuf ? a->sdispls : a->displs;
    size_t head = (size_t)(P + 1) * sizeof(uint64_t), need = head;
    for (int q = 0; q < P; q++) need += sc[q] * es;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_claim(s, seq);
    unsigned char *slot = braid_shm_slot(s, seq, me);
    uint64_t fits = NULL != braid_shm_of(c, need), off = head;
    memcpy(slot, &fits, sizeof fits);
    for (int q = 0; q < P && fits; q++) {
        memcpy(slot + (size_t)(q + 1) * sizeof(uint64_t), &off, sizeof off);
        memcpy(slot + off, in + sd[q] * es, sc[q] * es);
        off += sc[q] * es;
    }
    braid_shm_arrive(s, seq);
    braid_shm_wait_all(s, seq);
    bool all = true;
    for (int q = 0; q < P && all; q++) {
        uint64_t f;
        memcpy(&f, braid_shm_slot(s, seq, q), sizeof f);
        all = 0 != f;
    }
    for (int q = 0; q < P && all; q++) {
        const unsigned char *theirs = braid_shm_slot(s, seq, q);
        uint64_t at;
        memcpy(&at, theirs + (size_t)(me + 1) * sizeof(uint64_t), sizeof at);
        memcpy((char *)a->rbuf + a->displs[q] * es, theirs + at, a->rcounts[q] * es);
    }
    braid_shm_done(s, seq);
    return all ? BRAID_OK : braid_alltoallv_pairwise(c, a);
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_alltoallv_shm)
