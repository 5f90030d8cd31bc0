/*
 * coll_braid_transport.c - bringing UCX up, by the previous module's
 * collectives, with an outcome agreed by every rank. On several nodes: in
 * MPI_Init, UCX started, then every process's worker address and node
 * exchanged over the first communicator braid takes (MPI_COMM_WORLD, or with MPI-4 sessions
 * one made from a group of every process of the job). On one node, where
 * the shared-memory tier carries most collectives: on first need, per
 * communicator (the first blocking call whose algorithm sends messages,
 * after its tier's set-up), the addresses of its processes only; a job
 * that never needs UCX never starts it.
 */
#include "coll_braid_module.h"
#include "coll_braid_compat.h"
#include "coll_braid_component.h"
#include "coll_braid_cuda.h"
#include "coll_braid_log.h"
#include "coll_braid_request.h"

#include <stdlib.h>
#include <string.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"

static void idle_progress(void) { opal_progress(); }

/* the out-of-band exchange: the previous module's collectives on it */
static int oob_max(void *arg, const long *in, long *out, int n)
{
    mca_coll_braid_module_t *m = arg;
    return m->prev.coll_allreduce(in, out, n, MPI_LONG, MPI_MAX, m->comm,
                                  m->prev.coll_allreduce_module);
}

static int oob_gather(void *arg, const void *mine, void *all, size_t bytes)
{
    mca_coll_braid_module_t *m = arg;
    return m->prev.coll_allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, m->comm,
                                  m->prev.coll_allgather_module);
}

/* Start UCX and exchange worker addresses and node keys
 * (coll_braid_test_nodes=N puts process r on node r % N, for tests; else
 * the node name's hash). Every rank learns whether every rank succeeded,
 * and whether any can load the CUDA driver (device-buffer segmentation),
 * so the outcome is the same everywhere. */
static braid_ucx_config_t transport_config(void)
{
    const mca_coll_braid_component_t *c = &mca_coll_braid_component;
    /* before init_query (the component's open) the progress thread is on only
     * where MPI_THREAD_MULTIPLE makes it so there */
    bool progress_thread = c->progress_thread && ompi_mpi_thread_multiple;
    braid_ucx_config_t cfg = {
        .idle_progress = idle_progress,
        /* with threads, the transport also yields while other threads of
         * this process wait (braid_ucx.c, yield_now) */
        .yield_when_idle = opal_progress_yield_when_idle,
        /* the progress thread resumes fibers while the application's
         * thread runs collectives: the worker is shared by two threads */
        .thread_multiple = c->thread_multiple || ompi_mpi_thread_multiple || progress_thread,
        .serialize = 0 != c->thread_serialize,
        .wakeup = progress_thread,
        /* a failed process must not take the survivors down with it */
        .peer_errors = mca_coll_braid_ft_enabled(),
        .log = mca_coll_braid_log,
    };
    return cfg;
}

#include "braid_shm.h"
#include "braid_task.h"

/* Whether this process would start UCX on first need
 * (mca_coll_braid_component_t.ucx_first_need): a job on one node whose
 * communicators have their shared-memory tier, no device buffers, and
 * nothing that needs UCX from the start - the progress thread (it waits
 * on the worker's wake-up fd), fault tolerance,
 * emulated nodes, forced algorithms or a rules file (message algorithms
 * at any size, also for the nonblocking calls Open MPI posts from its
 * progress loop). Agreed in mca_coll_braid_transport_boot. */
static bool first_need_here(const braid_ucx_config_t *cfg)
{
    const mca_coll_braid_component_t *c = &mca_coll_braid_component;
    int n = mca_coll_braid_job_size();
    if (!c->ucx_first_need_param || !c->shm_enable || c->test_nodes > 0 || c->progress_thread ||
        (int)opal_process_info.num_local_peers + 1 != n || n > BRAID_SHM_MAX_P ||
        mca_coll_braid_ft_enabled() || (NULL != c->rules_file && '\0' != c->rules_file[0]))
        return false;
    /* MPI_THREAD_MULTIPLE starts on first need too: threads on different
     * communicators may start it at once (braid_ucx_join is thread-safe) */
    if (NULL != cfg && cfg->wakeup) return false;
    for (int i = 0; i < BRAID_COLL_N; i++)
        if (BRAID_ALG_AUTO != c->forced_algorithm[i]) return false;
    return !mca_coll_braid_cuda_probe();
}

/* At the component's open in MPI_Init, where UCX starts on first need
 * and threads other than MPI_Init's may call MPI (MPI_THREAD_SERIALIZED
 * and up): UCX's libraries and context now, on the thread that called
 * MPI_Init, since neither may be made beside a thread that allocates
 * from the main heap (braid_ucx_context says why); the first need makes
 * only the worker, on whichever thread it arises. Elsewhere UCX starts
 * whole on MPI_Init's thread: MPI_COMM_WORLD's enable, or a first need on
 * that thread. Only inside MPI_Init (ompi_info opens components too) and
 * in a job of several processes. */
void mca_coll_braid_transport_open(void)
{
    if (OMPI_MPI_STATE_INIT_STARTED != ompi_mpi_state || ompi_process_info.num_procs < 2 ||
        ompi_mpi_thread_provided < MPI_THREAD_SERIALIZED || !first_need_here(NULL))
        return;
    braid_ucx_config_t cfg = transport_config();
    if (BRAID_OK == braid_ucx_context(&cfg))
        cfg.log(10, "UCX's context made in MPI_Init, for a start on first need on any thread");
}

/* the transport knows process i as the one of rank i in comm: where
 * that is not its rank in MPI_COMM_WORLD, the map from one to the other */
static int map_procs(ompi_communicator_t *comm)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    int P = ompi_comm_size(comm);
    for (int i = 0; i < P; i++) {
        if ((int)ompi_comm_peer_lookup(comm, i)->super.proc_name.vpid == i) continue;
        if (NULL == (c->proc_of_vpid = malloc((size_t)P * sizeof(int)))) return OMPI_ERR_OUT_OF_RESOURCE;
        for (int j = 0; j < P; j++)
            c->proc_of_vpid[ompi_comm_peer_lookup(comm, j)->super.proc_name.vpid] = j;
        break;
    }
    return OMPI_SUCCESS;
}

/* braid runs on communicators from now on */
static void transport_ready(int rank, const braid_ucx_config_t *cfg)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    c->transport_ready = true;
    /* the built-in selection table is parsed on its first use: here,
     * not in the first collective (80 us) */
    (void)braid_table_builtin();
    if (0 == rank && cfg->thread_multiple)
        opal_output_verbose(10, c->output, "braid: MPI_THREAD_MULTIPLE: collectives on "
                            "different communicators run concurrently; threads kept apart "
                            "on the UCX worker by %s",
                            cfg->serialize      ? "braid's mutex"
                            : !braid_ucx_ready() ? "UCX or braid's mutex, once it starts"
                            : 0 == strcmp(braid_ucx_thread_mode(), "ucx") ? "UCX (UCS_THREAD_MODE_MULTI)"
                                                                         : "braid's mutex");
    /* progress braid's worker and requests from every MPI wait too: a peer
     * that has left a collective must still answer our handshakes (low
     * priority until a nonblocking request goes outstanding) */
    opal_progress_register_lp(mca_coll_braid_progress);
    c->progress_registered = true;
}

/* Start on first need where every process of the job would (one node:
 * the same on every rank, so only then is there a MAX to agree on) */
static bool agree_first_need(mca_coll_braid_module_t *m, const braid_ucx_config_t *cfg)
{
    const mca_coll_braid_component_t *c = &mca_coll_braid_component;
    if (!c->ucx_first_need_param ||
        (int)opal_process_info.num_local_peers + 1 != mca_coll_braid_job_size())
        return false;
    long veto = first_need_here(cfg) ? 0 : 1, any = 1;
    return OMPI_SUCCESS == oob_max(m, &veto, &any, 1) && 0 == any;
}

int mca_coll_braid_transport_boot(mca_coll_braid_module_t *m, ompi_communicator_t *comm)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    int P = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    braid_ucx_config_t cfg = transport_config();
    if (agree_first_need(m, &cfg)) {
        c->ucx_first_need = true;
        c->cuda_job = false;
        int rc = map_procs(comm);
        if (OMPI_SUCCESS != rc) return rc;
        transport_ready(rank, &cfg);
        if (0 == rank)
            opal_output_verbose(10, c->output, "braid: one node: UCX starts on a communicator's "
                                "first need of it (coll_braid_ucx_first_need)");
        return OMPI_SUCCESS;
    }
    braid_ucx_oob_t oob = { m, oob_max, oob_gather, P, rank };
    uint64_t key = c->test_nodes > 0 ? (uint64_t)(rank % c->test_nodes)
                                     : braid_topo_node_key(opal_process_info.nodename);
    bool failed_here;
    int rc = braid_ucx_bootstrap(&cfg, &oob, key, mca_coll_braid_cuda_probe(), &c->cuda_job,
                                 &failed_here, &c->node_key);
    if (BRAID_ERR_TRANSPORT == rc) {
        if (0 == rank)
            opal_output(0, "braid: WARNING: UCX could not start on %s; braid is disabled and "
                        "the other coll components run every collective "
                        "(coll_braid_verbose=1 shows why)",
                        failed_here ? "this node" : "some processes");
        c->disabled = true;
        return OMPI_ERR_NOT_AVAILABLE;
    }
    if (rc < 0) rc = OMPI_ERR_OUT_OF_RESOURCE;
    for (int i = 0; OMPI_SUCCESS == rc && i < P; i++)
        if (c->node_key[i] != c->node_key[0]) c->multi_node = true;
    if (OMPI_SUCCESS == rc) rc = map_procs(comm);
    if (OMPI_SUCCESS == rc) transport_ready(rank, &cfg);
    if (OMPI_SUCCESS == rc && 0 == rank)
        opal_output_verbose(10, c->output, "braid: %s: UCX started in MPI_Init (%d ranks)",
                            comm->c_name, P);
    return rc;
}

/* a nonblocking call that falls back for want of UCX starts it at the
 * next blocking call if it has at least this many bytes: the calls Open
 * MPI posts from its progress loop (MPI_Comm_idup's context-id agreement,
 * a few ints) land before or inside a blocking call, differently on each
 * rank, and must not decide whether that call starts UCX */
#define WANT_BYTES 64

int mca_coll_braid_transport_need(mca_coll_braid_module_t *m, const braid_call_t *call)
{
    if (m->ucx > 0) {
        bool early_post = NULL != call->req && BRAID_TASK_NONBLOCKING == call->req->kind &&
                          call->nb_number < m->ucx_nb_from;
        return early_post ? BRAID_ERR_UNSUPPORTED : BRAID_OK;
    }
    if (m->ucx < 0) return BRAID_ERR_UNSUPPORTED;
    if (NULL != call->req) {
        if (call->nb_ring && call->bytes >= WANT_BYTES) m->ucx_wanted = true;
        return BRAID_ERR_UNSUPPORTED;
    }
    /* a communicator's first calls, before its tier, fall back (most are
     * a short-lived one's only calls) */
    if (!m->shm_tried) return BRAID_ERR_UNSUPPORTED;
    mca_coll_braid_transport_join(m);
    return m->ucx > 0 ? BRAID_OK : BRAID_ERR_UNSUPPORTED;
}

void mca_coll_braid_transport_join(mca_coll_braid_module_t *m)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    if (0 != m->ucx || !c->ucx_first_need) return;
    /* the nonblocking posts that Open MPI's progress makes meanwhile wait,
     * as for the tier's set-up, until the ranks agree from which post on
     * UCX serves them */
    mca_coll_braid_posts_hold(m);
    braid_ucx_config_t cfg = transport_config();
    braid_ucx_oob_t oob = { m, oob_max, oob_gather, m->bcomm.size, m->bcomm.rank };
    long posted = (long)__atomic_load_n(&m->site.nb_calls, __ATOMIC_RELAXED);
    bool failed_here = false;
    int rc = braid_ucx_join(&cfg, &oob, mca_coll_braid_job_size(), braid_ucx_comm_procs(m->tcomm),
                            &posted, 1, &failed_here);
    m->ucx = BRAID_OK == rc ? 1 : -1;
    m->ucx_nb_from = (uint64_t)posted + 1;
    m->ucx_wanted = false;
    if (BRAID_OK == rc)
        opal_output_verbose(10, c->output, "braid: %s: UCX started on first need (%d ranks)",
                            m->comm->c_name, m->bcomm.size);
    else if (0 == m->bcomm.rank)
        opal_output(0, "braid: WARNING: UCX could not start on %s for %s (braid code %d); its "
                    "collectives that need messages run on the other coll components "
                    "(coll_braid_verbose=1 shows why)", failed_here ? "this process" : "some processes",
                    m->comm->c_name, rc);
    mca_coll_braid_posts_release(m);
}

