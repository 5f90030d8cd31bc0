/*
 * ring_pipeline.c - the pipelined ring shared by allreduce_ring_chunked,
 * reduce_scatter_ring and allgather_ring (see braid_blocks.h).
 *
 * The ring is one stream of steps t = 0..T-1 (T = rs_steps + ag_steps): in
 * step t rank r sends block sb(t) to r+1 and receives block rb(t) from r-1,
 * and rb(t) == sb(t+1), so every block received (and reduced) in one step is
 * forwarded in the next. Each block is cut into chunks of braid_chunk_elems
 * elements; a received chunk is reduced and forwarded at once, while the
 * next BRAID_PIPE_DEPTH-1 receives are already posted (double buffering and
 * more). Sends are never waited for except
 *  - in the allgather phase, before receiving into a region that the
 *    reduce-scatter phase sent from: the k-th allgather receive item covers
 *    exactly the region of the k-th send item, so it waits for that send;
 *  - at the end.
 * Senders and receivers cut a block into the same chunks, and both post
 * them in stream order, so messages match even when steps fold.
 */
#include "braid_blocks.h"

#include <string.h>

size_t braid_bound_even(const void *ctx, int b)
{
    const braid_even_t *e = ctx;
    return braid_block_start(e->count, e->n, b);
}

size_t braid_bound_table(const void *ctx, int b)
{
    return ((const size_t *)ctx)[b];
}

size_t *braid_rs_offsets(const braid_coll_args_t *a, int P, int slot)
{
    size_t *off = braid_scratch_get(a->scratch, slot, ((size_t)P + 1) * sizeof(size_t));
    if (NULL == off) return NULL;
    off[0] = 0;
    for (int b = 0; b < P; b++) off[b + 1] = off[b] + (a->rcounts ? a->rcounts[b] : a->count);
    return off;
}

int braid_rs_single(const braid_coll_args_t *a)
{
    size_t n = a->rcounts ? a->rcounts[0] : a->count;
    if (NULL != a->sbuf && a->sbuf != a->rbuf && n > 0) braid_copy(a->rbuf, a->sbuf, n * a->esize);
    return BRAID_OK;
}

typedef struct ring_state {
    braid_comm_t *c;
    const braid_coll_args_t *a;
    const braid_ring_t *ring;
    int P, r, T;
    size_t ce, es;
    size_t stride;   /* elements per scratch chunk slot */
} ring_state_t;

static int mod(int v, int P) { return ((v % P) + P) % P; }

static int send_block(const ring_state_t *s, int t)
{
    int rs = s->ring->rs_steps;
    return t < rs ? mod(s->r - t - 1, s->P) : mod(s->r - (t - rs), s->P);
}

static int recv_block(const ring_state_t *s, int t)
{
    int rs = s->ring->rs_steps;
    return t < rs ? mod(s->r - t - 2, s->P) : mod(s->r - (t - rs) - 1, s->P);
}

static size_t blk_start(const ring_state_t *s, int b) { return s->ring->bound(s->ring->bound_ctx, b); }
static size_t blk_len(const ring_state_t *s, int b) { return blk_start(s, b + 1) - blk_start(s, b); }

/* a position in the receive stream */
typedef struct cursor {
    int t;
    size_t c;
} cursor_t;

/* move to the first existing item at or after *p */
static void settle(const ring_state_t *s, cursor_t *p)
{
    while (p->t < s->T && p->c >= braid_nchunks(blk_len(s, recv_block(s, p->t)), s->ce)) {
        p->t++;
        p->c = 0;
    }
}

static void advance(const ring_state_t *s, cursor_t *p)
{
    p->c++;
    settle(s, p);
}

/* where the receive of item p lands */
static char *recv_ptr(const ring_state_t *s, cursor_t p, char *scratch, size_t slot)
{
    const braid_ring_t *g = s->ring;
    int b = recv_block(s, p.t);
    size_t e0 = blk_start(s, b) + p.c * s->ce;
    if (p.t >= g->rs_steps) return g->work + e0 * s->es;
    if (NULL != g->own_dst && b == s->r) return g->own_dst + p.c * s->ce * s->es;
    if (NULL != g->in) return g->work + e0 * s->es;
    return scratch + slot * s->stride * s->es;
}

int braid_ring_run(braid_comm_t *c, const braid_coll_args_t *a, const braid_ring_t *ring)
{
    ring_state_t s = { c, a, ring, c->size, c->rank, ring->rs_steps + ring->ag_steps,
                       braid_chunk_elems(a), a->esize, 0 };
    if (s.P < 2 || s.T == 0) return BRAID_OK;
    const int D = BRAID_PIPE_DEPTH;
    int right = (s.r + 1) % s.P, left = (s.r - 1 + s.P) % s.P;

    /* send items: chunks of every block sent */
    size_t nsend = 0, max_chunk = 0;
    for (int t = 0; t < s.T; t++) nsend += braid_nchunks(blk_len(&s, send_block(&s, t)), s.ce);
    for (int b = 0; b < s.P; b++) {
        size_t n = blk_len(&s, b);
        if (n > max_chunk) max_chunk = n < s.ce ? n : s.ce;
    }
    s.stride = max_chunk;
    braid_req_t *sreq = braid_scratch_get(a->scratch, BRAID_SLOT_TABLE, nsend * sizeof(braid_req_t));
    if (NULL == sreq) return BRAID_ERR_NOMEM;
    char *scratch = NULL;
    if (ring->rs_steps > 0 && NULL == ring->in) {
        scratch = braid_scratch_get(a->scratch, BRAID_SLOT_CHUNKS, (size_t)D * max_chunk * s.es);
        if (NULL == scratch) return BRAID_ERR_NOMEM;
    }
    for (size_t i = 0; i < nsend; i++) sreq[i] = NULL;
    braid_req_t rreq[BRAID_PIPE_DEPTH] = { NULL };
    size_t nsent = 0;
    int rc = BRAID_OK;

    /* step 0: the first block straight from its source */
    {
        size_t n = blk_len(&s, send_block(&s, 0)), nch = braid_nchunks(n, s.ce);
        for (size_t i = 0; i < nch && BRAID_OK == rc; i++, nsent++)
            rc = braid_isend(c, right, 0, ring->first_src + i * s.ce * s.es,
                             braid_chunk_len(n, s.ce, i) * s.es, &sreq[nsent]);
    }

    cursor_t post = { 0, 0 }, proc = { 0, 0 };
    settle(&s, &post);
    settle(&s, &proc);
    size_t nposted = 0, nproc = 0, ag_posted = 0;
    while (BRAID_OK == rc && proc.t < s.T) {
        /* keep up to D receives in flight */
        while (BRAID_OK == rc && post.t < s.T && nposted < nproc + (size_t)D) {
            if (post.t >= ring->rs_steps && ring->rs_steps > 0) {
                /* the region was sent by send item ag_posted: wait for it */
                if (ag_posted >= nsent) break;   /* not sent yet: post later */
                rc = braid_waitall(c, 1, &sreq[ag_posted]);
                if (BRAID_OK != rc) break;
                ag_posted++;
            }
            int b = recv_block(&s, post.t);
            size_t n = braid_chunk_len(blk_len(&s, b), s.ce, post.c);
            rc = braid_irecv(c, left, (braid_step_t)post.t,
                             recv_ptr(&s, post, scratch, nposted % (size_t)D), n * s.es,
                             &rreq[nposted % (size_t)D]);
            nposted++;
            advance(&s, &post);
        }
        if (BRAID_OK != rc) break;
        rc = braid_waitall(c, 1, &rreq[nproc % (size_t)D]);
        if (BRAID_OK != rc) break;

        int b = recv_block(&s, proc.t);
        size_t e0 = blk_start(&s, b) + proc.c * s.ce;
        size_t n = braid_chunk_len(blk_len(&s, b), s.ce, proc.c);
        char *got = recv_ptr(&s, proc, scratch, nproc % (size_t)D);
        if (proc.t < ring->rs_steps) {
            if (NULL != ring->in) {
                /* received into its final place: fold in this rank's input */
                a->op.fn(ring->in + e0 * s.es, got, n, a->op.arg);
            } else {
                a->op.fn(got, ring->work + e0 * s.es, n, a->op.arg);
            }
        }
        if (proc.t + 1 < s.T) {
            rc = braid_isend(c, right, (braid_step_t)(proc.t + 1), ring->work + e0 * s.es,
                             n * s.es, &sreq[nsent]);
            nsent++;
        }
        nproc++;
        advance(&s, &proc);
    }

    /* complete everything still outstanding (also after an error) */
    int wrc = braid_waitall(c, D, rreq);
    int src = nsent > 0 ? braid_waitall(c, (int)nsent, sreq) : BRAID_OK;
    if (BRAID_OK == rc) rc = wrc;
    if (BRAID_OK == rc) rc = src;
    return rc;
}
