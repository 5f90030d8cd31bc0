/*
 * mock_device.h - a braid_devops_t device that lives in host memory, for
 * testing the staging pipeline without a GPU.
 *
 * Like a CUDA device it has two in-order queues; work submitted to them is
 * NOT done at submission: it runs later, when the host waits for an event,
 * or at random moments (each queue in order, the two queues in any order
 * relative to each other), depending on the mode:
 *   MOCK_LAZY    work runs only when a wait forces it (maximal delay);
 *   MOCK_RANDOM  each device call also runs 0-3 queued items of a random
 *                queue (seeded, reproducible);
 *   MOCK_EAGER   work runs at once (the order a synchronous device gives).
 * A pipeline that forgets a wait therefore reads stale data (values go
 * wrong) and the mock also counts the mistakes directly:
 *   hazards      a copy submitted while a copy on the other queue that is
 *                still queued touches the same bytes (one of them writing);
 *   host_hazards the host touches bytes a queued copy still reads or writes
 *                (mock_host_access, called by the test before each step);
 *   bad_copies   a copy whose direction does not match its queue;
 *   bad_waits    a wait on an event never recorded;
 *   rerecords    an event recorded again before the host waited for it.
 * Every submission and step is written to a trace for ordering checks.
 *
 * Its device memory is, as a GPU's, out of the host's reach: the addresses
 * handed out are mapped PROT_NONE (a host access faults, as dereferencing a
 * real device pointer does) and the bytes live in a backing buffer that
 * only the mock's queues and the test (mock_dev_host) touch. A copy from or
 * to NULL, or whose device side is not device memory, fails at submission
 * (CUDA_ERROR_INVALID_VALUE from cuMemcpy*Async on the real driver).
 */
#ifndef MOCK_DEVICE_H
#define MOCK_DEVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "braid_devpipe.h"
#include "braid_kernels.h"

typedef enum { MOCK_LAZY, MOCK_RANDOM, MOCK_EAGER } mock_mode_t;
typedef enum { MOCK_T_D2H, MOCK_T_H2D, MOCK_T_STEP_START, MOCK_T_STEP_END, MOCK_T_DONE_H2D,
               MOCK_T_DONE_D2H } mock_trace_kind_t;

#define MOCK_QLEN 4096
#define MOCK_MAX_REGIONS 32
#define MOCK_MAX_TRACE 8192

/* ---- device memory the host cannot touch ---- */

typedef struct mock_mem {
    char *addr;      /* what the code under test sees: PROT_NONE */
    char *backing;   /* the bytes */
    size_t len, map_len;
} mock_mem_t;

static inline bool mock_mem_new(mock_mem_t *m, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    memset(m, 0, sizeof(*m));
    m->len = len;
    m->map_len = (len + page) / page * page;   /* at least one page past the end */
    void *a = mmap(NULL, m->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    m->backing = calloc(1, len ? len : 1);     /* fresh device memory reads as zeros */
    if (MAP_FAILED == a || NULL == m->backing) {
        if (MAP_FAILED != a) munmap(a, m->map_len);
        free(m->backing);
        memset(m, 0, sizeof(*m));
        return false;
    }
    m->addr = a;
    return true;
}

static inline void mock_mem_delete(mock_mem_t *m)
{
    if (NULL != m->addr) munmap(m->addr, m->map_len);
    free(m->backing);
    memset(m, 0, sizeof(*m));
}

static inline bool mock_mem_holds(const mock_mem_t *m, const void *p, size_t len)
{
    const char *c = p;
    return NULL != m->addr && c >= m->addr && c <= m->addr + m->len && len <= (size_t)(m->addr + m->len - c);
}

typedef struct mock_item {
    int kind;            /* 0 copy, 1 record, 2 reduce */
    void *dst;
    const void *src;
    size_t len;
    int event;
    int ktype, kop;
} mock_item_t;

typedef struct mock_trace {
    mock_trace_kind_t kind;
    const void *ptr;     /* copies: the device-side address */
    long seg;            /* steps: the segment */
} mock_trace_t;

typedef struct mock_dev {
    mock_mode_t mode;
    unsigned rng;
    mock_item_t q[2][MOCK_QLEN];
    long submitted[2], executed[2];
    int ev_queue[BRAID_DEV_NEVENTS];
    long ev_pos[BRAID_DEV_NEVENTS];      /* absolute index of its record item */
    bool ev_recorded[BRAID_DEV_NEVENTS];
    bool ev_outstanding[BRAID_DEV_NEVENTS];
    mock_mem_t dev[MOCK_MAX_REGIONS];
    int ndev;
    int hazards, host_hazards, bad_copies, bad_waits, rerecords;
    int ncopies, nwaits, host_allocs, host_frees;
    int fail_copy_at, fail_wait_at;      /* 1-based; 0 = never */
    bool fail_host_alloc;
    mock_trace_t trace[MOCK_MAX_TRACE];
    int ntrace;
} mock_dev_t;

static inline void mock_init(mock_dev_t *d, mock_mode_t mode, unsigned seed)
{
    memset(d, 0, sizeof(*d));
    d->mode = mode;
    d->rng = seed * 2654435761u + 1u;
}

static inline void mock_log(mock_dev_t *d, mock_trace_kind_t k, const void *p, long seg)
{
    if (d->ntrace < MOCK_MAX_TRACE) d->trace[d->ntrace++] = (mock_trace_t){ k, p, seg };
}

/* "device memory": NULL when out of regions or memory */
static inline void *mock_dev_alloc(mock_dev_t *d, size_t len)
{
    if (d->ndev >= MOCK_MAX_REGIONS || !mock_mem_new(&d->dev[d->ndev], len)) return NULL;
    return d->dev[d->ndev++].addr;
}

static inline bool mock_is_dev(const mock_dev_t *d, const void *p, size_t len)
{
    for (int i = 0; i < d->ndev; i++)
        if (mock_mem_holds(&d->dev[i], p, len)) return true;
    return false;
}

/* Where the bytes at p really are: the backing of device memory, else p. */
static inline void *mock_dev_host(const mock_dev_t *d, const void *p)
{
    for (int i = 0; i < d->ndev; i++)
        if (mock_mem_holds(&d->dev[i], p, 0)) return d->dev[i].backing + ((const char *)p - d->dev[i].addr);
    return (void *)p;
}

static inline void mock_dev_free_all(mock_dev_t *d)
{
    for (int i = 0; i < d->ndev; i++) mock_mem_delete(&d->dev[i]);
    d->ndev = 0;
}

static inline bool mock_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    if (NULL == a || NULL == b || 0 == alen || 0 == blen) return false;
    const char *x = a, *y = b;
    return x < y + blen && y < x + alen;
}

static inline unsigned mock_rand(mock_dev_t *d)
{
    d->rng = d->rng * 1103515245u + 12345u;
    return (d->rng >> 16) & 0x7fff;
}

static inline void mock_execute_one(mock_dev_t *d, int q)
{
    if (d->executed[q] >= d->submitted[q]) return;
    mock_item_t *it = &d->q[q][d->executed[q] % MOCK_QLEN];
    if (0 == it->kind) {
        memcpy(mock_dev_host(d, it->dst), mock_dev_host(d, it->src), it->len);
        mock_log(d, q == BRAID_DEV_Q_D2H ? MOCK_T_DONE_D2H : MOCK_T_DONE_H2D,
                 q == BRAID_DEV_Q_D2H ? it->src : it->dst, 0);
    } else if (2 == it->kind) {
        braid_kernel_fn_t k = braid_kernel_lookup((braid_ktype_t)it->ktype, (braid_kop_t)it->kop);
        if (k) k(mock_dev_host(d, it->src), mock_dev_host(d, it->dst), it->len);
    }
    d->executed[q]++;
}

/* the device makes progress on its own (RANDOM mode) */
static inline void mock_background(mock_dev_t *d)
{
    if (MOCK_RANDOM != d->mode) return;
    int q = (int)(mock_rand(d) & 1), n = (int)(mock_rand(d) % 4);
    for (int i = 0; i < n; i++) mock_execute_one(d, q);
}

static inline long mock_pending(const mock_dev_t *d)
{
    return (d->submitted[0] - d->executed[0]) + (d->submitted[1] - d->executed[1]);
}

static inline void mock_push(mock_dev_t *d, int q, mock_item_t it)
{
    d->q[q][d->submitted[q] % MOCK_QLEN] = it;
    d->submitted[q]++;
    if (MOCK_EAGER == d->mode) mock_execute_one(d, q);
}

/* the host reads (or writes) [p, p+len): nothing queued may touch it */
static inline void mock_host_access(mock_dev_t *d, const void *p, size_t len, bool write)
{
    for (int q = 0; q < 2; q++)
        for (long i = d->executed[q]; i < d->submitted[q]; i++) {
            const mock_item_t *it = &d->q[q][i % MOCK_QLEN];
            if (0 != it->kind) continue;
            if (mock_overlap(p, len, it->dst, it->len) ||
                (write && mock_overlap(p, len, it->src, it->len)))
                d->host_hazards++;
        }
}

/* ---- braid_devops_t ---- */

static int mock_copy_async(void *ctx, int queue, void *dst, const void *src, size_t len)
{
    mock_dev_t *d = ctx;
    mock_background(d);
    if (d->fail_copy_at && ++d->ncopies == d->fail_copy_at) return BRAID_ERR_DEVICE;
    const void *dev_side = BRAID_DEV_Q_D2H == queue ? src : dst;
    const void *host_side = BRAID_DEV_Q_D2H == queue ? dst : src;
    if (NULL == dst || NULL == src || !mock_is_dev(d, dev_side, len)) {
        d->bad_copies++;
        return BRAID_ERR_DEVICE;   /* the driver refuses it: invalid argument */
    }
    if (mock_is_dev(d, host_side, len)) d->bad_copies++;
    int other = 1 - queue;
    for (long i = d->executed[other]; i < d->submitted[other]; i++) {
        const mock_item_t *it = &d->q[other][i % MOCK_QLEN];
        if (0 == it->kind &&
            (mock_overlap(dst, len, it->dst, it->len) || mock_overlap(dst, len, it->src, it->len) ||
             mock_overlap(src, len, it->dst, it->len)))
            d->hazards++;
    }
    mock_log(d, BRAID_DEV_Q_D2H == queue ? MOCK_T_D2H : MOCK_T_H2D,
             BRAID_DEV_Q_D2H == queue ? src : dst, 0);
    mock_push(d, queue, (mock_item_t){ .kind = 0, .dst = dst, .src = src, .len = len });
    return BRAID_OK;
}

static int mock_record(void *ctx, int queue, int event)
{
    mock_dev_t *d = ctx;
    mock_background(d);
    if (d->ev_outstanding[event]) d->rerecords++;
    d->ev_queue[event] = queue;
    d->ev_pos[event] = d->submitted[queue];
    d->ev_recorded[event] = true;
    d->ev_outstanding[event] = true;
    mock_push(d, queue, (mock_item_t){ .kind = 1, .event = event });
    return BRAID_OK;
}

static int mock_wait(void *ctx, int event)
{
    mock_dev_t *d = ctx;
    mock_background(d);
    if (!d->ev_recorded[event]) {
        d->bad_waits++;
        return BRAID_OK;
    }
    int q = d->ev_queue[event];
    while (d->executed[q] <= d->ev_pos[event]) mock_execute_one(d, q);
    d->ev_outstanding[event] = false;
    /* an injected failure is reported after the work is done */
    if (d->fail_wait_at && ++d->nwaits == d->fail_wait_at) return BRAID_ERR_DEVICE;
    return BRAID_OK;
}

static int mock_reduce(void *ctx, int queue, const void *in, void *inout, size_t count, int ktype,
                       int kop)
{
    mock_dev_t *d = ctx;
    mock_background(d);
    if (NULL == braid_kernel_lookup((braid_ktype_t)ktype, (braid_kop_t)kop))
        return BRAID_ERR_UNSUPPORTED;
    mock_push(d, queue, (mock_item_t){ .kind = 2, .dst = inout, .src = in, .len = count,
                                       .ktype = ktype, .kop = kop });
    return BRAID_OK;
}

static void *mock_host_alloc(void *ctx, size_t len)
{
    mock_dev_t *d = ctx;
    if (d->fail_host_alloc) return NULL;
    d->host_allocs++;
    return malloc(len);
}

static void mock_host_free(void *ctx, void *p)
{
    mock_dev_t *d = ctx;
    d->host_frees++;
    free(p);
}

static const braid_devops_t mock_devops = {
    .copy_async = mock_copy_async,
    .record = mock_record,
    .wait = mock_wait,
    .reduce = mock_reduce,
    .host_alloc = mock_host_alloc,
    .host_free = mock_host_free,
};

#endif /* MOCK_DEVICE_H */
