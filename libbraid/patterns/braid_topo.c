/*
 * braid_topo.c - node grouping and communicator views (braid_topo.h).
 */
#include "braid_topo.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* node grouping                                                        */
/* ------------------------------------------------------------------ */

typedef struct { uint64_t id; int rank; } id_rank_t;
typedef struct { int first, start, len; } group_t;

static int by_id_then_rank(const void *x, const void *y)
{
    const id_rank_t *a = x, *b = y;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

static int by_first_rank(const void *x, const void *y)
{
    const group_t *a = x, *b = y;
    return (a->first > b->first) - (a->first < b->first);
}

void braid_topo_fini(braid_topo_t *t)
{
    free(t->node_of);
    free(t->order);
    free(t->node_start);
    memset(t, 0, sizeof(*t));
}

/* Sort (id, rank) pairs so every node's ranks are adjacent and ascending,
 * then order the nodes by their lowest rank: O(P log P) for any P. */
int braid_topo_init(braid_topo_t *t, int size, const uint64_t *node_keys)
{
    memset(t, 0, sizeof(*t));
    if (size < 1 || NULL == node_keys) return BRAID_ERR_ARG;
    id_rank_t *pairs = malloc((size_t)size * sizeof(*pairs));
    group_t *groups = malloc((size_t)size * sizeof(*groups));
    t->node_of = malloc((size_t)size * sizeof(int));
    t->order = malloc((size_t)size * sizeof(int));
    t->node_start = malloc(((size_t)size + 1) * sizeof(int));
    if (NULL == pairs || NULL == groups || NULL == t->node_of || NULL == t->order ||
        NULL == t->node_start) {
        free(pairs);
        free(groups);
        braid_topo_fini(t);
        return BRAID_ERR_NOMEM;
    }
    for (int r = 0; r < size; r++) {
        pairs[r].id = node_keys[r];
        pairs[r].rank = r;
    }
    qsort(pairs, (size_t)size, sizeof(*pairs), by_id_then_rank);
    int n = 0;
    for (int i = 0; i < size; i++) {
        if (0 == i || pairs[i].id != pairs[i - 1].id) {
            groups[n].first = pairs[i].rank;
            groups[n].start = i;
            groups[n].len = 0;
            n++;
        }
        groups[n - 1].len++;
    }
    qsort(groups, (size_t)n, sizeof(*groups), by_first_rank);
    int pos = 0;
    for (int k = 0; k < n; k++) {
        t->node_start[k] = pos;
        for (int j = 0; j < groups[k].len; j++) {
            int r = pairs[groups[k].start + j].rank;
            t->order[pos++] = r;
            t->node_of[r] = k;
        }
    }
    t->node_start[n] = size;
    t->size = size;
    t->nnodes = n;
    free(pairs);
    free(groups);
    return BRAID_OK;
}

bool braid_topo_is_grouped(const braid_topo_t *t)
{
    for (int i = 0; i < t->size; i++)
        if (t->order[i] != i) return false;
    return true;
}

void braid_topo_leaders(const braid_topo_t *t, int *out)
{
    for (int k = 0; k < t->nnodes; k++) out[k] = t->order[t->node_start[k]];
}

/* ------------------------------------------------------------------ */
/* views                                                                */
/* ------------------------------------------------------------------ */

/* A view's messages go out on its parent with the call's number as they
 * came (a view's own seq is its caller's business) and count there too. */
static int view_isend(void *state, uint32_t seq, int peer, braid_step_t step, const void *buf,
                      size_t len, braid_req_t *req)
{
    braid_subcomm_t *s = state;
    *req = NULL;
    if (peer < 0 || peer >= s->comm.size) return BRAID_ERR_ARG;
    braid_comm_t *p = s->parent;
    p->stats.msgs_sent++;
    p->stats.bytes_sent += len;
    return p->ops->isend(p->state, seq, s->members[peer], step, buf, len, req);
}

static int view_irecv(void *state, uint32_t seq, int peer, braid_step_t step, void *buf,
                      size_t len, braid_req_t *req)
{
    braid_subcomm_t *s = state;
    *req = NULL;
    if (peer < 0 || peer >= s->comm.size) return BRAID_ERR_ARG;
    braid_comm_t *p = s->parent;
    return p->ops->irecv(p->state, seq, s->members[peer], step, buf, len, req);
}

static int view_waitall(void *state, const braid_yield_t *y, int n, braid_req_t *reqs)
{
    braid_subcomm_t *s = state;
    return s->parent->ops->waitall(s->parent->state, y, n, reqs);
}

static const braid_transport_ops_t view_ops = {
    .isend = view_isend,
    .irecv = view_irecv,
    .waitall = view_waitall,
};

int braid_subcomm_init(braid_subcomm_t *s, braid_comm_t *parent, int n, const int *members)
{
    memset(s, 0, sizeof(*s));
    if (n < 1 || n > parent->size || NULL == members) return BRAID_ERR_ARG;
    s->members = malloc((size_t)n * sizeof(int));
    s->view_rank = malloc((size_t)parent->size * sizeof(int));
    if (NULL == s->members || NULL == s->view_rank) {
        braid_subcomm_fini(s);
        return BRAID_ERR_NOMEM;
    }
    for (int r = 0; r < parent->size; r++) s->view_rank[r] = -1;
    for (int i = 0; i < n; i++) {
        int r = members[i];
        if (r < 0 || r >= parent->size || s->view_rank[r] >= 0) {
            braid_subcomm_fini(s);
            return BRAID_ERR_ARG;
        }
        s->view_rank[r] = i;
        s->members[i] = r;
    }
    s->parent = parent;
    s->comm.ops = &view_ops;
    s->comm.state = s;
    s->comm.size = n;
    s->comm.rank = s->view_rank[parent->rank];
    return BRAID_OK;
}

void braid_subcomm_fini(braid_subcomm_t *s)
{
    free(s->members);
    free(s->view_rank);
    memset(s, 0, sizeof(*s));
}

int braid_view_allgather(braid_subcomm_t *v, const braid_comm_t *call, braid_algo_fn_t fn,
                         const braid_coll_args_t *a, size_t block, char *tmp)
{
    int P = v->parent->size, me = v->parent->rank, vme = v->comm.rank;
    char *out = a->rbuf;
    const char *own = NULL != a->sbuf ? a->sbuf : out + (size_t)me * block;
    braid_copy(tmp + (size_t)vme * block, own, block);
    braid_coll_args_t va = *a;
    va.sbuf = NULL;
    va.rbuf = tmp;
    braid_comm_t vc = braid_comm_for(&v->comm, call->seq, call->yield);
    int rc = fn(&vc, &va);
    braid_comm_count(&v->comm, &vc);
    if (BRAID_OK != rc) return rc;
    for (int i = 0; i < P; i++)
        if (i != vme || own != out + (size_t)me * block)
            braid_copy(out + (size_t)v->members[i] * block, tmp + (size_t)i * block, block);
    return BRAID_OK;
}

int braid_view_reduce_scatter(braid_subcomm_t *v, const braid_comm_t *call, braid_algo_fn_t fn,
                              const braid_coll_args_t *a, char *tmp, size_t *counts)
{
    int P = v->parent->size;
    size_t es = a->esize;
    const char *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    size_t *start = counts, *vcounts = counts + P + 1;
    start[0] = 0;
    for (int b = 0; b < P; b++) start[b + 1] = start[b] + (a->rcounts ? a->rcounts[b] : a->count);
    size_t pos = 0;
    for (int i = 0; i < P; i++) {
        int b = v->members[i];
        size_t n = start[b + 1] - start[b];
        braid_copy(tmp + pos * es, in + start[b] * es, n * es);
        vcounts[i] = n;
        pos += n;
    }
    braid_coll_args_t va = *a;
    va.sbuf = tmp;
    if (NULL != a->rcounts) va.rcounts = vcounts;
    braid_comm_t vc = braid_comm_for(&v->comm, call->seq, call->yield);
    int rc = fn(&vc, &va);
    braid_comm_count(&v->comm, &vc);
    return rc;
}

uint64_t braid_topo_node_key(const char *name)
{
    uint64_t h = 14695981039346656037ULL;
    for (const char *p = name ? name : ""; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    return h;
}
