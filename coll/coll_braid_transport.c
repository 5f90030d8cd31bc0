/*
 * coll_braid_transport.c - bringing UCX up: its start on a thread of its
 * own while MPI_Init runs, and the exchange of every process's worker
 * address and node over the first communicator braid takes
 * (MPI_COMM_WORLD, or with MPI-4 sessions one made from a group of every
 * process of the job), by the previous module's collectives. The outcome
 * is agreed: the same on every rank.
 */
#include "coll_braid_module.h"
#include "coll_braid_compat.h"
#include "coll_braid_component.h"
#include "coll_braid_cuda.h"
#include "coll_braid_log.h"

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
    /* before init_query (the early start) the progress thread is on only
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

/* UCX's context (ucp_init: its configuration, transport libraries and
 * devices) starts when the component opens, on a thread of its own, and
 * passes while MPI_Init goes on; MPI_COMM_WORLD's enable joins it and
 * makes the worker (mca_coll_braid_transport_boot). Only inside MPI_Init
 * (ompi_info opens components too) and in a job of several processes (a
 * singleton's world is braid's only where CUDA is used). */
void mca_coll_braid_transport_start_early(void)
{
    if (OMPI_MPI_STATE_INIT_STARTED != ompi_mpi_state || ompi_process_info.num_procs < 2) return;
    braid_ucx_config_t cfg = transport_config();
    braid_ucx_init_early(&cfg);
}

int mca_coll_braid_transport_boot(mca_coll_braid_module_t *m, ompi_communicator_t *comm)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    int P = ompi_comm_size(comm), rank = ompi_comm_rank(comm);
    braid_ucx_config_t cfg = transport_config();
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
    /* the transport knows process i as the one of rank i in comm: where
     * that is not its rank in MPI_COMM_WORLD, the map from one to the other */
    for (int i = 0; OMPI_SUCCESS == rc && i < P; i++) {
        if ((int)ompi_comm_peer_lookup(comm, i)->super.proc_name.vpid == i) continue;
        if (NULL == (c->proc_of_vpid = malloc((size_t)P * sizeof(int)))) rc = OMPI_ERR_OUT_OF_RESOURCE;
        for (int j = 0; OMPI_SUCCESS == rc && j < P; j++)
            c->proc_of_vpid[ompi_comm_peer_lookup(comm, j)->super.proc_name.vpid] = j;
        break;
    }
    if (OMPI_SUCCESS == rc) {
        c->transport_ready = true;
        /* the built-in selection table is parsed on its first use: here,
         * not in the first collective (80 us) */
        (void)braid_table_builtin();
        if (0 == rank && cfg.thread_multiple)
            opal_output_verbose(10, c->output, "braid: MPI_THREAD_MULTIPLE: collectives on "
                                "different communicators run concurrently; threads kept apart "
                                "on the UCX worker by %s", 0 == strcmp(braid_ucx_thread_mode(),
                                "ucx") ? "UCX (UCS_THREAD_MODE_MULTI)" : "braid's mutex");
        /* progress braid's worker from every MPI wait too: a peer that has
         * left a collective must still answer our handshakes (low priority
         * until a nonblocking request goes outstanding) */
        opal_progress_register_lp(mca_coll_braid_progress);
        c->progress_registered = true;
    }
    return rc;
}

