/*
 * coll_braid_component.h - the component: its MCA parameters, the job-wide
 * state, the progress hook (coll_braid_engine.c) and whether a pointer is
 * device memory (coll_braid_cuda.c; every collective asks). A base header:
 * the other coll/ headers may include it, and it includes no coll/ header
 * but coll_braid_compat.h.
 *
 * The coll_braid_*.c files are the glue to Open MPI, and the only place
 * Open MPI's internals appear; each includes the headers of what it uses.
 * The glue calls only down: into the dispatch and the request engine
 * (libbraid/braid_dispatch.h, libbraid/engines/braid_task.h), the
 * algorithms through the registry, the selection table and the transports.
 */
#ifndef MCA_COLL_BRAID_COMPONENT_H
#define MCA_COLL_BRAID_COMPONENT_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/communicator/communicator.h"
#include "coll_braid_compat.h"

#include "braid_dispatch.h"
#include "braid_tag_numbers.h"
#include "braid_task.h"

BEGIN_C_DECLS

typedef struct mca_coll_braid_component_t {
    mca_coll_base_component_t super;

    /* MCA parameters */
    int priority;
    int verbose;
    /* coll_braid_<collective>_algorithm: the string given, and its id
     * (BRAID_ALG_AUTO = use the selection table) */
    char *algorithm_param[BRAID_COLL_N];
    int forced_algorithm[BRAID_COLL_N];

    char *rules_file;          /* coll_braid_rules_file */
    int chunk_size;            /* coll_braid_chunk_size (ring_chunked), 0 = table */
    int dbtree_chunk_size;     /* coll_braid_dbtree_chunk_size, 0 = table */
    int bcube_base;            /* coll_braid_bcube_base, 0 = table/auto */
    braid_table_t *rules;      /* the parsed rules file, NULL = built-in only */
    int cuda_enable;           /* coll_braid_cuda: detect device buffers */
    int cuda_segment_size;     /* coll_braid_cuda_segment_size: staging segment bytes */
    bool cuda_job;             /* some process of the job can load the CUDA driver */
    int inject_alloc_failure;  /* coll_braid_inject_alloc_failure (tests), < 0 = off */
    int topo_aware;            /* coll_braid_topo_aware: order ranks by node (read per communicator) */
    int test_nodes;            /* coll_braid_test_nodes: N > 0 puts process r on node r % N (tests) */
    int thread_serialize;      /* coll_braid_thread_serialize: braid's mutex, not UCX's thread mode */
    int shm_enable;            /* coll_braid_shm: the shared-memory tier */
    int shm_after;             /* coll_braid_shm_after: set a segment up at this call */
    int shm_slot_size;         /* coll_braid_shm_slot_size: bytes per rank and cell */
    int shm_cells;             /* coll_braid_shm_cells: cells in rotation */
    int shm_persistent;        /* coll_braid_shm_persistent: channels for persistent requests */
    int shm_inject_failure;    /* coll_braid_shm_inject_failure (tests), < 0 = off */
    int shm_single_copy;       /* coll_braid_shm_single_copy: 1 = process_vm_readv */
    int shm_single_copy_above; /* coll_braid_shm_single_copy_above: bytes per rank */
    int shm_reduce_split;      /* coll_braid_shm_reduce_split: bytes, ranks x message */
    int preconnect;            /* coll_braid_preconnect: endpoints made at enable up to this size */
    int progress_thread;       /* coll_braid_progress_thread: 1 = a thread progresses requests */
    int progress_thread_bytes; /* coll_braid_progress_thread_bytes: requests it runs from the start */
    int fiber_stack_size;      /* coll_braid_fiber_stack_size: bytes per fiber stack */
    uint64_t *node_key;        /* per process of the job: its node (hash of the node name) */
    bool multi_node;           /* node_key holds more than one node */
    /* the transport's process index of each process of the job, by its
     * rank in MPI_COMM_WORLD (vpid); NULL: the same (the transport booted
     * on MPI_COMM_WORLD, or on a communicator of the job in that order) */
    int *proc_of_vpid;
    /* the tag ids of communicators without a context id every rank agrees
     * on (made from a group): the numbers this process's live ones hold,
     * picked the same on every rank (braid_tag_numbers.h) */
    braid_tag_numbers_t group_ids;

    /* state */
    int output;            /* opal_output stream */
    bool params_valid;     /* false: an invalid value was given, abort MPI_Init */
    bool disabled;         /* UCX could not start: braid stays out of the way */
    bool transport_ready;  /* braid runs on communicators: UCX is up, or starts on first need */
    int ucx_first_need_param; /* coll_braid_ucx_first_need */
    /* UCX starts at a communicator's first need of it, not in MPI_Init
     * (a job on one node: coll_braid_transport.c), agreed by every process */
    bool ucx_first_need;
    bool progress_registered; /* mca_coll_braid_progress is in opal_progress */
    /* MPI_THREAD_MULTIPLE, known at init_query: collectives on different
     * communicators may run at once. Everything a module owns (sequence
     * numbers, caches, scratch, views, CUDA session) is per communicator,
     * which MPI lets only one thread use at a time; what processes share
     * (the UCX worker, endpoints, counters) is made safe in ucx_transport/
     * and only when this is set, so a single-threaded job takes no lock. */
    bool thread_multiple;
    int shm_far_ns;        /* coll_braid_shm_far_ns: a two-rank segment's line round trip (ns) */
} mca_coll_braid_component_t;

BRAID_COMPONENT_DECLSPEC extern mca_coll_braid_component_t mca_coll_braid_component;

/* what the dispatch reads of the parameters (coll_braid_component.c),
 * complete once MPI_Init has queried the component */
extern braid_site_conf_t mca_coll_braid_site_conf;
void mca_coll_braid_conf_refresh(void);
/* the request engine of the process (coll_braid_engine.c) */
extern braid_engine_t mca_coll_braid_engine;

/* registration (coll_braid_params.c); an invalid value leaves params_valid
 * false and the message here */
int mca_coll_braid_register(void);
extern char mca_coll_braid_invalid_message[1024];

int mca_coll_braid_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_braid_comm_query(struct ompi_communicator_t *comm, int *priority);
/* begin UCX's start-up on a thread while MPI_Init goes on (coll_braid_transport.c) */
void mca_coll_braid_transport_open(void);

/* progress braid's transport and requests (registered with opal_progress,
 * in its low-priority list while no request is outstanding) */
int mca_coll_braid_progress(void);
/* a request went outstanding: the hook runs on every opal_progress call */
void mca_coll_braid_progress_active(void);

/* device (CUDA) buffers: without CUDA every pointer is host memory, known
 * without a call */
bool mca_coll_braid_device_ptr(const void *p); /* the driver's answer */
static inline bool mca_coll_braid_is_device(const void *p)
{
    return mca_coll_braid_component.cuda_job && mca_coll_braid_device_ptr(p);
}

END_C_DECLS

#endif /* MCA_COLL_BRAID_COMPONENT_H */
