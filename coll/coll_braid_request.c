/*
 * coll_braid_request.c - nonblocking (MPI_Iallreduce, ...) and persistent
 * (MPI_Allreduce_init, ...; MPIX_ on Open MPI 4.1) collectives as Open MPI
 * requests on braid's request engine (libbraid/engines/braid_task.h;
 * docs/NBC.md).
 *
 * A request runs its family's blocking path on a fiber, with itself
 * passed down in the call; progress is opal_progress (braid's hook). The
 * request is Open MPI's nbc request type (MPI_Ixxx retains a user op and
 * derived datatypes on it), from the engine's pool: a call in steady state
 * allocates nothing. A persistent request takes its tag number and its shm
 * channel at init (ranks may start persistent requests in different
 * orders). A fallback is decided in the fiber's first run: a nonblocking call on
 * the user's buffers then returns the previous module's request; a
 * persistent start or a call on host copies of device buffers runs the
 * previous module's nonblocking function as an inner request.
 */
#include "coll_braid_request.h"
#include "coll_braid_component.h"
#include "coll_braid_module.h"
#include "coll_braid_shm.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

static inline mca_coll_braid_component_t *cmp(void) { return &mca_coll_braid_component; }

#define ENG (&mca_coll_braid_engine)

static int request_free(ompi_request_t **rptr);
static int request_cancel(ompi_request_t *req, int complete);
static int request_start(size_t n, ompi_request_t **reqs);

/* Open MPI's fields that never change; the others are set when the
 * request leaves braid (activate, mca_coll_braid_request_persist): a call
 * that runs out inside its post never shows Open MPI its request. */
static void request_construct(mca_coll_braid_request_t *r)
{
    memset((char *)r + sizeof(r->super), 0, sizeof(*r) - sizeof(r->super));
    braid_task_prepare(&r->core, BRAID_TASK_NONBLOCKING, -1);
    ompi_request_t *req = &r->super.super;
    req->req_type = OMPI_REQUEST_COLL;
    req->req_free = request_free;
    req->req_cancel = request_cancel;
}

static void request_destruct(mca_coll_braid_request_t *r) { braid_task_release(&r->core); }

OBJ_CLASS_INSTANCE(mca_coll_braid_request_t, ompi_coll_base_nbc_request_t, request_construct,
                   request_destruct);

static const mca_coll_braid_args_t no_args;

/* A request from the pool (locked when the engine is shared) or made,
 * for a call of this kind; NULL: out of memory */
static mca_coll_braid_request_t *request_take(braid_task_kind_t kind)
{
    braid_task_t *core = braid_engine_pool_take(ENG);
    mca_coll_braid_request_t *r =
        NULL != core ? mca_coll_braid_request_of(core) : OBJ_NEW(mca_coll_braid_request_t);
    if (NULL != r) braid_task_reuse(&r->core, kind, cmp()->inject_alloc_failure);
    return r;
}

/* r, of this kind, for a call of family f on module with arguments a
 * (NULL: none). Pooled requests are prepared - their engine part
 * (braid_engine_pool_take), inner and hc NULL, opb.op NULL - so that only
 * the call is written here. */
static inline void request_fill(mca_coll_braid_request_t *r, mca_coll_base_module_t *module,
                                const mca_coll_braid_family_t *f, const mca_coll_braid_args_t *a)
{
    r->m = (mca_coll_braid_module_t *)module;
    r->family = f;
    r->a = NULL != a ? *a : no_args;
    r->held = false;
}

/* r's Open MPI request, active: a nonblocking call's as it is returned
 * pending (or failed), a persistent request's at each start */
static void activate(mca_coll_braid_request_t *r)
{
    ompi_request_t *req = &r->super.super;
    if (BRAID_TASK_NONBLOCKING == r->core.kind && !r->held) {
        OMPI_REQUEST_INIT(req, false);
        req->req_start = NULL;
        req->req_mpi_object.comm = r->m->comm;
    }
    req->req_state = OMPI_REQUEST_ACTIVE;
    req->req_complete = REQUEST_PENDING;
    req->req_status.MPI_ERROR = MPI_SUCCESS;
    req->req_status._cancelled = 0;
}

/* back to the pool, prepared */
static void request_put(mca_coll_braid_request_t *r)
{
    OMPI_REQUEST_FINI(&r->super.super);
    braid_task_prepare(&r->core, BRAID_TASK_NONBLOCKING, -1);
    braid_engine_pool_give(ENG, &r->core);
}

/* ------------------------------------------------------------------ */
/* post                                                                */
/* ------------------------------------------------------------------ */

static int run_job(void *arg)
{
    mca_coll_braid_request_t *r = arg;
    return r->family->run(r);
}

/* r ran out inside its post, without error: back to the pool as it is
 * (braid_engine_pool_take), Open MPI's completed empty request returned */
static inline int ran_out(mca_coll_braid_request_t *r, ompi_request_t **request)
{
    if (!braid_engine_pool_push(ENG, &r->core)) braid_engine_pool_give(ENG, &r->core);
    *request = &ompi_request_empty;
    return MPI_SUCCESS;
}

/* What r's first run came to (st: braid_task_post's). true: the call ran
 * out inside the post, *rc its MPI code (a nonblocking request not yet
 * active). false: *rc is MPI_SUCCESS and r active and outstanding -
 * unless the call fell back with prev_req given (nonblocking on the
 * user's buffers): *prev_req then holds the previous module's request -
 * or *rc is the failure. */
static bool concluded(mca_coll_braid_request_t *r, int st, ompi_request_t **prev_req, int *rc)
{
    if (BRAID_TASK_DONE == st) {
        *rc = mca_coll_braid_request_copies_close(r, r->core.result);
        return true;
    }
    if (BRAID_TASK_FELL_BACK == st) {
        /* a nonblocking call on the user's buffers: the previous module's
         * request is the application's; otherwise it runs inside braid's */
        if (NULL != prev_req && NULL == r->hc) {
            *rc = r->family->prev_nonblocking(r, prev_req);
            return false;
        }
        if (MPI_SUCCESS != (*rc = r->family->prev_nonblocking(r, &r->inner))) {
            r->inner = NULL;
            *rc = mca_coll_braid_request_copies_close(r, *rc);
            return false;
        }
        r->core.inner = true;
    } else if (BRAID_TASK_PENDING != st) {
        *rc = mca_coll_braid_request_copies_close(r, MPI_ERR_NO_MEM);
        return false;
    }
    /* active before the engine has it: another thread's progress may
     * complete it from now on */
    if (BRAID_TASK_NONBLOCKING == r->core.kind) activate(r);
    braid_engine_add(ENG, &r->core);
    *rc = MPI_SUCCESS;
    return false;
}

/* Post r: run its fiber until the first wait that is not done (on host
 * copies of device buffers); what it came to, as concluded says. */
static bool post(mca_coll_braid_request_t *r, ompi_request_t **prev_req, int *rc)
{
    if (BRAID_TASK_PERSISTENT == r->core.kind) activate(r);
    r->sbuf = r->a.usbuf;
    r->rbuf = r->a.urbuf;
    *rc = mca_coll_braid_request_on_device(r) ? mca_coll_braid_request_copies_open(r) : MPI_SUCCESS;
    if (MPI_SUCCESS != *rc) {
        *rc = mca_coll_braid_request_copies_close(r, *rc);
        return false;
    }
    return concluded(r, braid_task_post(&r->core, run_job, r), prev_req, rc);
}

/* MPI_Ixxx's return once its post came to done / rc / prev_req
 * (concluded) */
static int posted(mca_coll_braid_request_t *r, bool done, int rc, ompi_request_t *prev_req,
                  ompi_request_t **request)
{
    if (done) {
        if (MPI_SUCCESS == rc) return ran_out(r, request);
        /* the error goes to MPI_Wait, in the request's status */
        activate(r);
        mca_coll_braid_request_complete(r, rc, false);
    } else if (MPI_REQUEST_NULL != prev_req || MPI_SUCCESS != rc) {
        request_put(r);
        *request = prev_req;
        return rc;
    }
    OBJ_RETAIN(r->m->comm);
    *request = &r->super.super;
    return MPI_SUCCESS;
}

/* MPI_Ixxx. A call that ran out inside its post, without error, returns
 * Open MPI's completed empty request (what its PML returns for
 * MPI_PROC_NULL) and gives braid's back to the pool at once, never shown
 * to Open MPI (ran_out): MPI_Wait then only frees the empty one, and the
 * communicator is not retained and released. That is safe because the
 * MPI layer's retain functions (Open MPI 4.0.2 and later) skip a
 * completed request, and MPI leaves a nonblocking collective's status
 * source and tag undefined. Otherwise braid's request holds its
 * communicator until it is freed, as Open MPI's point-to-point requests
 * do: MPI_Comm_free with the call pending leaves the module, its segment
 * and its transport state in place until MPI_Wait has freed the request.
 * In a job without CUDA, a small call's whole way is the lines up to the
 * first return, the rest out of line (noinline: post_request_end and
 * post_request_cuda are cold paths kept out of this hot caller, and
 * post_request itself out of mca_coll_braid_request_post): only the
 * request and *request live across the run. */
static __attribute__((noinline)) int post_request(mca_coll_braid_request_t *r,
                                                  ompi_request_t **request);

/* the rest of post_request once r's first run came to st (noinline: the
 * cold path, out of post_request) */
static __attribute__((noinline)) int post_request_end(mca_coll_braid_request_t *r, int st,
                                                      ompi_request_t **request)
{
    ompi_request_t *prev_req = MPI_REQUEST_NULL;
    int rc;
    bool done = concluded(r, st, &prev_req, &rc);
    return posted(r, done, rc, prev_req, request);
}

/* a job with CUDA: post_request on host copies where a buffer is on a
 * device (noinline: the cold path, out of post_request) */
static __attribute__((noinline)) int post_request_cuda(mca_coll_braid_request_t *r,
                                                       ompi_request_t **request)
{
    ompi_request_t *prev_req = MPI_REQUEST_NULL;
    int rc;
    bool done = post(r, &prev_req, &rc);
    return posted(r, done, rc, prev_req, request);
}

static int post_request(mca_coll_braid_request_t *r, ompi_request_t **request)
{
    if (cmp()->cuda_job) return post_request_cuda(r, request);
    r->sbuf = r->a.usbuf;
    r->rbuf = r->a.urbuf;
    int st = braid_task_post(&r->core, run_job, r);
    if (BRAID_TASK_DONE == st && MPI_SUCCESS == r->core.result) return ran_out(r, request);
    return post_request_end(r, st, request);
}

static bool hold_post(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, ompi_request_t **request);

/* MPI_Ixxx when the pool had no request to pop, or while posts are held
 * (noinline: the cold path, out of mca_coll_braid_request_post) */
static __attribute__((noinline)) int post_taken(mca_coll_base_module_t *module,
                                                const mca_coll_braid_family_t *f,
                                                const mca_coll_braid_args_t *a,
                                                ompi_request_t **request)
{
    mca_coll_braid_request_t *r = request_take(BRAID_TASK_NONBLOCKING);
    if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
    request_fill(r, module, f, a);
    if (__atomic_load_n(&r->m->holding, __ATOMIC_ACQUIRE) && hold_post(r->m, r, request)) return MPI_SUCCESS;
    return post_request(r, request);
}

/* ------------------------------------------------------------------ */
/* posts held while the tier is set up                                 */
/* ------------------------------------------------------------------ */

static void hold_lock(mca_coll_braid_module_t *m)
{
    while (__atomic_exchange_n(&m->hold_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}

static void hold_unlock(mca_coll_braid_module_t *m) { __atomic_store_n(&m->hold_lock, 0, __ATOMIC_RELEASE); }

void mca_coll_braid_posts_hold(mca_coll_braid_module_t *m)
{
    __atomic_store_n(&m->holding, 1, __ATOMIC_RELEASE);
}

/* MPI_Ixxx while the tier is set up: the request is Open MPI's at once,
 * active and outstanding, and posted when the set-up ends (false: the
 * holding had just ended, post it now). */
static bool hold_post(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, ompi_request_t **request)
{
    hold_lock(m);
    bool holding = __atomic_load_n(&m->holding, __ATOMIC_ACQUIRE);
    if (holding) {
        activate(r);
        r->held = true;
        r->held_next = NULL;
        if (NULL == m->held_tail) m->held_head = r;
        else m->held_tail->held_next = r;
        m->held_tail = r;
        OBJ_RETAIN(m->comm);
        *request = &r->super.super;
    }
    hold_unlock(m);
    return holding;
}

/* a held request's post: as a persistent start's, on a request the
 * application (or Open MPI) holds already; a fallback runs the previous
 * module's request inside it */
static void post_held(mca_coll_braid_request_t *r)
{
    int rc;
    bool done = post(r, NULL, &rc);
    if (done || MPI_SUCCESS != rc) mca_coll_braid_request_complete(r, rc, true);
}

void mca_coll_braid_posts_release(mca_coll_braid_module_t *m)
{
    hold_lock(m);
    __atomic_store_n(&m->holding, 0, __ATOMIC_RELEASE);
    mca_coll_braid_request_t *r = m->held_head;
    m->held_head = m->held_tail = NULL;
    hold_unlock(m);
    while (NULL != r) {
        mca_coll_braid_request_t *next = r->held_next;
        post_held(r);
        r = next;
    }
}

/* The request popped here, inline, and the rest in post_request: no call
 * before the arguments are stored, and so no registers to keep. */
int mca_coll_braid_request_post(mca_coll_base_module_t *module, const mca_coll_braid_family_t *f,
                                const mca_coll_braid_args_t *a, ompi_request_t **request)
{
    if (__builtin_expect(__atomic_load_n(&((mca_coll_braid_module_t *)module)->holding, __ATOMIC_ACQUIRE), 0))
        return post_taken(module, f, a, request);
    braid_task_t *core = cmp()->inject_alloc_failure < 0 ? braid_engine_pool_pop(ENG) : NULL;
    if (NULL == core) return post_taken(module, f, a, request);
    core->kind = BRAID_TASK_NONBLOCKING;
    request_fill(mca_coll_braid_request_of(core), module, f, a);
    return post_request(mca_coll_braid_request_of(core), request);
}

static int request_start(size_t n, ompi_request_t **reqs)
{
    for (size_t i = 0; i < n; i++) {
        mca_coll_braid_request_t *r = (mca_coll_braid_request_t *)reqs[i];
        int rc;
        bool done = post(r, NULL, &rc);
        if (done || MPI_SUCCESS != rc) mca_coll_braid_request_complete(r, rc, false);
        if (!done && MPI_SUCCESS != rc) return rc;
    }
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* persistent requests                                                 */
/* ------------------------------------------------------------------ */

/* MPI_Xxx_init: its sequence number and its shm channel now, in init
 * order (MPI makes the initialisation calls collective). It holds its
 * communicator until it is freed: the channel lives in its segment. */
int mca_coll_braid_request_persist(mca_coll_base_module_t *module, const mca_coll_braid_family_t *f,
                                   const mca_coll_braid_args_t *a, ompi_request_t **request)
{
    mca_coll_braid_request_t *r = request_take(BRAID_TASK_PERSISTENT);
    if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE;
    request_fill(r, module, f, a);
    mca_coll_braid_module_t *m = r->m;
    braid_task_t *core = &r->core;
    int rc = mca_coll_braid_persistent_number_take(m, &core->seq);
    if (MPI_SUCCESS != rc) {
        request_put(r);
        return rc;
    }
    core->chan = mca_coll_braid_shm_channel_take(m, &core->chan_shm);
    /* made to be started many times: UCX now, if it starts on first need */
    mca_coll_braid_transport_join(m);
    core->view = m->bcomm;
    core->view.shm = core->chan >= 0 ? &core->chan_shm : NULL;
    /* the hierarchical allreduce's views are made on first use: now, while
     * MPI orders the calls on m, not in starts that threads may make at once */
    if (cmp()->multi_node) (void)braid_site_hier_views(&m->site);
    OBJ_RETAIN(m->comm);
    ompi_request_t *req = &r->super.super;
    OMPI_REQUEST_INIT(req, true);   /* inactive, complete until started */
    req->req_start = request_start;
    req->req_mpi_object.comm = m->comm;
    *request = req;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* request callbacks                                                   */
/* ------------------------------------------------------------------ */

static int request_free(ompi_request_t **rptr)
{
    mca_coll_braid_request_t *r = (mca_coll_braid_request_t *)*rptr;
    if (!REQUEST_COMPLETE(&r->super.super)) return MPI_ERR_REQUEST;
    if (BRAID_TASK_PERSISTENT == r->core.kind) {
        if (r->core.chan >= 0) mca_coll_braid_shm_channel_give(r->m, r->core.chan, &r->core.chan_shm);
        mca_coll_braid_persistent_number_give(r->m, r->core.seq);
        r->opb.op = NULL;
    }
    /* the last reference frees the communicator and the module with it:
     * released through a local, since OBJ_RELEASE writes NULL into the
     * pointer it was given */
    ompi_communicator_t *comm = r->m->comm;
    r->m = NULL;
    OBJ_RELEASE(comm);
    request_put(r);
    *rptr = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

static int request_cancel(ompi_request_t *req, int complete_)
{
    (void)req, (void)complete_;
    return MPI_ERR_REQUEST;   /* collectives cannot be cancelled */
}
