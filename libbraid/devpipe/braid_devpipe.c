/*
 * braid_devpipe.c - see braid_devpipe.h.
 */
#include "braid_devpipe.h"

#include <stdlib.h>

#define EV_D2H(s) (s)
#define EV_H2D(s) (BRAID_DEVPIPE_SLOTS + (s))

void braid_devpipe_release(braid_devpipe_t *p)
{
    for (int s = 0; s < BRAID_DEVPIPE_SLOTS; s++) {
        if (NULL == p->slot[s]) continue;
        if (p->pinned[s]) p->owner.ops->host_free(p->owner.ctx, p->slot[s]);
        else free(p->slot[s]);
        p->slot[s] = NULL;
        p->pinned[s] = false;
    }
    p->slot_len = 0;
}

size_t braid_devpipe_seg_count(size_t count, size_t type_size, size_t seg_bytes)
{
    if (0 == seg_bytes || 0 == type_size || count * type_size <= seg_bytes) return count;
    size_t n = seg_bytes / type_size;
    return n > 0 ? n : 1;
}

void braid_devpipe_bind(braid_devpipe_kind_t kind, const void *in, void *out, braid_coll_args_t *a)
{
    if (BRAID_DEVPIPE_BCAST == kind) {
        a->sbuf = NULL;
        a->rbuf = NULL != in ? (void *)in : out;
    } else {
        a->sbuf = (in == out) ? NULL : in;
        a->rbuf = out;
    }
}

/* Slots of at least len bytes, allocated by dev (pinned) when it can. */
static int ensure_slots(braid_devpipe_t *p, const braid_device_t *dev, size_t len)
{
    if (p->slot_len >= len && NULL != p->slot[0] &&
        (p->owner.ops == dev->ops && p->owner.ctx == dev->ctx))
        return BRAID_OK;
    braid_devpipe_release(p);
    p->owner = *dev;
    for (int s = 0; s < BRAID_DEVPIPE_SLOTS; s++) {
        p->slot[s] = dev->ops->host_alloc ? dev->ops->host_alloc(dev->ctx, len) : NULL;
        p->pinned[s] = NULL != p->slot[s];
        if (NULL == p->slot[s]) p->slot[s] = malloc(len);
        if (NULL == p->slot[s]) {
            braid_devpipe_release(p);
            return BRAID_ERR_NOMEM;
        }
    }
    p->slot_len = len;
    return BRAID_OK;
}

/* Per-call state of the pipeline. */
typedef struct pipe_run {
    braid_devpipe_t *p;
    const braid_device_t *dev;
    const braid_devpipe_job_t *job;
    size_t seg, nseg, es;
    bool pending[BRAID_DEV_NEVENTS];   /* recorded, not yet waited */
    int dev_rc;                        /* first device error; stops device work */
} pipe_run_t;

static void seg_range(const pipe_run_t *r, size_t k, size_t *off, size_t *n)
{
    *off = k * r->seg;
    *n = r->job->tmpl.count - *off < r->seg ? r->job->tmpl.count - *off : r->seg;
}

static void dev_fail(pipe_run_t *r, int rc)
{
    if (BRAID_OK == r->dev_rc) r->dev_rc = rc;
}

static void wait_event(pipe_run_t *r, int ev)
{
    if (!r->pending[ev]) return;
    r->pending[ev] = false;
    /* waited even after a device error: nothing may stay in flight */
    int rc = r->dev->ops->wait(r->dev->ctx, ev);
    if (BRAID_OK != rc) dev_fail(r, rc);
}

/* Queue the device-to-host copy of segment k into its slot. */
static void submit_in(pipe_run_t *r, size_t k)
{
    int s = (int)(k % BRAID_DEVPIPE_SLOTS);
    size_t off, n;
    seg_range(r, k, &off, &n);
    wait_event(r, EV_H2D(s));          /* the slot's previous segment is out */
    if (BRAID_OK != r->dev_rc) return;
    const char *src = (const char *)r->job->in + off * r->es;
    int rc = r->dev->ops->copy_async(r->dev->ctx, BRAID_DEV_Q_D2H, r->p->slot[s], src, n * r->es);
    if (BRAID_OK == rc) rc = r->dev->ops->record(r->dev->ctx, BRAID_DEV_Q_D2H, EV_D2H(s));
    if (BRAID_OK == rc) r->pending[EV_D2H(s)] = true;
    else dev_fail(r, rc);
}

/* Queue the host-to-device copy of segment k out of its slot. */
static void submit_out(pipe_run_t *r, size_t k)
{
    int s = (int)(k % BRAID_DEVPIPE_SLOTS);
    size_t off, n;
    seg_range(r, k, &off, &n);
    if (BRAID_OK != r->dev_rc) return;
    char *dst = (char *)r->job->out + off * r->es;
    int rc = r->dev->ops->copy_async(r->dev->ctx, BRAID_DEV_Q_H2D, dst, r->p->slot[s], n * r->es);
    if (BRAID_OK == rc) rc = r->dev->ops->record(r->dev->ctx, BRAID_DEV_Q_H2D, EV_H2D(s));
    if (BRAID_OK == rc) r->pending[EV_H2D(s)] = true;
    else dev_fail(r, rc);
}

/* The algorithm's arguments for segment k, its host views of in and out. */
static braid_coll_args_t segment_args(const pipe_run_t *r, size_t k)
{
    const braid_devpipe_job_t *j = r->job;
    int s = (int)(k % BRAID_DEVPIPE_SLOTS);
    size_t off, n;
    seg_range(r, k, &off, &n);
    char *slot = r->p ? r->p->slot[s] : NULL;
    const char *hin = NULL;
    char *hout = NULL;
    if (NULL != j->in) hin = j->in_dev ? slot : (const char *)j->in + off * r->es;
    if (NULL != j->out) hout = j->out_dev ? slot : (char *)j->out + off * r->es;
    braid_coll_args_t a = j->tmpl;
    a.count = n;
    braid_devpipe_bind(j->kind, hin, hout, &a);
    return a;
}

/* The buffers the job's kind needs: every rank of an allreduce or a reduce
 * has an input, every rank of an allreduce an output, every rank of a bcast
 * one or the other. A missing one (a failed device allocation) must not
 * count as "none": the algorithm would write through NULL. */
static bool has_buffers(const braid_devpipe_job_t *j)
{
    switch (j->kind) {
    case BRAID_DEVPIPE_ALLREDUCE: return NULL != j->in && NULL != j->out;
    case BRAID_DEVPIPE_REDUCE: return NULL != j->in;
    case BRAID_DEVPIPE_BCAST: return NULL != j->in || NULL != j->out;
    }
    return false;
}

int braid_devpipe_run(braid_devpipe_t *p, const braid_device_t *dev,
                      const braid_devpipe_job_t *job)
{
    const braid_devpipe_job_t *j = job;
    if (j->tmpl.count > 0 && !has_buffers(j)) return BRAID_ERR_ARG;
    bool in_dev = NULL != j->in && j->in_dev, out_dev = NULL != j->out && j->out_dev;
    pipe_run_t r = { .p = p, .dev = dev, .job = job, .es = j->tmpl.esize, .dev_rc = BRAID_OK };
    size_t count = j->tmpl.count;
    r.seg = (0 == j->seg_count || j->seg_count >= count) ? count : j->seg_count;
    r.nseg = r.seg ? (count + r.seg - 1) / r.seg : 0;
    if (0 == r.nseg) return BRAID_OK;
    if (in_dev || out_dev) {
        if (NULL == dev || NULL == p) return BRAID_ERR_ARG;
        int rc = ensure_slots(p, dev, r.seg * r.es);
        if (BRAID_OK != rc) return rc;
    } else {
        r.p = NULL;
    }

    int rc = BRAID_OK;
    if (in_dev) submit_in(&r, 0);
    for (size_t k = 0; k < r.nseg && BRAID_OK == rc; k++) {
        int s = (int)(k % BRAID_DEVPIPE_SLOTS);
        if (in_dev && k + 1 < r.nseg) submit_in(&r, k + 1);    /* overlaps this step */
        if (in_dev) wait_event(&r, EV_D2H(s));
        if (out_dev) wait_event(&r, EV_H2D(s));                /* slot free to write */
        braid_coll_args_t a = segment_args(&r, k);
        rc = j->fn(j->comm, &a);
        if (BRAID_OK == rc && out_dev) submit_out(&r, k);      /* overlaps the next step */
    }
    /* drain: nothing in flight touches the slots or the user's buffers */
    for (int ev = 0; ev < BRAID_DEV_NEVENTS; ev++) wait_event(&r, ev);
    return BRAID_OK != rc ? rc : r.dev_rc;
}
