/*
 * coll_braid_module.h - a communicator's module: the previous module's
 * functions braid hands calls to, the transport and dispatch state, the
 * shared-memory segment; and the glue that works on it (datatypes and
 * ops, device buffers, node grouping, the shm tier).
 */
#ifndef MCA_COLL_BRAID_MODULE_H
#define MCA_COLL_BRAID_MODULE_H

#include "coll_braid_component.h"

#include "ompi/datatype/ompi_datatype.h"

#include "braid_numbers.h"
#include "braid_shm.h"
#include "braid_shm_tier.h"
#include "braid_tag.h"
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
    braid_numbers_t pnums;
    /* under fault tolerance: the communicator's failure state, which the
     * site, the transport and the segment poll (NULL pointers there
     * otherwise) */
    braid_fault_t fault;
} mca_coll_braid_module_t;

OBJ_CLASS_DECLARATION(mca_coll_braid_module_t);

/* ops (coll_braid_op.c) */
void mca_coll_braid_op_bind(mca_coll_braid_op_t *b, MPI_Datatype dtype, MPI_Op op);
/* The binding for a call whose pair is not m->op_last's: a pair with a
 * kernel gets the process's binding of it (made once, kept until
 * mca_coll_braid_op_fini; m->op_last then points to it); any other is
 * bound into own (a persistent request's, kept across its starts) or
 * else into storage. */
const mca_coll_braid_op_t *mca_coll_braid_op_miss(mca_coll_braid_module_t *m,
                                                  mca_coll_braid_op_t *own, MPI_Datatype dtype,
                                                  MPI_Op op, mca_coll_braid_op_t *storage);
void mca_coll_braid_op_fini(void);

/* datatypes (coll_braid_datatype.c) */
int mca_coll_braid_pack(const void *userbuf, size_t count, struct ompi_datatype_t *dt,
                        void *packed, size_t bytes);
int mca_coll_braid_unpack(void *userbuf, size_t count, struct ompi_datatype_t *dt,
                          const void *packed, size_t bytes);
/* Inline: every call asks them of its datatypes, and each is a field or
 * two of the datatype (a call apiece cost a v collective at P = 2 about a
 * tenth of its glue's instructions). count elements of dt lie next to
 * each other, no gaps: */
static inline bool mca_coll_braid_is_contiguous(struct ompi_datatype_t *dt, size_t count)
{
    return count <= INT32_MAX && ompi_datatype_is_contiguous_memory_layout(dt, (int32_t)count);
}
/* the address of the first byte of a contiguous layout at buf */
static inline void *mca_coll_braid_contig_base(const void *buf, struct ompi_datatype_t *dt)
{
    ptrdiff_t true_lb, true_extent;
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    return (char *)buf + true_lb;
}
static inline size_t mca_coll_braid_type_size(struct ompi_datatype_t *dtype)
{
    size_t size = 0;
    ompi_datatype_type_size(dtype, &size);
    return size;
}

/* The v forms' blocks: block i is counts[i] elements of dt at displs[i]
 * extents from buf (P blocks). */
typedef struct mca_coll_braid_blocks {
    const void *buf;
    const int *counts, *displs;
    struct ompi_datatype_t *dtype;
} mca_coll_braid_blocks_t;
/* MPI lets a displacement be negative: buf need not be where the memory
 * the blocks lie in starts. The lowest displacement of a non-empty block,
 * or 0 when none is below 0 (elements, <= 0): */
ptrdiff_t mca_coll_braid_blocks_low(const mca_coll_braid_blocks_t *b, int P);
/* elements from there to the end of the last non-empty block */
size_t mca_coll_braid_blocks_span(const mca_coll_braid_blocks_t *b, int P);
/* p moved by n extents of dt (NULL and MPI_IN_PLACE stay); inline for
 * the common n = 0 */
void *mca_coll_braid_shift_by(const void *p, ptrdiff_t n, struct ompi_datatype_t *dt);
static inline void *mca_coll_braid_shift(const void *p, ptrdiff_t n, struct ompi_datatype_t *dt)
{
    return 0 == n ? (void *)p : mca_coll_braid_shift_by(p, n, dt);
}
/* The byte sizes of P blocks of tsize-byte elements into bc, and their
 * byte displacements into bd: one after another when packed, else at
 * their displacements counted from the lowest (the return, in elements;
 * 0 when packed). Inline: it runs on every v call, for P = 2 in a few
 * instructions. */
static inline ptrdiff_t mca_coll_braid_blocks_layout(const int *counts, const int *displs, int P,
                                                     size_t tsize, bool packed, size_t *bc,
                                                     size_t *bd)
{
    size_t total = 0;
    if (packed) {
        for (int i = 0; i < P; i++) {
            bc[i] = (counts[i] > 0 ? (size_t)counts[i] : 0) * tsize;
            bd[i] = total;
            total += bc[i];
        }
        return 0;
    }
    /* one pass from 0, and a second only when a block lies below it (the
     * subtraction wraps and comes back); an empty block is read and
     * written nowhere: its displacement may be anything, and 0 keeps it
     * inside the buffer */
    ptrdiff_t lo = 0;
    for (int i = 0; i < P; i++) {
        bc[i] = (counts[i] > 0 ? (size_t)counts[i] : 0) * tsize;
        ptrdiff_t d = bc[i] ? displs[i] : 0;
        bd[i] = (size_t)d * tsize;
        if (d < lo) lo = d;
    }
    for (int i = 0; lo < 0 && i < P; i++)
        if (bc[i]) bd[i] -= (size_t)lo * tsize;
    return lo;
}
/* The blocks of a type that is not dense, one after another in scratch
 * slot `slot` (packed in from the user's buffer when `read`), their
 * sizes and offsets there into bc and bd: mca_coll_braid_blocks_bytes's
 * other half. */
char *mca_coll_braid_blocks_packed(braid_scratch_t *scratch, int slot, const mca_coll_braid_blocks_t *b,
                                   int P, bool read, size_t *bc, size_t *bd, int *rc);
/* The blocks as bytes for the algorithms: their sizes and byte
 * displacements into bc and bd (P entries each), and the bytes: the
 * user's buffer itself, from its lowest block on, when the type is dense
 * (extent = size), else
 * scratch slot `slot` with the blocks one after another, packed in from
 * the user's buffer when `read`. NULL: out of memory or a pack failed (*rc
 * says which). Always inline: the dense case is a v call's every time
 * with a predefined type, and as a call of its own (GCC's choice for a
 * plain inline called twice) its frame cost alltoallv at P = 2 about 60
 * instructions, more than its loop. */
static inline __attribute__((always_inline)) char *mca_coll_braid_blocks_bytes(braid_scratch_t *scratch, int slot,
                                                const mca_coll_braid_blocks_t *b, int P, bool read,
                                                size_t *bc, size_t *bd, bool *packed, int *rc)
{
    /* dense: elements next to each other, so a displacement in elements
     * is one in bytes times the size */
    *packed = !mca_coll_braid_is_contiguous(b->dtype, 2);
    if (*packed) return mca_coll_braid_blocks_packed(scratch, slot, b, P, read, bc, bd, rc);
    ptrdiff_t lo = mca_coll_braid_blocks_layout(b->counts, b->displs, P,
                                                mca_coll_braid_type_size(b->dtype), false, bc, bd);
    return mca_coll_braid_contig_base(mca_coll_braid_shift(b->buf, lo, b->dtype), b->dtype);
}
/* The packed blocks (as mca_coll_braid_blocks_bytes laid them out) back to
 * their places in the user's buffer; gaps and holes keep their values. */
int mca_coll_braid_blocks_unpack(const mca_coll_braid_blocks_t *b, int P, const char *bytes,
                                 const size_t *bc, const size_t *bd);

/* How a reduction's buffers reach the algorithms (coll_braid_datatype.c):
 *  - direct: the datatype is dense (contiguous, extent == size, lb == 0),
 *    so an element is `size` bytes and the user's buffers are used as
 *    they are;
 *  - staged: any other datatype whose elements each lie inside their
 *    extent (pair types, vectors, resized structs). The input is copied
 *    into scratch laid out like the user's buffer, the algorithm runs in
 *    place there with extent-sized elements (holes travel but are never
 *    reduced), and only the datatype's own bytes are copied back, so holes
 *    in the user's receive buffer stay untouched.
 * Anything else goes to the previous module. */
typedef enum { LAYOUT_DIRECT, LAYOUT_STAGED, LAYOUT_UNSUPPORTED } mca_coll_braid_layout_kind_t;
typedef struct mca_coll_braid_layout {
    mca_coll_braid_layout_kind_t kind;
    size_t extent;          /* bytes per element in the algorithm's view */
    ptrdiff_t true_lb;
    size_t true_extent;
} mca_coll_braid_layout_t;
mca_coll_braid_layout_t mca_coll_braid_layout(MPI_Datatype dtype, size_t count);
/* count elements of input `in` copied into scratch slot `slot`, in the
 * user's layout: the scratch base, or NULL when out of memory */
void *mca_coll_braid_stage_in(braid_scratch_t *s, int slot, const mca_coll_braid_layout_t *l,
                              const void *in, size_t count, bool in_dev);
/* the datatype's own bytes of count elements at base copied to userbuf */
int mca_coll_braid_stage_out(braid_scratch_t *s, MPI_Datatype dtype, size_t count, void *userbuf,
                             const void *base, bool out_dev);

/* device (CUDA) buffers (coll_braid_cuda.c); without CUDA every pointer is
 * host memory, known without a call: every collective asks */
bool mca_coll_braid_cuda_probe(void);          /* this process can load the driver */
bool mca_coll_braid_device_ptr(const void *p); /* the driver's answer */
static inline bool mca_coll_braid_is_device(const void *p)
{
    return mca_coll_braid_component.cuda_job && mca_coll_braid_device_ptr(p);
}
/* mca_coll_braid_blocks_span where buf is device memory (what its host
 * copy holds, from buf + low extents on), else 0: host memory needs no
 * copy, and the span's loop over P counts is spared (inline: in a job
 * without CUDA every v call learns that from one load) */
static inline size_t mca_coll_braid_device_span(const mca_coll_braid_blocks_t *b, int P)
{
    return mca_coll_braid_is_device(b->buf) ? mca_coll_braid_blocks_span(b, P) : 0;
}
/* CUDA knows p (pinned host, device or managed memory; false in a job
 * without CUDA): the shm tier's single copy does not read it in place */
bool mca_coll_braid_is_cuda_memory(const void *p);
/* the dispatch's staged_run hook: fn on view through the staging
 * pipeline, seg_count elements at a time (arg: the module) */
int mca_coll_braid_cuda_run(void *arg, braid_comm_t *view, braid_algo_fn_t fn,
                            const braid_call_t *call, size_t seg_count);
int mca_coll_braid_copy(void *dst, const void *src, size_t len, bool device);
/* Host copies of a call's device buffers (sbuf: count elements of sdtype,
 * read; rbuf, when not NULL: rcount elements of rdtype, filled from the
 * device when rfill, written back by close when rc is MPI_SUCCESS). The
 * pointers are replaced by their copies; buffers not on a device stay.
 * open: MPI_SUCCESS or MPI_ERR_NO_MEM (close it either way); close returns
 * rc, or MPI_ERR_OTHER when the copy back failed. */
typedef struct mca_coll_braid_host_copies mca_coll_braid_host_copies_t;
int mca_coll_braid_host_copies_make(mca_coll_braid_host_copies_t **hc, const void **sbuf,
                                    size_t scount, MPI_Datatype sdtype, void **rbuf,
                                    size_t rcount, MPI_Datatype rdtype, bool rfill);
int mca_coll_braid_host_copies_end(mca_coll_braid_host_copies_t *hc, int rc);
static inline int mca_coll_braid_host_copies_open(mca_coll_braid_host_copies_t **hc,
                                                  const void **sbuf, size_t scount,
                                                  MPI_Datatype sdtype, void **rbuf, size_t rcount,
                                                  MPI_Datatype rdtype, bool rfill)
{
    *hc = NULL;
    if (!mca_coll_braid_component.cuda_job) return MPI_SUCCESS;
    return mca_coll_braid_host_copies_make(hc, sbuf, scount, sdtype, rbuf, rcount, rdtype, rfill);
}
static inline int mca_coll_braid_host_copies_close(mca_coll_braid_host_copies_t *hc, int rc)
{
    return NULL == hc ? rc : mca_coll_braid_host_copies_end(hc, rc);
}
void mca_coll_braid_cuda_release(mca_coll_braid_module_t *m);

/* The reduction path of allreduce, reduce, scan and exscan
 * (coll_braid_reduction.c): an MPI code, or *hand_on when the previous
 * module must run the call (the same decision on every rank). root: reduce
 * only. r: the request running the call, NULL when blocking. */
struct mca_coll_braid_request;
int mca_coll_braid_reduction(mca_coll_braid_module_t *m, struct mca_coll_braid_request *r,
                             braid_coll_t coll, const void *sbuf, void *rbuf, int count,
                             MPI_Datatype dtype, MPI_Op op, int root, bool *hand_on);

/* nonblocking posts held while the tier is set up (coll_braid_request.c):
 * hold from now on; stop holding and post the held ones, in order */
void mca_coll_braid_posts_hold(mca_coll_braid_module_t *m);
void mca_coll_braid_posts_release(mca_coll_braid_module_t *m);

/* shared-memory tier (coll_braid_shm.c) */
/* count a call; at the coll_braid_shm_after-th set the segment up (a
 * collective over the communicator: every rank calls it at the same call) */
void mca_coll_braid_shm_tick(mca_coll_braid_module_t *m);
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

END_C_DECLS

#endif /* MCA_COLL_BRAID_MODULE_H */
