/*
 * coll_braid_request.h - the glue between MPI's requests and braid's
 * request engine (libbraid/engines/braid_task.h), and what a collective
 * family (coll_braid_<family>.c) gives it.
 *
 * A family's blocking path takes the request running it (NULL when
 * blocking) as an argument, passes it down in the call (braid_call_t.req),
 * and at its one fallback either runs the previous module's blocking
 * function or, inside a request, records the fallback: the request then
 * gives the whole call to the previous module's nonblocking function.
 */
#ifndef MCA_COLL_BRAID_REQUEST_H
#define MCA_COLL_BRAID_REQUEST_H

#include "coll_braid_module.h"

#include "ompi/request/request.h"

#include "braid_task.h"

BEGIN_C_DECLS

/* Open MPI's nbc request type (ompi/mca/coll/base/coll_base_util.h, whose
 * op.h include needs Fortran headers that devel packages do not ship):
 * ompi_request_t followed by the fields MPI_Ixxx's retain functions use.
 * Their layout differs between 4.1 and 5.0; braid never touches them and
 * reserves room for them here, checked against the class's own size at
 * install. */
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;
typedef struct {
    ompi_request_t super;
    void *fields[16];
} ompi_coll_base_nbc_request_t;

typedef struct mca_coll_braid_request mca_coll_braid_request_t;

/* A call's arguments as MPI gave them (0: none, for those the family does
 * not take) */
typedef struct mca_coll_braid_args {
    const void *usbuf;
    void *urbuf;
    int count;                      /* allgather: the receive count */
    int scount;
    MPI_Datatype sdtype, dtype;     /* dtype: the receive / reduce datatype */
    MPI_Op op;
    int root;
    const int *rcounts;             /* MPI_Ireduce_scatter, MPI_Iallgatherv, MPI_Igatherv:
                                       the caller's array */
    const int *displs;              /* MPI_Iallgatherv, MPI_Ialltoallv (receive), MPI_Igatherv:
                                       the caller's */
    const int *scounts, *sdispls;   /* MPI_Ialltoallv, MPI_Iscatterv: the caller's arrays */
} mca_coll_braid_args_t;

/* The argument shapes several families share (root 0 where the call has
 * none) */
static inline mca_coll_braid_args_t mca_coll_braid_args_reduce(const void *sbuf, void *rbuf,
                                                               int count, MPI_Datatype dtype,
                                                               MPI_Op op, int root)
{
    return (mca_coll_braid_args_t){
        .usbuf = sbuf, .urbuf = rbuf, .count = count, .dtype = dtype, .op = op, .root = root,
    };
}

/* a block from each rank or to each (count: the receive count) */
static inline mca_coll_braid_args_t mca_coll_braid_args_blocks(const void *sbuf, int scount,
                                                               MPI_Datatype sdtype, void *rbuf,
                                                               int rcount, MPI_Datatype rdtype,
                                                               int root)
{
    return (mca_coll_braid_args_t){
        .usbuf = sbuf, .scount = scount, .sdtype = sdtype,
        .urbuf = rbuf, .count = rcount, .dtype = rdtype, .root = root,
    };
}

/* a block from each rank, of its own count, at its own displacement */
static inline mca_coll_braid_args_t mca_coll_braid_args_vblocks(const void *sbuf, int scount,
                                                                MPI_Datatype sdtype, void *rbuf,
                                                                const int *rcounts,
                                                                const int *displs,
                                                                MPI_Datatype rdtype, int root)
{
    return (mca_coll_braid_args_t){
        .usbuf = sbuf, .scount = scount, .sdtype = sdtype, .urbuf = rbuf,
        .rcounts = rcounts, .displs = displs, .dtype = rdtype, .root = root,
    };
}

/* What a family gives the request: its blocking path on the request's
 * arguments, the previous module's nonblocking function for them, the
 * elements of the host copies of its device buffers (send, receive;
 * rfill: the receive copy is read from the device first), and where
 * those copies start: elements of the buffer's type before its address
 * (<= 0: the v forms' negative displacements; NULL: at the addresses). */
typedef struct mca_coll_braid_family {
    braid_coll_t coll;
    int (*run)(mca_coll_braid_request_t *r);
    int (*prev_nonblocking)(mca_coll_braid_request_t *r, ompi_request_t **req);
    void (*copies)(const mca_coll_braid_request_t *r, size_t *sn, size_t *rn, bool *rfill);
    void (*copy_lows)(const mca_coll_braid_request_t *r, ptrdiff_t *slo, ptrdiff_t *rlo);
} mca_coll_braid_family_t;

struct mca_coll_braid_request {
    ompi_coll_base_nbc_request_t super;
    braid_task_t core;               /* the engine's part */
    mca_coll_braid_module_t *m;
    const mca_coll_braid_family_t *family;
    mca_coll_braid_args_t a;        /* the call's arguments, as MPI gave them */
    /* the run: on the user's buffers, or on their host copies */
    const void *sbuf;
    void *rbuf;
    ompi_request_t *inner;          /* the previous module's request it runs as */
    struct mca_coll_braid_host_copies *hc; /* device buffers: the host copies it runs on */
    mca_coll_braid_op_t opb;        /* persistent: its op binding, when not a kernel's
                                       (opb.op NULL: none yet) */
    /* a nonblocking post held while the tier is set up: already Open
     * MPI's, active, its communicator retained; the next one held */
    bool held;
    struct mca_coll_braid_request *held_next;
};

/* MPI_Ixxx of family f with arguments a (NULL: none): a request from the
 * pool, posted (or the call fallen back), returned in *request. */
int mca_coll_braid_request_post(mca_coll_base_module_t *module, const mca_coll_braid_family_t *f,
                                const mca_coll_braid_args_t *a, ompi_request_t **request);
/* MPI_Xxx_init: its tag number and shm channel now (collective), *request
 * inactive until MPI_Start */
int mca_coll_braid_request_persist(mca_coll_base_module_t *module, const mca_coll_braid_family_t *f,
                                   const mca_coll_braid_args_t *a, ompi_request_t **request);

/* A call starts: the segment's set-up counts blocking calls (a collective
 * of its own over the previous module), then braid_call_init. */
static inline bool mca_coll_braid_call_begin(mca_coll_braid_module_t *m, braid_call_t *call,
                                             braid_coll_t coll, size_t bytes,
                                             mca_coll_braid_request_t *r)
{
    if (NULL == r) {
        mca_coll_braid_shm_tick(m);
        /* a nonblocking call fell back for want of UCX: start it now */
        if (__builtin_expect(m->ucx_wanted, 0)) mca_coll_braid_transport_join(m);
    }
    return braid_call_init(&m->site, call, coll, bytes, NULL == r ? NULL : &r->core);
}

/* The fallback inside a request: record it (true); a blocking
 * call (r NULL) runs the previous module's blocking function (false). */
static inline bool mca_coll_braid_fall_back_in_request(mca_coll_braid_request_t *r)
{
    if (NULL == r) return false;
    braid_task_fall_back(&r->core);
    return true;
}

/* The op binding for a call of r (NULL: blocking). A kernel's binding is
 * the process's and never changes, so a request reads it in place even
 * while later calls rebind; the communicator keeps the last one (an
 * acquire load, against the release store that set it: threads may start
 * persistent requests of one communicator at once, and the binding's
 * fields must be seen as written). A persistent request binds any other
 * pair once, into itself. */
static inline const mca_coll_braid_op_t *
mca_coll_braid_call_op(mca_coll_braid_module_t *m, mca_coll_braid_request_t *r, MPI_Datatype dtype,
                       MPI_Op op, mca_coll_braid_op_t *storage)
{
    const mca_coll_braid_op_t *b = __atomic_load_n(&m->op_last, __ATOMIC_ACQUIRE);
    if (NULL != b && b->dtype == dtype && b->op == op) return b;
    return mca_coll_braid_op_miss(m, NULL != r && BRAID_TASK_PERSISTENT == r->core.kind ? &r->opb : NULL,
                                  dtype, op, storage);
}

/* A persistent request's tag sequence number, free on every rank
 * (collective: an init); MPI_ERR_OTHER when every number is held. Given
 * back when the request is freed (coll_braid_ids.c). */
int mca_coll_braid_persistent_number_take(mca_coll_braid_module_t *m, uint32_t *seq);
void mca_coll_braid_persistent_number_give(mca_coll_braid_module_t *m, uint32_t seq);

/* r of its engine part */
static inline mca_coll_braid_request_t *mca_coll_braid_request_of(braid_task_t *core)
{
    return (mca_coll_braid_request_t *)((char *)core - offsetof(mca_coll_braid_request_t, core));
}

/* signal: a thread may wait on the request already (it left its post);
 * without, the plain store of a request completed inside its post, where
 * no wait can have begun (no atomic exchange) */
static inline void mca_coll_braid_request_complete(mca_coll_braid_request_t *r, int rc, bool signal)
{
    r->super.super.req_status.MPI_ERROR = rc;
    ompi_request_complete(&r->super.super, signal);
}

/* A request on device buffers (coll_braid_cuda.c): whether one is, the
 * host copies it runs on (open), and their end (close: rc, or the copy
 * back's error) */
bool mca_coll_braid_request_on_device(const mca_coll_braid_request_t *r);
int mca_coll_braid_request_copies_open(mca_coll_braid_request_t *r);
int mca_coll_braid_request_copies_close(mca_coll_braid_request_t *r, int rc);

/* nonblocking posts held while the tier is set up (coll_braid_request.c):
 * hold from now on; stop holding and post the held ones, in order */
void mca_coll_braid_posts_hold(mca_coll_braid_module_t *m);
void mca_coll_braid_posts_release(mca_coll_braid_module_t *m);


/* module enable (coll_braid_engine.c): the engine configured for the job; false when braid's
 * requests cannot be Open MPI's (its nbc request type is larger than
 * braid reserves): nonblocking and persistent calls stay with the previous
 * module. Component close: the engine's end. */
bool mca_coll_braid_requests_ready(void);
void mca_coll_braid_requests_fini(void);

END_C_DECLS

#endif /* MCA_COLL_BRAID_REQUEST_H */
