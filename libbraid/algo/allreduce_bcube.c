/*
 * allreduce bcube (Gloo's allreduce_bcube, generalised to any P)
 *
 *   steps: 2m, where P = g_0 * g_1 * ... * g_{m-1} (m = log_B P for P = B^m)
 *   bytes sent per rank: 2S(P-1)/P when every range splits evenly (Gloo's
 *     2 * sum_s S/B^s * (B-1)); messages: 2 * sum (g_s - 1)
 *
 * P is factored into group sizes (braid_bcube_factor: prime factors packed
 * into groups of at most B = a->params.bcube_base, default 4, or the two
 * near-sqrt(P) groups for BRAID_BCUBE_AUTO; a prime larger than B is one
 * group). Ranks are mixed-radix numbers; at step s a rank's group is the g_s
 * ranks differing from it in digit s only.
 *  1. Reduce-scatter, s = 0..m-1: the rank's current range is cut into g_s
 *     blocks; it sends block j to the member with digit j, receives its own
 *     block (digit d) from all g_s - 1 members at once, folds them in, and
 *     keeps block d as its next range.
 *  2. Allgather, s = m-1..0: it sends its block to the g_s - 1 members and
 *     receives theirs straight into place.
 * Blocks come from braid_block_start, so when a range has fewer elements
 * than the group some blocks are empty: those messages are skipped on both
 * sides and no element is reduced twice. Each element is reduced at one
 * rank and copied out, so all ranks hold identical bits.
 * Non-commutative ops: step-0 groups are contiguous ranks and later steps
 * combine contiguous blocks of ranks, so folding the members in digit order
 * keeps rank order.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_trees.h"

#include <string.h>

typedef struct bcube {
    braid_comm_t *c;
    const braid_coll_args_t *a;
    int m;
    int g[BRAID_BCUBE_MAX_STEPS];
    int digit[BRAID_BCUBE_MAX_STEPS];
    size_t lo[BRAID_BCUBE_MAX_STEPS + 1];   /* range at the start of step s */
    size_t len[BRAID_BCUBE_MAX_STEPS + 1];
    char *scratch;
    braid_req_t *reqs;                      /* 2 * max g, from scratch slot 1 */
} bcube_t;

static char *at(const bcube_t *b, size_t elem) { return (char *)b->a->rbuf + elem * b->a->esize; }

/* fold the received copies of my block into it in digit order */
static int fold(bcube_t *b, int s, braid_req_t *rreq)
{
    const braid_op_t *op = &b->a->op;
    size_t n = b->len[s + 1], bytes = n * b->a->esize;
    int me = b->digit[s], g = b->g[s], rc = BRAID_OK;
    char *acc = at(b, b->lo[s + 1]);
    for (int j = me - 1; j >= 0; j--) {          /* lower digits: left operands */
        int wrc = braid_waitall(b->c, 1, &rreq[j]);
        if (BRAID_OK != wrc) rc = wrc;
        else op->fn(b->scratch + (size_t)j * bytes, acc, n, op->arg);
    }
    char *cur = acc;
    for (int j = me + 1; j < g; j++) {           /* higher digits: right operands */
        char *buf = b->scratch + (size_t)j * bytes;
        int wrc = braid_waitall(b->c, 1, &rreq[j]);
        if (BRAID_OK != wrc) { rc = wrc; continue; }
        if (op->commutative) {
            op->fn(buf, acc, n, op->arg);
        } else {
            op->fn(cur, buf, n, op->arg);
            cur = buf;
        }
    }
    if (BRAID_OK == rc && cur != acc) braid_copy(acc, cur, bytes);
    return rc;
}

static int reduce_scatter_step(bcube_t *b, int s)
{
    int g = b->g[s], me = b->digit[s], rc = BRAID_OK;
    size_t mine = b->len[s + 1], es = b->a->esize;
    braid_req_t *rreq = b->reqs, *sreq = b->reqs + g;
    for (int j = 0; j < g; j++) rreq[j] = sreq[j] = NULL;
    for (int j = 0; j < g && BRAID_OK == rc; j++) {
        if (j == me) continue;
        int peer = braid_bcube_member(b->g, s, b->c->rank, j);
        if (mine > 0)
            rc = braid_irecv(b->c, peer, (braid_step_t)s, b->scratch + (size_t)j * mine * es,
                             mine * es, &rreq[j]);
        size_t cnt = braid_block_count(b->len[s], g, j);
        if (BRAID_OK == rc && cnt > 0)
            rc = braid_isend(b->c, peer, (braid_step_t)s,
                             at(b, b->lo[s] + braid_block_start(b->len[s], g, j)), cnt * es, &sreq[j]);
    }
    if (BRAID_OK == rc) rc = fold(b, s, rreq);
    int wrc = braid_waitall(b->c, g, rreq);
    if (BRAID_OK == rc) rc = wrc;
    wrc = braid_waitall(b->c, g, sreq);
    return BRAID_OK != rc ? rc : wrc;
}

static int allgather_step(bcube_t *b, int s)
{
    int g = b->g[s], me = b->digit[s], rc = BRAID_OK;
    size_t mine = b->len[s + 1], es = b->a->esize;
    braid_req_t *reqs = b->reqs;
    int n = 0;
    braid_step_t step = (braid_step_t)(b->m + s);
    for (int j = 0; j < g && BRAID_OK == rc; j++) {
        if (j == me) continue;
        int peer = braid_bcube_member(b->g, s, b->c->rank, j);
        size_t cnt = braid_block_count(b->len[s], g, j);
        if (cnt > 0)
            rc = braid_irecv(b->c, peer, step, at(b, b->lo[s] + braid_block_start(b->len[s], g, j)),
                             cnt * es, &reqs[n++]);
        if (BRAID_OK == rc && mine > 0)
            rc = braid_isend(b->c, peer, step, at(b, b->lo[s + 1]), mine * es, &reqs[n++]);
    }
    int wrc = braid_waitall(b->c, n, reqs);
    return BRAID_OK != rc ? rc : wrc;
}

int braid_allreduce_bcube(braid_comm_t *c, const braid_coll_args_t *a)
{
    braid_copy_input(a, a->count * a->esize);
    if (c->size < 2 || 0 == a->count) return BRAID_OK;
    bcube_t b;
    b.c = c;
    b.a = a;
    b.m = braid_bcube_factor(c->size, a->params.bcube_base, b.g);
    b.lo[0] = 0;
    b.len[0] = a->count;
    size_t need = 0;
    int gmax = 1;
    for (int s = 0; s < b.m; s++) {
        b.digit[s] = braid_bcube_digit(b.g, s, c->rank);
        b.lo[s + 1] = b.lo[s] + braid_block_start(b.len[s], b.g[s], b.digit[s]);
        b.len[s + 1] = braid_block_count(b.len[s], b.g[s], b.digit[s]);
        size_t sz = (size_t)b.g[s] * b.len[s + 1];
        if (sz > need) need = sz;
        if (b.g[s] > gmax) gmax = b.g[s];
    }
    /* slot j of step s holds member j's copy of my block (slot `me` unused) */
    b.scratch = braid_scratch_get(a->scratch, 0, need * a->esize);
    b.reqs = braid_scratch_get(a->scratch, 1, 2 * (size_t)gmax * sizeof(braid_req_t));
    if (NULL == b.scratch || NULL == b.reqs) return BRAID_ERR_NOMEM;
    int rc = BRAID_OK;
    for (int s = 0; s < b.m && BRAID_OK == rc; s++) rc = reduce_scatter_step(&b, s);
    for (int s = b.m - 1; s >= 0 && BRAID_OK == rc; s--) rc = allgather_step(&b, s);
    return rc;
}

/* Latency of the groups: P factored with the largest factor <= base first,
 * else the smallest prime factor (a group larger than base); a group of g
 * costs two steps of g-1 messages each. */
static double bcube_latency(int P, int base)
{
    double t = 0;
    while (P > 1) {
        int g = 0;
        for (int d = base < P ? base : P; d >= 2 && !g; d--)
            if (0 == P % d) g = d;
        for (int d = base + 1; d <= P && !g; d++)
            if (0 == P % d) g = d;
        t += 2.0 * (BRAID_COST_ALPHA + (g - 2) * BRAID_COST_O);
        P /= g;
    }
    return t;
}

/* base 4: sum_i 2(alpha + (g_i - 2) o) + 2(P-1)/P S beta + (P-1)/P S gamma */
double braid_cost_allreduce_bcube(int P, double S)
{
    return bcube_latency(P, 4) + 2.0 * (P - 1) / P * S * BRAID_COST_BETA
         + (double)(P - 1) / P * S * BRAID_COST_GAMMA;
}
