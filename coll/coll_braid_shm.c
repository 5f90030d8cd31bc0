/*
 * coll_braid_shm.c - glue of the shared-memory tier: when a communicator
 * brings its tier up (libbraid/shm/braid_shm_tier.h), with what
 * configuration, and its channels for persistent requests.
 *
 * A communicator's tier comes up at its coll_braid_shm_after-th blocking
 * braid call (a dup used once and freed never pays for one), inside that
 * call and before its algorithm is chosen, on every rank alike; a
 * persistent request's init brings it up at once (it is made to be started
 * many times), and so does MPI_COMM_WORLD's enable where UCX starts on
 * first need (the job's nonblocking calls before its blocking ones). Ranks on one node: one segment for the communicator, with
 * coll_braid_shm_persistent channels; ranks on several nodes: one per
 * node, for the node view that the hierarchical allreduce reduces and
 * broadcasts in.
 */
#include "coll_braid_shm.h"
#include "coll_braid_component.h"
#include "coll_braid_cuda.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

#include <unistd.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

static inline mca_coll_braid_component_t *cmp(void) { return &mca_coll_braid_component; }

static uint32_t tier_begin(void *arg)
{
    return braid_ucx_comm_begin(((mca_coll_braid_module_t *)arg)->tcomm, false);
}

static void tier_idle(void *arg)
{
    (void)arg;
    (void)opal_progress();
}

/* memory a peer's process_vm_readv may be refused: CUDA's */
static bool tier_unreadable(void *arg, const void *p, size_t bytes)
{
    (void)arg, (void)bytes;
    return mca_coll_braid_is_cuda_memory(p);
}

static uint64_t tier_nb_posted(void *arg)
{
    return __atomic_load_n(&((mca_coll_braid_module_t *)arg)->site.nb_calls, __ATOMIC_RELAXED);
}

static void tier_say(void *arg, int level, const char *msg)
{
    const char *name = ((mca_coll_braid_module_t *)arg)->comm->c_name;
    if (0 == level) opal_output(0, "braid: %s: %s", name, msg);
    else opal_output_verbose(level, cmp()->output, "braid: %s: %s", name, msg);
}

/* the set-up's agreements over the previous module, where UCX starts on
 * first need (braid_shm_tier_hooks_t.host_allreduce, host_bcast) */
static int tier_host_allreduce(void *arg, uint64_t *v, int n, bool max)
{
    mca_coll_braid_module_t *m = arg;
    return m->prev.coll_allreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, max ? MPI_MAX : MPI_BAND,
                                  m->comm, m->prev.coll_allreduce_module);
}

static int tier_host_bcast(void *arg, void *buf, size_t bytes)
{
    mca_coll_braid_module_t *m = arg;
    return m->prev.coll_bcast(buf, (int)bytes, MPI_BYTE, 0, m->comm, m->prev.coll_bcast_module);
}

static void setup_tier(mca_coll_braid_module_t *m);

/* The tier's set-up, a collective of the blocking calls' order: the
 * nonblocking posts that Open MPI's progress makes meanwhile are held
 * until the ranks have agreed where the nonblocking ring starts, then
 * posted in order (braid_dispatch.c, "Two orders"). */
static void setup(mca_coll_braid_module_t *m)
{
    mca_coll_braid_posts_hold(m);
    setup_tier(m);
    braid_site_nb_ring(&m->site, NULL != m->shm.nb.base ? &m->shm.nb : NULL, m->shm.nb_from);
    mca_coll_braid_posts_release(m);
}

static void setup_tier(mca_coll_braid_module_t *m)
{
    const mca_coll_braid_component_t *c = cmp();
    braid_comm_t *group = &m->bcomm;
    if (m->site.topo.nnodes > 1) {
        /* out of memory for a few ints: not agreed, the only set-up failure
         * that is not (the node views are needed to agree within a node) */
        if (BRAID_OK != braid_site_hier_views(&m->site)) return;
        group = &m->site.node_view.comm;
    }
    if (group->size > BRAID_SHM_MAX_P) return;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    braid_shm_tier_conf_t conf = {
        .cells = c->shm_cells, .slot_bytes = (size_t)c->shm_slot_size,
        .channels = group == &m->bcomm ? c->shm_persistent : 0,
        /* ranks of an oversubscribed node yield while they wait */
        .yield = opal_progress_yield_when_idle || (cpus > 0 && group->size > cpus),
        .single_copy = 0 != c->shm_single_copy,
        .direct_above = (size_t)c->shm_single_copy_above,
        .split_from = (size_t)c->shm_reduce_split,
        .far_ns = c->shm_far_ns > 0 ? (uint64_t)c->shm_far_ns : 0,
        .inject_failure = c->shm_inject_failure,
        .nb_channel = group == &m->bcomm,
    };
    braid_shm_tier_hooks_t hooks = { m, tier_begin, tier_idle, tier_unreadable, tier_say,
                                     tier_nb_posted, m->site.fault, NULL, NULL };
    if (c->ucx_first_need) {
        hooks.host_allreduce = tier_host_allreduce;
        hooks.host_bcast = tier_host_bcast;
    }
    /* choices made without the segment are stale */
    if (braid_shm_tier_up(&m->shm, &m->bcomm, group, &conf, &hooks)) braid_site_forget(&m->site);
}

void mca_coll_braid_shm_tick(mca_coll_braid_module_t *m)
{
    if (m->shm_tried) return;
    if (!cmp()->shm_enable) {
        m->shm_tried = true;
        return;
    }
    if (++m->shm_calls < (unsigned)cmp()->shm_after) return;
    m->shm_tried = true;
    setup(m);
}

void mca_coll_braid_shm_setup_now(mca_coll_braid_module_t *m)
{
    if (m->shm_tried) return;
    m->shm_tried = true;
    if (cmp()->shm_enable) setup(m);
}

int mca_coll_braid_shm_channel_take(mca_coll_braid_module_t *m, braid_shm_t *s)
{
    if (!m->shm_tried && cmp()->shm_enable) {
        m->shm_tried = true;
        setup(m);
    }
    if (NULL == m->bcomm.shm) return -1;
    return braid_shm_tier_channel_take(&m->shm, &m->bcomm, s);
}

void mca_coll_braid_shm_channel_give(mca_coll_braid_module_t *m, int ch, const braid_shm_t *s)
{
    braid_shm_tier_channel_give(&m->shm, ch, s);
}

void mca_coll_braid_shm_release(mca_coll_braid_module_t *m)
{
    braid_site_nb_ring(&m->site, NULL, 0);
    m->bcomm.shm = NULL;
    m->site.node_view.comm.shm = NULL;
    braid_shm_tier_down(&m->shm);
}
