/*
 * coll_braid_params.c - the component's MCA parameters and MPI_T
 * performance variables: registration, and the check that stops MPI_Init
 * on a value braid cannot run (mca_coll_braid_init_query prints why).
 */
#include "coll_braid_component.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"

#include "braid_shm_tier.h"
#include "braid_ucx.h"

/* MPI_T performance variables: braid's sends counted by whether the peer is
 * on this node, and the UCX endpoints it has made (ucx_transport counts
 * them). */
static void register_pvars(const mca_base_component_t *v)
{
    braid_ucx_counters_t *k = braid_ucx_counters();
    /* counters read as what was added since the handle was made (MPI_T's
     * rule for counters); the endpoints as a level, the number there is */
    const struct { const char *name, *desc; unsigned long long *value; int cls; } pvars[] = {
        { "intra_node_msgs", "Messages braid sent to processes on this node", &k->intra_node_msgs,
          MCA_BASE_PVAR_CLASS_COUNTER },
        { "intra_node_bytes", "Bytes braid sent to processes on this node", &k->intra_node_bytes,
          MCA_BASE_PVAR_CLASS_COUNTER },
        { "inter_node_msgs", "Messages braid sent to processes on other nodes",
          &k->inter_node_msgs, MCA_BASE_PVAR_CLASS_COUNTER },
        { "inter_node_bytes", "Bytes braid sent to processes on other nodes",
          &k->inter_node_bytes, MCA_BASE_PVAR_CLASS_COUNTER },
        { "endpoints", "UCX endpoints this process has made for braid (at most one per peer "
          "process, shared by every communicator; made in MPI_Init up to coll_braid_preconnect "
          "processes)", &k->endpoints, MCA_BASE_PVAR_CLASS_LEVEL },
    };
    for (size_t i = 0; i < sizeof(pvars) / sizeof(pvars[0]); i++)
        (void)mca_base_component_pvar_register(
            v, pvars[i].name, pvars[i].desc, OPAL_INFO_LVL_4, pvars[i].cls,
            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL,
            pvars[i].value);
}

/* Why MPI_Init must stop (an invalid parameter value); see init_query. */
char mca_coll_braid_invalid_message[1024];

/* The integer parameters: one row each - name (after coll_braid_), the
 * field it sets, its default, the valid values (lo..hi, plus up to two
 * values outside that range) as the error message states them, its
 * MCA_BASE_VAR_* level, scope and flags, and its help text. A value
 * outside them is as fatal as an unknown name (init_query stops MPI_Init
 * with the message). */
typedef struct int_param {
    const char *name;
    int *var;
    int deflt;
    int lo, hi, n_other, other[2];
    const char *valid;
    int level, scope, flags;
    const char *help;
} int_param_t;

#define C (&mca_coll_braid_component)
#define ANY INT_MIN, INT_MAX, 0, { 0, 0 }, NULL
static const int_param_t int_params[] = {
    { "chunk_size", &C->chunk_size, 0, 0, INT_MAX, 0, { 0, 0 },
      "0 (selection table) or a positive number of bytes", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, 0,
      "Chunk size in bytes of ring_chunked allreduce and reduce_scatter (0 = from the selection table)" },
    { "dbtree_chunk_size", &C->dbtree_chunk_size, 0, 0, INT_MAX, 0, { 0, 0 },
      "0 (selection table) or a positive number of bytes", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, 0,
      "Pipeline chunk size in bytes of the double binary tree algorithms (0 = from the selection table)" },
    { "bcube_base", &C->bcube_base, 0, 2, 64, 2, { 0, -1 }, "0 (selection table), -1 (auto) or 2..64",
      OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, 0,
      "Group size B of the bcube allreduce: 2..64, -1 = auto (two groups from the factors of P), "
      "0 = the selection table's choice" },
    { "cuda", &C->cuda_enable, 1, 0, 2, 0, { 0, 0 }, "0, 1, 2", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, 0,
      "Accept CUDA device buffers (1; needs a build with CUDA and the driver at run time), or treat "
      "every buffer as host memory (0); 2 = as 1, and cut messages into segments even when no "
      "process has the CUDA driver (tests)" },
    { "cuda_segment_size", &C->cuda_segment_size, 2 << 20, 0, INT_MAX, 0, { 0, 0 },
      "0 (one segment) or a positive number of bytes", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, 0,
      "Bytes per segment of the device-buffer staging pipeline (0 = one segment). Applies on every "
      "rank, host buffers too, in jobs where some process has the CUDA driver" },
    { "inject_alloc_failure", &C->inject_alloc_failure, -1, ANY, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL, 0,
      "Fault injection, for tests only: N >= 0 fails braid's scratch allocations after N "
      "successful ones, on every rank and every communicator alike (collectives needing "
      "new scratch then return MPI_ERR_NO_MEM); -1 = off" },
    { "topo_aware", &C->topo_aware, 1, 0, 1, 0, { 0, 0 }, "0 (rank order), 1 (group ranks by node)",
      OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, MCA_BASE_VAR_FLAG_SETTABLE,
      "Run the collectives with the ranks grouped by node, so rings cross between nodes once "
      "per node whatever the rank mapping (1; reductions with non-commutative ops keep rank "
      "order), or in rank order (0). Read when a communicator is created; may be changed "
      "through MPI_T with the same value on every process" },
    { "test_nodes", &C->test_nodes, 0, 0, INT_MAX, 0, { 0, 0 },
      "0 (real node names) or a positive number of emulated nodes", OPAL_INFO_LVL_9,
      MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "For tests on one machine: N > 0 makes braid treat process r of MPI_COMM_WORLD as running "
      "on node r % N (as mpirun --map-by node over N hosts); 0 = the real node names" },
    { "preconnect", &C->preconnect, 256, ANY, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "Make the UCX endpoints to a communicator's processes when braid is enabled on it "
      "(MPI_COMM_WORLD: in MPI_Init), so that no collective pays for them, for communicators "
      "of up to this many processes (default 256); larger ones, and all with 0, make each "
      "endpoint at its first message. Endpoints are per process pair and shared by every "
      "communicator: once made, a new communicator makes none" },
    { "progress_thread", &C->progress_thread, 0, 0, 1, 0, { 0, 0 },
      "0 (progress inside MPI calls), 1 (a progress thread)", OPAL_INFO_LVL_5,
      MCA_BASE_VAR_SCOPE_ALL, 0,
      "Nonblocking and persistent collectives advance inside MPI calls (0), or also on a "
      "thread of braid's (1), so that a rank computing without MPI calls still sees them "
      "finish. The thread sleeps while none is outstanding. Needs MPI_THREAD_MULTIPLE (it runs "
      "user ops): at a lower thread level it stays off, with a message" },
    { "progress_thread_bytes", &C->progress_thread_bytes, 65536, 0, INT_MAX, 0, { 0, 0 },
      "0 (every call) or a message size in bytes", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, 0,
      "With coll_braid_progress_thread=1: a nonblocking or persistent call of at least this "
      "many bytes (default 65536) returns from MPI_Ixxx / MPI_Start before it runs and the "
      "thread runs it, overlapping the application's computation; a smaller one runs inside "
      "its post as far as its peers allow, as without the thread (0: every call does)" },
    { "fiber_stack_size", &C->fiber_stack_size, 8 << 20, 65536, 1 << 30, 0, { 0, 0 },
      "65536..1073741824 bytes", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL, 0,
      "Stack bytes of each fiber that runs a nonblocking or persistent collective (and the "
      "user reduction ops it calls): address space reserved, memory used only as touched. "
      "The default is a thread's usual stack (8 MiB); an op whose local arrays overflow it "
      "stops the job with a message naming this parameter" },
    { "thread_serialize", &C->thread_serialize, 0, 0, 1, 0, { 0, 0 },
      "0 (UCX's thread mode), 1 (braid's mutex)", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL, 0,
      "With MPI_THREAD_MULTIPLE: keep threads apart on braid's UCX worker with UCX's own "
      "thread mode, UCS_THREAD_MODE_MULTI (0), or with braid's mutex around every worker "
      "call (1; chosen anyway when UCX was built without thread support). No effect on "
      "single-threaded jobs, which take no lock" },
    { "ucx_first_need", &C->ucx_first_need_param, 1, 0, 1, 0, { 0, 0 },
      "0 (UCX starts in MPI_Init), 1 (on a communicator's first need of it)", OPAL_INFO_LVL_6,
      MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "In a job whose processes share one node, start braid's UCX worker when a communicator "
      "first runs an algorithm that sends messages (1), so that a job whose collectives all "
      "go through the shared-memory tier never starts it; or in MPI_Init (0), as every job "
      "on several nodes does. Until then a communicator's first calls and the nonblocking "
      "calls that need UCX run on the previous component" },
    { "shm", &C->shm_enable, 1, 0, 1, 0, { 0, 0 },
      "0 (no shared-memory tier), 1 (one segment per one-node communicator)", OPAL_INFO_LVL_5,
      MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "Shared-memory tier: collectives on a communicator whose ranks share one node (and "
      "inside each node for the hierarchical allreduce) go through a segment all its ranks map "
      "(1), or always through UCX messages (0). Must be the same on every process" },
    { "shm_after", &C->shm_after, 3, 1, INT_MAX, 0, { 0, 0 }, "1 or more collective calls",
      OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "Set a communicator's segment up at its N-th blocking braid collective call (N >= 1), or "
      "at its first persistent init: short-lived communicators (dup, one call, free) never "
      "pay for one" },
    { "shm_slot_size", &C->shm_slot_size, 8192, 64, 1 << 20, 0, { 0, 0 }, "64..1048576 bytes",
      OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "Bytes of one rank's slot in a shared-memory cell (64..1048576): the largest message "
      "(one rank's contribution) that goes through the cells. A segment holds shm_cells x P "
      "slots plus one 128-byte line per rank" },
    { "shm_cells", &C->shm_cells, 4, 2, 64, 0, { 0, 0 }, "2..64", OPAL_INFO_LVL_6,
      MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "Cells of a shared-memory segment used in rotation (2..64): how many calls a rank may run "
      "ahead of the slowest reader before it waits" },
    { "shm_persistent", &C->shm_persistent, 8, 0, BRAID_SHM_CHANNELS_MAX, 0, { 0, 0 },
      "0..64 channels", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "Shared-memory channels per communicator for persistent collectives (0..64): a "
      "persistent request takes a free one at init (a channel is free once every rank has "
      "freed the request that held it) and runs the shm algorithms on it like a blocking "
      "call; with none free it runs braid's UCX algorithms. Each channel adds 2 x P slots to "
      "the segment. Must be the same on every process" },
    { "shm_single_copy", &C->shm_single_copy, 1, 0, 1, 0, { 0, 0 },
      "0 (slots only), 1 (single copy above a slot where the node permits it)", OPAL_INFO_LVL_6,
      MCA_BASE_VAR_SCOPE_ALL, 0,
      "Shared-memory tier above shm_single_copy_above bytes per rank: the collectives read "
      "the other ranks' buffers directly (the rooted ones, scan and exscan also write into "
      "them, so that two ranks share a copy) with Linux cross-memory attach "
      "(process_vm_readv / writev; one copy, any size) where the node permits it - tried once "
      "per communicator, off on every rank if any rank cannot (1) - or stop at the slot size "
      "(0)" },
    { "shm_single_copy_above", &C->shm_single_copy_above, 4096, 0, INT_MAX, 0, { 0, 0 },
      "0 or more bytes", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "With shm_single_copy: bcast and allreduce messages above this many bytes per rank (and "
      "all above the slot size) go single copy instead of through the cells (measured: the "
      "cells win up to 4 KiB, single copy from 8 KiB; a reduce on 2 ranks goes through the "
      "cells up to the slot size); the block collectives (allgather(v), alltoall(v), "
      "gather(v), scatter(v)) go through the cells while a slot holds the call. Must be "
      "the same on every process" },
    { "shm_reduce_split", &C->shm_reduce_split, (int)BRAID_SHM_SPLIT_FROM, 0, INT_MAX, 0, { 0, 0 },
      "0 or more bytes (ranks x message)", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "Single-copy reduce from 3 ranks: from this many bytes of ranks x message every rank "
      "folds a share of the vector (two steps) instead of the root folding all of it (one "
      "step; measured: README). Allreduce always splits. Must be the same on every process" },
    { "shm_far_ns", &C->shm_far_ns, 400, 0, 1000000, 0, { 0, 0 }, "0..1000000 ns", OPAL_INFO_LVL_6,
      MCA_BASE_VAR_SCOPE_ALL_EQ, 0,
      "A two-rank segment times a cache line's round trip between its ranks at set-up (64 "
      "rounds through the cells); above this many ns the ranks count as far apart (sockets "
      "apart, or vCPUs on distant cores) and reduce at 4 KiB - 512 KiB copies the other's "
      "vector, then folds, instead of going through a slot or sharing the copy (measured: "
      "docs/BENCHMARKS.md). 0: never measured, never far; 1: always far" },
    { "shm_inject_failure", &C->shm_inject_failure, -1, ANY, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL, 0,
      "Fault injection, for tests only: rank N of every communicator fails to map its "
      "shared-memory segment (the tier must then stay off on all ranks); -1 = off" },
};
#undef ANY
#undef C

static bool int_param_valid(const int_param_t *p)
{
    int x = *p->var;
    if (x >= p->lo && x <= p->hi) return true;
    for (int i = 0; i < p->n_other; i++)
        if (x == p->other[i]) return true;
    return false;
}

static void register_int_params(const mca_base_component_t *v)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    for (size_t i = 0; i < sizeof int_params / sizeof *int_params; i++) {
        const int_param_t *p = &int_params[i];
        *p->var = p->deflt;
        (void)mca_base_component_var_register(v, p->name, p->help, MCA_BASE_VAR_TYPE_INT, NULL, 0,
                                              p->flags, p->level, p->scope, p->var);
        if (!c->params_valid || int_param_valid(p)) continue;
        snprintf(mca_coll_braid_invalid_message, sizeof(mca_coll_braid_invalid_message),
                 "braid: invalid value %d for MCA parameter coll_braid_%s; valid values: %s",
                 *p->var, p->name, p->valid);
        c->params_valid = false;
    }
}

/* Parse every coll_braid_<collective>_algorithm; on an unknown name,
 * remember the message (MPI_Init is stopped in init_query). */

static void parse_alg_params(void)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    for (int coll = 0; coll < BRAID_COLL_N; coll++) {
        const char *value = c->algorithm_param[coll];
        c->forced_algorithm[coll] = BRAID_ALG_AUTO;
        if (NULL == value || '\0' == value[0]) continue;
        int id = braid_alg_lookup((braid_coll_t)coll, value);
        if (id >= 0) {
            c->forced_algorithm[coll] = id;
            continue;
        }
        char valid[256];
        braid_alg_names_joined((braid_coll_t)coll, valid, sizeof(valid));
        snprintf(mca_coll_braid_invalid_message, sizeof(mca_coll_braid_invalid_message),
                 "braid: invalid value '%s' for MCA parameter coll_braid_%s_algorithm; "
                 "valid values: %s", value, braid_coll_name((braid_coll_t)coll), valid);
        c->params_valid = false;
        return;
    }
}

int mca_coll_braid_register(void)
{
    mca_coll_braid_component_t *c = &mca_coll_braid_component;
    const mca_base_component_t *v = &c->super.collm_version;

    c->priority = 40;
    (void)mca_base_component_var_register(v, "priority",
        "Priority of the braid coll component (tuned is 30; braid takes over when higher)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &c->priority);
    c->verbose = 0;
    (void)mca_base_component_var_register(v, "verbose",
        "Verbosity: 1 errors and warnings, 10 the selection table, 20 one line per collective call (rank 0)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->verbose);

    for (int coll = 0; coll < BRAID_COLL_N; coll++) {
        char name[64], desc[512], valid[256];
        braid_alg_names_joined((braid_coll_t)coll, valid, sizeof(valid));
        snprintf(name, sizeof(name), "%s_algorithm", braid_coll_name((braid_coll_t)coll));
        snprintf(desc, sizeof(desc),
                 "Algorithm for %s (auto = braid's selection table). Valid values: %s",
                 braid_coll_mpi_name((braid_coll_t)coll), valid);
        c->algorithm_param[coll] = (char *)"auto";
        (void)mca_base_component_var_register(v, name, desc, MCA_BASE_VAR_TYPE_STRING, NULL, 0,
                                              0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL,
                                              &c->algorithm_param[coll]);
    }
    parse_alg_params();

    c->rules_file = (char *)"";
    (void)mca_base_component_var_register(v, "rules_file",
        "Path of a selection rules file (format in the README: one rule per line, "
        "'collective comm_size msg_size algorithm [key=value]'); empty = built-in table only",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL,
        &c->rules_file);
    register_int_params(v);
    register_pvars(v);
    return OMPI_SUCCESS;
}

