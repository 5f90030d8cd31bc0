/*
 * braid_ucx.c - see braid_ucx.h.
 *
 * Threads (cfg.thread_multiple): collectives on different communicators
 * run at once, each in its own thread, all on the one worker. What they
 * share, and how it is kept safe:
 *  - the worker: UCX's own lock (UCS_THREAD_MODE_MULTI), or braid's mutex
 *    around every worker call (cfg.serialize, or UCX built without thread
 *    support); opal_progress may call braid_ucx_progress from any thread;
 *  - the endpoint table: endpoints are made when a communicator is enabled
 *    (braid_ucx_comm_connect) or on first use by whichever thread sends
 *    first, so creation is under ep_mutex and the pointer is published
 *    with a release store (as is all_connected);
 *  - the traffic counters: atomic adds;
 *  - a start on first need (braid_ucx_join), which threads of different
 *    communicators may make at once: the worker's creation and the peer
 *    table's addresses under join_mutex (not held across the agreement
 *    and exchange, collectives on the communicator), and g.ready
 *    published with a release store, which the progress paths, called
 *    from any thread, load with acquire;
 *  - the count of waiting threads, which decides whether an idle wait
 *    yields the core (yield_now).
 * Without thread_multiple none of this is taken: one predictable branch on
 * g.mt / g.lock_worker per call, no lock, no atomic.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* ppoll */
#endif
#include "braid_ucx.h"
#include "braid_tag.h"

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <ucp/api/ucp.h>

/* UCX's libraries are loaded when braid first starts it (load_ucx), not
 * with the component: a job that never needs UCX loads none of them, runs
 * none of their constructors (about 4 ms of MPI_Init at np=2) and gets
 * none of their memory hooks. Its functions are called through this
 * table. */
#define UCX_FNS(X)                                                                                 \
    X(ucp_cleanup) X(ucp_config_modify) X(ucp_config_read) X(ucp_config_release)                   \
    X(ucp_context_query) X(ucp_ep_close_nbx) X(ucp_ep_create) X(ucp_init_version)                  \
    X(ucp_request_cancel) X(ucp_request_check_status) X(ucp_request_free) X(ucp_tag_recv_nbx)      \
    X(ucp_tag_send_nbx) X(ucp_worker_arm) X(ucp_worker_create) X(ucp_worker_destroy)               \
    X(ucp_worker_get_address) X(ucp_worker_get_efd) X(ucp_worker_progress) X(ucp_worker_query)     \
    X(ucp_worker_release_address) X(ucs_status_string)
#define UCX_FN_FIELD(name) __typeof__(name) *name;
static struct {
    UCX_FNS(UCX_FN_FIELD)
} ucx;

#ifndef BRAID_UCP_LIB
#define BRAID_UCP_LIB "libucp.so.0"
#endif
#ifndef BRAID_UCS_LIB
#define BRAID_UCS_LIB "libucs.so.0"
#endif

/* empty progress polls before a wait lets the rest of MPI progress */
#define BRAID_UCX_IDLE_POLLS 64

typedef struct braid_ucx_peer {
    void *addr;          /* remote worker address */
    ucp_ep_h ep;         /* made by braid_ucx_comm_connect or on first use */
} braid_ucx_peer_t;

static struct {
    bool ready;
    braid_ucx_config_t cfg;
    bool mt;             /* threads share the worker: lock the endpoint table, atomic counters */
    bool lock_worker;    /* braid's mutex around every worker call */
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *local_addr;
    size_t local_addr_len;
    int npeers;
    braid_ucx_peer_t *peers;
    bool *peer_off_node;  /* per process: on another node (NULL: all local) */
    int self;             /* this process's index (braid_ucx_set_nodes), -1 unknown */
    int connected;        /* endpoints made to processes other than self */
    bool all_connected;   /* connected == npeers - 1: every connect is a no-op */
    int efd;              /* the worker's wake-up fd, or -1 */
} g;

/* outside g: finalize clears g, the counters' address must stay valid */
static braid_ucx_counters_t counters;
/* thread_multiple: threads of this process now waiting in ucx_waitall */
static int waiters;
/* lock order: ep_mutex, then worker_mutex */
static pthread_mutex_t worker_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t join_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ep_mutex = PTHREAD_MUTEX_INITIALIZER;

static inline void worker_enter(void)
{
    if (g.lock_worker) pthread_mutex_lock(&worker_mutex);
}

static inline void worker_leave(void)
{
    if (g.lock_worker) pthread_mutex_unlock(&worker_mutex);
}

/* An idle wait gives up the core when the node is oversubscribed, or when
 * another thread of this process is waiting too: with more waiting threads
 * than cores, a spinning thread keeps the one whose message has come off
 * its core (8 threads per rank at np=2 on 2 cores: 35 s instead of 1.2 s).
 * A lone waiting thread spins on, as a single-threaded job does: yielding
 * would hand the core to other processes and add their time slices to a
 * small collective's latency. */
static inline bool yield_now(void)
{
    return g.cfg.yield_when_idle || (g.mt && __atomic_load_n(&waiters, __ATOMIC_RELAXED) > 1);
}

static inline void counter_add(unsigned long long *c, unsigned long long v)
{
    if (g.mt) __atomic_fetch_add(c, v, __ATOMIC_RELAXED);
    else *c += v;
}

braid_ucx_counters_t *braid_ucx_counters(void) { return &counters; }

struct braid_ucx_comm {
    uint32_t cid;
    uint32_t seq;        /* the last blocking collective's (braid_tag.h's call space) */
    uint32_t nb_seq;     /* the last nonblocking post's, without its space bit */
    int rank;
    int size;
    braid_fault_t *fault; /* the communicator's failure state (NULL: none) */
    int proc_index[];    /* size entries, in the same allocation */
};

static void log_msg(int level, const char *fmt, ...)
{
    if (NULL == g.cfg.log) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    g.cfg.log(level, "%s", buf);
}

/* Load UCX's libraries and find its functions, once (never unloaded: UCX
 * keeps threads and hooks); see braid_ucx_load for the thread that may.
 * A failure is logged through `log` each time it is asked again. */
static bool load_ucx(braid_ucx_log_fn log)
{
    static pthread_mutex_t load_mutex = PTHREAD_MUTEX_INITIALIZER;
    static int state;   /* 0: not tried, 1: loaded, -1: failed */
    static char why[256];
    pthread_mutex_lock(&load_mutex);
    if (0 == state) {
        state = -1;
        void *ucp = dlopen(BRAID_UCP_LIB, RTLD_NOW | RTLD_LOCAL);
        void *ucs = NULL != ucp ? dlopen(BRAID_UCS_LIB, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (NULL == ucs) snprintf(why, sizeof(why), "UCX could not be loaded: %s", dlerror());
#define UCX_FN_LOAD(name)                                                                          \
        if (NULL != ucs && '\0' == why[0] &&                                                      \
            NULL == (*(void **)&ucx.name = dlsym(0 == strncmp(#name, "ucs_", 4) ? ucs : ucp, #name))) \
            snprintf(why, sizeof(why), "UCX lacks %s (%s, %s)", #name, BRAID_UCP_LIB, BRAID_UCS_LIB);
        UCX_FNS(UCX_FN_LOAD)
#undef UCX_FN_LOAD
        if ('\0' == why[0]) state = 1;
    }
    bool ok = state > 0;
    pthread_mutex_unlock(&load_mutex);
    if (!ok && NULL != log) log(1, "%s", why);
    return ok;
}

bool braid_ucx_load(braid_ucx_log_fn log) { return load_ucx(log); }

/* g.ready from any thread (a start on first need publishes it) */
static inline bool is_ready(void) { return __atomic_load_n(&g.ready, __ATOMIC_ACQUIRE); }

bool braid_ucx_ready(void) { return is_ready(); }

const char *braid_ucx_thread_mode(void)
{
    return !g.mt ? "none" : g.lock_worker ? "braid" : "ucx";
}

bool braid_ucx_supports_cuda(void)
{
    if (!g.ready) return false;
    ucp_context_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (UCS_OK != ucx.ucp_context_query(g.context, &attr)) return false;
    return 0 != (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA));
}

/* The worker UCX's thread mode asks for: MULTI when threads share it and
 * braid does not serialise them itself. A UCX built without thread support
 * hands back a SINGLE worker when asked for MULTI: braid's mutex then. */
static ucs_status_t create_worker(void)
{
    g.mt = g.cfg.thread_multiple;
    g.lock_worker = g.mt && g.cfg.serialize;
    ucp_worker_params_t wparams;
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = !g.mt ? UCS_THREAD_MODE_SINGLE : g.lock_worker ? UCS_THREAD_MODE_SERIALIZED : UCS_THREAD_MODE_MULTI;
    ucs_status_t st = ucx.ucp_worker_create(g.context, &wparams, &g.worker);
    if (UCS_OK != st || UCS_THREAD_MODE_MULTI != wparams.thread_mode) return st;
    ucp_worker_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
    if (UCS_OK != ucx.ucp_worker_query(g.worker, &attr) ||
        UCS_THREAD_MODE_MULTI != attr.thread_mode) {
        log_msg(10, "UCX gave no UCS_THREAD_MODE_MULTI worker: braid serialises worker calls");
        g.lock_worker = true;
    }
    return UCS_OK;
}

/* The context: UCX's configuration, its transports' libraries and
 * devices (g.context; g.ready stays false) */
static int init_context(const braid_ucx_config_t *cfg)
{
    ucp_config_t *config = NULL;
    ucs_status_t st;
    memset(&g, 0, sizeof(g));
    g.self = -1;
    g.efd = -1;
    if (cfg) g.cfg = *cfg;
    if (!load_ucx(g.cfg.log)) return BRAID_ERR_TRANSPORT;

    st = ucx.ucp_config_read(NULL, NULL, &config);
    if (UCS_OK != st) {
        log_msg(1, "ucp_config_read failed: %s", ucx.ucs_status_string(st));
        return BRAID_ERR_TRANSPORT;
    }
    /* UCX's two shared-memory FIFO transports, posix and sysv, move the
     * same messages; making the worker's sysv FIFOs as well costs about
     * as much as the rest of its start-up (contrib/bench/startup.sh).
     * Where UCX_TLS names the transports, they are the user's. */
    if (NULL == getenv("UCX_TLS")) (void)ucx.ucp_config_modify(config, "TLS", "^sysv");
    ucp_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_TAG | (g.cfg.wakeup ? UCP_FEATURE_WAKEUP : 0);
    params.mt_workers_shared = 0;
    st = ucx.ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &g.context);
    ucx.ucp_config_release(config);
    if (UCS_OK != st) {
        log_msg(1, "ucp_init failed: %s", ucx.ucs_status_string(st));
        g.context = NULL;
        return BRAID_ERR_TRANSPORT;
    }
    return BRAID_OK;
}

/* The worker, on the thread that will use it: a worker of
 * UCS_THREAD_MODE_SINGLE belongs to the thread that made it (UCX asserts
 * so in its debug builds). */
static int init_worker(void)
{
    ucs_status_t st = create_worker();
    if (UCS_OK != st) {
        log_msg(1, "ucp_worker_create failed: %s", ucx.ucs_status_string(st));
        ucx.ucp_cleanup(g.context);
        g.context = NULL;
        return BRAID_ERR_TRANSPORT;
    }
    st = ucx.ucp_worker_get_address(g.worker, &g.local_addr, &g.local_addr_len);
    if (UCS_OK != st) {
        log_msg(1, "ucp_worker_get_address failed: %s", ucx.ucs_status_string(st));
        ucx.ucp_worker_destroy(g.worker);
        ucx.ucp_cleanup(g.context);
        g.worker = NULL;
        g.context = NULL;
        return BRAID_ERR_TRANSPORT;
    }
    if (g.cfg.wakeup) {
        st = ucx.ucp_worker_get_efd(g.worker, &g.efd);
        if (UCS_OK != st) {
            g.efd = -1;
            log_msg(10, "the UCX worker has no wake-up fd (%s): the progress thread sleeps "
                    "in steps", ucx.ucs_status_string(st));
        }
    }
    __atomic_store_n(&g.ready, true, __ATOMIC_RELEASE);
    return BRAID_OK;
}

int braid_ucx_context(const braid_ucx_config_t *cfg)
{
    if (g.ready || NULL != g.context) return BRAID_OK;
    return init_context(cfg);
}

int braid_ucx_init(const braid_ucx_config_t *cfg)
{
    if (g.ready) return BRAID_OK;
    /* a context made before (braid_ucx_context) is kept where cfg asks for
     * the same features (the wake-up) */
    if (NULL != g.context && cfg->wakeup != g.cfg.wakeup) {
        ucx.ucp_cleanup(g.context);
        g.context = NULL;
    }
    if (NULL != g.context) {
        g.cfg = *cfg;
        log_msg(10, "the UCX context made in MPI_Init is kept");
    } else if (BRAID_OK != init_context(cfg)) {
        return BRAID_ERR_TRANSPORT;
    }
    return init_worker();
}

int braid_ucx_local_address(const void **addr, size_t *len)
{
    if (!g.ready) return BRAID_ERR_TRANSPORT;
    *addr = g.local_addr;
    *len = g.local_addr_len;
    return BRAID_OK;
}

int braid_ucx_npeers(void) { return g.npeers; }

int braid_ucx_set_peers(int nprocs, const void *addrs, size_t stride, const size_t *lens)
{
    if (!g.ready || NULL != g.peers) return BRAID_ERR_ARG;
    g.peers = calloc((size_t)nprocs, sizeof(*g.peers));
    if (NULL == g.peers) return BRAID_ERR_NOMEM;
    for (int i = 0; i < nprocs; i++) {
        g.peers[i].addr = malloc(lens[i] ? lens[i] : 1);
        if (NULL == g.peers[i].addr) {
            g.npeers = i;
            return BRAID_ERR_NOMEM;
        }
        memcpy(g.peers[i].addr, (const char *)addrs + (size_t)i * stride, lens[i]);
    }
    g.npeers = nprocs;
    return BRAID_OK;
}

int braid_ucx_set_nodes(int nprocs, const uint64_t *node_keys, int my_proc)
{
    if (!g.ready || nprocs != g.npeers || my_proc < 0 || my_proc >= nprocs) return BRAID_ERR_ARG;
    bool *off = malloc((size_t)nprocs * sizeof(bool));
    if (NULL == off) return BRAID_ERR_NOMEM;
    for (int i = 0; i < nprocs; i++) off[i] = node_keys[i] != node_keys[my_proc];
    free(g.peer_off_node);
    g.peer_off_node = off;
    g.self = my_proc;
    return BRAID_OK;
}

/* A record of the exchange: 8-byte address length, 8-byte node key, the
 * address; every record `stride` bytes. */
static void record_pack(char *rec, uint64_t node_key)
{
    const void *addr = NULL;
    size_t alen = 0;
    braid_ucx_local_address(&addr, &alen);
    uint64_t l64 = alen;
    memcpy(rec, &l64, sizeof(l64));
    memcpy(rec + sizeof(l64), &node_key, sizeof(node_key));
    memcpy(rec + 2 * sizeof(l64), addr, alen);
}

static int records_install(int nprocs, const char *all, size_t stride, int me, uint64_t *keys)
{
    size_t *lens = calloc((size_t)nprocs, sizeof(size_t));
    if (NULL == lens) return BRAID_ERR_NOMEM;
    for (int i = 0; i < nprocs; i++) {
        uint64_t l64;
        memcpy(&l64, all + (size_t)i * stride, sizeof(l64));
        lens[i] = (size_t)l64;
        memcpy(&keys[i], all + (size_t)i * stride + sizeof(l64), sizeof(uint64_t));
    }
    int rc = braid_ucx_set_peers(nprocs, all + 2 * sizeof(uint64_t), stride, lens);
    free(lens);
    return BRAID_OK == rc ? braid_ucx_set_nodes(nprocs, keys, me) : rc;
}

int braid_ucx_bootstrap(const braid_ucx_config_t *cfg, const braid_ucx_oob_t *oob,
                        uint64_t node_key, bool flag, bool *flag_any, bool *failed_here,
                        uint64_t **node_keys)
{
    int P = oob->nprocs;
    const void *addr = NULL;
    size_t alen = 0;
    uint64_t *keys = calloc((size_t)P, sizeof(uint64_t));
    bool ok = NULL != keys && BRAID_OK == braid_ucx_init(cfg);
    if (ok) braid_ucx_local_address(&addr, &alen);
    long in[3] = { ok ? 0 : 1, (long)alen, flag ? 1 : 0 }, out[3] = { 0, 0, 0 };
    int rc = oob->max_all(oob->arg, in, out, 3);
    *failed_here = !ok;
    *flag_any = 0 != out[2];
    if (0 == rc && 0 != out[0]) rc = BRAID_ERR_TRANSPORT;
    size_t stride = 2 * sizeof(uint64_t) + (size_t)out[1];
    char *mine = 0 == rc ? calloc(1, stride) : NULL, *all = 0 == rc ? calloc((size_t)P, stride) : NULL;
    if (0 == rc && (NULL == mine || NULL == all)) rc = BRAID_ERR_NOMEM;
    if (0 == rc) {
        record_pack(mine, node_key);
        rc = oob->gather_all(oob->arg, mine, all, stride);
    }
    if (0 == rc) rc = records_install(P, all, stride, oob->me, keys);
    free(mine);
    free(all);
    if (BRAID_ERR_TRANSPORT == rc) braid_ucx_finalize();
    if (0 != rc) free(keys);
    *node_keys = 0 == rc ? keys : NULL;
    return rc;
}

/* The table of the job's nprocs processes, with no address yet, this
 * one `self` (a start on first need: addresses come per communicator) */
static int table_open(int nprocs, int self)
{
    if (NULL != g.peers) return nprocs == g.npeers ? BRAID_OK : BRAID_ERR_ARG;
    if (self < 0 || self >= nprocs || NULL == (g.peers = calloc((size_t)nprocs, sizeof(*g.peers))))
        return BRAID_ERR_NOMEM;
    g.npeers = nprocs;
    g.self = self;
    return BRAID_OK;
}

#define JOIN_FIXED 3   /* failed, address length, an address missing */
#define JOIN_EXTRA_MAX 4

int braid_ucx_join(const braid_ucx_config_t *cfg, const braid_ucx_oob_t *oob, int job_procs,
                   const int *procs, long *extra, int n_extra, bool *failed_here)
{
    int P = oob->nprocs;
    if (n_extra < 0 || n_extra > JOIN_EXTRA_MAX) return BRAID_ERR_ARG;
    pthread_mutex_lock(&join_mutex);
    bool ok = BRAID_OK == braid_ucx_init(cfg) && BRAID_OK == table_open(job_procs, procs[oob->me]);
    bool missing = false;
    for (int i = 0; ok && i < P; i++)
        if (procs[i] < 0 || procs[i] >= g.npeers) ok = false;
        else if (NULL == g.peers[procs[i]].addr) missing = true;
    pthread_mutex_unlock(&join_mutex);
    long in[JOIN_FIXED + JOIN_EXTRA_MAX] = { ok ? 0 : 1, ok ? (long)g.local_addr_len : 0,
                                              missing ? 1 : 0 };
    long out[JOIN_FIXED + JOIN_EXTRA_MAX] = { 0 };
    memcpy(in + JOIN_FIXED, extra, (size_t)n_extra * sizeof(long));
    int rc = oob->max_all(oob->arg, in, out, JOIN_FIXED + n_extra);
    *failed_here = !ok;
    if (0 != rc) return rc;
    memcpy(extra, out + JOIN_FIXED, (size_t)n_extra * sizeof(long));
    if (0 != out[0]) return BRAID_ERR_TRANSPORT;
    if (0 == out[2]) return BRAID_OK;
    /* records: 8-byte address length, the address */
    size_t stride = sizeof(uint64_t) + (size_t)out[1];
    char *all = calloc((size_t)P + 1, stride);
    if (NULL == all) return BRAID_ERR_NOMEM;
    char *mine = all + (size_t)P * stride;
    uint64_t l64 = g.local_addr_len;
    memcpy(mine, &l64, sizeof(l64));
    memcpy(mine + sizeof(l64), g.local_addr, g.local_addr_len);
    rc = oob->gather_all(oob->arg, mine, all, stride);
    /* (another thread's join may have brought some meanwhile) */
    pthread_mutex_lock(&join_mutex);
    for (int i = 0; 0 == rc && i < P; i++) {
        braid_ucx_peer_t *p = &g.peers[procs[i]];
        if (NULL != p->addr) continue;
        memcpy(&l64, all + (size_t)i * stride, sizeof(l64));
        if (NULL == (p->addr = malloc(l64 ? (size_t)l64 : 1))) rc = BRAID_ERR_NOMEM;
        else memcpy(p->addr, all + (size_t)i * stride + sizeof(l64), (size_t)l64);
    }
    pthread_mutex_unlock(&join_mutex);
    free(all);
    return rc;
}

static void count_send(int proc, size_t len)
{
    if (NULL != g.peer_off_node && g.peer_off_node[proc]) {
        counter_add(&counters.inter_node_msgs, 1);
        counter_add(&counters.inter_node_bytes, len);
    } else {
        counter_add(&counters.intra_node_msgs, 1);
        counter_add(&counters.intra_node_bytes, len);
    }
}

/* Let go of a request that is not done: a receive is cancelled (UCX
 * completes it, its buffer is not written after), a send goes on inside
 * UCX to its end or to its endpoint's (the request is only freed). For a
 * communicator that failed: braid posts nothing on it again. */
static void abandon(void *req)
{
    worker_enter();
    ucx.ucp_request_cancel(g.worker, req);
    ucx.ucp_request_free(req);
    worker_leave();
}

/* Wait for a request to finish, progressing the worker. Returns its status
 * and frees it. Under braid's mutex the lock is dropped between polls, so
 * other threads can post and progress (the idle callback and the yield run
 * unlocked). fault (NULL: none) is polled with the idle callback: when the
 * communicator failed the request is abandoned and UCS_ERR_CANCELED
 * returned. */
static ucs_status_t wait_request(void *req, braid_fault_t *fault)
{
    ucs_status_t st;
    unsigned idle = 0;
    for (;;) {
        worker_enter();
        st = ucx.ucp_request_check_status(req);
        if (UCS_INPROGRESS != st) break;
        unsigned progressed = ucx.ucp_worker_progress(g.worker);
        worker_leave();
        if (progressed) {
            idle = 0;
            continue;
        }
        if (++idle >= BRAID_UCX_IDLE_POLLS) {
            idle = 0;
            if (g.cfg.idle_progress) g.cfg.idle_progress();
            if (NULL != fault && BRAID_OK != braid_fault_poll(fault, true)) {
                abandon(req);
                return UCS_ERR_CANCELED;
            }
            if (yield_now()) sched_yield();
        }
    }
    ucx.ucp_request_free(req);
    worker_leave();
    return st;
}

/* Called from opal_progress by any thread: under braid's mutex, a thread
 * that finds the worker held leaves it to the holder, which is progressing
 * it (waiting for the lock here would only queue the callers up).
 * braid's own waits progress the worker directly; this hook is only there
 * so that a peer's handshakes move while this process waits in the rest of
 * MPI. Every other MPI wait (a pml receive, an MPI_Iprobe loop, another
 * component's collective) calls it, so it polls only once in
 * BRAID_UCX_HOOK_EVERY progress calls while braid is active - a message
 * posted in the last BRAID_UCX_LINGER calls - and once in
 * BRAID_UCX_HOOK_IDLE after that (UCX's empty progress, for a late peer's
 * handshake). `calls`: how many progress calls this one stands for (8
 * from Open MPI's low-priority list, which runs once in 8). */
#define BRAID_UCX_HOOK_EVERY 16u
#define BRAID_UCX_HOOK_IDLE 1024u
#define BRAID_UCX_LINGER 4096u
static unsigned linger;   /* hook calls left at the active rate */

/* braid posted a message: poll at the active rate again */
static inline void hook_active(void)
{
    if (BRAID_UCX_LINGER != __atomic_load_n(&linger, __ATOMIC_RELAXED))
        __atomic_store_n(&linger, BRAID_UCX_LINGER, __ATOMIC_RELAXED);
}

int braid_ucx_progress(unsigned calls)
{
    static unsigned tick;
    if (!is_ready()) return 0;
    unsigned t = g.mt ? __atomic_add_fetch(&tick, calls, __ATOMIC_RELAXED) : (tick += calls);
    unsigned l = __atomic_load_n(&linger, __ATOMIC_RELAXED);
    unsigned every = l > 0 ? BRAID_UCX_HOOK_EVERY : BRAID_UCX_HOOK_IDLE;
    /* a multiple of `every` in (t - calls, t]: calls and every are powers of two */
    if ((t & (every - 1)) >= calls) return 0;
    /* counted down at each poll; racy between threads on purpose (a lost
     * update only lingers longer or shorter by a few polls) */
    if (l > 0) __atomic_store_n(&linger, l > BRAID_UCX_HOOK_EVERY ? l - BRAID_UCX_HOOK_EVERY : 0, __ATOMIC_RELAXED);
    if (!g.lock_worker) return (int)ucx.ucp_worker_progress(g.worker);
    if (0 != pthread_mutex_trylock(&worker_mutex)) return 0;
    int n = (int)ucx.ucp_worker_progress(g.worker);
    pthread_mutex_unlock(&worker_mutex);
    return n;
}

bool braid_ucx_has_wakeup(void) { return is_ready() && g.efd >= 0; }

bool braid_ucx_wait_event(long timeout_ns)
{
    struct timespec ts = { timeout_ns / 1000000000L, timeout_ns % 1000000000L };
    if (!is_ready() || g.efd < 0) {
        nanosleep(&ts, NULL);
        return false;
    }
    /* arm: UCS_ERR_BUSY means events came since the last progress */
    if (g.lock_worker) pthread_mutex_lock(&worker_mutex);
    ucs_status_t st = ucx.ucp_worker_arm(g.worker);
    if (g.lock_worker) pthread_mutex_unlock(&worker_mutex);
    if (UCS_ERR_BUSY == st) return true;
    if (UCS_OK != st) {
        nanosleep(&ts, NULL);
        return false;
    }
    struct pollfd p = { .fd = g.efd, .events = POLLIN, .revents = 0 };
    return ppoll(&p, 1, &ts, NULL) > 0;
}

int braid_ucx_progress_now(void)
{
    if (!is_ready()) return 0;
    if (!g.lock_worker) return (int)ucx.ucp_worker_progress(g.worker);
    if (0 != pthread_mutex_trylock(&worker_mutex)) return 0;
    int n = (int)ucx.ucp_worker_progress(g.worker);
    pthread_mutex_unlock(&worker_mutex);
    return n;
}

static void close_endpoints(void)
{
    for (int i = 0; i < g.npeers; i++) {
        if (NULL != g.peers[i].ep) {
            ucp_request_param_t p;
            memset(&p, 0, sizeof(p));
            p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            p.flags = UCP_EP_CLOSE_FLAG_FORCE;
            worker_enter();
            void *req = ucx.ucp_ep_close_nbx(g.peers[i].ep, &p);
            worker_leave();
            if (UCS_PTR_IS_PTR(req)) wait_request(req, NULL);
            g.peers[i].ep = NULL;
        }
        free(g.peers[i].addr);
    }
    free(g.peers);
    g.peers = NULL;
    g.npeers = 0;
    free(g.peer_off_node);
    g.peer_off_node = NULL;
}

/* Called when no collective runs any more (MPI_Finalize or failed start):
 * takes no lock but the ones wait_request takes. */
void braid_ucx_finalize(void)
{
    if (!g.ready) {
        if (NULL != g.context) ucx.ucp_cleanup(g.context);
        g.context = NULL;
        return;
    }
    close_endpoints();
    ucx.ucp_worker_release_address(g.worker, g.local_addr);
    ucx.ucp_worker_destroy(g.worker);
    ucx.ucp_cleanup(g.context);
    memset(&g, 0, sizeof(g));
}

/* An endpoint is made when a communicator holding its process is enabled
 * (braid_ucx_comm_connect) or else by the first send to it. Two threads
 * may make it at once: one makes it under ep_mutex, the other finds it
 * made (one endpoint per peer, none leaked). */
/* an endpoint in UCP_ERR_HANDLING_MODE_PEER failed: its requests complete
 * with the error, later ones on it fail at once; the host's failure
 * detector says what failed (braid_fault_t). arg: the process index. */
static void ep_failed(void *arg, ucp_ep_h ep, ucs_status_t st)
{
    (void)ep;
    log_msg(10, "the endpoint to process %d failed: %s", (int)(intptr_t)arg, ucx.ucs_status_string(st));
}

static ucp_ep_h create_ep(braid_ucx_peer_t *p, int proc)
{
    if (g.mt) pthread_mutex_lock(&ep_mutex);
    ucp_ep_h ep = p->ep;
    if (NULL == ep) {
        ucp_ep_params_t ep_params;
        memset(&ep_params, 0, sizeof(ep_params));
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address = p->addr;
        if (g.cfg.peer_errors) {
            ep_params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
            ep_params.err_handler.cb = ep_failed;
            ep_params.err_handler.arg = (void *)(intptr_t)proc;
        }
        worker_enter();
        ucs_status_t st = ucx.ucp_ep_create(g.worker, &ep_params, &ep);
        worker_leave();
        if (UCS_OK != st) {
            log_msg(1, "ucp_ep_create to process %d failed: %s", proc, ucx.ucs_status_string(st));
            ep = NULL;
        } else {
            counter_add(&counters.endpoints, 1);
            if (proc != g.self && ++g.connected == g.npeers - 1 && g.self >= 0)
                __atomic_store_n(&g.all_connected, true, __ATOMIC_RELEASE);
        }
        /* published whole: a thread reading it unlocked sees NULL or a made endpoint */
        __atomic_store_n(&p->ep, ep, __ATOMIC_RELEASE);
    }
    if (g.mt) pthread_mutex_unlock(&ep_mutex);
    return ep;
}

static ucp_ep_h get_ep(int proc)
{
    if (proc < 0 || proc >= g.npeers) return NULL;
    braid_ucx_peer_t *p = &g.peers[proc];
    ucp_ep_h ep = __atomic_load_n(&p->ep, __ATOMIC_ACQUIRE);   /* a plain load on x86 */
    if (NULL != ep) return ep;
    if (NULL == p->addr) {
        log_msg(1, "no UCX address for process %d (its communicator never needed UCX)", proc);
        return NULL;
    }
    return create_ep(p, proc);
}

/* ------------------------------------------------------------------ */
/* per-communicator state and the transport ops                        */
/* ------------------------------------------------------------------ */

braid_ucx_comm_t *braid_ucx_comm_create(uint32_t cid, int rank, int size, const int *proc_index)
{
    if (cid > BRAID_TAG_MAX_CID || size < 1 || size > (int)BRAID_TAG_MAX_RANKS) return NULL;
    braid_ucx_comm_t *c = malloc(sizeof(*c) + (size_t)size * sizeof(int));
    if (NULL == c) return NULL;
    if (NULL != proc_index) memcpy(c->proc_index, proc_index, (size_t)size * sizeof(int));
    else memset(c->proc_index, 0, (size_t)size * sizeof(int));
    c->cid = cid;
    c->seq = 0;
    c->nb_seq = 0;
    c->rank = rank;
    c->size = size;
    c->fault = NULL;
    return c;
}

int *braid_ucx_comm_procs(braid_ucx_comm_t *c) { return c->proc_index; }

void braid_ucx_comm_set_fault(braid_ucx_comm_t *c, braid_fault_t *fault) { c->fault = fault; }

void braid_ucx_comm_destroy(braid_ucx_comm_t *c)
{
    free(c);
}

/* Endpoints are per process, shared by every communicator: once every
 * other process of the job has one, a new communicator costs one load
 * here. Otherwise its ranks are walked and the missing endpoints made
 * (ucp_ep_create is local for shared memory; for network transports it
 * starts the wire-up, which the worker's progress completes). */
int braid_ucx_comm_connect(braid_ucx_comm_t *c)
{
    if (!g.ready) return BRAID_ERR_TRANSPORT;
    if (__atomic_load_n(&g.all_connected, __ATOMIC_ACQUIRE)) return BRAID_OK;
    int rc = BRAID_OK;
    for (int r = 0; r < c->size; r++) {
        int proc = c->proc_index[r];
        if (r == c->rank || proc == g.self) continue;
        if (NULL == get_ep(proc)) rc = BRAID_ERR_TRANSPORT;
    }
    return rc;
}

uint32_t braid_ucx_comm_begin(braid_ucx_comm_t *c, bool nonblocking)
{
    if (nonblocking) {
        c->nb_seq = (c->nb_seq + 1) & BRAID_TAG_SEQ_CALL_MASK;
        return BRAID_TAG_SEQ_NONBLOCKING | c->nb_seq;
    }
    c->seq = (c->seq + 1) & BRAID_TAG_SEQ_CALL_MASK;
    return c->seq;
}

static int ucx_isend(void *state, uint32_t seq, int peer, braid_step_t step,
                     const void *buf, size_t len, braid_req_t *req)
{
    braid_ucx_comm_t *c = state;
    *req = NULL;
    if (peer < 0 || peer >= c->size) return BRAID_ERR_ARG;
    int proc = c->proc_index[peer];
    ucp_ep_h ep = get_ep(proc);
    if (NULL == ep) return BRAID_ERR_TRANSPORT;
    count_send(proc, len);
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    uint64_t tag = braid_tag_make(c->cid, seq, braid_tag_fold_step(step), (uint32_t)c->rank);
    hook_active();
    worker_enter();
    ucs_status_ptr_t r = ucx.ucp_tag_send_nbx(ep, buf, len, tag, &p);
    worker_leave();
    if (UCS_PTR_IS_ERR(r)) {
        log_msg(1, "ucp_tag_send_nbx to rank %d (%zu bytes) failed: %s", peer, len,
                ucx.ucs_status_string(UCS_PTR_STATUS(r)));
        return BRAID_ERR_TRANSPORT;
    }
    *req = (braid_req_t)r;
    return BRAID_OK;
}

static int ucx_irecv(void *state, uint32_t seq, int peer, braid_step_t step,
                     void *buf, size_t len, braid_req_t *req)
{
    braid_ucx_comm_t *c = state;
    *req = NULL;
    if (peer < 0 || peer >= c->size) return BRAID_ERR_ARG;
    ucp_request_param_t p;
    memset(&p, 0, sizeof(p));
    uint64_t tag = braid_tag_make(c->cid, seq, braid_tag_fold_step(step), (uint32_t)peer);
    hook_active();
    worker_enter();
    ucs_status_ptr_t r = ucx.ucp_tag_recv_nbx(g.worker, buf, len, tag, BRAID_TAG_FULL_MASK, &p);
    worker_leave();
    if (UCS_PTR_IS_ERR(r)) {
        log_msg(1, "ucp_tag_recv_nbx from rank %d (%zu bytes) failed: %s", peer, len,
                ucx.ucs_status_string(UCS_PTR_STATUS(r)));
        return BRAID_ERR_TRANSPORT;
    }
    *req = (braid_req_t)r;
    return BRAID_OK;
}

/* Every request of reqs[0..n) abandoned (the communicator failed) */
static int abandon_all(int n, braid_req_t *reqs, int rc)
{
    for (int i = 0; i < n; i++) {
        if (NULL == reqs[i]) continue;
        abandon(reqs[i]);
        reqs[i] = NULL;
    }
    return rc;
}

/* A request's wait: progress the worker once, complete what is done, and
 * give the thread back through y while anything is left (the request's
 * resumer polls). The communicator's failure state is looked at every
 * turn, asked of the host every 64th. */
static int yielding_waitall(braid_fault_t *fault, const braid_yield_t *y, int n,
                            braid_req_t *reqs)
{
    int rc = BRAID_OK;
    for (unsigned turn = 1;; turn++) {
        bool pending = false;
        worker_enter();
        ucx.ucp_worker_progress(g.worker);
        for (int i = 0; i < n; i++) {
            if (NULL == reqs[i]) continue;
            ucs_status_t st = ucx.ucp_request_check_status(reqs[i]);
            if (UCS_INPROGRESS == st) {
                pending = true;
                continue;
            }
            ucx.ucp_request_free(reqs[i]);
            reqs[i] = NULL;
            if (UCS_OK != st) {
                log_msg(1, "ucp request failed: %s", ucx.ucs_status_string(st));
                rc = BRAID_ERR_TRANSPORT;
            }
        }
        worker_leave();
        if (!pending) return rc;
        int frc;
        if (NULL != fault && BRAID_OK != (frc = braid_fault_poll(fault, 0 == (turn & 63))))
            return abandon_all(n, reqs, frc);
        if (y->due(y->arg, turn, yield_now())) y->now(y->arg);
    }
}

static int ucx_waitall(void *state, const braid_yield_t *y, int n, braid_req_t *reqs)
{
    braid_ucx_comm_t *c = state;
    int rc = BRAID_OK, frc;
    if (NULL != c->fault && BRAID_OK != (frc = braid_fault_poll(c->fault, false)))
        return abandon_all(n, reqs, frc);
    /* nothing to wait for (also where this process has no worker: a
     * shm algorithm's wait on the messages it did not need) */
    int live = 0;
    for (int i = 0; i < n; i++) live += NULL != reqs[i];
    if (0 == live) return BRAID_OK;
    if (NULL != y) return yielding_waitall(c->fault, y, n, reqs);
    if (g.mt) __atomic_fetch_add(&waiters, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < n; i++) {
        if (NULL == reqs[i]) continue;
        ucs_status_t st = wait_request(reqs[i], c->fault);
        reqs[i] = NULL;
        if (UCS_ERR_CANCELED == st && NULL != c->fault &&
            BRAID_OK != (frc = braid_fault_poll(c->fault, false))) {
            rc = abandon_all(n, reqs, frc);
            break;
        }
        if (UCS_OK != st) {
            log_msg(1, "ucp request failed: %s", ucx.ucs_status_string(st));
            rc = BRAID_ERR_TRANSPORT;
        }
    }
    if (g.mt) __atomic_fetch_sub(&waiters, 1, __ATOMIC_RELAXED);
    return rc;
}

const braid_transport_ops_t braid_ucx_ops = {
    .isend = ucx_isend,
    .irecv = ucx_irecv,
    .waitall = ucx_waitall,
};

void braid_ucx_comm_bind(braid_ucx_comm_t *c, braid_comm_t *out)
{
    memset(out, 0, sizeof(*out));
    out->ops = &braid_ucx_ops;
    out->state = c;
    out->rank = c->rank;
    out->size = c->size;
}
