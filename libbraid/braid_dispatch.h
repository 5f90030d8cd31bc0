/*
 * braid_dispatch.h - the one way down from an entry point to an algorithm,
 * and the per-communicator state it keeps (a "site").
 *
 *   entry point (the host's glue): arguments -> braid's byte view, a call
 *     -> braid_call_init: choose (selection table + overrides, cached per
 *        communicator; a persistent request keeps its own), bind scratch
 *   -> braid_dispatch: refusals (the algorithm's declared ones, decided
 *        before any wait) -> hierarchical phases -> trace -> sequence number
 *        -> the shm turn -> view (rank order, node order with the root
 *        translated, allgather / reduce-scatter blocks laid out around it)
 *        -> run: once on host buffers, or through the staging pipeline
 *   -> algorithm (libbraid/algo/, found in the registry) -> transport
 *
 * Every decision depends only on what MPI requires to match across ranks
 * (communicator, root, op, count x type size), so every rank takes the
 * same path. What the dispatch needs of the host (the transport's call
 * numbers, device staging, progress while waiting a turn, logging) comes
 * as hooks; nothing here knows Open MPI or UCX.
 */
#ifndef BRAID_DISPATCH_H
#define BRAID_DISPATCH_H

#include "braid_algo.h"
#include "braid_devpipe.h"
#include "braid_registry.h"
#include "braid_task.h"
#include "braid_select.h"
#include "braid_topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One collective call on its way down. The entry point builds it
 * (braid_call_init), fills the arguments, and passes it down. */
typedef struct braid_call {
    braid_coll_t coll;
    braid_task_t *req;             /* the request running it; NULL: a blocking call */
    size_t bytes;                 /* the selection size (libbraid/selection/RULES.md) */
    braid_choice_t choice;
    const braid_algorithm_t *alg; /* choice.alg's registry row (NULL: none) */
    braid_coll_args_t args;       /* sbuf, rbuf set by the entry point unless pipelined */
    bool nb_ring;                 /* a nonblocking call on the site's nonblocking ring */
    uint64_t nb_number;           /* a nonblocking call's number among the site's posts (from 1) */
    uint32_t seq;                 /* its sequence number, the transport's tags' */
    braid_yield_t yield;          /* a request's: how its waits give its fiber's thread back */
    /* allreduce, reduce, bcast on contiguous buffers: this rank's input
     * and output as the staging pipeline takes them (braid_devpipe.h); the
     * algorithm runs once on them when neither is on a device and the job
     * does not cut messages into segments */
    bool pipelined;
    braid_devpipe_kind_t kind;
    const void *in;
    void *out;
    bool in_dev, out_dev;
} braid_call_t;

/* What the dispatch reads of the job's configuration (MCA parameters). */
typedef struct braid_site_conf {
    int forced[BRAID_COLL_N];     /* BRAID_ALG_AUTO: the table */
    const braid_table_t *rules;   /* NULL: the built-in table only */
    size_t chunk_bytes;           /* ring_chunked's chunk, 0 = table */
    size_t tree_chunk_bytes;      /* dbtree's chunk, 0 = table */
    int bcube_base;               /* 0 = table; -1 = BRAID_BCUBE_AUTO */
    size_t seg_bytes;             /* staging segment, 0 = messages are not cut */
    bool trace;                   /* rank 0 logs every call's choice */
    bool shared;                  /* two threads may dispatch on one site's turns */
    size_t progress_thread_bytes; /* a request of this many bytes yields to the progress thread
                                   * before it runs (the thread carries it); 0 = none does */
} braid_site_conf_t;

typedef struct braid_site_hooks {
    void *arg;
    /* the communicator's next call number (the transport's) among its
     * blocking calls, or among its nonblocking posts (two spaces: see
     * "Two orders" in braid_dispatch.c) */
    uint32_t (*begin)(void *arg, bool nonblocking);
    /* run fn on view through the device staging pipeline (a buffer on a
     * device), seg elements at a time */
    int (*staged_run)(void *arg, braid_comm_t *view, braid_algo_fn_t fn, const braid_call_t *call,
                      size_t seg);
    /* a blocking call waits for its turn: progress the requests ahead */
    void (*wait)(void *arg);
    /* one line at a verbosity level (0: always) */
    void (*log)(void *arg, int level, const char *msg);
    /* NULL, or asked before a call whose algorithm sends messages runs:
     * BRAID_OK, or another code for the call to fall back (a host that
     * starts its transport on first need); the same answer on every rank */
    int (*messages)(void *arg, const braid_call_t *call);
} braid_site_hooks_t;

/* A site: a communicator as the dispatch sees it - its views, choice
 * caches, turns and call counts (the module's m->site). */
typedef struct braid_site {
    braid_comm_t *comm;           /* the algorithms' view of it, rank order */
    const char *name;             /* for messages */
    const braid_site_conf_t *conf;
    braid_site_hooks_t hooks;
    braid_scratch_t scratch;      /* blocking calls' scratch, reused */
    size_t *counts[2];            /* blocking calls' workspace (braid_call_counts) */
    size_t counts_len[2];
    /* the last choice per collective (with its registry row), for
     * blocking calls [0] and nonblocking ones [1] (with or without their
     * ring), and the hierarchical allreduce's phases for the last size */
    struct {
        bool valid, ring;
        size_t bytes;
        braid_choice_t choice;
        const braid_algorithm_t *alg;
    } choice_cache[2][BRAID_COLL_N];
    struct { bool valid; size_t bytes, buffer_bytes; braid_hier_t h; } hier_cache;
    /* ranks grouped by node: the algorithms run on topo_view (comm in node
     * order) when topo_ordered; the node and leader views are made on the
     * hierarchical allreduce's first use (a one-node grouping is then made
     * from no keys) */
    braid_topo_t topo;
    bool topo_ready, topo_ordered, hier_ready;
    braid_subcomm_t topo_view, node_view, leader_view;
    braid_turns_t turns;          /* nonblocking calls on their ring, in post order */
    /* nonblocking calls: how many this rank numbered, their ring (nb_view:
     * comm with the ring's segment; shm NULL: none) for those numbered
     * nb_from and later, and comm without a segment (bare_view) */
    uint64_t nb_calls, nb_from;
    braid_comm_t nb_view, bare_view;
    /* the communicator's failure state (braid_algo.h; NULL: the host has
     * none): once it failed, every call fails at once with it */
    braid_fault_t *fault;
} braid_site_t;

/* s over comm (zeroed first; the host keeps conf alive) */
void braid_site_init(braid_site_t *s, braid_comm_t *comm, const braid_site_conf_t *conf,
                     const braid_site_hooks_t *hooks);
void braid_site_fini(braid_site_t *s);
/* The grouping by node from every rank's node key (equal keys: one node);
 * order: run in node order when the nodes interleave. */
int braid_site_topo(braid_site_t *s, const uint64_t *keys, bool order);
/* the node and leader views (made on first use) */
int braid_site_hier_views(braid_site_t *s);
/* forget the cached choices (the segment came or went) */
void braid_site_forget(braid_site_t *s);
/* The nonblocking calls' ring (NULL: none) serves the calls numbered
 * `from` and later (the same on every rank: agreed when it was set up). */
void braid_site_nb_ring(braid_site_t *s, struct braid_shm *ring, uint64_t from);

/* The choice for coll on `size` ranks at `bytes` (forced, rules file,
 * built-in table, then the overrides); shm: the segment can carry it. */
braid_choice_t braid_site_select(const braid_site_t *s, braid_coll_t coll, int size, size_t bytes,
                                 bool shm);

/* Start a call: choose, bind scratch and params, every argument cleared.
 * false: braid has no algorithm for it (hand it on). */
bool braid_call_init(braid_site_t *s, braid_call_t *call, braid_coll_t coll, size_t bytes,
                     braid_task_t *req);
/* The call's input and output for the staging pipeline (see above). */
void braid_call_buffers(braid_call_t *call, braid_devpipe_kind_t kind, const void *in, bool in_dev,
                        void *out, bool out_dev);
/* n size_t of workspace slot (0: reduce_scatter's counts, 1: node-order
 * layouts): the request's (req not NULL), else the site's; NULL when out
 * of memory */
size_t *braid_call_counts(braid_site_t *s, braid_task_t *req, int slot, size_t n);
/* The communicator the call's shm algorithms run on: the site's (a
 * blocking call), the nonblocking ring's view or one without a segment (a
 * nonblocking call), a persistent request's view on its own channel. */
braid_comm_t *braid_call_shm_comm(braid_site_t *s, const braid_call_t *call);
/* "allreduce", "iallreduce", "allreduce_init" */
const char *braid_call_name(const braid_call_t *call, char *buf, size_t len);

/* Run the call; a BRAID_* code (BRAID_ERR_UNSUPPORTED: hand it on, the
 * same on every rank, before any message). */
int braid_dispatch(braid_site_t *s, braid_call_t *call);

#ifdef __cplusplus
}
#endif

#endif /* BRAID_DISPATCH_H */
