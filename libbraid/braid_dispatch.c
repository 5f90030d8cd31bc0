/*
 * braid_dispatch.c - choose, bind, order and run one collective call
 * (braid_dispatch.h).
 */
#include "braid_dispatch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void logf_(const braid_site_t *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(const braid_site_t *s, int level, const char *fmt, ...)
{
    if (NULL == s->hooks.log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    s->hooks.log(s->hooks.arg, level, line);
}

static inline __attribute__((always_inline)) bool persistent(const braid_call_t *call)
{
    return NULL != call->req && BRAID_TASK_PERSISTENT == call->req->kind;
}

/* ------------------------------------------------------------------ */
/* the site                                                            */
/* ------------------------------------------------------------------ */

void braid_site_init(braid_site_t *s, braid_comm_t *comm, const braid_site_conf_t *conf,
                     const braid_site_hooks_t *hooks)
{
    memset(s, 0, sizeof(*s));
    s->comm = comm;
    s->conf = conf;
    s->hooks = *hooks;
    s->topo.size = comm->size;
    s->topo.nnodes = 1;
    s->bare_view = *comm;
    s->bare_view.shm = NULL;
    s->nb_view = s->bare_view;
    s->nb_from = UINT64_MAX;
}

void braid_site_nb_ring(braid_site_t *s, struct braid_shm *ring, uint64_t from)
{
    s->nb_view = s->bare_view;
    s->nb_view.shm = ring;
    s->nb_from = NULL != ring ? from : UINT64_MAX;
    braid_site_forget(s);
}

void braid_site_fini(braid_site_t *s)
{
    braid_subcomm_fini(&s->topo_view);
    braid_subcomm_fini(&s->node_view);
    braid_subcomm_fini(&s->leader_view);
    braid_topo_fini(&s->topo);
    braid_scratch_release(&s->scratch);
    for (int i = 0; i < 2; i++) free(s->counts[i]);
    memset(s->counts, 0, sizeof(s->counts));
    s->topo_ready = s->topo_ordered = s->hier_ready = false;
    s->hier_cache.valid = false;
}

int braid_site_topo(braid_site_t *s, const uint64_t *keys, bool order)
{
    int P = s->comm->size;
    uint64_t *zero = NULL;
    if (s->topo_ready) return BRAID_OK;
    if (NULL == keys && NULL == (keys = zero = calloc((size_t)P, sizeof(uint64_t))))
        return BRAID_ERR_NOMEM;
    int rc = braid_topo_init(&s->topo, P, keys);
    free(zero);
    if (BRAID_OK != rc) return rc;
    s->topo_ready = true;
    s->topo_ordered = order && s->topo.nnodes > 1 && !braid_topo_is_grouped(&s->topo);
    if (s->topo_ordered) return braid_subcomm_init(&s->topo_view, s->comm, P, s->topo.order);
    return BRAID_OK;
}

int braid_site_hier_views(braid_site_t *s)
{
    if (s->hier_ready) return BRAID_OK;
    int rc = braid_site_topo(s, NULL, false);
    if (BRAID_OK != rc) return rc;
    const braid_topo_t *t = &s->topo;
    int node = t->node_of[s->comm->rank];
    int *leaders = malloc((size_t)t->nnodes * sizeof(int));
    if (NULL == leaders) return BRAID_ERR_NOMEM;
    braid_topo_leaders(t, leaders);
    rc = braid_subcomm_init(&s->node_view, s->comm, braid_topo_node_size(t, node),
                            braid_topo_node_ranks(t, node));
    if (BRAID_OK == rc) rc = braid_subcomm_init(&s->leader_view, s->comm, t->nnodes, leaders);
    free(leaders);
    if (BRAID_OK != rc) return rc;
    s->hier_ready = true;
    return BRAID_OK;
}

void braid_site_forget(braid_site_t *s)
{
    for (int i = 0; i < BRAID_COLL_N; i++) s->choice_cache[0][i].valid = s->choice_cache[1][i].valid = false;
    s->hier_cache.valid = false;
}

/* ------------------------------------------------------------------ */
/* choose                                                              */
/* ------------------------------------------------------------------ */

/* The job's overrides of the table's options, for the algorithms that
 * read them (the registry's option keys). */
static void apply_overrides(const braid_site_conf_t *c, braid_coll_t coll, braid_choice_t *choice)
{
    const braid_algorithm_t *alg = braid_algorithm(coll, choice->alg);
    if (NULL == alg) return;
    if ((alg->options & BRAID_OPT_TREE_CHUNK) && c->tree_chunk_bytes > 0)
        choice->params.chunk_bytes = c->tree_chunk_bytes;
    if ((alg->options & BRAID_OPT_CHUNK) && c->chunk_bytes > 0)
        choice->params.chunk_bytes = c->chunk_bytes;
    if ((alg->options & BRAID_OPT_BASE) && 0 != c->bcube_base)
        choice->params.bcube_base = c->bcube_base;
}

braid_choice_t braid_site_select(const braid_site_t *s, braid_coll_t coll, int size, size_t bytes,
                                 bool shm)
{
    braid_choice_t ch = braid_select_on(coll, size, bytes, s->conf->forced[coll],
                                        (braid_table_t *)s->conf->rules, shm);
    apply_overrides(s->conf, coll, &ch);
    return ch;
}

/* c has a segment whose slots hold bytes, or a single-copy reader (any
 * bytes; only the BRAID_OPT_SHM_DIRECT algorithms use it: fit_shm) */
static bool shm_ok(const braid_comm_t *c, size_t bytes)
{
    const braid_shm_t *sh = c->shm;
    return NULL != sh && (bytes <= sh->slot_bytes || NULL != sh->read);
}

/* Cached per communicator and order (blocking, nonblocking), except for
 * a persistent request, whose segment is its channel: its own, made at
 * its first start and kept. */
static braid_choice_t choose(braid_site_t *s, const braid_call_t *call)
{
    braid_coll_t coll = call->coll;
    size_t bytes = call->bytes;
    braid_task_t *r = call->req;
    if (persistent(call)) {
        if (r->chosen && r->choice_bytes == bytes) return r->choice;
        r->choice = braid_site_select(s, coll, s->comm->size, bytes,
                                      shm_ok(braid_call_shm_comm(s, call), bytes));
        r->choice_bytes = bytes;
        r->chosen = true;
        return r->choice;
    }
    int order = NULL != r;
    if (s->choice_cache[order][coll].valid && s->choice_cache[order][coll].bytes == bytes &&
        s->choice_cache[order][coll].ring == call->nb_ring)
        return s->choice_cache[order][coll].choice;
    braid_choice_t ch = braid_site_select(s, coll, s->comm->size, bytes,
                                          shm_ok(braid_call_shm_comm(s, call), bytes));
    s->choice_cache[order][coll].valid = true;
    s->choice_cache[order][coll].ring = call->nb_ring;
    s->choice_cache[order][coll].bytes = bytes;
    s->choice_cache[order][coll].choice = ch;
    s->choice_cache[order][coll].alg = braid_algorithm(coll, ch.alg);
    return ch;
}

/* Two orders. MPI makes every rank call a communicator's collectives in
 * the same order, and each rank's blocking calls come in it; but Open MPI
 * also posts nonblocking collectives from its progress loop
 * (MPI_Comm_idup's context-id agreement, an iallreduce on the parent), so
 * one rank posts such a call before a blocking call and another inside
 * it, while it waits. Blocking calls and nonblocking posts are therefore
 * numbered apart, each in an order that is the same on every rank: their
 * message tags (hooks.begin) and their segments - blocking calls on the
 * communicator's cells, nonblocking ones on a ring of their own
 * (nb_view), where they queue in post order (turns). A nonblocking call
 * numbered before nb_from runs without a segment: the ring came up in a
 * blocking call, and the ranks agreed there on the first post that every
 * rank makes after it has the ring (braid_site_nb_ring). The glue holds
 * the posts that arrive while the ring is being set up until it is. */
static void number_nonblocking(braid_site_t *s, braid_call_t *call)
{
    uint64_t n = s->conf->shared ? __atomic_add_fetch(&s->nb_calls, 1, __ATOMIC_RELAXED) : ++s->nb_calls;
    call->seq = s->hooks.begin(s->hooks.arg, true);
    call->nb_number = n;
    call->nb_ring = n >= s->nb_from && NULL != s->nb_view.shm;
}

bool braid_call_init(braid_site_t *s, braid_call_t *call, braid_coll_t coll, size_t bytes,
                     braid_task_t *req)
{
    /* field by field, not a memset of the whole call: on the small-message
     * path the compiler's `rep stos` for it cost more than the rest of
     * this function (perf, np=2 8-byte reduce) */
    call->coll = coll;
    call->req = req;
    call->bytes = bytes;
    call->nb_ring = false;
    call->nb_number = 0;
    call->seq = 0;
    /* a nonblocking call's number now, in post order (its fallback, if
     * any, is the same on every rank and consumes it everywhere) */
    if (NULL != req && !persistent(call)) number_nonblocking(s, call);
    /* the cache's hit here, the rest out of line: most calls repeat their
     * collective's last size, and a call to choose for it cost as much
     * again as the test (its frame, its 24-byte return) */
    const braid_algorithm_t *alg;
    int order = NULL != req;
    if (!persistent(call) && s->choice_cache[order][coll].valid &&
        s->choice_cache[order][coll].bytes == bytes && s->choice_cache[order][coll].ring == call->nb_ring) {
        call->choice = s->choice_cache[order][coll].choice;
        alg = s->choice_cache[order][coll].alg;   /* its registry row, looked up once */
    } else {
        call->choice = choose(s, call);
        alg = braid_algorithm(coll, call->choice.alg);
    }
    braid_coll_args_t *a = &call->args;
    a->sbuf = NULL;
    a->rbuf = NULL;
    a->count = a->esize = 0;
    a->root = 0;
    a->op.fn = NULL;
    a->op.arg = NULL;
    a->op.commutative = a->exact = false;
    a->scratch = NULL != req ? &req->scratch : &s->scratch;
    a->params = call->choice.params;
    a->rcounts = NULL;
    a->displs = NULL;
    a->scounts = a->sdispls = NULL;
    a->hier = NULL;
    call->pipelined = false;
    call->kind = (braid_devpipe_kind_t)0;
    call->in = NULL;
    call->out = NULL;
    call->in_dev = call->out_dev = false;
    call->alg = alg;
    return NULL != alg;
}

void braid_call_buffers(braid_call_t *call, braid_devpipe_kind_t kind, const void *in, bool in_dev,
                        void *out, bool out_dev)
{
    call->pipelined = true;
    call->kind = kind;
    call->in = in;
    call->in_dev = NULL != in && in_dev;
    call->out = out;
    call->out_dev = NULL != out && out_dev;
}

size_t *braid_call_counts(braid_site_t *s, braid_task_t *req, int slot, size_t n)
{
    if (NULL != req) return braid_task_counts(req, slot, n);
    if (s->counts_len[slot] < n) {
        size_t *q = realloc(s->counts[slot], n * sizeof(size_t));
        if (NULL == q) return NULL;
        s->counts[slot] = q;
        s->counts_len[slot] = n;
    }
    return s->counts[slot];
}

braid_comm_t *braid_call_shm_comm(braid_site_t *s, const braid_call_t *call)
{
    if (NULL == call->req) return s->comm;
    if (persistent(call)) return &call->req->view;
    return call->nb_ring ? &s->nb_view : &s->bare_view;
}

const char *braid_call_name(const braid_call_t *call, char *buf, size_t len)
{
    const char *name = braid_coll_name(call->coll);
    if (NULL == call->req) return name;
    snprintf(buf, len, persistent(call) ? "%s_init" : "i%s", name);
    return buf;
}

/* ------------------------------------------------------------------ */
/* the hierarchical allreduce's phases                                 */
/* ------------------------------------------------------------------ */

/* Bind the hierarchical allreduce to the node and leader views. A forced
 * reduce or bcast algorithm applies inside the nodes; the leaders'
 * allreduce comes from the table (never hierarchical again). Cached per
 * size, as the choice is; own: a persistent request's, bound without the
 * segments and without the cache (threads may start persistent requests
 * at once). */
static int bind_hier(braid_site_t *s, size_t bytes, size_t buffer_bytes, braid_hier_t *own)
{
    bool no_shm = NULL != own;
    if (s->hier_cache.valid && s->hier_cache.bytes == bytes &&
        s->hier_cache.buffer_bytes == buffer_bytes && !no_shm)
        return BRAID_OK;
    if (BRAID_OK != braid_site_hier_views(s)) return BRAID_ERR_NOMEM;
    int local = s->node_view.comm.size, nodes = s->leader_view.comm.size;
    /* inside the nodes through their segments when they have them and the
     * buffers' bytes (count x extent: what the shm algorithms copy, more
     * than the selection size for a type with holes) fit a slot - the test
     * the shm algorithms make, so no node refuses a phase its leader runs */
    bool node_shm = !no_shm && NULL != braid_shm_of(&s->node_view.comm, buffer_bytes);
    braid_choice_t r = braid_site_select(s, BRAID_COLL_REDUCE, local, bytes, node_shm);
    braid_choice_t b = braid_site_select(s, BRAID_COLL_BCAST, local, bytes, node_shm);
    braid_choice_t l = braid_select_on(BRAID_COLL_ALLREDUCE, nodes, bytes, BRAID_ALG_AUTO,
                                       (braid_table_t *)s->conf->rules, false);
    apply_overrides(s->conf, BRAID_COLL_ALLREDUCE, &l);
    if (BRAID_ALLREDUCE_HIERARCHICAL == l.alg) l.alg = BRAID_ALLREDUCE_HALVING_DOUBLING;
    braid_hier_t *h = no_shm ? own : &s->hier_cache.h;
    memset(h, 0, sizeof(*h));
    h->node = &s->node_view.comm;
    h->leaders = braid_subcomm_is_member(&s->leader_view) ? &s->leader_view.comm : NULL;
    h->node_reduce = braid_algorithm(BRAID_COLL_REDUCE, r.alg)->run;
    h->leaders_allreduce = braid_algorithm(BRAID_COLL_ALLREDUCE, l.alg)->run;
    h->node_bcast = braid_algorithm(BRAID_COLL_BCAST, b.alg)->run;
    h->node_reduce_params = r.params;
    h->leaders_params = l.params;
    h->node_bcast_params = b.params;
    if (!no_shm) {
        s->hier_cache.valid = true;
        s->hier_cache.bytes = bytes;
        s->hier_cache.buffer_bytes = buffer_bytes;
    }
    if (s->conf->trace && 0 == s->comm->rank)
        logf_(s, 0, "hierarchical phases np=%d bytes=%zu: node reduce %s, leaders allreduce %s, "
              "node bcast %s", s->comm->size, bytes, braid_alg_name(BRAID_COLL_REDUCE, r.alg),
              braid_alg_name(BRAID_COLL_ALLREDUCE, l.alg), braid_alg_name(BRAID_COLL_BCAST, b.alg));
    return BRAID_OK;
}

/* The phases the call runs with: the site's cache (blocking), the
 * request's own binding without the nodes' segments (nonblocking and
 * persistent: those segments take blocking calls only, "Two orders"). */
static int hier_for(braid_site_t *s, braid_call_t *call)
{
    braid_task_t *r = call->req;
    int rc = bind_hier(s, call->bytes, call->args.count * call->args.esize, NULL != r ? &r->hier : NULL);
    if (BRAID_OK != rc) return rc;
    call->args.hier = NULL == r ? &s->hier_cache.h : &r->hier;
    return BRAID_OK;
}

/* ------------------------------------------------------------------ */
/* run                                                                 */
/* ------------------------------------------------------------------ */

/* Node order keeps every result when the op may be applied in any order:
 * barrier, bcast, allgather, and reductions with commutative ops.
 * Allgather and reduce-scatter tie block i to rank i: their blocks are
 * laid out in node order around the run. The hierarchical allreduce
 * makes its own views. */
static bool node_ordered(const braid_site_t *s, braid_coll_t coll, const braid_coll_args_t *a)
{
    if (!s->topo_ordered) return false;
    switch (coll) {
    case BRAID_COLL_BARRIER:
    case BRAID_COLL_BCAST:
    case BRAID_COLL_ALLGATHER:
        return true;
    case BRAID_COLL_ALLREDUCE:
    case BRAID_COLL_REDUCE:
    case BRAID_COLL_REDUCE_SCATTER:
        return a->op.commutative && NULL == a->hier;
    default:
        return false;
    }
}

/* Elements of a reduce-scatter's whole input. */
static size_t rs_total(const braid_coll_args_t *a, int P)
{
    if (NULL == a->rcounts) return a->count * (size_t)P;
    size_t total = 0;
    for (int i = 0; i < P; i++) total += a->rcounts[i];
    return total;
}

/* Allgather and reduce-scatter in node order: blocks laid out in view
 * order in scratch around the run (braid_topo.h). */
static int run_block_view(braid_site_t *s, const braid_call_t *call, const braid_comm_t *c,
                          braid_algo_fn_t fn)
{
    const braid_coll_args_t *a = &call->args;
    int P = s->comm->size;
    if (BRAID_COLL_ALLGATHER == call->coll) {
        char *tmp = braid_scratch_get(a->scratch, BRAID_SCRATCH_GLUE_IN, (size_t)P * a->count);
        if (NULL == tmp) return BRAID_ERR_NOMEM;
        return braid_view_allgather(&s->topo_view, c, fn, a, a->count, tmp);
    }
    char *tmp = braid_scratch_get(a->scratch, BRAID_SCRATCH_GLUE_OUT, rs_total(a, P) * a->esize);
    size_t *counts = braid_call_counts(s, call->req, 1, 2 * (size_t)P + 1);
    if (NULL == tmp || NULL == counts) return BRAID_ERR_NOMEM;
    return braid_view_reduce_scatter(&s->topo_view, c, fn, a, tmp, counts);
}

/* How a request's waits give its fiber's thread back (braid_yield_t). */
static bool fiber_due(void *f, unsigned turn, bool busy)
{
    return braid_fiber_yield_due(f, turn, busy);
}

static void fiber_now(void *f)
{
    (void)f;
    braid_fiber_yield();
}

static int run_fn(braid_site_t *s, braid_call_t *call, braid_comm_t *view, braid_algo_fn_t fn)
{
    braid_coll_args_t *a = &call->args;
    if (call->pipelined) {
        /* segments only where the job cuts messages (a CUDA job): the
         * type size's division costs a small call more than the rest of
         * this test */
        size_t seg = 0 == s->conf->seg_bytes
                         ? a->count
                         : braid_devpipe_seg_count(a->count, a->count ? call->bytes / a->count : 1,
                                                   s->conf->seg_bytes);
        if (call->in_dev || call->out_dev || seg < a->count)
            return s->hooks.staged_run(s->hooks.arg, view, fn, call, seg);
        braid_devpipe_bind(call->kind, call->in, call->out, a);
    }
    return fn(view, a);
}

/* The call runs on a copy of its view that carries its number and, for
 * a request, its fiber's yield: the transport tags and waits by what the
 * call hands it, whichever call or fiber runs beside it. */
static int run_on_view(braid_site_t *s, braid_call_t *call, const braid_algorithm_t *alg)
{
    braid_algo_fn_t fn = alg->run;
    braid_coll_args_t *a = &call->args;
    braid_comm_t *view = s->comm;
    const braid_yield_t *y = NULL;
    if (NULL != call->req) {
        call->yield.due = fiber_due;
        call->yield.now = fiber_now;
        call->yield.arg = call->req->fiber;
        y = &call->yield;
    }
    /* the shm algorithms run on the one-node communicator as it is (a
     * persistent request's: on its channel): no message crosses a node, so
     * there is nothing to order */
    if (alg->options & BRAID_OPT_SHM) {
        view = braid_call_shm_comm(s, call);
    } else if (node_ordered(s, call->coll, a)) {
        if (BRAID_COLL_ALLGATHER == call->coll || BRAID_COLL_REDUCE_SCATTER == call->coll) {
            braid_comm_t whole = braid_comm_for(s->comm, call->seq, y);
            return run_block_view(s, call, &whole, fn);
        }
        view = &s->topo_view.comm;
        a->root = braid_subcomm_rank_of(&s->topo_view, a->root);
    }
    braid_comm_t v = braid_comm_for(view, call->seq, y);
    int rc = run_fn(s, call, &v, fn);
    braid_comm_count(view, &v);
    return rc;
}

/* A shm choice whose buffers do not fit a slot (count x extent can exceed
 * the selection size) and that cannot go single copy (BRAID_OPT_SHM_DIRECT
 * on a segment with a reader) becomes the message algorithm the table
 * gives without the segment; every rank has the same count and extent, and
 * the reader is on every rank or none. */
static const braid_algorithm_t *fit_shm(braid_site_t *s, braid_call_t *call,
                                        const braid_algorithm_t *alg)
{
    const braid_coll_args_t *a = &call->args;
    if (!(alg->options & BRAID_OPT_SHM)) return alg;
    /* what one rank's slot must hold: reduce-scatter's whole input,
     * alltoall's P blocks, the scatter root's P - 1 for the others;
     * nothing for the v forms whose counts only some ranks know: their
     * shm algorithms choose a way per block in the call (count differs
     * from rank to rank there) */
    size_t P = (size_t)s->comm->size;
    bool per_block = BRAID_COLL_ALLTOALLV == call->coll || BRAID_COLL_GATHERV == call->coll ||
                     BRAID_COLL_SCATTERV == call->coll;
    size_t elems = per_block                                ? 0
                   : BRAID_COLL_REDUCE_SCATTER == call->coll ? rs_total(a, s->comm->size)
                   : BRAID_COLL_ALLTOALL == call->coll       ? a->count * P
                   : BRAID_COLL_SCATTER == call->coll        ? a->count * (P - 1)
                                                            : a->count;
    const braid_comm_t *c = braid_call_shm_comm(s, call);
    /* alltoall's, gather's and scatter's blocks may span several cells
     * (braid_shm_span, braid_shm_rooted_span) */
    size_t block = a->count * a->esize, piece;
    bool rooted = BRAID_COLL_GATHER == call->coll || BRAID_COLL_SCATTER == call->coll;
    if (BRAID_COLL_ALLTOALL == call->coll ? NULL != braid_shm_spanned(c, s->comm->size, block)
        : rooted ? NULL != c->shm && 0 != braid_shm_rooted_span(c->shm, s->comm->size, block,
                                                                BRAID_COLL_GATHER == call->coll,
                                                                &piece)
                 : NULL != braid_shm_of(c, elems * a->esize))
        return alg;
    if ((alg->options & BRAID_OPT_SHM_DIRECT) && NULL != braid_shm_direct(c, elems * a->esize))
        return alg;
    call->choice = braid_site_select(s, call->coll, s->comm->size, call->bytes, false);
    call->args.params = call->choice.params;
    return call->alg = braid_algorithm(call->coll, call->choice.alg);
}

/* Nonblocking calls on their ring take turns, in post order; a blocking
 * call has the communicator's cells to itself (one at a time, MPI's
 * rule), and persistent requests run on channels of their own and must
 * not queue (ranks may start them in different orders). */
static bool takes_turn(const braid_call_t *call, const braid_algorithm_t *alg)
{
    return NULL != call->req && !persistent(call) && (alg->options & BRAID_OPT_SHM);
}

/* With a progress thread, a nonblocking or persistent call of at least
 * progress_thread_bytes gives its post back here - its number and its turn taken,
 * its fallback decided, nothing sent - and the thread runs it while the
 * application computes. Run inside the post instead, a call whose peers
 * are already there finishes before MPI_Ixxx returns and leaves nothing
 * to overlap (a fiber yields only at a wait that is not done). The
 * dispatch calls it for a request when the job has a progress thread. */
static void yield_to_progress_thread(const braid_site_t *s, const braid_call_t *call)
{
    if (call->bytes < s->conf->progress_thread_bytes || 0 != braid_fiber_yields(call->req->fiber))
        return;
    if (s->conf->trace && 0 == s->comm->rank) {
        char name[40];
        logf_(s, 0, "%s left to the progress thread", braid_call_name(call, name, sizeof(name)));
    }
    braid_fiber_yield();
}

/* Under fault tolerance (s->fault), what a call that returned rc returns:
 * the failure when a wait gave up on it (the call ran to its end on what it
 * had), or the algorithm met a dead peer; a transport error is held up to
 * BRAID_FAULT_SETTLE_NS while the host progresses, for its failure
 * detector to say whether a process failed (the call then fails with that,
 * as every other rank's does). */
#define BRAID_FAULT_SETTLE_NS 1000000000ull
static int fault_settle(braid_site_t *s, const braid_call_t *call, int rc)
{
    if (BRAID_ERR_PROC_FAILED == rc || BRAID_ERR_REVOKED == rc) return braid_fault_set(s->fault, rc);
    int frc = braid_fault_poll(s->fault, BRAID_ERR_TRANSPORT == rc);
    if (BRAID_OK != frc || BRAID_ERR_TRANSPORT != rc) return BRAID_OK != frc ? frc : rc;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        /* a request gives its fiber's thread back; a blocking call progresses */
        if (NULL != call->req) call->yield.now(call->yield.arg);
        else if (NULL != s->hooks.wait) s->hooks.wait(s->hooks.arg);
        if (BRAID_OK != (frc = braid_fault_poll(s->fault, true))) return frc;
        clock_gettime(CLOCK_MONOTONIC, &t);
        uint64_t ns = (uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t.tv_nsec -
                      (uint64_t)t0.tv_nsec;
        if (ns >= BRAID_FAULT_SETTLE_NS) return rc;
    }
}

/* alg sends messages on this call: a message algorithm, or a shm one
 * that sends the blocks its segment cannot carry where there is no
 * single-copy reader */
static bool sends_messages(braid_site_t *s, const braid_call_t *call, const braid_algorithm_t *alg)
{
    if (!(alg->options & BRAID_OPT_SHM)) return true;
    if (!(alg->options & BRAID_OPT_SHM_MESSAGES)) return false;
    const braid_comm_t *c = braid_call_shm_comm(s, call);
    return NULL == c->shm || NULL == c->shm->read;
}

int braid_dispatch(braid_site_t *s, braid_call_t *call)
{
    const braid_algorithm_t *alg = call->alg;
    int frc;
    if (NULL != s->fault && BRAID_OK != (frc = braid_fault_poll(s->fault, true))) return frc;
    if (NULL == alg || NULL == (alg = fit_shm(s, call, alg))) return BRAID_ERR_UNSUPPORTED;
    /* the algorithm's declared refusals (the registry's noncomm) make the
     * call fall back here, before it queues for the segment or sends: a request's
     * fallback must be decided before its first wait, on every rank alike */
    if (!braid_row_takes_op(alg, s->comm->size, call->args.op.commutative, call->args.exact))
        return BRAID_ERR_UNSUPPORTED;
    if (NULL != s->hooks.messages && sends_messages(s, call, alg)) {
        int rc = s->hooks.messages(s->hooks.arg, call);
        if (BRAID_OK != rc) return rc;
    }
    if (alg->options & BRAID_OPT_HIER) {
        int rc = hier_for(s, call);
        if (BRAID_OK != rc) return rc;
    }
    if (s->conf->trace && 0 == s->comm->rank) {
        char name[40];
        logf_(s, 0, "%s %s np=%d bytes=%zu", braid_call_name(call, name, sizeof(name)), alg->name,
              s->comm->size, call->bytes);
    }
    /* the call's sequence number: a blocking call's, the next of the
     * communicator's blocking calls; a nonblocking call's, taken in
     * braid_call_init; a persistent request's own. The call's view
     * carries it to the transport (run_on_view) */
    if (persistent(call)) call->seq = call->req->seq;
    else if (NULL == call->req) call->seq = s->hooks.begin(s->hooks.arg, false);
    bool turn = takes_turn(call, alg);
    if (turn) braid_turn_take(&s->turns, s->conf->shared, s->hooks.wait, s->hooks.arg);
    if (NULL != call->req && 0 != s->conf->progress_thread_bytes) yield_to_progress_thread(s, call);
    int rc = run_on_view(s, call, alg);
    if (turn) braid_turn_give(&s->turns, s->conf->shared);
    if (NULL != s->fault) rc = fault_settle(s, call, rc);
    if (BRAID_OK != rc && BRAID_ERR_UNSUPPORTED != rc)
        logf_(s, 1, "%s %s on %s failed (braid code %d)", braid_coll_name(call->coll), alg->name,
              s->name, rc);
    return rc;
}
