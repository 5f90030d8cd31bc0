/*
 * coll_braid.h - braid, an Open MPI coll component whose collectives run
 * over UCX point-to-point with algorithms from Gloo, NCCL and the MPI
 * literature.
 *
 * This header and the coll_braid_*.c files are the glue to Open MPI, and the
 * only place Open MPI's internals appear: MCA parameters, comm_query/enable
 * (component, module), the MPI entry points (entry_move, entry_reduce:
 * argument normalisation, fallback), the one dispatch below them (dispatch:
 * choose, trace, view, run), datatypes and ops, device buffers (cuda) and
 * node grouping (topo). The glue calls only down: into the algorithms
 * through the registry (libbraid/braid_registry.h), the core engines and
 * patterns, the selection table and the UCX transport.
 */
#ifndef MCA_COLL_BRAID_H
#define MCA_COLL_BRAID_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/communicator/communicator.h"
#include "coll_braid_compat.h"

#include "braid_algo.h"
#include "braid_registry.h"
#include "braid_topo.h"
#include "braid_ucx.h"
#include "braid_tag.h"
#include "braid_select.h"
#include "braid_devpipe.h"
#include "braid_shm.h"
#include "braid_shm_segment.h"
#include "braid_fiber.h"
#include "braid_numbers.h"

BEGIN_C_DECLS

/* most shared-memory channels for persistent requests per communicator
 * (the bits of the mask the ranks agree on) */
#define BRAID_SHM_CHANNELS_MAX 64

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
    int fiber_stack_size;      /* coll_braid_fiber_stack_size: bytes per fiber stack */
    uint64_t *node_key;        /* per process of the job: its node (hash of the node name) */
    bool multi_node;           /* node_key holds more than one node */

    /* state */
    int output;            /* opal_output stream */
    bool params_valid;     /* false: an invalid value was given, abort MPI_Init */
    bool disabled;         /* UCX could not start: braid stays out of the way */
    bool transport_ready;  /* addresses of every process of the job are known */
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

/* A reduction bound to braid's callback (coll_braid_op.c). */
typedef struct mca_coll_braid_op_t {
    braid_op_t bop;               /* what the algorithms call; arg = this */
    bool exact;                   /* same bits in any evaluation order */
    MPI_Datatype dtype;
    MPI_Op op;
    size_t extent;
    void (*kernel)(const void *in, void *inout, size_t count);  /* NULL: PMPI */
    size_t kernel_elems;          /* kernel elements per datatype element */
} mca_coll_braid_op_t;

/* The previous module's function for every collective braid installs. */
typedef struct mca_coll_braid_prev_t {
    mca_coll_base_module_barrier_fn_t barrier;
    mca_coll_base_module_t *barrier_module;
    mca_coll_base_module_bcast_fn_t bcast;
    mca_coll_base_module_t *bcast_module;
    mca_coll_base_module_allreduce_fn_t allreduce;
    mca_coll_base_module_t *allreduce_module;
    mca_coll_base_module_allgather_fn_t allgather;
    mca_coll_base_module_t *allgather_module;
    mca_coll_base_module_reduce_fn_t reduce;
    mca_coll_base_module_t *reduce_module;
    mca_coll_base_module_reduce_scatter_fn_t reduce_scatter;
    mca_coll_base_module_t *reduce_scatter_module;
    mca_coll_base_module_reduce_scatter_block_fn_t reduce_scatter_block;
    mca_coll_base_module_t *reduce_scatter_block_module;
    /* nonblocking and persistent: NULL when no previous module has the
     * function (braid then installs none for it either) */
    mca_coll_base_module_ibarrier_fn_t ibarrier;
    mca_coll_base_module_t *ibarrier_module;
    mca_coll_base_module_ibcast_fn_t ibcast;
    mca_coll_base_module_t *ibcast_module;
    mca_coll_base_module_iallreduce_fn_t iallreduce;
    mca_coll_base_module_t *iallreduce_module;
    mca_coll_base_module_iallgather_fn_t iallgather;
    mca_coll_base_module_t *iallgather_module;
    mca_coll_base_module_ireduce_fn_t ireduce;
    mca_coll_base_module_t *ireduce_module;
    mca_coll_base_module_ireduce_scatter_fn_t ireduce_scatter;
    mca_coll_base_module_t *ireduce_scatter_module;
    mca_coll_base_module_ireduce_scatter_block_fn_t ireduce_scatter_block;
    mca_coll_base_module_t *ireduce_scatter_block_module;
    mca_coll_base_module_barrier_init_fn_t barrier_init;
    mca_coll_base_module_t *barrier_init_module;
    mca_coll_base_module_bcast_init_fn_t bcast_init;
    mca_coll_base_module_t *bcast_init_module;
    mca_coll_base_module_allreduce_init_fn_t allreduce_init;
    mca_coll_base_module_t *allreduce_init_module;
    mca_coll_base_module_allgather_init_fn_t allgather_init;
    mca_coll_base_module_t *allgather_init_module;
    mca_coll_base_module_reduce_init_fn_t reduce_init;
    mca_coll_base_module_t *reduce_init_module;
    mca_coll_base_module_reduce_scatter_init_fn_t reduce_scatter_init;
    mca_coll_base_module_t *reduce_scatter_init_module;
    mca_coll_base_module_reduce_scatter_block_init_fn_t reduce_scatter_block_init;
    mca_coll_base_module_t *reduce_scatter_block_init_module;
} mca_coll_braid_prev_t;

typedef struct mca_coll_braid_module_t {
    mca_coll_base_module_t super;
    ompi_communicator_t *comm;
    braid_ucx_comm_t *tcomm;     /* transport state */
    braid_comm_t bcomm;          /* the algorithms' view, bound to tcomm */
    braid_scratch_t scratch;     /* reused across calls */
    size_t *rcounts;             /* size entries: MPI_Reduce_scatter's counts (first call) */
    /* per-call caches: the last choice per collective, and the last
     * reduction binding when it is a predefined (type, op) pair, whose
     * handles are never freed and reused */
    struct { bool valid; size_t bytes; braid_choice_t choice; } choice_cache[BRAID_COLL_N];
    bool op_cache_valid;
    void *cuda;                  /* device-buffer state (coll_braid_cuda.c), lazily */
    /* topology (coll_braid_topo.c): ranks grouped by node; the algorithms
     * run on topo_view (bcomm in node order) when topo_ordered; the
     * hierarchical allreduce's node and leader views are made on first use */
    braid_topo_t topo;
    bool topo_ready;             /* topo is built (in a single-node job: on first use) */
    bool topo_ordered;
    braid_subcomm_t topo_view;
    size_t *topo_counts;         /* 2P + 1: reduce-scatter block starts and counts in node order */
    bool hier_ready;
    braid_subcomm_t node_view, leader_view;
    /* the hierarchical allreduce's phase algorithms for the last size
     * (coll_braid_dispatch.c) */
    struct { bool valid; size_t bytes, buffer_bytes; braid_hier_t h; } hier_cache;
    mca_coll_braid_prev_t prev;
    mca_coll_braid_op_t op_cache;
    /* the shared-memory tier (coll_braid_shm.c): calls counted until the
     * segment is set up (coll_braid_shm_after), once; the segment of the
     * whole communicator (one node) or of this rank's node view (several
     * nodes: the hierarchical allreduce's phases) */
    unsigned shm_calls;
    bool shm_tried;
    /* calls on the segment run in call order (coll_braid_dispatch.c):
     * the next ticket to hand out and the one whose turn it is */
    unsigned shm_ticket, shm_serving;
    braid_shm_t shm;
    braid_shm_segment_t shm_seg;
    /* the segment's channels for persistent requests (one-node
     * communicators): how many, those no request of this rank holds, and
     * where each one's call numbers stopped (its next holder goes on) */
    int shm_nchan;
    uint64_t shm_chan_free;
    struct { uint64_t seq, safe; } shm_chan[BRAID_SHM_CHANNELS_MAX];
    /* the persistent requests' tag numbers this rank's live ones hold */
    braid_numbers_t pnums;
} mca_coll_braid_module_t;

OBJ_CLASS_DECLARATION(mca_coll_braid_module_t);

/* component / module */
int mca_coll_braid_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_braid_comm_query(struct ompi_communicator_t *comm, int *priority);

/* MPI entry points */
int mca_coll_braid_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_braid_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_braid_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module);
int mca_coll_braid_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module);
int mca_coll_braid_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module);
int mca_coll_braid_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_braid_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

/* nonblocking and persistent entry points (coll_braid_nbc.c) */
int mca_coll_braid_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                            mca_coll_base_module_t *module);
int mca_coll_braid_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module);
int mca_coll_braid_iallreduce(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module);
int mca_coll_braid_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module);
int mca_coll_braid_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module);
int mca_coll_braid_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                              struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_allreduce_init(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_reduce_init(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                               struct ompi_communicator_t *comm, struct ompi_info_t *info,
                               ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                  ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_braid_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                             struct ompi_communicator_t *comm,
                                             struct ompi_info_t *info, ompi_request_t **request,
                                             mca_coll_base_module_t *module);
int mca_coll_braid_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                       ompi_request_t **request, mca_coll_base_module_t *module);

void mca_coll_braid_op_bind(mca_coll_braid_op_t *b, MPI_Datatype dtype, MPI_Op op);
/* the binding for (dtype, op), from m's cache when it can be */
const mca_coll_braid_op_t *mca_coll_braid_op_get(struct mca_coll_braid_module_t *m,
                                                 MPI_Datatype dtype, MPI_Op op,
                                                 mca_coll_braid_op_t *storage);
/* the binding for a call (call->req: a copy in storage of the
 * communicator's cached one, which a later call may rebind while the
 * request runs) */
struct mca_coll_braid_call;
const mca_coll_braid_op_t *mca_coll_braid_call_op(struct mca_coll_braid_module_t *m,
                                                  const struct mca_coll_braid_call *call,
                                                  MPI_Datatype dtype, MPI_Op op,
                                                  mca_coll_braid_op_t *storage);

/* datatypes (coll_braid_datatype.c) */
int mca_coll_braid_pack(const void *userbuf, size_t count, struct ompi_datatype_t *dt,
                        void *packed, size_t bytes);
int mca_coll_braid_unpack(void *userbuf, size_t count, struct ompi_datatype_t *dt,
                          const void *packed, size_t bytes);
bool mca_coll_braid_is_contiguous(struct ompi_datatype_t *dt, size_t count);
void *mca_coll_braid_contig_base(const void *buf, struct ompi_datatype_t *dt);
size_t mca_coll_braid_type_size(struct ompi_datatype_t *dtype);

/* One collective call on its way down (coll_braid_dispatch.c). */
typedef struct mca_coll_braid_request mca_coll_braid_request_t;

typedef struct mca_coll_braid_call {
    braid_coll_t coll;
    /* the nonblocking or persistent request running the call on its fiber
     * (coll_braid_nbc.c), NULL for a blocking call: looked up once, in
     * mca_coll_braid_call_init */
    mca_coll_braid_request_t *req;
    size_t bytes;                 /* the selection size (selection/RULES.md) */
    braid_choice_t choice;
    braid_coll_args_t args;       /* sbuf, rbuf set by the entry point unless pipelined */
    /* allreduce, reduce, bcast on contiguous buffers: this rank's input and
     * output as the staging pipeline takes them (braid_devpipe.h); the
     * dispatch runs the algorithm once on them when neither is on a device
     * and the job does not cut messages into segments */
    bool pipelined;
    braid_devpipe_kind_t kind;
    const void *in;
    void *out;
    bool in_dev, out_dev;
} mca_coll_braid_call_t;

/* The table's choice for coll at bytes on m, for request r (NULL: a
 * blocking call): cached per communicator, except for a persistent
 * request, whose segment is its channel (chosen afresh, not cached). */
braid_choice_t mca_coll_braid_choose(mca_coll_braid_module_t *m, braid_coll_t coll, size_t bytes,
                                     mca_coll_braid_request_t *r);
/* Start a call: choose, bind scratch and params. false: braid has no
 * algorithm for it (hand the call to the previous module). */
bool mca_coll_braid_call_init(mca_coll_braid_module_t *m, mca_coll_braid_call_t *call,
                              braid_coll_t coll, size_t bytes);
/* The call's input and output for the staging pipeline (see above). */
void mca_coll_braid_call_buffers(mca_coll_braid_call_t *call, braid_devpipe_kind_t kind,
                                 const void *in, bool in_dev, void *out, bool out_dev);
/* Run the call; returns a BRAID_* code (BRAID_ERR_UNSUPPORTED: hand it on,
 * the same on every rank). */
int mca_coll_braid_dispatch(mca_coll_braid_module_t *m, mca_coll_braid_call_t *call);

/* device (CUDA) buffers (coll_braid_cuda.c); without CUDA every pointer is
 * host memory */
bool mca_coll_braid_cuda_probe(void);          /* this process can load the driver */
bool mca_coll_braid_is_device(const void *p);
/* CUDA knows p (pinned host, device or managed memory; false in a job
 * without CUDA): the shm tier's single copy does not read it in place */
bool mca_coll_braid_is_cuda_memory(const void *p);
/* elements per staging segment for count elements of `bytes` in total (the
 * same on every rank); count when the job does not segment */
size_t mca_coll_braid_cuda_seg_count(size_t count, size_t bytes);
/* run fn on view through the staging pipeline, seg_count elements at a time */
int mca_coll_braid_cuda_run(mca_coll_braid_module_t *m, braid_comm_t *view, braid_algo_fn_t fn,
                            const mca_coll_braid_call_t *call, size_t seg_count);
int mca_coll_braid_copy(void *dst, const void *src, size_t len, bool device);
int mca_coll_braid_prev_allreduce(mca_coll_braid_module_t *m, const void *sbuf, void *rbuf,
                                  int count, MPI_Datatype dtype, MPI_Op op);
int mca_coll_braid_prev_reduce(mca_coll_braid_module_t *m, const void *sbuf, void *rbuf,
                               int count, MPI_Datatype dtype, MPI_Op op, int root);
/* Host copies of a call's device buffers (sbuf: count elements of sdtype,
 * read; rbuf, when not NULL: rcount elements of rdtype, filled from the
 * device when rfill, written back by close when rc is MPI_SUCCESS). The
 * pointers are replaced by their copies; buffers not on a device stay.
 * open: MPI_SUCCESS or MPI_ERR_NO_MEM (close it either way); close returns
 * rc, or MPI_ERR_OTHER when the copy back failed. */
typedef struct mca_coll_braid_host_copies mca_coll_braid_host_copies_t;
int mca_coll_braid_host_copies_open(mca_coll_braid_host_copies_t **hc, const void **sbuf,
                                    size_t scount, MPI_Datatype sdtype, void **rbuf,
                                    size_t rcount, MPI_Datatype rdtype, bool rfill);
int mca_coll_braid_host_copies_close(mca_coll_braid_host_copies_t *hc, int rc);
void *mca_coll_braid_shadow_buffer(void *buf, size_t count, MPI_Datatype dtype, void **handle);
int mca_coll_braid_shadow_finish(void *handle, bool copy_back);
void mca_coll_braid_cuda_release(mca_coll_braid_module_t *m);

/* topology (coll_braid_topo.c) */
/* m's grouping by node, from its transport's rank -> process map */
int mca_coll_braid_topo_setup(mca_coll_braid_module_t *m);
void mca_coll_braid_topo_release(mca_coll_braid_module_t *m);
/* this collective runs in node order on m (same answer on every rank) */
bool mca_coll_braid_node_ordered(const mca_coll_braid_module_t *m, braid_coll_t coll,
                                 const braid_coll_args_t *a);
/* the node and leader views, made on first use */
int mca_coll_braid_hier_views(mca_coll_braid_module_t *m);
/* node key of a process: hash of its node name, or world_rank % coll_braid_test_nodes */
uint64_t mca_coll_braid_node_key(const char *nodename, int world_rank);

/* shared-memory tier (coll_braid_shm.c) */
/* count a call; at the coll_braid_shm_after-th set the segment up (a
 * collective over the communicator: every rank calls it at the same call) */
void mca_coll_braid_shm_tick(mca_coll_braid_module_t *m);
/* m's whole communicator has a segment whose slots hold bytes, or that
 * has a single-copy reader (any bytes; only the BRAID_OPT_SHM_DIRECT
 * algorithms use it: the dispatch's fit_shm) */
bool mca_coll_braid_shm_ok(const braid_comm_t *c, size_t bytes);
void mca_coll_braid_shm_release(mca_coll_braid_module_t *m);
/* Persistent requests (collective, at init): set the segment up now if
 * it was not tried yet - a persistent request is made to be started many
 * times - then take a channel free on every rank (a small allreduce of
 * the ranks' free masks) and bind s to it. Returns the channel, or -1:
 * no segment, no channels, or none free on some rank (the same answer on
 * every rank). */
int mca_coll_braid_shm_channel_take(mca_coll_braid_module_t *m, braid_shm_t *s);
/* the request that held channel ch is freed: its numbering is kept for
 * the channel's next holder */
void mca_coll_braid_shm_channel_give(mca_coll_braid_module_t *m, int ch, const braid_shm_t *s);

/* nonblocking and persistent collectives (coll_braid_nbc.c): each runs the
 * blocking entry point above on a fiber of its own (braid_fiber.h). What
 * a blocking call keeps per communicator, a request keeps for itself while
 * it runs on its fiber; these give the glue the right one. */
/* the request whose fiber this thread runs now; NULL in a blocking call */
mca_coll_braid_request_t *mca_coll_braid_request_current(void);
/* scratch: the request's own, else the communicator's */
braid_scratch_t *mca_coll_braid_scratch(mca_coll_braid_module_t *m);
/* n size_t of workspace (MPI_Reduce_scatter's counts: slot 0; node-order
 * reduce-scatter counts: slot 1): the request's own, else the
 * communicator's; NULL when out of memory */
size_t *mca_coll_braid_counts(mca_coll_braid_module_t *m, int slot, size_t n);
/* where the hierarchical allreduce's bound phases live during the call: the
 * communicator's cache (blocking), a copy of it (nonblocking), the
 * request's own binding (persistent) */
braid_hier_t *mca_coll_braid_hier_slot(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r);
/* the name the trace gives the call: "allreduce", "iallreduce", "allreduce_init" */
const char *mca_coll_braid_trace_name(const mca_coll_braid_request_t *r, braid_coll_t coll,
                                      char *buf, size_t len);
/* The sequence number of the call being dispatched (advances the
 * communicator's, or the persistent request's own), bound to r's fiber. */
void mca_coll_braid_call_seq(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r);
/* A persistent request: chosen afresh at every start (no communicator
 * cache), no ticket for the segment, and its shm algorithms run on its own
 * channel (ranks may start persistent requests in different orders; the
 * segment's cells number calls in call order). */
bool mca_coll_braid_request_persistent(const mca_coll_braid_request_t *r);
/* The communicator the call's shm algorithms run on: m's, or for a
 * persistent request a copy whose segment is the request's channel (NULL
 * without one). */
braid_comm_t *mca_coll_braid_shm_comm(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r);
/* A persistent request's choice for bytes, made at its first start and
 * kept (its arguments, communicator and channel never change): NULL
 * before that */
braid_choice_t *mca_coll_braid_request_choice(mca_coll_braid_request_t *r, size_t bytes);
void mca_coll_braid_request_keep_choice(mca_coll_braid_request_t *r, size_t bytes,
                                        braid_choice_t ch);
/* A persistent request's op binding, made at its first start and kept:
 * the communicator's cache is not touched, since threads may start
 * persistent requests of one communicator concurrently. */
const mca_coll_braid_op_t *mca_coll_braid_request_op(mca_coll_braid_request_t *r,
                                                     MPI_Datatype dtype, MPI_Op op);
/* r's scratch, or the communicator's (r NULL) */
braid_scratch_t *mca_coll_braid_request_scratch(mca_coll_braid_module_t *m,
                                                mca_coll_braid_request_t *r);
/* The entry point is about to hand the call to the previous module's
 * blocking function: true when it runs inside a nonblocking or persistent
 * request, which then hands the whole call to the previous module's
 * nonblocking function instead (the entry point returns at once). Every
 * hand-on is decided before the call's first wait, so this is on the
 * poster's thread inside the post. */
bool mca_coll_braid_hand_on_nonblocking(void);
/* A persistent request's tag sequence number, free on every rank
 * (collective: an init); MPI_ERR_OTHER when every number is held. Given
 * back when the request is freed. */
int mca_coll_braid_persistent_number_take(mca_coll_braid_module_t *m, uint32_t *seq);
void mca_coll_braid_persistent_number_give(mca_coll_braid_module_t *m, uint32_t seq);
/* the progress of outstanding nonblocking and persistent requests */
int mca_coll_braid_nbc_progress(void);
bool mca_coll_braid_nbc_outstanding(void);
/* install the nonblocking and persistent entry points the previous modules
 * back (module enable) */
void mca_coll_braid_nbc_install(mca_coll_braid_module_t *m);
void mca_coll_braid_nbc_fini(void);

/* helpers shared by the glue */
int mca_coll_braid_to_mpi_error(int braid_rc);
void mca_coll_braid_log(int level, const char *fmt, ...);
/* progress braid's transport and requests (registered with opal_progress,
 * in its low-priority list while no request is outstanding) */
int mca_coll_braid_progress(void);
/* a request went outstanding: the hook runs on every opal_progress call */
void mca_coll_braid_progress_active(void);

END_C_DECLS

#endif /* MCA_COLL_BRAID_H */
