/*
 * braid_sim_sched.c - coroutine scheduler, counting transport and cost
 * model of the simulator (interface and model in braid_sim.h).
 *
 * Switching: a rank is entered the first time with setcontext() on its own
 * stack (made by makecontext); afterwards the scheduler and the ranks switch
 * with _setjmp/_longjmp, which save no signal mask and so make no system
 * call (swapcontext costs ~0.4 us here, dominating runs of 30M messages).
 * _FORTIFY_SOURCE is turned off for this file: its longjmp check refuses to
 * jump to another stack.
 */
#undef _FORTIFY_SOURCE
#define _GNU_SOURCE
#include "braid_sim.h"
#include "braid_tag.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

struct braid_req {
    struct braid_req *next;   /* posted-receive list, free list */
    int owner;
    int src;
    uint32_t step;
    void *buf;
    size_t len;
    bool done, error;
    double t_done;
};

typedef struct sim_msg {
    struct sim_msg *next;
    int src;
    uint32_t step;
    size_t len;
    double t_arrive;
    unsigned char *data;      /* real mode: eager copy */
} sim_msg_t;

enum { RANK_NEW, RANK_READY, RANK_RUNNING, RANK_BLOCKED, RANK_DONE };

typedef struct sim_rank {
    int rank, node, state;
    bool queued;
    braid_comm_t comm;
    jmp_buf jb;
    ucontext_t uc;
    char *map;                /* stack mapping incl. guard page */
    size_t map_len;
    double clock, inj[2];     /* [0] intra, [1] inter */
    struct braid_req *posted, *posted_tail;
    sim_msg_t *unexp, *unexp_tail;
    int rc;
} sim_rank_t;

typedef struct sim_world {
    braid_sim_config_t cfg;
    sim_rank_t *ranks;
    braid_sim_rank_stats_t *stats;
    int *ready;               /* ring buffer of P + 1 */
    int rhead, rtail;
    jmp_buf sched_jb;
    braid_sim_rank_fn_t fn;
    void *arg;
    struct braid_req *free_reqs;
    sim_msg_t *free_msgs;
    int transport_rc;
} sim_world_t;

static sim_world_t *g_world;
static sim_rank_t *g_cur;

void braid_sim_model_default(braid_sim_model_t *m)
{
    m->alpha_intra = 1.5;
    m->beta_intra = 1.0 / 8000.0;          /* 8 GB/s */
    m->alpha_inter = 5.0;
    m->beta_inter = 1.0 / 25000.0;         /* 200 Gb/s = 25 GB/s per node */
    m->gamma = 1.0 / 10000.0;              /* 10 GB/s */
    m->overhead = 0.25;
}

int braid_sim_nodes(int P, int ranks_per_node, bool cyclic, int *out)
{
    if (ranks_per_node < 1) ranks_per_node = 1;
    int nodes = (P + ranks_per_node - 1) / ranks_per_node;
    for (int r = 0; r < P; r++) out[r] = cyclic ? r % nodes : r / ranks_per_node;
    return nodes;
}

void braid_sim_nic_shares(const braid_sim_result_t *res, int P, const int *node_of, int nodes,
                          int *share)
{
    for (int n = 0; n < nodes; n++) share[n] = 0;
    for (int r = 0; r < P; r++)
        if (res->ranks[r].msgs_inter > 0) share[node_of[r]]++;
    for (int n = 0; n < nodes; n++)
        if (share[n] < 1) share[n] = 1;
}

/* ------------------------------------------------------------------ */
/* scheduler                                                           */
/* ------------------------------------------------------------------ */

static void make_ready(sim_world_t *w, sim_rank_t *r)
{
    if (r->queued || RANK_DONE == r->state) return;
    r->queued = true;
    w->ready[w->rtail] = r->rank;
    w->rtail = (w->rtail + 1) % (w->cfg.P + 1);
}

static sim_rank_t *next_ready(sim_world_t *w)
{
    if (w->rhead == w->rtail) return NULL;
    sim_rank_t *r = &w->ranks[w->ready[w->rhead]];
    w->rhead = (w->rhead + 1) % (w->cfg.P + 1);
    r->queued = false;
    return r;
}

static void trampoline(void)
{
    sim_world_t *w = g_world;
    sim_rank_t *r = g_cur;
    r->rc = w->fn(&r->comm, w->arg);
    r->state = RANK_DONE;
    w->stats[r->rank].t_end = r->clock;
    _longjmp(w->sched_jb, 1);
}

/* run r until it blocks or returns */
static void switch_to(sim_world_t *w, sim_rank_t *r)
{
    g_cur = r;
    if (0 == _setjmp(w->sched_jb)) {
        int first = RANK_NEW == r->state;
        r->state = RANK_RUNNING;
        if (first) setcontext(&r->uc);
        _longjmp(r->jb, 1);
    }
}

/* called on the running rank's stack: give the core back */
static void block_current(void)
{
    sim_rank_t *r = g_cur;
    r->state = RANK_BLOCKED;
    if (0 == _setjmp(r->jb)) _longjmp(g_world->sched_jb, 1);
}

/* ------------------------------------------------------------------ */
/* transport                                                           */
/* ------------------------------------------------------------------ */

static struct braid_req *req_new(sim_world_t *w)
{
    struct braid_req *q = w->free_reqs;
    if (q) w->free_reqs = q->next;
    else q = malloc(sizeof(*q));
    if (q) memset(q, 0, sizeof(*q));
    return q;
}

static void req_free(sim_world_t *w, struct braid_req *q)
{
    q->next = w->free_reqs;
    w->free_reqs = q;
}

static sim_msg_t *msg_new(sim_world_t *w)
{
    sim_msg_t *m = w->free_msgs;
    if (m) w->free_msgs = m->next;
    else m = malloc(sizeof(*m));
    if (m) memset(m, 0, sizeof(*m));
    return m;
}

static void msg_free(sim_world_t *w, sim_msg_t *m)
{
    free(m->data);
    m->data = NULL;
    m->next = w->free_msgs;
    w->free_msgs = m;
}

/* a message meets its receive: complete it and wake the receiver */
static void deliver(sim_world_t *w, struct braid_req *q, const void *data, size_t len,
                    double t_arrive)
{
    if (len > q->len) {
        fprintf(stderr, "braid_sim: message of %zu bytes truncated to %zu (src %d step %u)\n",
                len, q->len, q->src, q->step);
        q->error = true;
        len = q->len;
    }
    if (!w->cfg.phantom && len > 0 && data) memcpy(q->buf, data, len);
    q->done = true;
    q->t_done = t_arrive;
    braid_sim_rank_stats_t *st = &w->stats[q->owner];
    st->msgs_recv++;
    st->bytes_recv += len;
    sim_rank_t *o = &w->ranks[q->owner];
    if (RANK_BLOCKED == o->state) make_ready(w, o);
}

static int sim_isend(void *state, uint32_t seq, int peer, braid_step_t step, const void *buf,
                     size_t len, braid_req_t *req)
{
    (void)seq;   /* the simulator runs one call at a time */
    sim_rank_t *s = state;
    sim_world_t *w = g_world;
    *req = NULL;
    if (peer < 0 || peer >= w->cfg.P || peer == s->rank) {
        fprintf(stderr, "braid_sim: rank %d sends to invalid peer %d\n", s->rank, peer);
        return BRAID_ERR_ARG;
    }
    sim_rank_t *d = &w->ranks[peer];
    const braid_sim_model_t *m = &w->cfg.model;
    int inter = s->node != d->node;
    s->clock += m->overhead;
    double start = s->clock > s->inj[inter] ? s->clock : s->inj[inter];
    double beta = m->beta_intra;
    if (inter) beta = m->beta_inter * (w->cfg.nic_share ? w->cfg.nic_share[s->node] : 1);
    s->inj[inter] = start + (double)len * beta;
    double arrive = s->inj[inter] + (inter ? m->alpha_inter : m->alpha_intra);
    braid_sim_rank_stats_t *st = &w->stats[s->rank];
    if (inter) {
        st->msgs_inter++;
        st->bytes_inter += len;
    }
    if (w->cfg.timeline)
        fprintf(w->cfg.timeline, "%d,%d,%u,%zu,%d,%.4f,%.4f\n", s->rank, peer, step, len, inter,
                start, arrive);

    struct braid_req *sq = req_new(w);
    if (NULL == sq) return BRAID_ERR_NOMEM;
    sq->owner = s->rank;
    sq->done = true;
    sq->t_done = s->inj[inter];
    *req = sq;

    uint32_t fstep = braid_tag_fold_step(step);
    for (struct braid_req **pp = &d->posted, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
        struct braid_req *q = *pp;
        if (q->src == s->rank && q->step == fstep) {
            *pp = q->next;
            if (d->posted_tail == q) d->posted_tail = prev;
            deliver(w, q, buf, len, arrive);
            return BRAID_OK;
        }
    }
    sim_msg_t *msg = msg_new(w);
    if (NULL == msg) return BRAID_ERR_NOMEM;
    msg->src = s->rank;
    msg->step = fstep;
    msg->len = len;
    msg->t_arrive = arrive;
    if (!w->cfg.phantom && len > 0) {
        msg->data = malloc(len);
        if (NULL == msg->data) return BRAID_ERR_NOMEM;
        memcpy(msg->data, buf, len);
    }
    if (d->unexp_tail) d->unexp_tail->next = msg;
    else d->unexp = msg;
    d->unexp_tail = msg;
    return BRAID_OK;
}

static int sim_irecv(void *state, uint32_t seq, int peer, braid_step_t step, void *buf, size_t len,
                     braid_req_t *req)
{
    (void)seq;   /* the simulator runs one call at a time */
    sim_rank_t *s = state;
    sim_world_t *w = g_world;
    *req = NULL;
    if (peer < 0 || peer >= w->cfg.P || peer == s->rank) {
        fprintf(stderr, "braid_sim: rank %d receives from invalid peer %d\n", s->rank, peer);
        return BRAID_ERR_ARG;
    }
    struct braid_req *q = req_new(w);
    if (NULL == q) return BRAID_ERR_NOMEM;
    q->owner = s->rank;
    q->src = peer;
    q->step = braid_tag_fold_step(step);
    q->buf = buf;
    q->len = len;
    *req = q;
    for (sim_msg_t **mp = &s->unexp, *prev = NULL; *mp; prev = *mp, mp = &(*mp)->next) {
        sim_msg_t *m = *mp;
        if (m->src == peer && m->step == q->step) {
            *mp = m->next;
            if (s->unexp_tail == m) s->unexp_tail = prev;
            deliver(w, q, m->data, m->len, m->t_arrive);
            msg_free(w, m);
            return BRAID_OK;
        }
    }
    if (s->posted_tail) s->posted_tail->next = q;
    else s->posted = q;
    s->posted_tail = q;
    return BRAID_OK;
}

static int sim_waitall(void *state, const braid_yield_t *y, int n, braid_req_t *reqs)
{
    (void)y;
    sim_rank_t *s = state;
    sim_world_t *w = g_world;
    for (;;) {
        int pending = 0;
        for (int i = 0; i < n; i++)
            if (reqs[i] && !reqs[i]->done) pending++;
        if (0 == pending) break;
        block_current();
    }
    int rc = BRAID_OK;
    for (int i = 0; i < n; i++) {
        struct braid_req *q = reqs[i];
        if (NULL == q) continue;
        if (q->t_done > s->clock) s->clock = q->t_done;
        if (q->error) rc = BRAID_ERR_TRANSPORT;
        req_free(w, q);
        reqs[i] = NULL;
    }
    if (BRAID_OK != rc && BRAID_OK == w->transport_rc) w->transport_rc = rc;
    return rc;
}

static const braid_transport_ops_t sim_ops = { sim_isend, sim_irecv, sim_waitall };

void braid_sim_charge_reduce(size_t bytes)
{
    if (NULL == g_cur) return;
    g_cur->clock += (double)bytes * g_world->cfg.model.gamma;
    g_world->stats[g_cur->rank].bytes_reduced += bytes;
}

/* ------------------------------------------------------------------ */
/* set-up and tear-down                                                */
/* ------------------------------------------------------------------ */

static int rank_init(sim_world_t *w, sim_rank_t *r, int rank, size_t stack_bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    r->rank = rank;
    r->node = w->cfg.node_of ? w->cfg.node_of[rank] : 0;
    r->state = RANK_NEW;
    r->comm.ops = &sim_ops;
    r->comm.state = r;
    r->comm.rank = rank;
    r->comm.size = w->cfg.P;
    r->map_len = stack_bytes + (size_t)page;
    r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (MAP_FAILED == r->map) {
        r->map = NULL;
        return -1;
    }
    mprotect(r->map, (size_t)page, PROT_NONE);   /* guard against overflow */
    if (0 != getcontext(&r->uc)) return -1;
    r->uc.uc_stack.ss_sp = r->map + page;
    r->uc.uc_stack.ss_size = stack_bytes;
    r->uc.uc_link = NULL;
    makecontext(&r->uc, trampoline, 0);
    return 0;
}

static void world_free(sim_world_t *w)
{
    for (int i = 0; w->ranks && i < w->cfg.P; i++) {
        sim_rank_t *r = &w->ranks[i];
        if (r->map) munmap(r->map, r->map_len);
        for (struct braid_req *q = r->posted, *n; q; q = n) {
            n = q->next;
            free(q);
        }
        for (sim_msg_t *m = r->unexp, *n; m; m = n) {
            n = m->next;
            free(m->data);
            free(m);
        }
    }
    for (struct braid_req *q = w->free_reqs, *n; q; q = n) {
        n = q->next;
        free(q);
    }
    for (sim_msg_t *m = w->free_msgs, *n; m; m = n) {
        n = m->next;
        free(m);
    }
    free(w->ranks);
    free(w->ready);
}

int braid_sim_run(const braid_sim_config_t *cfg, braid_sim_rank_fn_t fn, void *arg,
                  braid_sim_result_t *res)
{
    memset(res, 0, sizeof(*res));
    if (cfg->P < 1) return -1;
    sim_world_t w;
    memset(&w, 0, sizeof(w));
    w.cfg = *cfg;
    w.fn = fn;
    w.arg = arg;
    size_t stack = cfg->stack_bytes ? cfg->stack_bytes : (size_t)256 << 10;
    w.ranks = calloc((size_t)cfg->P, sizeof(*w.ranks));
    w.ready = calloc((size_t)cfg->P + 1, sizeof(int));
    res->ranks = calloc((size_t)cfg->P, sizeof(*res->ranks));
    w.stats = res->ranks;
    int ok = w.ranks && w.ready && res->ranks;
    for (int i = 0; ok && i < cfg->P; i++) ok = 0 == rank_init(&w, &w.ranks[i], i, stack);
    if (!ok) {
        world_free(&w);
        braid_sim_result_free(res);
        return -1;
    }
    if (cfg->timeline) fprintf(cfg->timeline, "src,dst,step,bytes,inter,t_start_us,t_arrive_us\n");

    g_world = &w;
    for (int i = 0; i < cfg->P; i++) make_ready(&w, &w.ranks[i]);
    for (sim_rank_t *r; NULL != (r = next_ready(&w));) switch_to(&w, r);
    g_cur = NULL;

    res->rc = w.transport_rc;
    for (int i = 0; i < cfg->P; i++) {
        sim_rank_t *r = &w.ranks[i];
        braid_sim_rank_stats_t *st = &res->ranks[i];
        if (RANK_DONE != r->state) {
            res->deadlock = true;
            st->t_end = r->clock;
        } else if (BRAID_OK != r->rc && BRAID_OK == res->rc) {
            res->rc = r->rc;
        }
        for (sim_msg_t *m = r->unexp; m; m = m->next) res->leftover_msgs++;
        if (st->t_end > res->t_max) res->t_max = st->t_end;
        res->msgs_total += st->msgs_sent = r->comm.stats.msgs_sent;
        res->bytes_total += st->bytes_sent = r->comm.stats.bytes_sent;
        res->msgs_inter_total += st->msgs_inter;
        res->bytes_inter_total += st->bytes_inter;
    }
    if (res->deadlock && BRAID_OK == res->rc) res->rc = BRAID_ERR_TRANSPORT;
    world_free(&w);
    g_world = NULL;
    return 0;
}

void braid_sim_result_free(braid_sim_result_t *res)
{
    free(res->ranks);
    res->ranks = NULL;
}
