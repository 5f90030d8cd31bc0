/*
 * inproc_transport.c - see inproc_transport.h.
 *
 * Each rank's queues are guarded by its own mutex, and the rank sleeps on
 * its own condition variable. A send copies its bytes into a message: when a
 * matching receive is already posted the copy goes straight into it,
 * otherwise the message waits in the destination's unexpected queue. A
 * receive first searches the unexpected queue, oldest first. Sends therefore
 * complete at once and waitall only waits for receives.
 *
 * As over UCX, a message carries the sequence number its call hands isend
 * (braid_comm_t.seq), which must match as the source and folded step
 * must, so that collectives in flight at once on one communicator never
 * take each other's messages; and a waitall handed a yield (a request's
 * call) tests its requests and, while any is incomplete, gives the thread
 * back through it instead of sleeping.
 */
#include "inproc_transport.h"
#include "braid_tag.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct braid_req {
    int src;
    uint32_t step;
    uint32_t seq;
    void *buf;
    size_t len;
    int done;
    int error;
    struct braid_req *next;     /* in the owner's posted queue */
};

typedef struct msg {
    int src;
    uint32_t step;
    uint32_t seq;
    size_t len;
    struct msg *next;
    char data[];
} msg_t;

typedef struct world {
    int P;
    pthread_mutex_t *mu;         /* per rank: guards its queues */
    pthread_cond_t *cv;          /* per rank: signalled when its receive completes */
    msg_t **unexpected;          /* per destination, FIFO */
    struct braid_req **posted;   /* per destination, FIFO */
} world_t;

typedef struct rank_state {
    world_t *w;
    int rank;
} rank_state_t;

static void append_msg(msg_t **head, msg_t *m)
{
    while (*head) head = &(*head)->next;
    *head = m;
}

static void append_req(struct braid_req **head, struct braid_req *r)
{
    while (*head) head = &(*head)->next;
    *head = r;
}

static void deliver(struct braid_req *r, const void *data, size_t len)
{
    if (len > r->len) {
        fprintf(stderr, "inproc: message of %zu bytes truncated to %zu (src %d step %u)\n",
                len, r->len, r->src, r->step);
        r->error = 1;
        len = r->len;
    }
    if (len) memcpy(r->buf, data, len);
    r->done = 1;
}

static int inproc_isend(void *state, uint32_t seq, int peer, braid_step_t step,
                        const void *buf, size_t len, braid_req_t *req)
{
    rank_state_t *s = state;
    world_t *w = s->w;
    uint32_t fstep = braid_tag_fold_step(step);
    *req = NULL;
    if (peer < 0 || peer >= w->P || peer == s->rank) {
        fprintf(stderr, "inproc: rank %d sends to invalid peer %d\n", s->rank, peer);
        return BRAID_ERR_ARG;
    }
    pthread_mutex_lock(&w->mu[peer]);
    for (struct braid_req **pp = &w->posted[peer]; *pp; pp = &(*pp)->next) {
        struct braid_req *r = *pp;
        if (r->src == s->rank && r->step == fstep && r->seq == seq) {
            *pp = r->next;
            deliver(r, buf, len);
            pthread_cond_signal(&w->cv[peer]);
            pthread_mutex_unlock(&w->mu[peer]);
            return BRAID_OK;
        }
    }
    msg_t *m = malloc(sizeof(*m) + len);
    if (NULL == m) {
        pthread_mutex_unlock(&w->mu[peer]);
        return BRAID_ERR_NOMEM;
    }
    m->src = s->rank;
    m->step = fstep;
    m->seq = seq;
    m->len = len;
    m->next = NULL;
    if (len) memcpy(m->data, buf, len);
    append_msg(&w->unexpected[peer], m);
    pthread_mutex_unlock(&w->mu[peer]);
    return BRAID_OK;
}

static int inproc_irecv(void *state, uint32_t seq, int peer, braid_step_t step,
                        void *buf, size_t len, braid_req_t *req)
{
    rank_state_t *s = state;
    world_t *w = s->w;
    if (peer < 0 || peer >= w->P || peer == s->rank) {
        fprintf(stderr, "inproc: rank %d receives from invalid peer %d\n", s->rank, peer);
        *req = NULL;
        return BRAID_ERR_ARG;
    }
    struct braid_req *r = calloc(1, sizeof(*r));
    if (NULL == r) return BRAID_ERR_NOMEM;
    r->src = peer;
    r->step = braid_tag_fold_step(step);
    r->seq = seq;
    r->buf = buf;
    r->len = len;
    pthread_mutex_lock(&w->mu[s->rank]);
    for (msg_t **mp = &w->unexpected[s->rank]; *mp; mp = &(*mp)->next) {
        msg_t *m = *mp;
        if (m->src == peer && m->step == r->step && m->seq == r->seq) {
            *mp = m->next;
            deliver(r, m->data, m->len);
            free(m);
            break;
        }
    }
    if (!r->done) append_req(&w->posted[s->rank], r);
    pthread_mutex_unlock(&w->mu[s->rank]);
    *req = r;
    return BRAID_OK;
}

/* A request's wait: complete what is done, and give the thread back
 * through y while anything is left (the request's resumer polls). */
static int yielding_waitall(const braid_yield_t *y, world_t *w, int rank, int n, braid_req_t *reqs)
{
    int rc = BRAID_OK;
    for (;;) {
        bool pending = false;
        pthread_mutex_lock(&w->mu[rank]);
        for (int i = 0; i < n; i++) {
            struct braid_req *r = reqs[i];
            if (NULL == r) continue;
            if (!r->done) {
                pending = true;
                continue;
            }
            if (r->error) rc = BRAID_ERR_TRANSPORT;
            free(r);
            reqs[i] = NULL;
        }
        pthread_mutex_unlock(&w->mu[rank]);
        if (!pending) return rc;
        y->now(y->arg);
    }
}

static int inproc_waitall(void *state, const braid_yield_t *y, int n, braid_req_t *reqs)
{
    rank_state_t *s = state;
    world_t *w = s->w;
    int rc = BRAID_OK;
    if (NULL != y) return yielding_waitall(y, w, s->rank, n, reqs);
    pthread_mutex_lock(&w->mu[s->rank]);
    for (int i = 0; i < n; i++) {
        struct braid_req *r = reqs[i];
        if (NULL == r) continue;
        while (!r->done) pthread_cond_wait(&w->cv[s->rank], &w->mu[s->rank]);
        if (r->error) rc = BRAID_ERR_TRANSPORT;
        free(r);
        reqs[i] = NULL;
    }
    pthread_mutex_unlock(&w->mu[s->rank]);
    return rc;
}

static const braid_transport_ops_t inproc_ops = {
    .isend = inproc_isend,
    .irecv = inproc_irecv,
    .waitall = inproc_waitall,
};

typedef struct thread_arg {
    braid_comm_t comm;
    rank_state_t state;
    inproc_rank_fn_t fn;
    void *arg;
    int rc;
} thread_arg_t;

static void *thread_main(void *p)
{
    thread_arg_t *t = p;
    t->rc = t->fn(&t->comm, t->arg);
    return NULL;
}

inproc_result_t inproc_run(int P, inproc_rank_fn_t fn, void **args, void *shared_arg)
{
    inproc_result_t res = { BRAID_OK, calloc((size_t)P, sizeof(braid_stats_t)), 0 };
    world_t w;
    w.P = P;
    w.mu = calloc((size_t)P, sizeof(*w.mu));
    w.cv = calloc((size_t)P, sizeof(*w.cv));
    for (int r = 0; r < P; r++) {
        pthread_mutex_init(&w.mu[r], NULL);
        pthread_cond_init(&w.cv[r], NULL);
    }
    w.unexpected = calloc((size_t)P, sizeof(*w.unexpected));
    w.posted = calloc((size_t)P, sizeof(*w.posted));
    thread_arg_t *ta = calloc((size_t)P, sizeof(*ta));
    pthread_t *th = calloc((size_t)P, sizeof(*th));
    for (int r = 0; r < P; r++) {
        ta[r].state.w = &w;
        ta[r].state.rank = r;
        ta[r].comm.ops = &inproc_ops;
        ta[r].comm.state = &ta[r].state;
        ta[r].comm.rank = r;
        ta[r].comm.size = P;
        ta[r].fn = fn;
        ta[r].arg = args ? args[r] : shared_arg;
        pthread_create(&th[r], NULL, thread_main, &ta[r]);
    }
    for (int r = 0; r < P; r++) {
        pthread_join(th[r], NULL);
        if (BRAID_OK == res.rc && BRAID_OK != ta[r].rc) res.rc = ta[r].rc;
        res.stats[r] = ta[r].comm.stats;
    }
    for (int r = 0; r < P; r++) {
        while (w.unexpected[r]) {
            msg_t *m = w.unexpected[r];
            w.unexpected[r] = m->next;
            free(m);
            res.leftover_msgs++;
        }
        while (w.posted[r]) {
            struct braid_req *q = w.posted[r];
            w.posted[r] = q->next;
            free(q);
        }
    }
    free(w.unexpected);
    free(w.posted);
    free(ta);
    free(th);
    for (int r = 0; r < P; r++) {
        pthread_mutex_destroy(&w.mu[r]);
        pthread_cond_destroy(&w.cv[r]);
    }
    free(w.mu);
    free(w.cv);
    return res;
}
