/*
 * coll_braid_engine.c - the process's request engine (libbraid/engines/
 * braid_task.h) and Open MPI's progress: the engine's hooks (a request ran
 * out, an inner request is done, the progress thread's wait, its log), its
 * installation and end, and the progress callback that opal_progress calls.
 */
#include "coll_braid_component.h"
#include "coll_braid_cuda.h"
#include "coll_braid_request.h"

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

static inline mca_coll_braid_component_t *cmp(void) { return &mca_coll_braid_component; }

braid_engine_t mca_coll_braid_engine;
#define ENG (&mca_coll_braid_engine)

/* ------------------------------------------------------------------ */
/* Open MPI's progress                                                */
/* ------------------------------------------------------------------ */

/* The progress hook lives in Open MPI's low-priority list (called once in
 * 8 opal_progress calls) while braid has no request outstanding, so that
 * an application's own MPI calls pay almost nothing for braid; a request
 * that goes outstanding moves it to the list every opal_progress call
 * runs (mca_coll_braid_progress_active), and HOOK_DEMOTE calls with none
 * outstanding move it back. Moving takes Open MPI's progress lock and
 * searches both lists: rare, never once per call in a stream of requests. */
#define HOOK_DEMOTE 4096u
static bool hook_every_call;
static unsigned hook_idle;

void mca_coll_braid_progress_active(void)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    hook_idle = 0;
    if (!c->progress_registered || __atomic_load_n(&hook_every_call, __ATOMIC_RELAXED)) return;
    __atomic_store_n(&hook_every_call, true, __ATOMIC_RELAXED);
    opal_progress_register(mca_coll_braid_progress);
}

int mca_coll_braid_progress(void)
{
    if (!__atomic_load_n(&hook_every_call, __ATOMIC_RELAXED)) {
        int n = braid_ucx_progress(8);
        if (braid_engine_outstanding(ENG)) n += braid_engine_progress(ENG, true);
        return n;
    }
    int n = braid_ucx_progress(1);
    if (braid_engine_outstanding(ENG)) {
        hook_idle = 0;
        return n + braid_engine_progress(ENG, true);
    }
    if (++hook_idle < HOOK_DEMOTE) return n;
    __atomic_store_n(&hook_every_call, false, __ATOMIC_RELAXED);
    opal_progress_register_lp(mca_coll_braid_progress);
    /* a request posted meanwhile by another thread: back again */
    if (braid_engine_outstanding(ENG)) mca_coll_braid_progress_active();
    return n;
}

/* ------------------------------------------------------------------ */
/* the engine's hooks, installation and end                           */
/* ------------------------------------------------------------------ */

/* The engine's hook: r ran out. A fallback after the fiber's first wait
 * would be a decision some ranks took at post and others later: it is an
 * internal error, never a blocking call of the previous module. */
static void engine_complete(void *arg, braid_task_t *core)
{
    mca_coll_braid_request_t *r = mca_coll_braid_request_of(core);
    int rc;
    (void)arg;
    if (core->inner) {
        rc = r->inner->req_status.MPI_ERROR;
        ompi_request_free(&r->inner);
        r->inner = NULL;
    } else {
        rc = braid_task_finish(core);
        if (core->fall_back) {
            opal_output(0, "braid: %s on %s: internal error: fell back after its first wait",
                        braid_coll_name(r->family->coll), r->m->comm->c_name);
            rc = MPI_ERR_INTERN;
        }
    }
    rc = mca_coll_braid_host_copies_close(r->hc, rc);
    r->hc = NULL;
    mca_coll_braid_request_complete(r, rc, true);
}

static bool engine_inner_done(void *arg, braid_task_t *core)
{
    (void)arg;
    return REQUEST_COMPLETE(mca_coll_braid_request_of(core)->inner);
}

static const char *engine_wait_name(void)
{
    return braid_ucx_has_wakeup() ? "the UCX worker's wake-up fd" : "timed sleeps (no wake-up fd)";
}

static void engine_log(void *arg, int level, const char *msg)
{
    (void)arg;
    opal_output_verbose(level, cmp()->output, "braid: %s", msg);
}

static void engine_start(void)
{
    static bool started;
    if (started) return;
    braid_engine_hooks_t hooks = {
        .arg = NULL, .complete = engine_complete, .inner_done = engine_inner_done,
        .activated = mca_coll_braid_progress_active, .poll = braid_ucx_progress_now,
        .wait_event = braid_ucx_wait_event,
        .wait_name = engine_wait_name, .log = engine_log,
    };
    braid_engine_init(ENG, &hooks);
    started = true;
}

bool mca_coll_braid_requests_ready(void)
{
    const mca_coll_braid_component_t *c = cmp();
    bool shared = c->thread_multiple || c->progress_thread;
    engine_start();
    braid_engine_set_shared(ENG, shared, c->progress_thread);
    braid_fiber_pool_shared(shared);
    braid_fiber_pool_configure((size_t)c->fiber_stack_size,
                               "raise coll_braid_fiber_stack_size (bytes)");
    if (ompi_coll_base_nbc_request_t_class.cls_sizeof > sizeof(ompi_coll_base_nbc_request_t)) {
        opal_output_verbose(1, c->output, "braid: Open MPI's nbc request (%zu bytes) is larger "
                            "than braid reserves (%zu): nonblocking and persistent collectives "
                            "stay with the previous module",
                            ompi_coll_base_nbc_request_t_class.cls_sizeof,
                            sizeof(ompi_coll_base_nbc_request_t));
        return false;
    }
    return true;
}

static void release_request(braid_task_t *core)
{
    mca_coll_braid_request_t *r = mca_coll_braid_request_of(core);
    OBJ_RELEASE(r);
}

void mca_coll_braid_requests_fini(void)
{
    engine_start();
    braid_engine_fini(ENG, release_request);
    braid_fiber_pool_release();
}
