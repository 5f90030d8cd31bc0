/*
 * coll_braid_cuda.c - device (CUDA) buffers in the glue: detect them, run
 * an algorithm segment by segment through the staging pipeline
 * (libbraid/devpipe/braid_devpipe.h) for the dispatch, give the previous
 * module host copies when braid hands a call on, and run a request on
 * host copies of its device buffers.
 *
 * Rank consistency: whether and how a message is cut into segments depends
 * only on the message length, coll_braid_cuda_segment_size and
 * mca_coll_braid_component.cuda_job (whether any process of the job could
 * load the CUDA driver; agreed at start-up over MPI_COMM_WORLD). Where a
 * rank's buffers live changes only what that rank copies, never the
 * messages, so host and device buffers mix freely across ranks.
 *
 * Without CUDA (configure --without-cuda, or no nvcc) every buffer is host
 * memory and nothing is cut into segments.
 */
#include "coll_braid_cuda.h"
#include "coll_braid_component.h"
#include "coll_braid_datatype.h"
#include "coll_braid_log.h"
#include "coll_braid_module.h"
#include "coll_braid_request.h"

#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"
#include "ompi/datatype/ompi_datatype.h"

#ifdef BRAID_HAVE_CUDA
#include "braid_cuda.h"
#endif

static inline mca_coll_braid_component_t *cmp(void) { return &mca_coll_braid_component; }

void mca_coll_braid_cuda_release(mca_coll_braid_module_t *m)
{
#ifdef BRAID_HAVE_CUDA
    braid_cuda_stage_release(m->cuda);
#endif
    m->cuda = NULL;
}

bool mca_coll_braid_cuda_probe(void)
{
    if (0 == cmp()->cuda_enable) return false;
#ifdef BRAID_HAVE_CUDA
    braid_cuda_set_log(mca_coll_braid_log);
#endif
    if (2 == cmp()->cuda_enable) return true;   /* tests: segment as in a GPU job */
#ifdef BRAID_HAVE_CUDA
    return braid_cuda_driver_present();
#else
    return false;
#endif
}

bool mca_coll_braid_is_cuda_memory(const void *p)
{
#ifdef BRAID_HAVE_CUDA
    if (NULL == p || MPI_IN_PLACE == p || !cmp()->cuda_job) return false;
    return braid_cuda_is_cuda_memory(p);
#else
    (void)p;
    return false;
#endif
}

bool mca_coll_braid_device_ptr(const void *p)
{
#ifdef BRAID_HAVE_CUDA
    if (NULL == p || MPI_IN_PLACE == p || !cmp()->cuda_job) return false;
    return braid_cuda_is_device_ptr(p);
#else
    (void)p;
    return false;
#endif
}

/* ------------------------------------------------------------------ */
/* Segmented runs                                                       */
/* ------------------------------------------------------------------ */

#ifdef BRAID_HAVE_CUDA
/* Device buffers: stage through pinned slots on this rank's device. With no
 * device to copy with, still take part with placeholder host memory, so
 * that the other ranks' messages are matched, then report the error. */
static int run_device(mca_coll_braid_module_t *m, braid_coll_t coll, braid_devpipe_job_t *job)
{
    bool ran;
    if (cmp()->verbose >= 20)
        opal_output(0, "braid: cuda: %s on rank %d: device in=%d out=%d, %zu-element segments "
                    "staged through pinned host memory", braid_coll_name(coll), m->bcomm.rank,
                    (int)job->in_dev, (int)job->out_dev, job->seg_count);
    int rc = braid_cuda_stage_run((braid_cuda_stage_t **)&m->cuda, job, &ran);
    if (ran) return rc;
    void *tmp = braid_scratch_get(&m->site.scratch, BRAID_SCRATCH_GLUE_OUT,
                                  job->tmpl.count * job->tmpl.esize + 1);
    if (NULL == tmp) return rc;
    if (job->in_dev) job->in = tmp;
    if (job->out_dev) job->out = tmp;
    job->in_dev = job->out_dev = false;
    int rc2 = braid_devpipe_run(NULL, NULL, job);
    return BRAID_OK != rc2 ? rc2 : rc;
}
#endif

int mca_coll_braid_cuda_run(void *arg, braid_comm_t *view, braid_algo_fn_t fn,
                            const braid_call_t *call, size_t seg_count)
{
    mca_coll_braid_module_t *m = arg;
    braid_devpipe_job_t job = {
        .kind = call->kind, .in = call->in, .in_dev = call->in_dev, .out = call->out,
        .out_dev = call->out_dev, .tmpl = call->args, .seg_count = seg_count, .fn = fn,
        .comm = view,
    };
    if (!job.in_dev && !job.out_dev) return braid_devpipe_run(NULL, NULL, &job);
#ifdef BRAID_HAVE_CUDA
    return run_device(m, call->coll, &job);
#else
    (void)m;
    return BRAID_ERR_ARG;   /* unreachable: no device buffers without CUDA */
#endif
}

/* ------------------------------------------------------------------ */
/* Synchronous copies and host shadows                                  */
/* ------------------------------------------------------------------ */

int mca_coll_braid_copy(void *dst, const void *src, size_t len, bool device)
{
    if (0 == len) return BRAID_OK;
#ifdef BRAID_HAVE_CUDA
    if (device) return braid_cuda_memcpy(dst, src, len);
#endif
    (void)device;
    memcpy(dst, src, len);
    return BRAID_OK;
}

/* A host copy of count elements of dtype at user buffer buf (the bytes from
 * its first to its last byte, holes included). */
typedef struct shadow {
    void *user;
    char *mem;
    ptrdiff_t true_lb;
    size_t span;
} shadow_t;

static size_t span_of(MPI_Datatype dtype, size_t count, ptrdiff_t *true_lb)
{
    ptrdiff_t lb, extent, tlb, text;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &tlb, &text);
    *true_lb = tlb;
    return count ? (count - 1) * (size_t)extent + (size_t)text : 0;
}

/* Returns the host address to use in place of buf (NULL on failure); the
 * copy holds buf's bytes when fill, else whatever malloc gave. */
static void *shadow_open(shadow_t *s, void *buf, size_t count, MPI_Datatype dtype, bool fill)
{
    s->user = buf;
    s->span = span_of(dtype, count, &s->true_lb);
    s->mem = malloc(s->span ? s->span : 1);
    if (NULL == s->mem) return NULL;
    if (fill &&
        BRAID_OK != mca_coll_braid_copy(s->mem, (char *)buf + s->true_lb, s->span, true)) {
        free(s->mem);
        s->mem = NULL;
        return NULL;
    }
    return s->mem - s->true_lb;
}

static int shadow_close(shadow_t *s, bool copy_back)
{
    int rc = BRAID_OK;
    if (NULL == s->mem) return rc;
    if (copy_back) rc = mca_coll_braid_copy((char *)s->user + s->true_lb, s->mem, s->span, true);
    free(s->mem);
    s->mem = NULL;
    return rc;
}

/* Host stand-ins for the device buffers of one call: a send buffer read
 * whole from the device, a receive buffer filled from it only when the call
 * reads it (rfill: in place, or holes of a datatype to keep) and written
 * back whole when the call succeeded. Synchronous and not pipelined: the
 * paths braid stages segment by segment (allreduce, reduce, bcast) do not
 * come here. */
struct mca_coll_braid_host_copies {
    shadow_t send, recv;
};

int mca_coll_braid_host_copies_make(mca_coll_braid_host_copies_t **hc, const void **sbuf,
                                    size_t scount, MPI_Datatype sdtype, void **rbuf,
                                    size_t rcount, MPI_Datatype rdtype, bool rfill)
{
    bool sdev = mca_coll_braid_is_device(*sbuf), rdev = NULL != rbuf && mca_coll_braid_is_device(*rbuf);
    *hc = NULL;
    if (!sdev && !rdev) return MPI_SUCCESS;
    if (NULL == (*hc = calloc(1, sizeof(**hc)))) return MPI_ERR_NO_MEM;
    if (sdev && NULL == (*sbuf = shadow_open(&(*hc)->send, (void *)*sbuf, scount, sdtype, true)))
        return MPI_ERR_NO_MEM;
    if (rdev && NULL == (*rbuf = shadow_open(&(*hc)->recv, *rbuf, rcount, rdtype, rfill)))
        return MPI_ERR_NO_MEM;
    return MPI_SUCCESS;
}

int mca_coll_braid_host_copies_end(mca_coll_braid_host_copies_t *hc, int rc)
{
    if (NULL == hc) return rc;
    shadow_close(&hc->send, false);
    if (BRAID_OK != shadow_close(&hc->recv, MPI_SUCCESS == rc) && MPI_SUCCESS == rc)
        rc = MPI_ERR_OTHER;
    free(hc);
    return rc;
}

/* ------------------------------------------------------------------ */
/* a request on device buffers                                        */
/* ------------------------------------------------------------------ */

bool mca_coll_braid_request_on_device(const mca_coll_braid_request_t *r)
{
    return (MPI_IN_PLACE != r->a.usbuf && NULL != r->a.usbuf && mca_coll_braid_is_device(r->a.usbuf)) ||
           (NULL != r->a.urbuf && mca_coll_braid_is_device(r->a.urbuf));
}

/* The host copies a request on device buffers runs on (whole,
 * synchronous; the receive side is read from the device when the family
 * says the call reads it). */
int mca_coll_braid_request_copies_open(mca_coll_braid_request_t *r)
{
    size_t sn = 0, rn = 0;
    ptrdiff_t slo = 0, rlo = 0;
    bool rfill = false;
    const void *none = NULL, **sp = MPI_IN_PLACE == r->sbuf || NULL == r->sbuf ? &none : &r->sbuf;
    r->family->copies(r, &sn, &rn, &rfill);
    if (NULL != r->family->copy_lows) r->family->copy_lows(r, &slo, &rlo);
    MPI_Datatype st = NULL != r->a.sdtype ? r->a.sdtype : r->a.dtype;
    r->sbuf = mca_coll_braid_shift(r->sbuf, slo, st);
    r->rbuf = mca_coll_braid_shift(r->rbuf, rlo, r->a.dtype);
    int rc = mca_coll_braid_host_copies_open(&r->hc, sp, sn, st, 0 == rn ? NULL : &r->rbuf, rn,
                                             r->a.dtype, rfill);
    r->sbuf = mca_coll_braid_shift(r->sbuf, -slo, st);
    r->rbuf = mca_coll_braid_shift(r->rbuf, -rlo, r->a.dtype);
    return rc;
}

int mca_coll_braid_request_copies_close(mca_coll_braid_request_t *r, int rc)
{
    if (NULL == r->hc) return rc;
    rc = mca_coll_braid_host_copies_close(r->hc, rc);
    r->hc = NULL;
    return rc;
}
