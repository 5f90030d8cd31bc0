/*
 * coll_braid_module.h - a communicator's module: the previous module's
 * functions braid falls back to, the transport and dispatch state, the
 * shared-memory tier; the reduction binding it keeps; and the count every
 * blocking call begins with. A base header: the other coll/ headers may
 * include it, and it includes no coll/ header but coll_braid_compat.h.
 */
#ifndef MCA_COLL_BRAID_MODULE_H
#define MCA_COLL_BRAID_MODULE_H

#include "coll_braid_compat.h"

#include "ompi/mca/coll/coll.h"

#include "braid_dispatch.h"
#include "braid_shm.h"
#include "braid_shm_tier.h"
#include "braid_tag_numbers.h"
#include "braid_ucx.h"

BEGIN_C_DECLS

/* The collectives braid installs (coll_braid_entry.h): X(name) for each
 * blocking one, and for each nonblocking and persistent one (installed
 * only where a previous module backs it). */
#define MCA_COLL_BRAID_BLOCKING(X)                                                                \
    X(barrier) X(bcast) X(allreduce) X(allgather) X(reduce) X(reduce_scatter)                     \
    X(reduce_scatter_block) X(alltoall) X(scan) X(exscan) X(gather) X(scatter) X(allgatherv)   \
    X(alltoallv) X(gatherv) X(scatterv)
#define MCA_COLL_BRAID_REQUESTS(X)                                                                \
    X(ibarrier) X(ibcast) X(iallreduce) X(iallgather) X(ireduce) X(ireduce_scatter)               \
    X(ireduce_scatter_block) X(barrier_init) X(bcast_init) X(allreduce_init) X(allgather_init)    \
    X(reduce_init) X(reduce_scatter_init) X(reduce_scatter_block_init) X(ialltoall)              \
    X(alltoall_init) X(iscan) X(iexscan) X(scan_init) X(exscan_init) X(igather) X(iscatter)     \
    X(gather_init) X(scatter_init) X(iallgatherv) X(allgatherv_init) X(ialltoallv)             \
    X(alltoallv_init) X(igatherv) X(iscatterv) X(gatherv_init) X(scatterv_init)

/* Module enable: keep the previous module's `name` and install braid's fn
 * in its place, the previous module retained (true); none there: braid
 * installs none either (false). The same on every rank, whose components
 * are the same. */
#define MCA_COLL_BRAID_TAKE(m, name, fn)                                                 \
    __extension__({                                                                      \
        mca_coll_base_comm_coll_t *c_ = (m)->comm->c_coll;                               \
        bool has_ = NULL != c_->coll_##name && NULL != c_->coll_##name##_module;         \
        (m)->prev.coll_##name = has_ ? c_->coll_##name : NULL;                           \
        (m)->prev.coll_##name##_module = has_ ? c_->coll_##name##_module : NULL;         \
        (m)->super.coll_##name = has_ ? (fn) : NULL;                                     \
        if (has_) OBJ_RETAIN((m)->prev.coll_##name##_module);                            \
        has_;                                                                            \
    })

/* An entry point's first line: the call falls back, its arguments
 * untouched, to the previous module unless cond says braid's int counts
 * hold them (coll interface 3.0.0: size_t counts and count arrays of 64
 * bits, coll_braid_compat.h; always true before). The same on every rank
 * where MPI requires the counts to match, and otherwise decided per rank
 * only where the previous module takes the call on every rank alike. */
#define BRAID_FALL_BACK_UNLESS(cond, name, ...)                                                    \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            mca_coll_braid_module_t *m_ = (mca_coll_braid_module_t *)module;                       \
            return m_->prev.coll_##name(__VA_ARGS__, m_->prev.coll_##name##_module);               \
        }                                                                                          \
    } while (0)

/* What a rooted call's fallback looks at: the counts that are significant
 * on this rank (gather: every rank's own, the root's unless in place, and
 * the root's of every rank; scatter the same with sides swapped) */
#define braid_rooted_fits(comm, root, own_buf, own, roots)                                         \
    (ompi_comm_rank(comm) != (root)                                                                \
         ? braid_count_fits(own, 0)                                                                \
         : braid_count_fits(roots, 0) && (MPI_IN_PLACE == (own_buf) || braid_count_fits(own, 0)))
#define braid_rootedv_fits(comm, root, own_buf, own, counts, displs)                               \
    (ompi_comm_rank(comm) != (root)                                                                \
         ? braid_count_fits(own, 0)                                                                \
         : braid_counts_are_int(counts) && braid_displs_are_int(displs)                            \
               && (MPI_IN_PLACE == (own_buf) || braid_count_fits(own, 0)))

/* A reduction bound to braid's callback (coll_braid_op.c). */
typedef struct mca_coll_braid_op_t {
    braid_op_t bop;               /* what the algorithms call; arg = this */
    bool exact;                   /* same bits in any evaluation order */
    MPI_Datatype dtype;
    MPI_Op op;
    size_t extent;
    void (*kernel)(const void *in, void *inout, size_t count);  /* NULL: PMPI */
    size_t kernel_elems;          /* kernel elements per datatype element */
    struct mca_coll_braid_op_t *next;   /* the kernel bindings' list (coll_braid_op.c) */
} mca_coll_braid_op_t;

typedef struct mca_coll_braid_module_t {
    mca_coll_base_module_t super;
    ompi_communicator_t *comm;
    /* the previous module's functions (only those of the lists above are
     * saved, and their modules retained) */
    mca_coll_base_comm_coll_t prev;
    braid_ucx_comm_t *tcomm;     /* transport state */
    braid_comm_t bcomm;          /* the algorithms' view, bound to tcomm */
    braid_site_t site;           /* the dispatch's state (braid_dispatch.h) */
    /* the last reduction binding when it is a kernel's: the process's,
     * never changed (mca_coll_braid_call_op) */
    const mca_coll_braid_op_t *op_last;
    void *cuda;                  /* device-buffer state (coll_braid_cuda.c), lazily */
    /* the shared-memory tier (coll_braid_shm.c): calls counted until it
     * is brought up (coll_braid_shm_after), once; the segment of the
     * whole communicator (one node) or of this rank's node view (several
     * nodes: the hierarchical allreduce's phases) */
    unsigned shm_calls;
    bool shm_tried;
    braid_shm_tier_t shm;
    /* nonblocking posts that arrived while the tier was being set up
     * (from Open MPI's progress loop, inside the blocking call that sets
     * it up): held, in post order, until the ranks have agreed which of
     * them the nonblocking ring serves (coll_braid_request.c) */
    int holding;                 /* atomic: posts are held */
    int hold_lock;               /* atomic: a spin lock over the list */
    struct mca_coll_braid_request *held_head, *held_tail;
    /* the persistent requests' tag numbers this rank's live ones hold */
    braid_tag_numbers_t pnums;
    /* 1 + the number of the component's group_ids this communicator holds
     * (one made from a group); 0: none, its context id is its tag id */
    unsigned group_id;
    /* under fault tolerance: the communicator's failure state, which the
     * site, the transport and the segment poll (NULL pointers there
     * otherwise) */
    braid_fault_t fault;
    /* UCX on this communicator where the job starts it on first need
     * (mca_coll_braid_component.ucx_first_need): 0 not yet, 1 up, -1 it
     * could not start; ucx_nb_from: the first nonblocking post, by its
     * number, that may use it (the others fall back, on every rank alike);
     * ucx_wanted: a nonblocking call fell back for want of it, so the next
     * blocking call starts it */
    int ucx;
    uint64_t ucx_nb_from;
    bool ucx_wanted;
} mca_coll_braid_module_t;

OBJ_CLASS_DECLARATION(mca_coll_braid_module_t);

/* The tag id of a communicator without a context id every rank agrees
 * on, taken at enable, collective (coll_braid_ids.c); given back when the
 * module goes. */
int mca_coll_braid_group_id_take(mca_coll_braid_module_t *m, uint32_t *id);

/* Bring UCX up on comm, which holds every process of the job: start it,
 * exchange addresses and nodes (coll_braid_transport.c). */
int mca_coll_braid_transport_boot(mca_coll_braid_module_t *m, ompi_communicator_t *comm);

/* Where UCX starts on first need: whether a call of m (NULL req: a
 * blocking one) whose algorithm sends messages may run (BRAID_OK) or
 * falls back (BRAID_ERR_UNSUPPORTED), the same on every rank. A blocking
 * call after the shared-memory tier's set-up starts UCX on m at once
 * (collective over the previous module); a nonblocking one falls back
 * until a blocking call has (coll_braid_transport.c). */
int mca_coll_braid_transport_need(mca_coll_braid_module_t *m, const braid_call_t *call);
/* Start UCX on m now (collective over m, in a blocking call or a
 * persistent init); sets m->ucx */
void mca_coll_braid_transport_join(mca_coll_braid_module_t *m);

/* The binding for a call whose pair is not m->op_last's (coll_braid_op.c):
 * a pair with a kernel gets the process's binding of it (made once, kept
 * until mca_coll_braid_op_fini; m->op_last then points to it); any other
 * is bound into own (a persistent request's, kept across its starts) or
 * else into storage. */
const mca_coll_braid_op_t *mca_coll_braid_op_miss(mca_coll_braid_module_t *m,
                                                  mca_coll_braid_op_t *own, MPI_Datatype dtype,
                                                  MPI_Op op, mca_coll_braid_op_t *storage);

/* The shared-memory tier (coll_braid_shm.c; coll_braid_shm.h): count a
 * blocking call; at the coll_braid_shm_after-th set the segment up (a
 * collective over the communicator: every rank calls it at the same call) */
void mca_coll_braid_shm_tick(mca_coll_braid_module_t *m);
/* Set the communicator's tier up now (enable), if it was not tried */
void mca_coll_braid_shm_setup_now(mca_coll_braid_module_t *m);

END_C_DECLS

#endif /* MCA_COLL_BRAID_MODULE_H */
