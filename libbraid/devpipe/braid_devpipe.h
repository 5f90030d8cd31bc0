/*
 * braid_devpipe.h - running a host collective algorithm on buffers that may
 * live in device memory, segment by segment, through pinned host staging
 * slots, with the copies of neighbouring segments overlapping the host work.
 *
 * The device is reached only through braid_devops_t (async copies on two
 * in-order queues, events, a reduction), so the pipeline is pure C: the
 * component binds it to the CUDA driver (braid_cuda.c) and the unit tests to
 * a mock device that lives in host memory and completes copies late and out
 * of order between the queues (tests/unit/test_cuda_pipeline.c).
 *
 * Segment k of the buffers (seg_count elements) goes through staging slot
 * k % 3. While the host algorithm runs on segment k, the device-to-host copy
 * of segment k+1 and the host-to-device copy of segment k-1 are in flight:
 *
 *   queue D2H :  [in k+1 -> slot (k+1)%3]
 *   host      :                [algorithm on segment k, slot k%3]
 *   queue H2D :  [slot (k-1)%3 -> out k-1]
 *
 * A slot is reused (segment k+3) only after its host-to-device copy has
 * completed; the algorithm starts on a slot only after its device-to-host
 * copy has completed.
 *
 * Every rank cuts the buffers into the same segments (seg_count comes from
 * the message length only) and runs the algorithm once per segment, so the
 * message pattern does not depend on where any rank's buffers live: a rank
 * with host buffers runs the same segments on its own memory, with no copy.
 *
 * A device error does not stop the segment loop (the peers would wait for
 * this rank's messages forever): device work stops, the remaining segments
 * still run on whatever the slots hold, and the device error is returned at
 * the end. An error of the algorithm itself (transport) stops at once.
 */
#ifndef BRAID_DEVPIPE_H
#define BRAID_DEVPIPE_H

#include <stdbool.h>
#include <stddef.h>

#include "braid_algo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Queues of a device: each executes its work in submission order; the two
 * run concurrently with each other and with the host. */
#define BRAID_DEV_Q_D2H 0
#define BRAID_DEV_Q_H2D 1

#define BRAID_DEVPIPE_SLOTS 3
/* events: slot s's device-to-host copy done = s, host-to-device done = 3 + s */
#define BRAID_DEV_NEVENTS (2 * BRAID_DEVPIPE_SLOTS)

/* A device as the pipeline sees it. Every call returns a BRAID_* code
 * (BRAID_ERR_DEVICE on a device failure, logged by the implementation). */
typedef struct braid_devops {
    /* copy len bytes on `queue`: BRAID_DEV_Q_D2H copies device src to host
     * dst, BRAID_DEV_Q_H2D host src to device dst; returns at once */
    int (*copy_async)(void *ctx, int queue, void *dst, const void *src, size_t len);
    /* mark the current end of `queue` with event `event` (< BRAID_DEV_NEVENTS) */
    int (*record)(void *ctx, int queue, int event);
    /* block the host until the work before the event's last record is done */
    int (*wait)(void *ctx, int event);
    /* inout[i] = in[i] op inout[i] on device memory, in queue order;
     * ktype/kop are braid_ktype_t/braid_kop_t (braid_kernels.h) */
    int (*reduce)(void *ctx, int queue, const void *in, void *inout, size_t count, int ktype,
                  int kop);
    /* page-locked host memory for the staging slots; NULL = none (the
     * pipeline then uses malloc'ed memory, which still works, slower) */
    void *(*host_alloc)(void *ctx, size_t len);
    void (*host_free)(void *ctx, void *p);
} braid_devops_t;

typedef struct braid_device {
    const braid_devops_t *ops;
    void *ctx;
} braid_device_t;

/* Staging slots, kept across calls (one per communicator). Zero-initialise. */
typedef struct braid_devpipe {
    void *slot[BRAID_DEVPIPE_SLOTS];
    bool pinned[BRAID_DEVPIPE_SLOTS];   /* from host_alloc (else malloc) */
    size_t slot_len;
    braid_device_t owner;               /* the device that allocated them */
} braid_devpipe_t;

void braid_devpipe_release(braid_devpipe_t *p);

typedef enum {
    BRAID_DEVPIPE_ALLREDUCE,   /* args: sbuf = in (NULL when in == out), rbuf = out */
    BRAID_DEVPIPE_REDUCE,      /* same; out is NULL on non-roots */
    BRAID_DEVPIPE_BCAST        /* args: rbuf = in on the root, out elsewhere */
} braid_devpipe_kind_t;

typedef struct braid_devpipe_job {
    braid_devpipe_kind_t kind;
    const void *in;      /* this rank's input (NULL: none, e.g. a bcast non-root) */
    bool in_dev;         /* in is device memory */
    void *out;           /* this rank's output (NULL: none); out == in: in place */
    bool out_dev;
    /* op, exact, root, scratch, params, esize; count = elements in total */
    braid_coll_args_t tmpl;
    size_t seg_count;    /* elements per segment; 0 or >= count: one segment */
    /* the algorithm, run once per segment on comm with the template's
     * sbuf, rbuf and count set for the segment */
    braid_algo_fn_t fn;
    braid_comm_t *comm;
} braid_devpipe_job_t;

/* Point a->sbuf and a->rbuf at host buffers in and out as a job of this
 * kind passes them to the algorithm (in == out: in place). */
void braid_devpipe_bind(braid_devpipe_kind_t kind, const void *in, void *out, braid_coll_args_t *a);

/* Run job segment by segment. dev may be NULL when neither buffer is on the
 * device. Returns the algorithm's first error, else the first device error,
 * else BRAID_OK; BRAID_ERR_ARG, before any message, when a buffer the kind
 * needs is NULL (allreduce: in and out; reduce: in; bcast: in or out). */
int braid_devpipe_run(braid_devpipe_t *p, const braid_device_t *dev,
                      const braid_devpipe_job_t *job);

/* Elements per segment for a message of count elements of type_size bytes
 * cut into segments of about seg_bytes (0 = no segmentation). Depends on its
 * arguments only, so it is the same on every rank. */
size_t braid_devpipe_seg_count(size_t count, size_t type_size, size_t seg_bytes);

#ifdef __cplusplus
}
#endif
#endif /* BRAID_DEVPIPE_H */
