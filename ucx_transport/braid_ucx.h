/*
 * braid_ucx.h - braid's transport over UCX point-to-point (ucp tag API).
 *
 * One ucp context and worker per process. Worker addresses of every process
 * of the job are exchanged once (the component does the exchange with the
 * communicator's previous collectives and hands the table here); endpoints
 * are made when a communicator is enabled (braid_ucx_comm_connect) or on
 * first use, one per peer process, shared by every communicator. A communicator
 * is a braid_ucx_comm_t: its context id, a collective sequence number and
 * the map from communicator rank to process index. Tags are laid out in
 * braid_tag.h.
 *
 * No Open MPI header is included: the component passes an idle callback
 * (opal_progress) and its verbosity in braid_ucx_config_t.
 */
#ifndef BRAID_UCX_H
#define BRAID_UCX_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "braid_algo.h"

/* printf-like logger for errors and verbose messages */
typedef void (*braid_ucx_log_fn)(int level, const char *fmt, ...);

typedef struct braid_ucx_config {
    /* called when a wait finds nothing to progress (let the rest of the MPI
     * library progress); may be NULL */
    void (*idle_progress)(void);
    /* yield the core while idle (oversubscribed node); with thread_multiple
     * an idle wait also yields while other threads of the process wait */
    bool yield_when_idle;
    /* the worker is used by several threads at once (MPI_THREAD_MULTIPLE);
     * false: every lock and atomic below is skipped */
    bool thread_multiple;
    /* with thread_multiple: serialise worker calls with braid's own mutex
     * (worker in UCS_THREAD_MODE_SINGLE) instead of UCX's thread mode
     * UCS_THREAD_MODE_MULTI. Chosen anyway when UCX cannot give MULTI. */
    bool serialize;
    /* ask UCX for a worker with a wake-up fd (UCP_FEATURE_WAKEUP), for
     * braid_ucx_wait_event: only where a thread sleeps on it (braid's
     * progress thread), since the feature may narrow UCX's transports */
    bool wakeup;
    /* endpoints in UCP_ERR_HANDLING_MODE_PEER (a fault-tolerant MPI): a
     * failed peer's transfers complete with an error, where by default
     * UCX ends this process too (a transfer from a dead process's memory
     * is fatal to it); the error is logged at level 10 */
    bool peer_errors;
    braid_ucx_log_fn log;   /* may be NULL */
} braid_ucx_config_t;

/* Create the context and worker. Returns BRAID_OK or BRAID_ERR_TRANSPORT
 * (the reason is logged at level 1). Call from one thread, before any other
 * function here. */
int braid_ucx_init(const braid_ucx_config_t *cfg);
bool braid_ucx_ready(void);

/* UCX and glibc's main heap. libucs's constructor tests UCX's memory
 * hooks by moving the program break up a page and back (ucm_mmap_init),
 * and ucp_init, where it registers for memory events, tests them again
 * with brk(NULL), which stores the break it read into glibc's __curbrk.
 * A thread that allocates from the main heap meanwhile is left with a
 * heap whose top lies past the break ("break adjusted to free malloc
 * space", SIGSEGV). So both run on the thread that allocates from the
 * main heap - the one that called MPI_Init - while it runs no other code:
 * braid_ucx_load loads the libraries, braid_ucx_context makes the
 * context too (ucp_init), on the calling thread. Only the worker may be
 * made on another thread (braid_ucx_init after braid_ucx_context).
 *
 * braid_ucx_load: once; false, logged through `log`, when they cannot
 * be loaded. braid_ucx_context: once, BRAID_OK or BRAID_ERR_TRANSPORT;
 * braid_ucx_init keeps the context where its cfg asks for the same
 * features (the wake-up), else makes it again. */
bool braid_ucx_load(braid_ucx_log_fn log);
int braid_ucx_context(const braid_ucx_config_t *cfg);

/* How concurrent threads are kept apart on the worker: "none" (not
 * thread_multiple), "ucx" (UCS_THREAD_MODE_MULTI) or "braid" (braid's
 * mutex). Valid after braid_ucx_init. */
const char *braid_ucx_thread_mode(void);

/* The ucp context moves CUDA device memory itself (ucp_context_query lists
 * UCS_MEMORY_TYPE_CUDA): device pointers may then go to UCX directly. False
 * before init and with UCX builds without CUDA (Debian's). */
bool braid_ucx_supports_cuda(void);

/* This process's worker address (valid until braid_ucx_finalize). */
int braid_ucx_local_address(const void **addr, size_t *len);

/* Install the worker addresses of nprocs processes: process i's address is
 * addrs + i * stride, of length lens[i]. Copies what it needs. */
int braid_ucx_set_peers(int nprocs, const void *addrs, size_t stride, const size_t *lens);
int braid_ucx_npeers(void);

/* Which node each process is on: node_keys[i] for process i (equal keys =
 * same node; nprocs entries, copied), and which process this is. The
 * traffic counters use the keys; braid_ucx_comm_connect's shortcut (every
 * peer connected) needs my_proc. */
int braid_ucx_set_nodes(int nprocs, const uint64_t *node_keys, int my_proc);

/* Start-up over an out-of-band exchange among the job's nprocs
 * processes (the host's collectives: max_all a MAX of n longs, gather_all
 * an allgather of `bytes` per process; an error of theirs, > 0, is
 * returned as it is): braid_ucx_init, then one MAX agrees on success
 * (every process or none), the longest address and the OR of `flag`
 * (*flag_any); an allgather of records (address, node key) installs the
 * peers and nodes above, and *node_keys (nprocs entries, the caller's to
 * free) gets every process's key. BRAID_ERR_TRANSPORT: some process could
 * not start (*failed_here: this one); UCX is then finalized everywhere. */
typedef struct braid_ucx_oob {
    void *arg;
    int (*max_all)(void *arg, const long *in, long *out, int n);
    int (*gather_all)(void *arg, const void *mine, void *all, size_t bytes);
    int nprocs, me;
} braid_ucx_oob_t;
int braid_ucx_bootstrap(const braid_ucx_config_t *cfg, const braid_ucx_oob_t *oob,
                        uint64_t node_key, bool flag, bool *flag_any, bool *failed_here,
                        uint64_t **node_keys);

/* A communicator's first need of UCX in a job that starts it on first
 * need (the communicator's processes only, over the host's collectives on
 * it: oob, whose nprocs and me are the communicator's; procs[i] the
 * process index of its rank i, job_procs the job's processes): this
 * process's worker starts if it has not (braid_ucx_init), one MAX agrees
 * on success, on the longest address, on whether any rank lacks an
 * address of the communicator's processes and on n_extra longs of the
 * caller's (extra, MAXed in place); where one lacks some, an allgather of
 * addresses installs them. Collective over the communicator: the outcome
 * is the same on every rank. BRAID_ERR_TRANSPORT: some process could not
 * start (*failed_here: this one); UCX stays as it was. */
int braid_ucx_join(const braid_ucx_config_t *cfg, const braid_ucx_oob_t *oob, int job_procs,
                   const int *procs, long *extra, int n_extra, bool *failed_here);

/* Messages and bytes this process has sent, by whether the peer is on this
 * node (counted from the first send after braid_ucx_set_nodes; before it
 * every peer counts as on this node). The address is stable for the life of
 * the process (MPI_T performance variables read it). With thread_multiple
 * the counters are updated atomically (relaxed): a reader sees each counter
 * whole, never torn, though the four need not be from the same instant. */
typedef struct braid_ucx_counters {
    unsigned long long intra_node_msgs, intra_node_bytes;
    unsigned long long inter_node_msgs, inter_node_bytes;
    /* UCX endpoints this process has made (at most one per peer process;
     * closed only by braid_ucx_finalize, which does not reset this) */
    unsigned long long endpoints;
} braid_ucx_counters_t;
braid_ucx_counters_t *braid_ucx_counters(void);

/* The MPI library's progress hook (so that braid's outstanding sends - e.g.
 * a TCP connection handshake or a rendezvous - complete while this process
 * waits elsewhere in MPI): progresses the worker once in 16 progress calls
 * while braid sends, once in 1024 when it has been idle (braid's own waits
 * progress it directly). `calls`: the progress calls this one stands for
 * (a power of two, at most 16). Returns the number of events progressed;
 * 0 when the transport is not up or on the calls in between. */
int braid_ucx_progress(unsigned calls);

/* Progress the worker now (braid's progress thread); the number of events.
 * Under braid's mutex a worker held by another thread is left to it. */
int braid_ucx_progress_now(void);

/* Sleep until the worker has an event or timeout_ns have passed: on the
 * worker's wake-up fd (armed first) where it has one, else a plain sleep.
 * Returns true when woken by an event. */
bool braid_ucx_wait_event(long timeout_ns);
/* The worker has a wake-up fd (braid_ucx_config_t.wakeup and UCX gave one). */
bool braid_ucx_has_wakeup(void);

/* Close endpoints, destroy the worker and context. */
void braid_ucx_finalize(void);

/* Per-communicator transport state. Its sequence number is not locked:
 * MPI forbids two collectives at once on one communicator, and braid's
 * views of a communicator run one after the other. */
typedef struct braid_ucx_comm braid_ucx_comm_t;

/* proc_index[i] is the process index (as in braid_ucx_set_peers) of
 * communicator rank i; copied. NULL: the caller fills the map through
 * braid_ucx_comm_procs before the communicator is used. One allocation. */
braid_ucx_comm_t *braid_ucx_comm_create(uint32_t cid, int rank, int size,
                                        const int *proc_index);
int *braid_ucx_comm_procs(braid_ucx_comm_t *c);
/* The communicator's failure state (braid_algo.h; NULL, the default: none):
 * its waits poll it and, once it failed, abandon their requests (receives
 * cancelled, sends left to UCX) and return the failure. */
void braid_ucx_comm_set_fault(braid_ucx_comm_t *c, braid_fault_t *fault);
void braid_ucx_comm_destroy(braid_ucx_comm_t *c);

/* Make the endpoints to the communicator's other processes that do not
 * exist yet, so its first collective does not pay for them (see
 * braid_ucx.c). O(1) once every process of the job has one. Returns
 * BRAID_OK, or BRAID_ERR_TRANSPORT when an endpoint could not be made (it
 * is tried again at its first use, which then fails the collective). */
int braid_ucx_comm_connect(braid_ucx_comm_t *c);

/* Start a new collective on this communicator: advances the blocking
 * calls' or the nonblocking posts' sequence (braid_tag.h: two spaces,
 * each in the order MPI makes the same on every rank) and returns the
 * number. A message carries the number its call hands isend / irecv
 * (braid_comm_t.seq). */
uint32_t braid_ucx_comm_begin(braid_ucx_comm_t *c, bool nonblocking);

/* Bind an algorithm's view of the communicator to this transport. */
void braid_ucx_comm_bind(braid_ucx_comm_t *c, braid_comm_t *out);

extern const braid_transport_ops_t braid_ucx_ops;

#endif /* BRAID_UCX_H */
