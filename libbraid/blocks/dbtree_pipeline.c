/*
 * dbtree_pipeline.c - the lock-step, chunked double-binary-tree engine; the
 * schedule is described in dbtree_pipeline.h.
 */
#include "dbtree_pipeline.h"

#include <string.h>

/* one step of a tag per tree and direction; chunks of one (pair, step)
 * match in posting order */
enum { STEP_UP = 0, STEP_DOWN = 1, STEP_FWD = 2, STEPS_PER_TREE = 3 };

typedef struct tree_state {
    braid_tree_node_t node;
    int root;
    int depth;
    int D;                /* depth bound, identical on every rank */
    size_t first, count;  /* element range of this tree */
    size_t nchunks;
    bool fwd_send, fwd_recv;
    int fwd_peer;
    char *slot[BRAID_TREE_MAX_CHILDREN][2];
    char *tmp;            /* chunk accumulator when o->acc is NULL */
} tree_state_t;

typedef struct run {
    braid_comm_t *c;
    const braid_coll_args_t *a;
    const braid_dbt_opts_t *o;
    size_t es;
    braid_req_t reqs[2 * (2 * BRAID_TREE_MAX_CHILDREN + 3)];
    int nreq;
} run_t;

size_t braid_dbt_chunk_elems(const braid_coll_args_t *a, int P)
{
    size_t es = a->esize ? a->esize : 1;
    size_t bytes = a->params.chunk_bytes;
    if (0 == bytes) {
        int D = braid_ceil_log2(P > 1 ? P : 2);
        size_t half = (a->count - a->count / 2) * es;
        bytes = BRAID_DBTREE_CHUNK_DEFAULT;
        while (bytes > BRAID_DBTREE_CHUNK_MIN && half / bytes < (size_t)(4 * D)) bytes /= 2;
    }
    size_t n = bytes / es;
    return n ? n : 1;
}

/* [k*chunk, ...) of tree t: offset in elements from 0 and length */
static bool chunk_range(const run_t *r, const tree_state_t *t, long long k, size_t *off, size_t *n)
{
    if (k < 0 || (size_t)k >= t->nchunks) return false;
    size_t start = (size_t)k * r->o->chunk;
    *off = t->first + start;
    *n = t->count - start < r->o->chunk ? t->count - start : r->o->chunk;
    return true;
}

static int post_recv(run_t *r, int peer, braid_step_t step, void *buf, size_t n)
{
    return braid_irecv(r->c, peer, step, buf, n * r->es, &r->reqs[r->nreq++]);
}

static int post_send(run_t *r, int peer, braid_step_t step, const void *buf, size_t n)
{
    return braid_isend(r->c, peer, step, buf, n * r->es, &r->reqs[r->nreq++]);
}

/* where chunk `off` of the up phase is accumulated and sent from */
static char *up_buf(const run_t *r, const tree_state_t *t, size_t off)
{
    if (r->o->acc) return r->o->acc + off * r->es;
    if (0 == t->node.nchildren) return (char *)r->o->in + off * r->es;
    return t->tmp;
}

/* fold the children's chunk (received last step into slot `par`) into dst;
 * in rank order when ordered: lower child first as the left operand, the
 * upper child as the right one */
static void fold_children(const run_t *r, const tree_state_t *t, int par, char *dst, size_t n)
{
    const braid_op_t *op = &r->a->op;
    int me = r->c->rank;
    for (int i = 0; i < t->node.nchildren; i++) {
        char *buf = t->slot[i][par];
        if (!r->o->ordered || t->node.child[i] < me) {
            op->fn(buf, dst, n, op->arg);
        } else {
            op->fn(dst, buf, n, op->arg);
            braid_copy(dst, buf, n * r->es);
        }
    }
}

static int post_receives(run_t *r, tree_state_t *t, int w, long long s)
{
    const braid_dbt_opts_t *o = r->o;
    braid_step_t base = (braid_step_t)(w * STEPS_PER_TREE);
    size_t off, n;
    int rc = BRAID_OK;
    if (o->up && chunk_range(r, t, s - (t->D - t->depth - 1), &off, &n))
        for (int i = 0; i < t->node.nchildren && BRAID_OK == rc; i++)
            rc = post_recv(r, t->node.child[i], base + STEP_UP, t->slot[i][s & 1], n);
    long long B = o->up ? t->D : 0;
    if (BRAID_OK == rc && o->down && t->node.parent >= 0 &&
        chunk_range(r, t, s - (B + t->depth - 1), &off, &n))
        rc = post_recv(r, t->node.parent, base + STEP_DOWN, o->acc + off * r->es, n);
    if (BRAID_OK == rc && t->fwd_recv && chunk_range(r, t, s - t->D, &off, &n))
        rc = post_recv(r, t->fwd_peer, base + STEP_FWD, o->acc + off * r->es, n);
    return rc;
}

static int reduce_and_send(run_t *r, tree_state_t *t, int w, long long s)
{
    const braid_dbt_opts_t *o = r->o;
    braid_step_t base = (braid_step_t)(w * STEPS_PER_TREE);
    size_t off, n;
    int rc = BRAID_OK;
    if (o->up && chunk_range(r, t, s - (t->D - t->depth), &off, &n)) {
        char *buf = up_buf(r, t, off);
        if (t->node.nchildren > 0) {
            if (NULL == o->acc) braid_copy(buf, o->in + off * r->es, n * r->es);
            fold_children(r, t, (int)((s - 1) & 1), buf, n);
        }
        if (t->node.parent >= 0) rc = post_send(r, t->node.parent, base + STEP_UP, buf, n);
        else if (t->fwd_send) rc = post_send(r, t->fwd_peer, base + STEP_FWD, buf, n);
    }
    long long B = o->up ? t->D : 0;
    if (BRAID_OK == rc && o->down && chunk_range(r, t, s - (B + t->depth), &off, &n))
        for (int i = 0; i < t->node.nchildren && BRAID_OK == rc; i++)
            rc = post_send(r, t->node.child[i], base + STEP_DOWN, o->acc + off * r->es, n);
    return rc;
}

static void tree_init(tree_state_t *t, braid_comm_t *c, const braid_coll_args_t *a,
                      const braid_dbtree_t *trees, const braid_dbt_opts_t *o, int w)
{
    memset(t, 0, sizeof(*t));
    braid_dbtree_get(trees, w, c->rank, &t->node);
    t->root = braid_dbtree_get_root(trees, w);
    t->depth = braid_dbtree_get_depth(trees, w, c->rank);
    t->D = braid_dbtree_max_depth(trees, w);
    t->first = braid_block_start(a->count, 2, w);
    t->count = braid_block_count(a->count, 2, w);
    t->nchunks = (t->count + o->chunk - 1) / o->chunk;
    if (o->up && o->fwd_root >= 0 && o->fwd_root != t->root) {
        t->fwd_send = c->rank == t->root;
        t->fwd_recv = c->rank == o->fwd_root;
        t->fwd_peer = t->fwd_send ? o->fwd_root : t->root;
    }
}

/* buffers: two receive slots per child and a chunk accumulator, per tree */
static int tree_buffers(tree_state_t *t, const braid_coll_args_t *a, const braid_dbt_opts_t *o)
{
    if (!o->up) return BRAID_OK;
    size_t cb = o->chunk * a->esize;
    size_t nbuf = (size_t)(2 * (t[0].node.nchildren + t[1].node.nchildren) + 2);
    char *p = braid_scratch_get(a->scratch, 0, nbuf * cb);
    if (NULL == p) return BRAID_ERR_NOMEM;
    for (int w = 0; w < 2; w++) {
        for (int i = 0; i < t[w].node.nchildren; i++)
            for (int k = 0; k < 2; k++) { t[w].slot[i][k] = p; p += cb; }
        t[w].tmp = p;
        p += cb;
    }
    return BRAID_OK;
}

int braid_dbt_run(braid_comm_t *c, const braid_coll_args_t *a, const braid_dbtree_t *trees,
                  const braid_dbt_opts_t *o)
{
    if (c->size < 2 || 0 == a->count) return BRAID_OK;
    tree_state_t t[2];
    long long last = -1;
    for (int w = 0; w < 2; w++) {
        tree_init(&t[w], c, a, trees, o, w);
        if (0 == t[w].nchunks) continue;
        long long end = (long long)t[w].nchunks - 1 + (o->up ? t[w].D : 0) + (o->down ? t[w].D : 0);
        if (end > last) last = end;
    }
    int rc = tree_buffers(t, a, o);
    if (BRAID_OK != rc) return rc;
    run_t r = { c, a, o, a->esize, { NULL }, 0 };
    for (long long s = 0; s <= last && BRAID_OK == rc; s++) {
        r.nreq = 0;
        for (int w = 0; w < 2 && BRAID_OK == rc; w++) rc = post_receives(&r, &t[w], w, s);
        for (int w = 0; w < 2 && BRAID_OK == rc; w++) rc = reduce_and_send(&r, &t[w], w, s);
        int wrc = braid_waitall(c, r.nreq, r.reqs);
        if (BRAID_OK == rc) rc = wrc;
    }
    return rc;
}
