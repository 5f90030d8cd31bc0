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
 */
#ifndef MOCK_DEVICE_H
#define MOCK_DEVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "braid_devpipe.h"
#include "braid_kernels.h"

typedef enum { MOCK_LAZY, MOCK_RANDOM, MOCK_EAGER } mock_mode_t;
typedef enum { MOCK_T_D2H, MOCK_T_H2D, MOCK_T_STEP_START, MOCK_T_STEP_END, MOCK_T_DONE_H2D,
               MOCK_T_DONE_D2H } mock_trace_kind_t;

#define MOCK_QLEN 4096
#define MOCK_MAX_REGIONS 32
#define MOCK_MAX_TRACE 8192

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
    struct { char *p; size_t len; } dev[MOCK_MAX_REGIONS];
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

/* "device memory": host memory the mock knows as device */
static inline void *mock_dev_alloc(mock_dev_t *d, size_t len)
{
    char *p = malloc(len ? len : 1);
    if (p && d->ndev < MOCK_MAX_REGIONS) {
        d->dev[d->ndev].p = p;
        d->dev[d->ndev].len = len;
        d->ndev++;
    }
    return p;
}

static inline bool mock_is_dev(const mock_dev_t *d, const void *p, size_t len)
{
    for (int i = 0; i < d->ndev; i++)
        if ((const char *)p >= d->dev[i].p && (const char *)p + len <= d->dev[i].p + d->dev[i].len)
            return true;
    return false;
}

static inline void mock_dev_free_all(mock_dev_t *d)
{
    for (int i = 0; i < d->ndev; i++) free(d->dev[i].p);
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
        memcpy(it->dst, it->src, it->len);
        mock_log(d, q == BRAID_DEV_Q_D2H ? MOCK_T_DONE_D2H : MOCK_T_DONE_H2D,
                 q == BRAID_DEV_Q_D2H ? it->src : it->dst, 0);
    } else if (2 == it->kind) {
        braid_kernel_fn_t k = braid_kernel_lookup((braid_ktype_t)it->ktype, (braid_kop_t)it->kop);
        if (k) k(it->src, it->dst, it->len);
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
    bool ok_dir = BRAID_DEV_Q_D2H == queue ? mock_is_dev(d, src, len) && !mock_is_dev(d, dst, len)
                                           : mock_is_dev(d, dst, len) && !mock_is_dev(d, src, len);
    if (!ok_dir) d->bad_copies++;
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
