/*
 * braid_algo.h - the two small interfaces every braid algorithm is written
 * against, and the list of algorithms.
 *
 *  - a transport (braid_comm_t): post a nonblocking send or receive of a byte
 *    range to/from a peer rank with a step tag, wait for a set of requests;
 *  - a collective context (braid_coll_args_t): the buffers, element count and
 *    size, root, the reduction callback and a scratch cache.
 *
 * Nothing here includes Open MPI or UCX: the component binds the transport to
 * UCX (ucx_transport/) and the reduction to braid's kernels or
 * PMPI_Reduce_local; the unit tests bind them to an in-process transport in
 * which every rank is a thread.
 */
#ifndef BRAID_ALGO_H
#define BRAID_ALGO_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes of every algorithm and transport call. */
enum {
    BRAID_OK = 0,
    BRAID_ERR_NOMEM = -1,     /* scratch allocation failed */
    BRAID_ERR_TRANSPORT = -2, /* the transport reported a failure */
    BRAID_ERR_ARG = -3,       /* arguments the algorithm cannot handle */
    BRAID_ERR_UNSUPPORTED = -4,
    BRAID_ERR_DEVICE = -5,    /* a GPU (CUDA) call failed; cuda/ logs why */
    BRAID_ERR_PROC_FAILED = -6, /* a member process failed (braid_fault_t) */
    BRAID_ERR_REVOKED = -7    /* the communicator was revoked (braid_fault_t) */
};

/* A communicator's failure state under a fault-tolerant MPI (the host's
 * process failure detector; NULL where the host has none, and nothing
 * below looks). Waits that are not done poll it now and then, never on
 * a call's fast path: check returns BRAID_OK, BRAID_ERR_PROC_FAILED or
 * BRAID_ERR_REVOKED. The first failure found is kept in `state`: a wait
 * that finds it gives up, every later wait on the communicator returns at
 * once, and the dispatch fails the calls with it. */
typedef struct braid_fault {
    int (*check)(void *arg);
    void *arg;
    int state;            /* atomic; BRAID_OK until a failure was found */
} braid_fault_t;

/* record failure code st (BRAID_ERR_PROC_FAILED, _REVOKED) unless one is
 * recorded already; the recorded one */
static inline int braid_fault_set(braid_fault_t *f, int st)
{
    int expect = BRAID_OK;
    if (!__atomic_compare_exchange_n(&f->state, &expect, st, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return expect;
    return st;
}

/* f's state, asking check when it is still BRAID_OK and `ask` (a wait's
 * turn to look); the first failure found is kept */
static inline int braid_fault_poll(braid_fault_t *f, bool ask)
{
    int st = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
    if (BRAID_OK != st || !ask) return st;
    st = f->check(f->arg);
    return BRAID_OK == st ? st : braid_fault_set(f, st);
}

/* ------------------------------------------------------------------ */
/* Transport                                                           */
/* ------------------------------------------------------------------ */

/* An outstanding request; NULL means complete. Owned by the transport. */
typedef struct braid_req *braid_req_t;

/* Steps distinguish the messages of one collective between the same pair of
 * ranks. The transport folds the step into BRAID_TAG_STEP_BITS bits of the
 * tag; messages between one pair with equal folded steps are matched in the
 * order they are posted (as MPI's non-overtaking rule). */
typedef uint32_t braid_step_t;

/* How a wait that is not done gives the thread back: the engine's, for a
 * call that runs as a request (on a fiber, libbraid/engines/braid_fiber.h);
 * a blocking call has none and its waits block. due: whether a wait loop
 * at its turn-th unsuccessful test (from 1) yields now (busy: another
 * process may need this core); now: yield. */
typedef struct braid_yield {
    bool (*due)(void *arg, unsigned turn, bool busy);
    void (*now)(void *arg);
    void *arg;
} braid_yield_t;

/* seq: the call's sequence number (braid_comm_t.seq), which the transport
 * puts in the tag beside the step. */
typedef struct braid_transport_ops {
    int (*isend)(void *state, uint32_t seq, int peer, braid_step_t step,
                 const void *buf, size_t len, braid_req_t *req);
    int (*irecv)(void *state, uint32_t seq, int peer, braid_step_t step,
                 void *buf, size_t len, braid_req_t *req);
    /* Complete every non-NULL request of reqs[0..n), setting each to NULL;
     * while any is not done, yield through y when y is not NULL.
     * On error the remaining requests are still completed or cancelled. */
    int (*waitall)(void *state, const braid_yield_t *y, int n, braid_req_t *reqs);
} braid_transport_ops_t;

typedef struct braid_stats {
    uint64_t msgs_sent;
    uint64_t bytes_sent;
} braid_stats_t;

struct braid_shm;

/* A communicator as an algorithm sees it. The dispatch runs each call on
 * a copy with the call's seq and yield, so that two calls in flight on one
 * communicator (a blocking call and a request, two requests) tag their
 * messages apart without the transport asking whose they are. */
typedef struct braid_comm {
    const braid_transport_ops_t *ops;
    void *state;          /* the transport's per-communicator state */
    /* the node's shared-memory segment (libbraid/shm/braid_shm.h) when
     * every rank is on one node and the segment is set up on all of them;
     * NULL otherwise. Only the *_shm algorithms read it. */
    struct braid_shm *shm;
    int rank;
    int size;
    uint32_t seq;                /* the call's sequence number */
    const braid_yield_t *yield;  /* the call's, NULL for a blocking call */
    braid_stats_t stats;  /* counted by braid_isend(), read by tests */
} braid_comm_t;

/* v for one call: its number and yield as the call's comm has them, its
 * messages counted apart (braid_comm_count adds them back) */
static inline braid_comm_t braid_comm_for(const braid_comm_t *v, uint32_t seq,
                                          const braid_yield_t *y)
{
    braid_comm_t out = *v;
    out.seq = seq;
    out.yield = y;
    out.stats.msgs_sent = out.stats.bytes_sent = 0;
    return out;
}

static inline void braid_comm_count(braid_comm_t *v, const braid_comm_t *call)
{
    v->stats.msgs_sent += call->stats.msgs_sent;
    v->stats.bytes_sent += call->stats.bytes_sent;
}

static inline int braid_isend(braid_comm_t *c, int peer, braid_step_t step,
                              const void *buf, size_t len, braid_req_t *req)
{
    c->stats.msgs_sent++;
    c->stats.bytes_sent += len;
    return c->ops->isend(c->state, c->seq, peer, step, buf, len, req);
}

static inline int braid_irecv(braid_comm_t *c, int peer, braid_step_t step,
                              void *buf, size_t len, braid_req_t *req)
{
    return c->ops->irecv(c->state, c->seq, peer, step, buf, len, req);
}

static inline int braid_waitall(braid_comm_t *c, int n, braid_req_t *reqs)
{
    return c->ops->waitall(c->state, c->yield, n, reqs);
}

/* Blocking exchange helpers built on the three calls above. */
int braid_send(braid_comm_t *c, int peer, braid_step_t step,
               const void *buf, size_t len);
int braid_recv(braid_comm_t *c, int peer, braid_step_t step,
               void *buf, size_t len);
int braid_sendrecv(braid_comm_t *c,
                   int dst, braid_step_t sstep, const void *sbuf, size_t slen,
                   int src, braid_step_t rstep, void *rbuf, size_t rlen);

/* ------------------------------------------------------------------ */
/* Collective context                                                  */
/* ------------------------------------------------------------------ */

/* inout[i] = in[i] (op) inout[i] for i < count, where count is in elements.
 * For a non-commutative op `in` holds the lower-ranked operand. */
typedef void (*braid_reduce_fn_t)(const void *in, void *inout, size_t count,
                                  void *arg);

typedef struct braid_op {
    braid_reduce_fn_t fn;
    void *arg;
    bool commutative;
} braid_op_t;

/* Scratch memory reused across calls on one communicator: slot k is grown on
 * demand and kept, so repeated collectives do not allocate. Algorithms use
 * slots 0..3; the component's glue stages user buffers in slots 4 and 5. */
#define BRAID_SCRATCH_SLOTS 6
#define BRAID_SCRATCH_GLUE_IN 4
#define BRAID_SCRATCH_GLUE_OUT 5
typedef struct braid_scratch {
    void *buf[BRAID_SCRATCH_SLOTS];
    size_t len[BRAID_SCRATCH_SLOTS];
    /* fault injection (tests, coll_braid_inject_alloc_failure): when
     * fail_alloc is non-zero, the next allocs_before_failure allocations
     * succeed and every later one fails; reusing a slot that is already
     * large enough is not an allocation and never fails */
    int fail_alloc;
    unsigned allocs_before_failure;
} braid_scratch_t;

void *braid_scratch_get(braid_scratch_t *s, int slot, size_t bytes);
void braid_scratch_release(braid_scratch_t *s);

/* Tunables that the selection table passes to an algorithm. */
typedef struct braid_params {
    size_t chunk_bytes;   /* pipelining / chunking unit, 0 = algorithm default */
    int bcube_base;       /* bcube group size, 0 = algorithm default */
} braid_params_t;

struct braid_hier;

/* (braid_call_init, braid_dispatch.c, sets every field one by one: a new field is
 * set there too) */
typedef struct braid_coll_args {
    const void *sbuf;     /* NULL means in place: the input is in rbuf */
    void *rbuf;
    size_t count;         /* elements per rank (bcast: bytes, esize = 1) */
    size_t esize;         /* bytes one element occupies in the buffers */
    int root;
    braid_op_t op;
    /* the op gives the same bits in any evaluation order (integer and
     * logical ops, min/max); false for floating-point sum/prod and user ops.
     * allreduce_ring passes the whole buffer round the ring only when true
     * (every rank then reduces in its own order); otherwise it runs the
     * reduce-scatter + allgather ring, so every rank gets identical bits. */
    bool exact;
    braid_scratch_t *scratch;
    braid_params_t params;
    /* reduce_scatter: elements each rank receives (size entries); NULL for
     * reduce_scatter_block, where every rank receives `count`.
     * allgatherv, alltoallv, gatherv (the root's): the elements of each
     * rank's block. */
    const size_t *rcounts;
    /* allgatherv, alltoallv, gatherv (the root's): where each rank's block
     * starts in rbuf, in elements (size entries); NULL for every other
     * collective */
    const size_t *displs;
    /* alltoallv, scatterv (the root's): the elements of the block for each
     * rank and where it starts in sbuf (size entries each); NULL for every
     * other collective */
    const size_t *scounts, *sdispls;
    /* allreduce hierarchical: the node and leader views and the algorithm of
     * each phase; NULL for every other algorithm */
    const struct braid_hier *hier;
} braid_coll_args_t;

/* ------------------------------------------------------------------ */
/* Algorithms                                                          */
/* ------------------------------------------------------------------ */

typedef int (*braid_algo_fn_t)(braid_comm_t *c, const braid_coll_args_t *a);

/* The algorithms themselves are listed, with their ids, names and costs, in
 * braid_registry.h. Their contracts, by collective:
 *  barrier         a is unused and may be NULL
 *  bcast           rbuf holds count*esize bytes; the root's rbuf is the source
 *  allreduce       rbuf receives count elements; sbuf NULL = in place
 *  reduce          the root's rbuf receives count elements
 *  reduce_scatter  sbuf (or rbuf when in place) holds sum(rcounts) elements
 *                  (size*count for the block variant); rbuf receives this
 *                  rank's block at its start, rbuf[0, mine), and nothing
 *                  else of rbuf is written: not in place rbuf may hold just
 *                  those elements; in place the rest of the input keeps its
 *                  values (as MPI implementations leave it)
 *  allgather       sbuf holds count elements (NULL = in place: already at
 *                  rbuf + rank*count*esize); rbuf receives size*count elements
 *  alltoall        sbuf holds size blocks of count elements, block i for
 *                  rank i (NULL = in place: the input is rbuf); rbuf
 *                  receives block i from rank i
 *  scan            rbuf receives the reduction of ranks 0..rank's count
 *                  elements, in rank order; sbuf NULL = in place
 *  exscan          the same of ranks 0..rank-1; rank 0's rbuf is not
 *                  written (MPI leaves it undefined)
 *  allgatherv      sbuf holds rcounts[rank] elements (NULL = in place:
 *                  already at rbuf + displs[rank]*esize); rbuf receives
 *                  block i, rcounts[i] elements, at displs[i]; count is
 *                  the largest block
 *  alltoallv       block i of sbuf (scounts[i] elements at sdispls[i]) goes
 *                  to rank i; rank i's block (rcounts[i] elements) lands
 *                  at displs[i] of rbuf (sbuf NULL = in place: the input
 *                  is rbuf in the receive layout); count is unused
 *  gather          sbuf holds count elements (NULL = in place, the root
 *                  only: its block is already at rbuf + root*count*esize);
 *                  the root's rbuf receives block i from rank i; the
 *                  others' rbuf is not used
 *  scatter         the root's sbuf holds size blocks of count elements,
 *                  block i for rank i; rbuf receives this rank's block
 *                  (the root's rbuf NULL = in place: its block stays in
 *                  sbuf); the others' sbuf is not used
 *  gatherv         sbuf holds count elements, this rank's block (NULL = in
 *                  place, the root only: its block is already at
 *                  rbuf + displs[root]*esize); the root's rbuf receives
 *                  block i, rcounts[i] elements, at displs[i]. A rank
 *                  knows only its own count: rcounts and displs are the
 *                  root's (NULL elsewhere), count differs from rank to
 *                  rank, and the root's count is rcounts[root]
 *  scatterv        the root's sbuf holds block i for rank i, scounts[i]
 *                  elements at sdispls[i] (the root's only: NULL
 *                  elsewhere); rbuf receives this rank's block of count
 *                  elements (the root's rbuf NULL = in place: its block
 *                  stays in sbuf)
 */

/* allreduce in three phases over views of one communicator (braid_topo.h):
 * reduce to rank 0 of each node, allreduce among the node leaders, bcast
 * from rank 0 of each node. Commutative ops only (BRAID_ERR_UNSUPPORTED
 * otherwise, before any message). c is the whole communicator; the views
 * come in a->hier. */
typedef struct braid_hier {
    braid_comm_t *node;               /* this rank's node; view rank 0 leads it */
    braid_comm_t *leaders;            /* one rank per node; NULL unless this rank leads */
    braid_algo_fn_t node_reduce;      /* phase 1, root 0 */
    braid_algo_fn_t leaders_allreduce;/* phase 2, in place */
    braid_algo_fn_t node_bcast;       /* phase 3, root 0, bytes */
    braid_params_t node_reduce_params, leaders_params, node_bcast_params;
} braid_hier_t;

/* ------------------------------------------------------------------ */
/* Small helpers shared by the algorithms (braid_util.c)               */
/* ------------------------------------------------------------------ */

/* The rank i places after r in a ring of P (0 <= r, i < P): a compare, not
 * the division of (r + i) % P, which costs more than the rest of a
 * shared-memory read loop's turn at P = 2 */
static inline int braid_ring_after(int r, int i, int P)
{
    int q = r + i;
    return q >= P ? q - P : q;
}

/* Split count elements into n nearly equal blocks: block i starts at
 * braid_block_start(count, n, i) and the first count % n blocks are one
 * element larger. */
static inline size_t braid_block_start(size_t count, int n, int i)
{
    size_t q = count / (size_t)n, r = count % (size_t)n;
    return q * (size_t)i + ((size_t)i < r ? (size_t)i : r);
}

static inline size_t braid_block_count(size_t count, int n, int i)
{
    return braid_block_start(count, n, i + 1) - braid_block_start(count, n, i);
}

/* Copy sbuf to rbuf unless in place (sbuf == NULL or sbuf == rbuf). */
void braid_copy_input(const braid_coll_args_t *a, size_t bytes);

/* memcpy of a block of data, in pieces of at most BRAID_COPY_PIECE bytes.
 * One memcpy of a large block is one `rep movsb` in glibc (up to its
 * non-temporal threshold, 127 MiB on the AMD EPYC VM), which ran 4x slower
 * there than the same bytes in 256 KiB calls when the lines had just been
 * written by the kernel's cross-memory copy and read by another core: a
 * 1 MiB block in place took 123-139 us against 29-30
 * (docs/BENCHMARKS.md, alltoall in place). Pieces cost one call per
 * 256 KiB elsewhere. */
#define BRAID_COPY_PIECE ((size_t)256 << 10)
void braid_copy_pieces(void *dst, const void *src, size_t n);
static inline void braid_copy(void *dst, const void *src, size_t n)
{
    if (n <= BRAID_COPY_PIECE) memcpy(dst, src, n);
    else braid_copy_pieces(dst, src, n);
}

static inline int braid_floor_log2(int v)
{
    int l = -1;
    while (v) { v >>= 1; l++; }
    return l;
}

static inline int braid_ceil_log2(int v)
{
    int l = 0;
    while ((1 << l) < v) l++;
    return l;
}

#ifdef __cplusplus
}
#endif
#endif /* BRAID_ALGO_H */
