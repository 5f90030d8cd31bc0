/*
 * coll_braid_nbc.c - nonblocking (MPI_Iallreduce, ...) and persistent
 * (MPI_Allreduce_init, ...; MPIX_ on Open MPI 4.1) collectives.
 *
 * One engine for all three kinds of call: a request runs the blocking
 * entry point of its collective (coll_braid_entry_*.c, with its selection,
 * layouts, views, shm tier and algorithms) on a fiber (braid_fiber.h). The
 * fiber starts on the poster's thread and runs until its first wait that
 * is not done; the request then joins the outstanding list, and progress
 * resumes its fiber until it returns:
 *
 *   MPI_Ixxx / MPI_Start ──> post: fiber runs the entry point ──┐
 *        returns the request <── first wait not done: yield <───┘
 *   opal_progress (MPI_Wait/Test, any MPI call, braid's own blocking
 *   waits) ──> mca_coll_braid_nbc_progress: resume each outstanding fiber
 *        ──> returned: host copies back, ompi_request_complete
 *
 * The request is Open MPI's nbc request type (MPI_Ixxx retains a user op
 * and derived datatypes on it after this returns), from a pool: its fiber,
 * scratch and workspace are kept across uses, so a call in steady state
 * allocates nothing.
 *
 * What a request keeps that a blocking call keeps per communicator
 * (mca_coll_braid_scratch and friends): scratch, MPI_Reduce_scatter's
 * counts, the hierarchical allreduce's bound phases, the tag sequence
 * number. The op binding is copied to the fiber's stack.
 *
 * Sequence numbers: a nonblocking call takes the communicator's next one
 * when it is posted (the order of calls is the same on every rank); a
 * persistent request takes one of its own at init, from the other half of
 * the field (braid_tag.h), and every start uses it. Ranks may start
 * different persistent requests in different orders, so a persistent
 * request never uses the communicator's shm cells, which number calls in
 * call order: it takes a channel of its own at init (coll_braid_shm.c),
 * on which only its starts run, and its shm algorithms run on that.
 *
 * Handing on: the entry point's decision to hand the call to the previous
 * module falls in the fiber's first run (before any message, the same on
 * every rank). A nonblocking call is then given to the previous module's
 * nonblocking function and its request returned instead of braid's; a
 * persistent start runs the previous module's nonblocking function as an
 * inner request that completes braid's. With device buffers the request
 * runs on host copies (made at post, copied back on completion), and a
 * hand-on inside it runs the previous module's blocking function there.
 */
#include "coll_braid.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi/request/request.h"
#include "opal/util/output.h"

/* Open MPI's nbc request type (ompi/mca/coll/base/coll_base_util.h, whose
 * op.h include needs Fortran headers that devel packages do not ship):
 * ompi_request_t followed by the fields MPI_Ixxx's retain functions use.
 * Their layout differs between 4.1 and 5.0; braid never touches them and
 * reserves room for them here, checked against the class's own size
 * before the first request is made (nbc_request_fits). */
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;
typedef struct {
    ompi_request_t super;
    void *fields[16];
} ompi_coll_base_nbc_request_t;

typedef enum { KIND_NONBLOCKING, KIND_PERSISTENT } kind_t;

struct mca_coll_braid_request {
    ompi_coll_base_nbc_request_t super;
    mca_coll_braid_module_t *m;
    braid_coll_t coll;
    kind_t kind;
    uint32_t pseq;                  /* persistent: its sequence number */
    int chan;                       /* persistent: its shm channel, or -1 */
    braid_shm_t chan_shm;           /* ... bound */
    braid_comm_t view;              /* persistent: the communicator on its channel */
    bool op_bound;                  /* persistent: opb holds its op binding */
    mca_coll_braid_op_t opb;
    bool chosen;                    /* persistent: choice holds its algorithm for choice_bytes */
    size_t choice_bytes;
    braid_choice_t choice;
    /* the call's arguments, as MPI gave them */
    const void *usbuf;
    void *urbuf;
    int count;                      /* allgather: the receive count */
    int scount;
    MPI_Datatype sdtype, dtype;     /* dtype: the receive / reduce datatype */
    MPI_Op op;
    int root;
    const int *rcounts;             /* MPI_Ireduce_scatter: the caller's array */
    /* the run: on the user's buffers, or on their host copies */
    const void *sbuf;
    void *rbuf;
    braid_fiber_t *fiber;
    bool hand_on;                   /* the entry point handed the call on */
    bool ran_out;                   /* its fiber returned (or its inner request completed):
                                       to be completed by an application thread */
    ompi_request_t *inner;          /* handed on with host copies, or a persistent start
                                       handed on: the previous module's request */
    mca_coll_braid_host_copies_t *hc; /* device buffers: the host copies it runs on */
    /* kept across uses of the request */
    braid_scratch_t scratch;
    size_t *counts[2];
    size_t counts_len[2];
    braid_hier_t hier;
    mca_coll_braid_request_t *next_free;
    mca_coll_braid_request_t *next_active; /* the outstanding list */
};

static void request_construct(mca_coll_braid_request_t *r)
{
    memset((char *)r + sizeof(r->super), 0, sizeof(*r) - sizeof(r->super));
}

static void request_destruct(mca_coll_braid_request_t *r)
{
    braid_scratch_release(&r->scratch);
    free(r->counts[0]);
    free(r->counts[1]);
}

OBJ_CLASS_INSTANCE(mca_coll_braid_request_t, ompi_coll_base_nbc_request_t, request_construct,
                   request_destruct);

/* the engine: the pool and the outstanding requests. The outstanding list
 * is linked through the requests, in post order: adding one never
 * allocates, so a post cannot fail half way. */
static struct {
    pthread_mutex_t lock;          /* the outstanding list and every resume from progress */
    mca_coll_braid_request_t *head, *tail;
    int outstanding;               /* the list's length, read without the lock */
    int runnable;                  /* of those, the ones not ran_out (the progress thread's work) */
    pthread_mutex_t pool_lock;
    mca_coll_braid_request_t *pool;
} eng = { .lock = PTHREAD_MUTEX_INITIALIZER, .pool_lock = PTHREAD_MUTEX_INITIALIZER };

static inline mca_coll_braid_component_t *cmp(void) { return &mca_coll_braid_component; }

/* ------------------------------------------------------------------ */
/* what the glue asks while a request runs                             */
/* ------------------------------------------------------------------ */

mca_coll_braid_request_t *mca_coll_braid_request_current(void)
{
    braid_fiber_t *f = braid_fiber_self();
    return NULL == f ? NULL : braid_fiber_data(f);
}

braid_scratch_t *mca_coll_braid_scratch(mca_coll_braid_module_t *m)
{
    mca_coll_braid_request_t *r = mca_coll_braid_request_current();
    return NULL != r ? &r->scratch : &m->scratch;
}

size_t *mca_coll_braid_counts(mca_coll_braid_module_t *m, int slot, size_t n)
{
    mca_coll_braid_request_t *r = mca_coll_braid_request_current();
    size_t **p, *len, mlen = 0;
    if (NULL != r) {
        p = &r->counts[slot];
        len = &r->counts_len[slot];
    } else {
        p = 0 == slot ? &m->rcounts : &m->topo_counts;
        /* the communicator's arrays are made for its size once */
        mlen = NULL != *p ? n : 0;
        len = &mlen;
    }
    if (*len < n) {
        size_t *q = realloc(*p, n * sizeof(size_t));
        if (NULL == q) return NULL;
        *p = q;
        *len = n;
    }
    return *p;
}

braid_scratch_t *mca_coll_braid_request_scratch(mca_coll_braid_module_t *m,
                                                mca_coll_braid_request_t *r)
{
    return NULL != r ? &r->scratch : &m->scratch;
}

braid_hier_t *mca_coll_braid_hier_slot(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r)
{
    if (NULL == r) return &m->hier_cache.h;
    /* a persistent request binds its own (coll_braid_dispatch.c) */
    if (KIND_NONBLOCKING == r->kind) r->hier = m->hier_cache.h;
    return &r->hier;
}

const char *mca_coll_braid_trace_name(const mca_coll_braid_request_t *r, braid_coll_t coll,
                                      char *buf, size_t len)
{
    const char *name = braid_coll_name(coll);
    if (NULL == r) return name;
    snprintf(buf, len, KIND_PERSISTENT == r->kind ? "%s_init" : "i%s", name);
    return buf;
}

void mca_coll_braid_call_seq(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r)
{
    if (NULL == r) {
        braid_ucx_comm_begin(m->tcomm);
        return;
    }
    braid_fiber_set_seq(r->fiber, KIND_PERSISTENT == r->kind ? r->pseq
                                                             : braid_ucx_comm_begin(m->tcomm));
}

bool mca_coll_braid_request_persistent(const mca_coll_braid_request_t *r)
{
    return NULL != r && KIND_PERSISTENT == r->kind;
}

const mca_coll_braid_op_t *mca_coll_braid_request_op(mca_coll_braid_request_t *r,
                                                     MPI_Datatype dtype, MPI_Op op)
{
    if (!r->op_bound || r->opb.dtype != dtype || r->opb.op != op) {
        mca_coll_braid_op_bind(&r->opb, dtype, op);
        r->op_bound = true;
    }
    return &r->opb;
}

braid_choice_t *mca_coll_braid_request_choice(mca_coll_braid_request_t *r, size_t bytes)
{
    return r->chosen && r->choice_bytes == bytes ? &r->choice : NULL;
}

void mca_coll_braid_request_keep_choice(mca_coll_braid_request_t *r, size_t bytes,
                                        braid_choice_t ch)
{
    r->choice = ch;
    r->choice_bytes = bytes;
    r->chosen = true;
}

braid_comm_t *mca_coll_braid_shm_comm(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r)
{
    return mca_coll_braid_request_persistent(r) ? &r->view : &m->bcomm;
}

/* Inside a request the entry point never runs the previous module's
 * blocking function: it records the hand-on and returns, and post() gives
 * the call to the previous module's nonblocking one. Every reason to hand
 * on is decided before the call's first wait (the dispatch tests the
 * algorithm's declared refusals before it queues or sends), so the fiber
 * has returned inside its first run, on every rank alike. */
bool mca_coll_braid_hand_on_nonblocking(void)
{
    mca_coll_braid_request_t *r = mca_coll_braid_request_current();
    if (NULL == r) return false;
    r->hand_on = true;
    return true;
}

/* ------------------------------------------------------------------ */
/* the request's life                                                  */
/* ------------------------------------------------------------------ */

/* The fiber's job: the blocking entry point on the request's arguments. */
static int run_request(void *arg)
{
    mca_coll_braid_request_t *r = arg;
    mca_coll_braid_module_t *m = r->m;
    mca_coll_base_module_t *mod = &m->super;
    switch (r->coll) {
    case BRAID_COLL_BARRIER:
        return mca_coll_braid_barrier(m->comm, mod);
    case BRAID_COLL_BCAST:
        return mca_coll_braid_bcast(r->rbuf, r->count, r->dtype, r->root, m->comm, mod);
    case BRAID_COLL_ALLREDUCE:
        return mca_coll_braid_allreduce(r->sbuf, r->rbuf, r->count, r->dtype, r->op, m->comm, mod);
    case BRAID_COLL_REDUCE:
        return mca_coll_braid_reduce(r->sbuf, r->rbuf, r->count, r->dtype, r->op, r->root,
                                     m->comm, mod);
    case BRAID_COLL_ALLGATHER:
        return mca_coll_braid_allgather(r->sbuf, r->scount, r->sdtype, r->rbuf, r->count,
                                        r->dtype, m->comm, mod);
    case BRAID_COLL_REDUCE_SCATTER:
        if (NULL != r->rcounts)
            return mca_coll_braid_reduce_scatter(r->sbuf, r->rbuf, r->rcounts, r->dtype, r->op,
                                                 m->comm, mod);
        return mca_coll_braid_reduce_scatter_block(r->sbuf, r->rbuf, r->count, r->dtype, r->op,
                                                   m->comm, mod);
    default:
        return MPI_ERR_INTERN;
    }
}

static void progress_thread_wake(void);
static int request_free(ompi_request_t **rptr);

/* The engine's locks, taken only where two threads can be in it at once:
 * MPI_THREAD_MULTIPLE or the progress thread. Otherwise one thread at a
 * time calls MPI, and a lock pair per pool operation was a measurable
 * part of an 8-byte post + wait. */
static inline bool eng_shared(void) { return cmp()->thread_multiple || cmp()->progress_thread; }
static inline void eng_lock(pthread_mutex_t *m)
{
    if (eng_shared()) pthread_mutex_lock(m);
}
static inline void eng_unlock(pthread_mutex_t *m)
{
    if (eng_shared()) pthread_mutex_unlock(m);
}
/* nbc_progress's entry: one thread at a time, and never re-entered from
 * a completion it makes (unshared: a flag instead of the lock) */
static bool progress_running;
static inline bool progress_enter(void)
{
    if (eng_shared()) return 0 == pthread_mutex_trylock(&eng.lock);
    if (progress_running) return false;
    progress_running = true;
    return true;
}
static inline void progress_leave(void)
{
    if (eng_shared()) pthread_mutex_unlock(&eng.lock);
    else progress_running = false;
}
static int request_cancel(ompi_request_t *req, int complete);
static int request_start(size_t n, ompi_request_t **reqs);

static mca_coll_braid_request_t *request_get(mca_coll_braid_module_t *m, braid_coll_t coll,
                                             kind_t kind)
{
    eng_lock(&eng.pool_lock);
    mca_coll_braid_request_t *r = eng.pool;
    if (NULL != r) eng.pool = r->next_free;
    eng_unlock(&eng.pool_lock);
    if (NULL == r && NULL == (r = OBJ_NEW(mca_coll_braid_request_t))) return NULL;
    ompi_request_t *req = &r->super.super;
    OMPI_REQUEST_INIT(req, KIND_PERSISTENT == kind);
    req->req_type = OMPI_REQUEST_COLL;
    req->req_free = request_free;
    req->req_cancel = request_cancel;
    req->req_start = KIND_PERSISTENT == kind ? request_start : NULL;
    req->req_mpi_object.comm = m->comm;
    r->m = m;
    r->coll = coll;
    r->kind = kind;
    r->usbuf = r->sbuf = NULL;
    r->urbuf = r->rbuf = NULL;
    r->count = r->scount = 0;
    r->sdtype = r->dtype = MPI_DATATYPE_NULL;
    r->op = MPI_OP_NULL;
    r->root = 0;
    r->rcounts = NULL;
    r->chan = -1;
    r->op_bound = false;
    r->chosen = false;
    r->fiber = NULL;
    r->inner = NULL;
    r->hc = NULL;
    r->next_free = NULL;
    /* fault injection (coll_braid_inject_alloc_failure, tests): each call
     * starts from empty scratch with the same allowance, so every rank
     * fails the same allocation whatever its pool held */
    if (cmp()->inject_alloc_failure >= 0) {
        braid_scratch_release(&r->scratch);
        r->scratch.fail_alloc = 1;
        r->scratch.allocs_before_failure = (unsigned)cmp()->inject_alloc_failure;
    }
    return r;
}

static void request_put(mca_coll_braid_request_t *r)
{
    OMPI_REQUEST_FINI(&r->super.super);
    eng_lock(&eng.pool_lock);
    r->next_free = eng.pool;
    eng.pool = r;
    eng_unlock(&eng.pool_lock);
}

/* signal: a thread may wait on the request already (it left its post);
 * without, the plain store of a request completed inside its post, where
 * no wait can have begun (no atomic exchange) */
static void complete(mca_coll_braid_request_t *r, int rc, bool signal)
{
    r->super.super.req_status.MPI_ERROR = rc;
    ompi_request_complete(&r->super.super, signal);
}

/* The fiber returned: give it back, copy device results back, complete. A
 * hand-on after the fiber's first wait would be a decision some ranks took
 * at post and others later: it is an internal error, never a blocking call
 * of the previous module. */
static void finish(mca_coll_braid_request_t *r, bool signal)
{
    int rc = braid_fiber_result(r->fiber);
    if (r->hand_on) {
        opal_output(0, "braid: %s on %s: internal error: handed on after its first wait",
                    braid_coll_name(r->coll), r->m->comm->c_name);
        rc = MPI_ERR_INTERN;
    }
    braid_fiber_put(r->fiber);
    r->fiber = NULL;
    rc = mca_coll_braid_host_copies_close(r->hc, rc);
    r->hc = NULL;
    complete(r, rc, signal);
}

static void active_add(mca_coll_braid_request_t *r)
{
    eng_lock(&eng.lock);
    r->ran_out = false;
    r->next_active = NULL;
    if (NULL != eng.tail) eng.tail->next_active = r;
    else eng.head = r;
    eng.tail = r;
    __atomic_add_fetch(&eng.outstanding, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&eng.runnable, 1, __ATOMIC_RELEASE);
    eng_unlock(&eng.lock);
    mca_coll_braid_progress_active();
    progress_thread_wake();
}

/* The host copies a request on device buffers runs on (whole,
 * synchronous; the receive side is read from the device when the call
 * reads it: in place, or a datatype with holes). */
static int open_host_copies(mca_coll_braid_request_t *r)
{
    int P = r->m->bcomm.size, me = r->m->bcomm.rank;
    bool in_place = MPI_IN_PLACE == r->sbuf;
    size_t n = r->count > 0 ? (size_t)r->count : 0, sn = n, rn = n;
    MPI_Datatype st = r->dtype;
    const void *none = NULL, **sp = in_place ? &none : &r->sbuf;
    switch (r->coll) {
    case BRAID_COLL_BARRIER:
        return MPI_SUCCESS;
    case BRAID_COLL_BCAST:
        sp = &none;
        break;
    case BRAID_COLL_REDUCE:
        if (me != r->root) rn = 0;
        break;
    case BRAID_COLL_ALLGATHER:
        sn = r->scount > 0 ? (size_t)r->scount : 0;
        st = r->sdtype;
        rn = n * (size_t)P;
        break;
    case BRAID_COLL_REDUCE_SCATTER: {
        size_t total = 0, mine = n;
        if (NULL != r->rcounts) {
            for (int i = 0; i < P; i++) total += r->rcounts[i] > 0 ? (size_t)r->rcounts[i] : 0;
            mine = r->rcounts[me] > 0 ? (size_t)r->rcounts[me] : 0;
        } else {
            total = n * (size_t)P;
        }
        sn = total;
        rn = in_place ? total : mine;
        break;
    }
    default:
        break;
    }
    bool rfill = in_place || BRAID_COLL_BCAST == r->coll ||
                 !mca_coll_braid_is_contiguous(r->dtype, rn);
    void **rp = 0 == rn ? NULL : &r->rbuf;
    return mca_coll_braid_host_copies_open(&r->hc, sp, sn, st, rp, rn, r->dtype, rfill);
}

static bool on_device(const mca_coll_braid_request_t *r)
{
    return (MPI_IN_PLACE != r->usbuf && NULL != r->usbuf && mca_coll_braid_is_device(r->usbuf)) ||
           (NULL != r->urbuf && mca_coll_braid_is_device(r->urbuf));
}

/* The previous module's nonblocking function for r's call. */
static int prev_nonblocking(mca_coll_braid_request_t *r, ompi_request_t **req)
{
    mca_coll_braid_module_t *m = r->m;
    mca_coll_braid_prev_t *p = &m->prev;
    switch (r->coll) {
    case BRAID_COLL_BARRIER:
        return p->ibarrier(m->comm, req, p->ibarrier_module);
    case BRAID_COLL_BCAST:
        return p->ibcast(r->rbuf, r->count, r->dtype, r->root, m->comm, req, p->ibcast_module);
    case BRAID_COLL_ALLREDUCE:
        return p->iallreduce(r->sbuf, r->rbuf, r->count, r->dtype, r->op, m->comm, req,
                             p->iallreduce_module);
    case BRAID_COLL_REDUCE:
        return p->ireduce(r->sbuf, r->rbuf, r->count, r->dtype, r->op, r->root, m->comm, req,
                          p->ireduce_module);
    case BRAID_COLL_ALLGATHER:
        return p->iallgather(r->sbuf, r->scount, r->sdtype, r->rbuf, r->count, r->dtype, m->comm,
                             req, p->iallgather_module);
    case BRAID_COLL_REDUCE_SCATTER:
        if (NULL != r->rcounts)
            return p->ireduce_scatter(r->sbuf, r->rbuf, r->rcounts, r->dtype, r->op, m->comm, req,
                                      p->ireduce_scatter_module);
        return p->ireduce_scatter_block(r->sbuf, r->rbuf, r->count, r->dtype, r->op, m->comm, req,
                                        p->ireduce_scatter_block_module);
    default:
        return MPI_ERR_INTERN;
    }
}

/* Post r: run its fiber until the first wait that is not done. Returns an
 * MPI code; *handed (nonblocking only) is set when the call went to the
 * previous module instead, whose request is then in *prev_req. */
static int post(mca_coll_braid_request_t *r, bool *handed, ompi_request_t **prev_req)
{
    ompi_request_t *req = &r->super.super;
    *handed = false;
    req->req_state = OMPI_REQUEST_ACTIVE;
    req->req_complete = REQUEST_PENDING;
    req->req_status.MPI_ERROR = MPI_SUCCESS;
    req->req_status._cancelled = 0;
    r->hand_on = false;
    r->inner = NULL;
    r->sbuf = r->usbuf;
    r->rbuf = r->urbuf;
    if (on_device(r)) {
        int rc = open_host_copies(r);
        if (MPI_SUCCESS != rc) {
            mca_coll_braid_host_copies_close(r->hc, rc);
            r->hc = NULL;
            return rc;
        }
    }
    r->fiber = braid_fiber_get(run_request, r);
    if (NULL == r->fiber) {
        r->hc = NULL == r->hc ? NULL : (mca_coll_braid_host_copies_close(r->hc, MPI_ERR_NO_MEM), NULL);
        return MPI_ERR_NO_MEM;
    }
    braid_fiber_set_data(r->fiber, r);
    bool done = braid_fiber_resume(r->fiber);
    if (done && r->hand_on) {
        braid_fiber_put(r->fiber);
        r->fiber = NULL;
        /* a nonblocking call on the user's buffers: the previous module's
         * request is the application's; otherwise it runs inside braid's
         * request (a persistent start; host copies, copied back when it
         * completes) */
        if (KIND_NONBLOCKING == r->kind && NULL == r->hc) {
            *handed = true;
            return prev_nonblocking(r, prev_req);
        }
        int rc = prev_nonblocking(r, &r->inner);
        if (MPI_SUCCESS != rc) {
            r->inner = NULL;
            mca_coll_braid_host_copies_close(r->hc, rc);
            r->hc = NULL;
            return rc;
        }
    } else if (done) {
        finish(r, false);
        return MPI_SUCCESS;
    }
    active_add(r);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* progress                                                            */
/* ------------------------------------------------------------------ */

bool mca_coll_braid_nbc_outstanding(void)
{
    return 0 != __atomic_load_n(&eng.outstanding, __ATOMIC_ACQUIRE);
}

/* Resume every outstanding request once; with `complete`, complete those
 * whose fiber returned. One thread at a time (the others find the lock
 * taken and leave: the holder is progressing their requests too); never
 * from a fiber. Completion is left to the application's threads: Open MPI
 * completes and waits on requests without atomics unless the job asked
 * for MPI_THREAD_MULTIPLE, so braid's progress thread only runs fibers. */
static int nbc_progress(bool complete_them)
{
    if (!mca_coll_braid_nbc_outstanding() || NULL != braid_fiber_self()) return 0;
    if (!progress_enter()) return 0;
    int n = 0;
    mca_coll_braid_request_t **link = &eng.head, *prev = NULL;
    while (NULL != *link) {
        mca_coll_braid_request_t *r = *link;
        if (!r->ran_out) {
            r->ran_out = NULL != r->inner ? REQUEST_COMPLETE(r->inner) : braid_fiber_resume(r->fiber);
            if (r->ran_out) {
                __atomic_sub_fetch(&eng.runnable, 1, __ATOMIC_RELEASE);
                n++;
            }
        }
        if (!r->ran_out || !complete_them) {
            prev = r;
            link = &r->next_active;
            continue;
        }
        /* unlinked before it completes: a waiting thread may reuse it at once */
        *link = r->next_active;
        if (eng.tail == r) eng.tail = prev;
        __atomic_sub_fetch(&eng.outstanding, 1, __ATOMIC_RELEASE);
        if (NULL != r->inner) {
            int rc = r->inner->req_status.MPI_ERROR;
            ompi_request_free(&r->inner);
            r->inner = NULL;
            rc = mca_coll_braid_host_copies_close(r->hc, rc);
            r->hc = NULL;
            complete(r, rc, true);
        } else {
            finish(r, true);
        }
        n++;
    }
    progress_leave();
    return n;
}

int mca_coll_braid_nbc_progress(void)
{
    return nbc_progress(true);
}

/* ------------------------------------------------------------------ */
/* the progress thread (coll_braid_progress_thread)                    */
/* ------------------------------------------------------------------ */

/* Started with the first outstanding request. It sleeps on a condition
 * variable while no request has a fiber left to run (woken by active_add);
 * otherwise it resumes them, and when a pass advances none it backs off:
 * a few passes with sched_yield, then waits of growing length up to
 * PT_SLEEP_MAX_NS on the UCX worker's wake-up fd (braid_ucx_wait_event),
 * so that a peer that is late costs this rank little CPU (the
 * application's thread computes on the same cores): a UCX message wakes
 * it at once, a shm-tier flag (no fd to wait on) is seen within the wait's
 * length. */
#define PT_SPIN_PASSES 64
#define PT_SLEEP_MAX_NS 200000L

static struct {
    pthread_t thread;
    bool started, stop;
    pthread_mutex_t lock;
    pthread_cond_t wake;
} pt = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER };

static void *progress_thread_main(void *arg)
{
    (void)arg;
    unsigned idle = 0;
    long sleep_ns = 1000;
    for (;;) {
        pthread_mutex_lock(&pt.lock);
        while (!pt.stop && 0 == __atomic_load_n(&eng.runnable, __ATOMIC_ACQUIRE)) {
            idle = 0;
            sleep_ns = 1000;
            pthread_cond_wait(&pt.wake, &pt.lock);
        }
        bool stop = pt.stop;
        pthread_mutex_unlock(&pt.lock);
        if (stop) return NULL;
        /* the worker first (a pass resumes every fiber, each of which also
         * polls it), then the requests */
        int n = braid_ucx_progress_now();
        n += nbc_progress(false);
        if (n > 0) {
            idle = 0;
            sleep_ns = 1000;
        } else if (++idle < PT_SPIN_PASSES) {
            sched_yield();
        } else if (braid_ucx_wait_event(sleep_ns)) {
            sleep_ns = 1000;   /* a message came: the fibers waiting on it run next */
        } else if (sleep_ns < PT_SLEEP_MAX_NS) {
            sleep_ns *= 2;
        }
    }
}

static void progress_thread_wake(void)
{
    if (!cmp()->progress_thread) return;
    pthread_mutex_lock(&pt.lock);
    if (!pt.started && !pt.stop) {
        pt.started = 0 == pthread_create(&pt.thread, NULL, progress_thread_main, NULL);
        if (!pt.started)
            opal_output_verbose(1, cmp()->output, "braid: the progress thread could not be "
                                "started; requests progress inside MPI calls only");
        else
            opal_output_verbose(10, cmp()->output, "braid: progress thread started; it waits "
                                "on %s", braid_ucx_has_wakeup() ? "the UCX worker's wake-up fd"
                                                                : "timed sleeps (no wake-up fd)");
    }
    pthread_cond_signal(&pt.wake);
    pthread_mutex_unlock(&pt.lock);
}

static void progress_thread_stop(void)
{
    pthread_mutex_lock(&pt.lock);
    pt.stop = true;
    bool started = pt.started;
    pthread_cond_signal(&pt.wake);
    pthread_mutex_unlock(&pt.lock);
    if (started) pthread_join(pt.thread, NULL);
    pt.started = false;
    pt.stop = false;
}

/* ------------------------------------------------------------------ */
/* request callbacks                                                   */
/* ------------------------------------------------------------------ */

static int request_free(ompi_request_t **rptr)
{
    mca_coll_braid_request_t *r = (mca_coll_braid_request_t *)*rptr;
    if (!REQUEST_COMPLETE(&r->super.super)) return MPI_ERR_REQUEST;
    if (KIND_PERSISTENT == r->kind) {
        if (r->chan >= 0) mca_coll_braid_shm_channel_give(r->m, r->chan, &r->chan_shm);
        mca_coll_braid_persistent_number_give(r->m, r->pseq);
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

static int request_start(size_t n, ompi_request_t **reqs)
{
    for (size_t i = 0; i < n; i++) {
        mca_coll_braid_request_t *r = (mca_coll_braid_request_t *)reqs[i];
        bool handed;
        int rc = post(r, &handed, NULL);
        if (MPI_SUCCESS != rc) {
            complete(r, rc, false);
            return rc;
        }
    }
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* entry points                                                        */
/* ------------------------------------------------------------------ */

/* A nonblocking call: post, or hand it on. Braid's request holds its
 * communicator until it is freed, as Open MPI's point-to-point requests
 * do: MPI_Comm_free with the call pending leaves the module, its segment
 * and its transport state in place until MPI_Wait has freed the request. */
static int start_nonblocking(mca_coll_braid_request_t *r, ompi_request_t **request)
{
    bool handed;
    ompi_request_t *prev_req = MPI_REQUEST_NULL;
    int rc = post(r, &handed, &prev_req);
    if (handed) {
        request_put(r);
        *request = prev_req;
        return rc;
    }
    if (MPI_SUCCESS != rc) {
        request_put(r);
        return rc;
    }
    OBJ_RETAIN(r->m->comm);
    *request = &r->super.super;
    return MPI_SUCCESS;
}

/* A persistent request's tag number (braid_numbers.h): the first number
 * that no live request of any rank holds, found window by window with the
 * previous module's allreduce (an init is a collective call, on the
 * application's thread). A rank that cannot make its set marks the window
 * full and the call fails on every rank. */
int mca_coll_braid_persistent_number_take(mca_coll_braid_module_t *m, uint32_t *seq)
{
    braid_numbers_t *s = &m->pnums;
    bool ok = NULL != s->held || BRAID_OK == braid_numbers_init(s, BRAID_TAG_SEQ_PERSISTENT);
    unsigned nw = ok ? braid_numbers_windows(s) : BRAID_TAG_SEQ_PERSISTENT / 64;
    unsigned w0 = ok ? braid_numbers_start(s) : 0;
    for (unsigned i = 0; i < nw; i++) {
        unsigned w = (w0 + i) % nw;
        uint64_t mine[2] = { ok ? braid_numbers_window(s, w) : ~(uint64_t)0, ok ? 0 : 1 }, all[2];
        int rc = m->prev.allreduce(mine, all, 2, MPI_UINT64_T, MPI_BOR, m->comm,
                                   m->prev.allreduce_module);
        if (MPI_SUCCESS != rc) return rc;
        if (0 != all[1]) return MPI_ERR_NO_MEM;
        int b = braid_numbers_first_free(all[0]);
        if (b < 0) continue;
        unsigned number = w * 64 + (unsigned)b;
        braid_numbers_take(s, number);
        *seq = BRAID_TAG_SEQ_PERSISTENT | number;
        return MPI_SUCCESS;
    }
    if (0 == m->bcomm.rank)
        opal_output(0, "braid: %s: all %u tag numbers of persistent collectives are held by live "
                    "requests; free some (MPI_Request_free) before making more",
                    m->comm->c_name, nw * 64);
    return MPI_ERR_OTHER;
}

void mca_coll_braid_persistent_number_give(mca_coll_braid_module_t *m, uint32_t seq)
{
    braid_numbers_give(&m->pnums, seq & BRAID_TAG_SEQ_CALL_MASK);
}

/* A persistent request: its sequence number and its shm channel now, in
 * init order (a collective: MPI makes the initialisation calls nonlocal).
 * It holds its communicator until it is freed, as Open MPI's point-to-point
 * persistent requests do: the channel lives in the communicator's segment. */
static int make_persistent(mca_coll_braid_request_t *r, ompi_request_t **request)
{
    mca_coll_braid_module_t *m = r->m;
    int rc = mca_coll_braid_persistent_number_take(m, &r->pseq);
    if (MPI_SUCCESS != rc) {
        request_put(r);
        return rc;
    }
    r->chan = mca_coll_braid_shm_channel_take(m, &r->chan_shm);
    r->view = m->bcomm;
    r->view.shm = r->chan >= 0 ? &r->chan_shm : NULL;
    /* the hierarchical allreduce's views are made on first use: now, while
     * MPI orders the calls on m, not in starts that threads may make at once */
    if (cmp()->multi_node) (void)mca_coll_braid_hier_views(m);
    OBJ_RETAIN(m->comm);
    r->super.super.req_state = OMPI_REQUEST_INACTIVE;
    *request = &r->super.super;
    return MPI_SUCCESS;
}

#define GET(coll, kind)                                                          \
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;             \
    mca_coll_braid_request_t *r = request_get(m, coll, kind);                   \
    (void)comm;                                                                  \
    if (NULL == r) return OMPI_ERR_OUT_OF_RESOURCE

static void args_reduce(mca_coll_braid_request_t *r, const void *sbuf, void *rbuf, int count,
                        MPI_Datatype dtype, MPI_Op op, int root)
{
    r->usbuf = sbuf;
    r->urbuf = rbuf;
    r->count = count;
    r->dtype = dtype;
    r->op = op;
    r->root = root;
}

static void args_allgather(mca_coll_braid_request_t *r, const void *sbuf, int scount,
                           MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype)
{
    r->usbuf = sbuf;
    r->scount = scount;
    r->sdtype = sdtype;
    r->urbuf = rbuf;
    r->count = rcount;
    r->dtype = rdtype;
}

int mca_coll_braid_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_BARRIER, KIND_NONBLOCKING);
    return start_nonblocking(r, request);
}

int mca_coll_braid_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_BCAST, KIND_NONBLOCKING);
    args_reduce(r, NULL, buf, count, dtype, MPI_OP_NULL, root);
    return start_nonblocking(r, request);
}

int mca_coll_braid_iallreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_ALLREDUCE, KIND_NONBLOCKING);
    args_reduce(r, sbuf, rbuf, count, dtype, op, 0);
    return start_nonblocking(r, request);
}

int mca_coll_braid_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           ompi_request_t **request, mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_REDUCE, KIND_NONBLOCKING);
    args_reduce(r, sbuf, rbuf, count, dtype, op, root);
    return start_nonblocking(r, request);
}

int mca_coll_braid_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_ALLGATHER, KIND_NONBLOCKING);
    args_allgather(r, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return start_nonblocking(r, request);
}

int mca_coll_braid_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         ompi_request_t **request, mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_REDUCE_SCATTER, KIND_NONBLOCKING);
    args_reduce(r, sbuf, rbuf, rcount, dtype, op, 0);
    return start_nonblocking(r, request);
}

int mca_coll_braid_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_REDUCE_SCATTER, KIND_NONBLOCKING);
    args_reduce(r, sbuf, rbuf, 0, dtype, op, 0);
    r->rcounts = rcounts;
    return start_nonblocking(r, request);
}

int mca_coll_braid_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_BARRIER, KIND_PERSISTENT);
    (void)info;
    return make_persistent(r, request);
}

int mca_coll_braid_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                              struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_BCAST, KIND_PERSISTENT);
    (void)info;
    args_reduce(r, NULL, buf, count, dtype, MPI_OP_NULL, root);
    return make_persistent(r, request);
}

int mca_coll_braid_allreduce_init(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_ALLREDUCE, KIND_PERSISTENT);
    (void)info;
    args_reduce(r, sbuf, rbuf, count, dtype, op, 0);
    return make_persistent(r, request);
}

int mca_coll_braid_reduce_init(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                               struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_REDUCE, KIND_PERSISTENT);
    (void)info;
    args_reduce(r, sbuf, rbuf, count, dtype, op, root);
    return make_persistent(r, request);
}

int mca_coll_braid_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_ALLGATHER, KIND_PERSISTENT);
    (void)info;
    args_allgather(r, sbuf, scount, sdtype, rbuf, rcount, rdtype);
    return make_persistent(r, request);
}

int mca_coll_braid_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                             struct ompi_communicator_t *comm,
                                             struct ompi_info_t *info, ompi_request_t **request,
                                             mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_REDUCE_SCATTER, KIND_PERSISTENT);
    (void)info;
    args_reduce(r, sbuf, rbuf, rcount, dtype, op, 0);
    return make_persistent(r, request);
}

int mca_coll_braid_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    GET(BRAID_COLL_REDUCE_SCATTER, KIND_PERSISTENT);
    (void)info;
    args_reduce(r, sbuf, rbuf, 0, dtype, op, 0);
    r->rcounts = rcounts;
    return make_persistent(r, request);
}

/* ------------------------------------------------------------------ */
/* installation                                                        */
/* ------------------------------------------------------------------ */

/* Keep the previous module's function for `name` and install braid's, or
 * (no previous function) install none: the same on every rank, whose
 * components are the same. */
#define INSTALL(m, comm, name)                                                    \
    do {                                                                          \
        (m)->prev.name = (comm)->c_coll->coll_##name;                             \
        (m)->prev.name##_module = (comm)->c_coll->coll_##name##_module;           \
        if (NULL == (m)->prev.name || NULL == (m)->prev.name##_module) {          \
            (m)->prev.name = NULL;                                                \
            (m)->prev.name##_module = NULL;                                       \
            (m)->super.coll_##name = NULL;                                        \
        } else {                                                                  \
            OBJ_RETAIN((m)->prev.name##_module);                                  \
            (m)->super.coll_##name = mca_coll_braid_##name;                       \
        }                                                                         \
    } while (0)

/* The nbc request type fits the room braid gives it. */
static bool nbc_request_fits(void)
{
    return ompi_coll_base_nbc_request_t_class.cls_sizeof <= sizeof(ompi_coll_base_nbc_request_t);
}

void mca_coll_braid_nbc_install(mca_coll_braid_module_t *m)
{
    braid_fiber_pool_shared(eng_shared());
    braid_fiber_pool_configure((size_t)cmp()->fiber_stack_size,
                               "raise coll_braid_fiber_stack_size (bytes)");
    ompi_communicator_t *comm = m->comm;
    if (!nbc_request_fits()) {
        opal_output_verbose(1, cmp()->output, "braid: Open MPI's nbc request (%zu bytes) is "
                            "larger than braid reserves (%zu): nonblocking and persistent "
                            "collectives stay with the previous module",
                            ompi_coll_base_nbc_request_t_class.cls_sizeof,
                            sizeof(ompi_coll_base_nbc_request_t));
        return;
    }
    INSTALL(m, comm, ibarrier);
    INSTALL(m, comm, ibcast);
    INSTALL(m, comm, iallreduce);
    INSTALL(m, comm, iallgather);
    INSTALL(m, comm, ireduce);
    INSTALL(m, comm, ireduce_scatter);
    INSTALL(m, comm, ireduce_scatter_block);
    INSTALL(m, comm, barrier_init);
    INSTALL(m, comm, bcast_init);
    INSTALL(m, comm, allreduce_init);
    INSTALL(m, comm, allgather_init);
    INSTALL(m, comm, reduce_init);
    INSTALL(m, comm, reduce_scatter_init);
    INSTALL(m, comm, reduce_scatter_block_init);
}

void mca_coll_braid_nbc_fini(void)
{
    progress_thread_stop();
    eng_lock(&eng.pool_lock);
    for (mca_coll_braid_request_t *r = eng.pool, *n; NULL != r; r = n) {
        n = r->next_free;
        OBJ_RELEASE(r);
    }
    eng.pool = NULL;
    eng_unlock(&eng.pool_lock);
    eng_lock(&eng.lock);
    eng.head = eng.tail = NULL;
    eng.outstanding = 0;
    eng.runnable = 0;
    eng_unlock(&eng.lock);
    braid_fiber_pool_release();
}
