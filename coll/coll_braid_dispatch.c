/*
 * coll_braid_dispatch.c - the one way down from an MPI entry point to an
 * algorithm:
 *
 *   entry point (coll_braid_entry_*.c): arguments -> braid's byte view
 *     -> choose: selection table + MCA overrides, cached per communicator
 *     -> trace (coll_braid_verbose >= 20)
 *     -> view: rank order, or node order (coll_braid_topo.c) with the root
 *        translated and allgather / reduce-scatter blocks laid out around it
 *     -> run: the algorithm once on host buffers, or segment by segment
 *        through the staging pipeline (coll_braid_cuda.c) when a buffer is
 *        on a GPU or the job cuts messages into segments
 *   -> algorithm (libbraid/algo/, found in the registry) -> transport (UCX)
 *
 * Nothing below calls back up: the pipeline and the node-order layouts are
 * core engines (libbraid/engines/, libbraid/patterns/) handed the algorithm's
 * function. Every decision depends only on what MPI requires to match
 * across ranks (communicator, root, op, count x type size), so every rank
 * takes the same path.
 */
#include "coll_braid.h"

#include <string.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

static inline mca_coll_braid_component_t *cmp(void) { return &mca_coll_braid_component; }

/* MCA parameters that override the table's options, for the algorithms
 * that read them (the registry's option keys). */
static void apply_overrides(braid_coll_t coll, braid_choice_t *choice)
{
    const mca_coll_braid_component_t *c = cmp();
    const braid_algorithm_t *alg = braid_algorithm(coll, choice->alg);
    if (NULL == alg) return;
    if ((alg->options & BRAID_OPT_TREE_CHUNK) && c->dbtree_chunk_size > 0)
        choice->params.chunk_bytes = (size_t)c->dbtree_chunk_size;
    if ((alg->options & BRAID_OPT_CHUNK) && c->chunk_size > 0)
        choice->params.chunk_bytes = (size_t)c->chunk_size;
    if ((alg->options & BRAID_OPT_BASE) && 0 != c->bcube_base)
        choice->params.bcube_base = c->bcube_base;   /* -1 = BRAID_BCUBE_AUTO */
}

/* The choice for coll on `size` ranks at `bytes`: forced, rules file,
 * built-in table, then the MCA overrides; shm: the ranks' shared-memory
 * segment can carry the call (braid_select_on). */
static braid_choice_t select_for(braid_coll_t coll, int size, size_t bytes, int forced, bool shm)
{
    braid_choice_t ch = braid_select_on(coll, size, bytes, forced, cmp()->rules, shm);
    apply_overrides(coll, &ch);
    return ch;
}

braid_choice_t mca_coll_braid_choose(mca_coll_braid_module_t *m, braid_coll_t coll, size_t bytes,
                                     mca_coll_braid_request_t *r)
{
    if (mca_coll_braid_request_persistent(r)) {
        braid_choice_t *kept = mca_coll_braid_request_choice(r, bytes);
        if (NULL != kept) return *kept;
        braid_choice_t ch = select_for(coll, m->bcomm.size, bytes, cmp()->forced_algorithm[coll],
                                       mca_coll_braid_shm_ok(mca_coll_braid_shm_comm(m, r), bytes));
        mca_coll_braid_request_keep_choice(r, bytes, ch);
        return ch;
    }
    if (m->choice_cache[coll].valid && m->choice_cache[coll].bytes == bytes)
        return m->choice_cache[coll].choice;
    braid_choice_t ch = select_for(coll, m->bcomm.size, bytes, cmp()->forced_algorithm[coll],
                                   mca_coll_braid_shm_ok(&m->bcomm, bytes));
    m->choice_cache[coll].valid = true;
    m->choice_cache[coll].bytes = bytes;
    m->choice_cache[coll].choice = ch;
    return ch;
}

bool mca_coll_braid_call_init(mca_coll_braid_module_t *m, mca_coll_braid_call_t *call,
                              braid_coll_t coll, size_t bytes)
{
    /* field by field, not a memset of the whole call: on the small-message
     * path the compiler's `rep stos` for it cost more than the rest of
     * this function (perf, np=2 8-byte reduce) */
    call->req = mca_coll_braid_request_current();
    /* the segment is set up at a blocking call (a collective of its own,
     * over the previous module): nonblocking calls are not counted */
    if (NULL == call->req) mca_coll_braid_shm_tick(m);
    call->coll = coll;
    call->bytes = bytes;
    call->choice = mca_coll_braid_choose(m, coll, bytes, call->req);
    braid_coll_args_t *a = &call->args;
    a->sbuf = NULL;
    a->rbuf = NULL;
    a->count = a->esize = 0;
    a->root = 0;
    a->op.fn = NULL;
    a->op.arg = NULL;
    a->op.commutative = a->exact = false;
    a->scratch = mca_coll_braid_request_scratch(m, call->req);
    a->params = call->choice.params;
    a->rcounts = NULL;
    a->hier = NULL;
    call->pipelined = false;
    call->kind = (braid_devpipe_kind_t)0;
    call->in = NULL;
    call->out = NULL;
    call->in_dev = call->out_dev = false;
    return NULL != braid_algorithm(coll, call->choice.alg);
}

void mca_coll_braid_call_buffers(mca_coll_braid_call_t *call, braid_devpipe_kind_t kind,
                                 const void *in, bool in_dev, void *out, bool out_dev)
{
    call->pipelined = true;
    call->kind = kind;
    call->in = in;
    call->in_dev = NULL != in && in_dev;
    call->out = out;
    call->out_dev = NULL != out && out_dev;
}

/* ------------------------------------------------------------------ */
/* The hierarchical allreduce's phases                                  */
/* ------------------------------------------------------------------ */

/* Bind the hierarchical allreduce to m's node and leader views. A forced
 * reduce or bcast algorithm applies inside the nodes; the leaders' allreduce
 * comes from the table (never hierarchical again). Cached per size, as the
 * choice is; own: a persistent request's, bound without the segments and
 * without the cache (threads may start persistent requests at once). */
static int bind_hier(mca_coll_braid_module_t *m, size_t bytes, size_t buffer_bytes,
                     braid_hier_t *own)
{
    const mca_coll_braid_component_t *c = cmp();
    bool no_shm = NULL != own;
    if (m->hier_cache.valid && m->hier_cache.bytes == bytes &&
        m->hier_cache.buffer_bytes == buffer_bytes && !no_shm)
        return BRAID_OK;
    if (OMPI_SUCCESS != mca_coll_braid_hier_views(m)) return BRAID_ERR_NOMEM;
    int local = m->node_view.comm.size, nodes = m->leader_view.comm.size;
    /* inside the nodes through their segments when they have them and the
     * buffers' bytes (count x extent: what the shm algorithms copy, more
     * than the selection size for a type with holes) fit a slot - the test
     * the shm algorithms make, so no node refuses a phase its leader runs */
    bool node_shm = !no_shm && NULL != braid_shm_of(&m->node_view.comm, buffer_bytes);
    braid_choice_t r = select_for(BRAID_COLL_REDUCE, local, bytes,
                                  c->forced_algorithm[BRAID_COLL_REDUCE], node_shm);
    braid_choice_t l = select_for(BRAID_COLL_ALLREDUCE, nodes, bytes, BRAID_ALG_AUTO, false);
    braid_choice_t b = select_for(BRAID_COLL_BCAST, local, bytes,
                                  c->forced_algorithm[BRAID_COLL_BCAST], node_shm);
    if (BRAID_ALLREDUCE_HIERARCHICAL == l.alg) l.alg = BRAID_ALLREDUCE_HALVING_DOUBLING;
    braid_hier_t *h = no_shm ? own : &m->hier_cache.h;
    memset(h, 0, sizeof(*h));
    h->node = &m->node_view.comm;
    h->leaders = braid_subcomm_is_member(&m->leader_view) ? &m->leader_view.comm : NULL;
    h->node_reduce = braid_algorithm(BRAID_COLL_REDUCE, r.alg)->run;
    h->leaders_allreduce = braid_algorithm(BRAID_COLL_ALLREDUCE, l.alg)->run;
    h->node_bcast = braid_algorithm(BRAID_COLL_BCAST, b.alg)->run;
    h->node_reduce_params = r.params;
    h->leaders_params = l.params;
    h->node_bcast_params = b.params;
    if (!no_shm) {
        m->hier_cache.valid = true;
        m->hier_cache.bytes = bytes;
        m->hier_cache.buffer_bytes = buffer_bytes;
    }
    if (c->verbose >= 20 && 0 == m->bcomm.rank)
        opal_output(0, "braid: hierarchical phases np=%d bytes=%zu: node reduce %s, leaders "
                    "allreduce %s, node bcast %s", m->bcomm.size, bytes,
                    braid_alg_name(BRAID_COLL_REDUCE, r.alg),
                    braid_alg_name(BRAID_COLL_ALLREDUCE, l.alg),
                    braid_alg_name(BRAID_COLL_BCAST, b.alg));
    return BRAID_OK;
}

/* ------------------------------------------------------------------ */
/* Run                                                                  */
/* ------------------------------------------------------------------ */

static void trace(const mca_coll_braid_module_t *m, const mca_coll_braid_call_t *call,
                  const char *alg)
{
    char name[40];
    if (cmp()->verbose >= 20 && 0 == m->bcomm.rank)
        opal_output(0, "braid: %s %s np=%d bytes=%zu",
                    mca_coll_braid_trace_name(call->req, call->coll, name, sizeof(name)), alg,
                    m->bcomm.size, call->bytes);
}

/* Elements of a reduce-scatter's whole input. */
static size_t rs_total(const braid_coll_args_t *a, int P)
{
    if (NULL == a->rcounts) return a->count * (size_t)P;
    size_t total = 0;
    for (int i = 0; i < P; i++) total += a->rcounts[i];
    return total;
}

/* Allgather and reduce-scatter in node order: blocks laid out in view order
 * in scratch around the run (braid_topo.h). */
static int run_block_view(mca_coll_braid_module_t *m, const mca_coll_braid_call_t *call,
                          braid_algo_fn_t fn)
{
    const braid_coll_args_t *a = &call->args;
    int P = m->bcomm.size;
    braid_scratch_t *scratch = call->args.scratch;
    if (BRAID_COLL_ALLGATHER == call->coll) {
        char *tmp = braid_scratch_get(scratch, BRAID_SCRATCH_GLUE_IN, (size_t)P * a->count);
        if (NULL == tmp) return BRAID_ERR_NOMEM;
        return braid_view_allgather(&m->topo_view, fn, a, a->count, tmp);
    }
    char *tmp = braid_scratch_get(scratch, BRAID_SCRATCH_GLUE_OUT, rs_total(a, P) * a->esize);
    size_t *counts = mca_coll_braid_counts(m, 1, 2 * (size_t)P + 1);
    if (NULL == tmp || NULL == counts) return BRAID_ERR_NOMEM;
    return braid_view_reduce_scatter(&m->topo_view, fn, a, tmp, counts);
}

static int run_on_view(mca_coll_braid_module_t *m, mca_coll_braid_call_t *call,
                       const braid_algorithm_t *alg)
{
    braid_algo_fn_t fn = alg->run;
    braid_coll_args_t *a = &call->args;
    braid_comm_t *view = &m->bcomm;
    /* the shm algorithms run on the one-node communicator as it is (a
     * persistent request's: on its channel): no message crosses a node, so
     * there is nothing to order */
    if (alg->options & BRAID_OPT_SHM) view = mca_coll_braid_shm_comm(m, call->req);
    else if (mca_coll_braid_node_ordered(m, call->coll, a)) {
        if (BRAID_COLL_ALLGATHER == call->coll || BRAID_COLL_REDUCE_SCATTER == call->coll)
            return run_block_view(m, call, fn);
        view = &m->topo_view.comm;
        a->root = braid_subcomm_rank_of(&m->topo_view, a->root);
    }
    if (call->pipelined) {
        size_t seg = mca_coll_braid_cuda_seg_count(a->count, call->bytes);
        if (call->in_dev || call->out_dev || seg < a->count)
            return mca_coll_braid_cuda_run(m, view, fn, call, seg);
        braid_devpipe_bind(call->kind, call->in, call->out, a);
    }
    return fn(view, a);
}

/* A shm choice whose buffers do not fit a slot (count x extent can exceed
 * the selection size) and that cannot go single copy (BRAID_OPT_SHM_DIRECT
 * on a segment with a reader) becomes the message algorithm the table
 * gives without the segment; every rank has the same count and extent, and
 * the reader is on every rank or none. */
static const braid_algorithm_t *fit_shm(mca_coll_braid_module_t *m, mca_coll_braid_call_t *call,
                                        const braid_algorithm_t *alg)
{
    const braid_coll_args_t *a = &call->args;
    size_t elems = BRAID_COLL_REDUCE_SCATTER == call->coll ? rs_total(a, m->bcomm.size) : a->count;
    const braid_comm_t *c = mca_coll_braid_shm_comm(m, call->req);
    if (!(alg->options & BRAID_OPT_SHM)) return alg;
    if (NULL != braid_shm_of(c, elems * a->esize)) return alg;
    if ((alg->options & BRAID_OPT_SHM_DIRECT) && NULL != braid_shm_direct(c, elems * a->esize))
        return alg;
    call->choice = select_for(call->coll, m->bcomm.size, call->bytes,
                              cmp()->forced_algorithm[call->coll], false);
    call->args.params = call->choice.params;
    return braid_algorithm(call->coll, call->choice.alg);
}

/* The shm tier numbers calls in call order and expects each rank to finish
 * them in that order (a rank's done flag covers every earlier call). A
 * nonblocking call may be overtaken by a later one on another fiber, so
 * calls that use the segment run one at a time, in the order they were
 * made: each takes a ticket when dispatched (in call order: a nonblocking
 * call is dispatched on the poster's thread) and waits for its turn - a
 * fiber by yielding, a blocking call by progressing the fibers ahead. */
static bool uses_segment(const mca_coll_braid_module_t *m, const mca_coll_braid_call_t *call,
                         const braid_algorithm_t *alg)
{
    /* persistent requests run on channels of their own and must not queue:
     * ranks may start them in different orders */
    if (mca_coll_braid_request_persistent(call->req)) return false;
    return (alg->options & BRAID_OPT_SHM) ||
           ((alg->options & BRAID_OPT_HIER) && NULL != m->node_view.comm.shm);
}

/* Two threads touch the tickets only with MPI_THREAD_MULTIPLE or the
 * progress thread; otherwise plain loads and stores do (no locked
 * instructions on a nonblocking call's path). */
static inline bool tickets_shared(void)
{
    return cmp()->thread_multiple || cmp()->progress_thread;
}

static unsigned shm_turn_take(mca_coll_braid_module_t *m)
{
    unsigned t;
    if (tickets_shared()) t = __atomic_fetch_add(&m->shm_ticket, 1, __ATOMIC_ACQ_REL);
    else t = m->shm_ticket++;
    while (__atomic_load_n(&m->shm_serving, __ATOMIC_ACQUIRE) != t) {
        if (NULL != braid_fiber_self()) braid_fiber_yield();
        else opal_progress();
    }
    return t;
}

static void shm_turn_give(mca_coll_braid_module_t *m)
{
    if (tickets_shared()) __atomic_fetch_add(&m->shm_serving, 1, __ATOMIC_ACQ_REL);
    else __atomic_store_n(&m->shm_serving, m->shm_serving + 1, __ATOMIC_RELEASE);
}

int mca_coll_braid_dispatch(mca_coll_braid_module_t *m, mca_coll_braid_call_t *call)
{
    const braid_algorithm_t *alg = braid_algorithm(call->coll, call->choice.alg);
    if (NULL == alg) return BRAID_ERR_UNSUPPORTED;
    alg = fit_shm(m, call, alg);
    if (NULL == alg) return BRAID_ERR_UNSUPPORTED;
    /* the algorithm's declared refusals (the registry's noncomm) hand the
     * call on here, before it queues for the segment or sends: a request's
     * hand-on must fall before its first wait, on every rank alike */
    if (!braid_alg_takes_op(call->coll, call->choice.alg, m->bcomm.size,
                            call->args.op.commutative, call->args.exact))
        return BRAID_ERR_UNSUPPORTED;
    if (alg->options & BRAID_OPT_HIER) {
        bool own = mca_coll_braid_request_persistent(call->req);
        braid_hier_t *h = own ? mca_coll_braid_hier_slot(m, call->req) : NULL;
        int rc = bind_hier(m, call->bytes, call->args.count * call->args.esize, h);
        if (BRAID_OK != rc) return rc;
        call->args.hier = own ? h : mca_coll_braid_hier_slot(m, call->req);
    }
    trace(m, call, alg->name);
    mca_coll_braid_call_seq(m, call->req);
    /* a blocking call finds the queue empty unless nonblocking calls on the
     * segment are outstanding (only this thread posts on m now, MPI's
     * rule): it then runs at once, with no read-modify-write */
    bool turn = uses_segment(m, call, alg) &&
                (NULL != call->req || __atomic_load_n(&m->shm_ticket, __ATOMIC_ACQUIRE) !=
                                          __atomic_load_n(&m->shm_serving, __ATOMIC_ACQUIRE));
    if (turn) shm_turn_take(m);
    int rc = run_on_view(m, call, alg);
    if (turn) shm_turn_give(m);
    if (BRAID_OK != rc && BRAID_ERR_UNSUPPORTED != rc)
        opal_output_verbose(1, cmp()->output, "braid: %s %s on %s failed (braid code %d)",
                            braid_coll_name(call->coll), alg->name, m->comm->c_name, rc);
    return rc;
}
