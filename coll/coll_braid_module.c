/*
 * coll_braid_module.c - which communicators braid takes (comm_query), and
 * enabling a module: save the previous module's functions for fallback,
 * have UCX brought up on the first communicator braid takes
 * (coll_braid_transport.c), agree on a tag id where the communicator has
 * no agreed context id, bind the transport.
 *
 * Decisions here are the same on every rank of a communicator: they depend
 * only on the communicator (size, context id, the job its processes belong
 * to) and on outcomes that are agreed collectively (UCX start-up).
 */
#include "coll_braid_module.h"
#include "coll_braid_compat.h"
#include "coll_braid_component.h"
#include "coll_braid_cuda.h"
#include "coll_braid_entry.h"
#include "coll_braid_log.h"
#include "coll_braid_request.h"
#include "coll_braid_shm.h"

#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"

#include "braid_tag.h"

static void braid_module_construct(mca_coll_braid_module_t *m)
{
    memset((char *)m + sizeof(m->super), 0, sizeof(*m) - sizeof(m->super));
}

/* let go of the previous modules (idempotent) */
#define RELEASE_PREV(name)                                                  \
    if (NULL != m->prev.coll_##name##_module) {                             \
        OBJ_RELEASE(m->prev.coll_##name##_module);                          \
        m->prev.coll_##name##_module = NULL;                                \
    }

static void release_prev(mca_coll_braid_module_t *m)
{
    MCA_COLL_BRAID_BLOCKING(RELEASE_PREV)
    MCA_COLL_BRAID_REQUESTS(RELEASE_PREV)
}

#if BRAID_COLL_V3
/* The coll interface 3.0.0 (Open MPI main) leaves the communicator's
 * function table to the modules: each installs its functions at the end of
 * its enable, over what the modules enabled before it installed (braid
 * kept those as prev), and its disable - called in the reverse order -
 * puts back what it replaced where its own are still there. 4.1 and 5.0
 * copy the module's functions into the table themselves. */
#define INSTALL(name)                                                                             \
    if (NULL != m->super.coll_##name) {                                                          \
        m->comm->c_coll->coll_##name = m->super.coll_##name;                                     \
        m->comm->c_coll->coll_##name##_module = &m->super;                                       \
    }
#define UNINSTALL(name)                                                                           \
    if (NULL != m->super.coll_##name && &m->super == comm->c_coll->coll_##name##_module) {       \
        comm->c_coll->coll_##name = m->prev.coll_##name;                                         \
        comm->c_coll->coll_##name##_module = m->prev.coll_##name##_module;                       \
    }

static void install(mca_coll_braid_module_t *m)
{
    MCA_COLL_BRAID_BLOCKING(INSTALL)
    MCA_COLL_BRAID_REQUESTS(INSTALL)
}

static void uninstall(mca_coll_braid_module_t *m, ompi_communicator_t *comm)
{
    MCA_COLL_BRAID_BLOCKING(UNINSTALL)
    MCA_COLL_BRAID_REQUESTS(UNINSTALL)
}
#endif

static void braid_module_destruct(mca_coll_braid_module_t *m)
{
    release_prev(m);
    braid_ucx_comm_destroy(m->tcomm);
    m->tcomm = NULL;
    mca_coll_braid_cuda_release(m);
    mca_coll_braid_shm_release(m);
    braid_site_fini(&m->site);
    braid_tag_numbers_release(&m->pnums);
    if (m->group_id) braid_tag_numbers_give(&mca_coll_braid_component.group_ids, m->group_id - 1);
}

OBJ_CLASS_INSTANCE(mca_coll_braid_module_t, mca_coll_base_module_t,
                   braid_module_construct, braid_module_destruct);

/* ------------------------------------------------------------------ */
/* comm_query / enable                                                 */
/* ------------------------------------------------------------------ */

/* All processes of comm belong to this job: their process index is their
 * rank in MPI_COMM_WORLD (vpid). Identical on every rank of comm. */
static bool all_procs_in_my_job(ompi_communicator_t *comm)
{
    int P = ompi_comm_size(comm);
    for (int i = 0; i < P; i++) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        if (NULL == proc || proc->super.proc_name.jobid != OMPI_PROC_MY_NAME->jobid)
            return false;
    }
    return true;
}

/* The transport boots on the first communicator braid takes, which must
 * hold every process of the job (its start-up exchanges every process's
 * address): MPI_COMM_WORLD in the world model; with MPI-4 sessions and no
 * MPI_Init, a communicator made from the group of "mpi://WORLD" (or any
 * other of every process). Until then a communicator of some processes
 * only is declined: the same on all its ranks, since every process of
 * the job boots in the same collective call. Identical on every rank. */
static bool boots_transport(ompi_communicator_t *comm)
{
    if (comm == &ompi_mpi_comm_world.comm) return true;
#if BRAID_OMPI5
    return ompi_comm_size(comm) == mca_coll_braid_job_size() && all_procs_in_my_job(comm);
#else
    return false;
#endif
}

/* Single-rank communicators: coll/self takes them otherwise and is not
 * CUDA-aware (a device buffer made it SIGSEGV). braid takes them in a job
 * that uses CUDA; elsewhere coll/self does as well and the job runs as
 * before. Every rank answers alike: cuda_job is agreed over the
 * communicator the transport boots on, before any other communicator is
 * queried, and a job of one process (queried before that) has only
 * itself to ask. */
static bool takes_single_rank(ompi_communicator_t *comm)
{
    const mca_coll_braid_component_t *c = &mca_coll_braid_component;
    if (comm == &ompi_mpi_comm_world.comm || (!c->transport_ready && boots_transport(comm)))
        return mca_coll_braid_cuda_probe();
    return c->transport_ready && c->cuda_job;
}

/* On a single-rank communicator braid must outrank coll/self (75 unless
 * coll_self_priority says otherwise), whose functions would win. */
static int single_rank_priority(void)
{
    int self = 75;
    const int *value = NULL;
    int idx = mca_base_var_find("ompi", "coll", "self", "priority");
    if (idx >= 0 && OPAL_SUCCESS == mca_base_var_get_value(idx, &value, NULL, NULL) && NULL != value)
        self = *value;
    return mca_coll_braid_component.priority > self ? mca_coll_braid_component.priority : self + 1;
}

static int braid_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);

#if BRAID_OMPI5
/* Open MPI 5 calls a module's disable when the communicator is freed (once
 * for each collective it provides, then releases it), so that modules which
 * hold others - braid holds the previous modules for fallback - let go of
 * them there, as coll/han does; 4.1 has no such hook and the destructor
 * does it. Braid runs no collective after this. */
static int braid_module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
#if BRAID_COLL_V3
    uninstall((mca_coll_braid_module_t *)module, comm);
#endif
    release_prev((mca_coll_braid_module_t *)module);
    return OMPI_SUCCESS;
}
#endif

mca_coll_base_module_t *mca_coll_braid_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    const char *why = NULL;
    uint32_t cid = 0;
    if (c->disabled) why = "UCX is not available";
    else if (OMPI_COMM_IS_INTER(comm)) why = "intercommunicator";
    else if (ompi_comm_size(comm) < 2 && !takes_single_rank(comm)) why = "one rank, no CUDA in the job";
    else if (mca_coll_braid_comm_cid(comm, &cid) && cid >= BRAID_TAG_GROUP_IDS)
        why = "context id beyond the tag layout";
    else if (ompi_comm_size(comm) > BRAID_TAG_MAX_RANKS_VALUE) why = "too many ranks for the tag layout";
    else if (!all_procs_in_my_job(comm)) why = "processes from another job";
    else if (!c->transport_ready && !boots_transport(comm))
        why = "transport not started (the first communicator braid takes holds every process of "
              "the job: MPI_COMM_WORLD, or one made from the group of mpi://WORLD)";
    if (NULL != why) {
        opal_output_verbose(10, c->output, "braid: declining communicator %s (cid %u): %s",
                            comm->c_name, mca_coll_braid_comm_id(comm), why);
        return NULL;
    }

    mca_coll_braid_module_t *m = OBJ_NEW(mca_coll_braid_module_t);
    if (NULL == m) return NULL;
    *priority = ompi_comm_size(comm) < 2 ? single_rank_priority() : c->priority;
    m->super.coll_module_enable = braid_module_enable;
#if BRAID_OMPI5
    m->super.coll_module_disable = braid_module_disable;
#endif
    return &m->super;
}

/* One barrier of braid's own over MPI_COMM_WORLD's fresh endpoints, in
 * MPI_Init: the first messages of a process pay for what UCX and braid
 * set up on first use (UCX's request pool, the first touch of each peer's
 * shared-memory FIFO, code paths run the first time), about 100 us that
 * the application's first collective paid before. Run only when every
 * process made its endpoints (agreed over the previous module's
 * allreduce: the same decision on every rank). No trace line, no scratch;
 * a failure is logged and left to the first collective. */
static void warm_up(mca_coll_braid_module_t *m, bool connected)
{
    int mine = connected ? 1 : 0, all = 0;
    if (OMPI_SUCCESS != m->prev.coll_allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, m->comm,
                                               m->prev.coll_allreduce_module) || !all)
        return;
    braid_choice_t ch = braid_site_select(&m->site, BRAID_COLL_BARRIER, m->bcomm.size, 0, false);
    const braid_algorithm_t *alg = braid_algorithm(BRAID_COLL_BARRIER, ch.alg);
    if (NULL == alg) return;
    braid_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.scratch = &m->site.scratch;
    a.params = ch.params;
    braid_comm_t v = braid_comm_for(&m->bcomm, braid_ucx_comm_begin(m->tcomm, false), NULL);
    int rc = alg->run(&v, &a);
    if (BRAID_OK != rc)
        opal_output_verbose(1, mca_coll_braid_component.output, "braid: warm-up barrier on %s "
                            "failed (braid code %d)", m->comm->c_name, rc);
}

/* A communicator's grouping of its ranks by node (the dispatch's site,
 * braid_dispatch.h), from every process's node key (exchanged at
 * bootstrap): the algorithms run in node order when coll_braid_topo_aware=1
 * and the nodes interleave (rings then cross between nodes once per node),
 * in rank order otherwise. In a job on one node every communicator is one
 * group in rank order, built only if the hierarchical allreduce asks for
 * it, so creating a communicator does not pay for it. A grouping only
 * changes which messages cross nodes, never a result, and every rank
 * builds it from the same exchanged table. */
static int topo_setup(mca_coll_braid_module_t *m)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    braid_site_t *s = &m->site;
    int P = m->bcomm.size;
    if (!c->multi_node) {
        /* one node: one group, rank order; the grouping itself is made if
         * the hierarchical allreduce asks for it (braid_site_hier_views) */
        if (0 == m->bcomm.rank)
            opal_output_verbose(10, c->output, "braid: %s: %d ranks on 1 node(s); algorithms run "
                                "in rank order", m->comm->c_name, P);
        return OMPI_SUCCESS;
    }
    const int *proc_index = braid_ucx_comm_procs(m->tcomm);
    uint64_t *keys = malloc((size_t)P * sizeof(uint64_t));
    if (NULL == keys) return OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; i < P; i++) keys[i] = c->node_key ? c->node_key[proc_index[i]] : 0;
    int rc = braid_site_topo(s, keys, 0 != c->topo_aware);
    free(keys);
    if (BRAID_OK != rc) return OMPI_ERR_OUT_OF_RESOURCE;
    if (0 == m->bcomm.rank)
        opal_output_verbose(10, c->output, "braid: %s: %d ranks on %d node(s); algorithms run in %s",
                            m->comm->c_name, P, s->topo.nnodes,
                            s->topo_ordered ? "node order (coll_braid_topo_aware)" : "rank order");
    return OMPI_SUCCESS;
}

/* the dispatch's hooks (braid_dispatch.h); arg: the module */
static uint32_t site_begin(void *arg, bool nonblocking)
{
    return braid_ucx_comm_begin(((mca_coll_braid_module_t *)arg)->tcomm, nonblocking);
}

static void site_wait(void *arg)
{
    (void)arg;
    opal_progress();
}

static void site_log(void *arg, int level, const char *msg)
{
    (void)arg;
    if (0 == level) opal_output(0, "braid: %s", msg);
    else opal_output_verbose(level, mca_coll_braid_component.output, "braid: %s", msg);
}

/* the communicator's failure state (braid_fault_t.check); arg: the module */
static int fault_check(void *arg)
{
    int err = mca_coll_braid_comm_fault(((mca_coll_braid_module_t *)arg)->comm);
    if (0 == err) return BRAID_OK;
    return MCA_COLL_BRAID_REVOKED == err ? BRAID_ERR_REVOKED : BRAID_ERR_PROC_FAILED;
}

/* where UCX starts on first need (braid_site_hooks_t.messages) */
static int site_messages(void *arg, const braid_call_t *call)
{
    return mca_coll_braid_transport_need((mca_coll_braid_module_t *)arg, call);
}

static const braid_site_hooks_t site_hooks = {
    .begin = site_begin, .staged_run = mca_coll_braid_cuda_run, .wait = site_wait, .log = site_log,
};

static int braid_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_braid_module_t *m = (mca_coll_braid_module_t *)module;
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    m->comm = comm;
    bool requests = mca_coll_braid_requests_ready();
    bool ok = mca_coll_braid_barrier_install(m, requests) & mca_coll_braid_bcast_install(m, requests) &
              mca_coll_braid_allgather_install(m, requests) &
              mca_coll_braid_allreduce_install(m, requests) &
              mca_coll_braid_reduce_scatter_install(m, requests) &
              mca_coll_braid_alltoall_install(m, requests) &
              mca_coll_braid_scan_install(m, requests) &
              mca_coll_braid_gather_install(m, requests) &
              mca_coll_braid_allgatherv_install(m, requests) &
              mca_coll_braid_alltoallv_install(m, requests) &
              mca_coll_braid_gatherv_install(m, requests);
    if (!ok) {
        /* same on every rank: the lower-priority components are */
        opal_output_verbose(1, c->output, "braid: no previous collective module to fall back on "
                            "for %s; braid disabled on it", comm->c_name);
        return OMPI_ERROR;
    }

    if (!c->transport_ready) {
        /* comm_query took comm only if it boots the transport */
        int rc = mca_coll_braid_transport_boot(m, comm);
        if (OMPI_SUCCESS != rc) return rc;
    }

    /* What a communicator costs (comm_cycle.sh measures it against tuned):
     * the module, the transport state with its rank -> process map (one
     * allocation), the node grouping only in a job that spans nodes
     * (topo_setup above), and no endpoint once every peer process has
     * one. MPI_Reduce_scatter's counts and the scratch buffers come with
     * the first call that needs them. */
    int P = ompi_comm_size(comm);
    uint32_t cid = 0;
    if (!mca_coll_braid_comm_cid(comm, &cid)) {
        int rc = mca_coll_braid_group_id_take(m, &cid);
        if (OMPI_SUCCESS != rc) return rc;
    }
    m->tcomm = braid_ucx_comm_create(cid, ompi_comm_rank(comm), P, NULL);
    if (NULL == m->tcomm) return OMPI_ERR_OUT_OF_RESOURCE;
    int *proc_index = braid_ucx_comm_procs(m->tcomm);
    for (int i = 0; i < P; i++) {
        int vpid = (int)ompi_comm_peer_lookup(comm, i)->super.proc_name.vpid;
        proc_index[i] = NULL != c->proc_of_vpid ? c->proc_of_vpid[vpid] : vpid;
    }
    braid_ucx_comm_bind(m->tcomm, &m->bcomm);
    mca_coll_braid_conf_refresh();
    braid_site_hooks_t hooks = site_hooks;
    hooks.arg = m;
    braid_site_init(&m->site, &m->bcomm, &mca_coll_braid_site_conf, &hooks);
    m->site.name = comm->c_name;
    if (c->ucx_first_need) m->site.hooks.messages = site_messages;
    if (mca_coll_braid_ft_enabled()) {
        m->fault.check = fault_check;
        m->fault.arg = m;
        m->fault.state = BRAID_OK;
        m->site.fault = &m->fault;
        braid_ucx_comm_set_fault(m->tcomm, &m->fault);
    }
    int rc = topo_setup(m);
    if (OMPI_SUCCESS != rc) return rc;
    /* Wire the endpoints up now rather than in the first collective, where
     * the first message to each peer would pay for ucp_ep_create (a few
     * hundred us for the first one; docs/BENCHMARKS.md "Communicator cost
     * and the first call"). A failure here is not fatal: the endpoint is tried again at
     * its first message. */
    if (P > 1 && P <= c->preconnect && !c->ucx_first_need) {
        bool connected = BRAID_OK == braid_ucx_comm_connect(m->tcomm);
        if (!connected)
            opal_output_verbose(1, c->output, "braid: %s: some UCX endpoints could not be made "
                                "in advance; they are tried again at their first message",
                                comm->c_name);
        if (comm == &ompi_mpi_comm_world.comm) warm_up(m, connected);
    }
    if (c->inject_alloc_failure >= 0) {
        m->site.scratch.fail_alloc = 1;
        m->site.scratch.allocs_before_failure = (unsigned)c->inject_alloc_failure;
    }
    /* MPI_COMM_WORLD lives as long as the job: on first need its tier
     * comes up here (through the previous component), so that nonblocking
     * calls made before its first blocking ones run on it rather than
     * on the previous component */
    if (c->ucx_first_need && comm == &ompi_mpi_comm_world.comm) mca_coll_braid_shm_setup_now(m);
#if BRAID_COLL_V3
    install(m);
#endif
    opal_output_verbose(10, c->output, "braid: enabled on %s (cid %u, np=%d)", comm->c_name,
                        cid, P);
    return OMPI_SUCCESS;
}
