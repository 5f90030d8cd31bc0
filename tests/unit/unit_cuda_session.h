/*
 * unit_cuda_session.h - one rank's staged collective through braid's CUDA
 * layer, as the component runs it (coll_braid_cuda.c): a session begun on
 * the rank's device buffer, if it has one, the staging pipeline, then the
 * session ended and everything released. Shared by test_cuda_pipeline (the
 * mock driver) and test_cuda_device (the real one).
 */
#ifndef UNIT_CUDA_SESSION_H
#define UNIT_CUDA_SESSION_H

#include <stdbool.h>
#include <string.h>

#include "braid_cuda.h"
#include "braid_devpipe.h"

/* Runs job (its tmpl.scratch is released afterwards); returns the first
 * error of the session or the pipeline. */
static inline int unit_cuda_session_run(braid_devpipe_job_t *job)
{
    braid_cuda_session_t *s = braid_cuda_session_create();
    braid_devpipe_t pipe;
    memset(&pipe, 0, sizeof pipe);
    bool in_dev = NULL != job->in && job->in_dev, out_dev = NULL != job->out && job->out_dev;
    braid_device_t dev;
    int rc = BRAID_OK;
    if (in_dev || out_dev) rc = braid_cuda_session_begin(s, in_dev ? job->in : job->out, &dev);
    if (BRAID_OK == rc) rc = braid_devpipe_run(&pipe, in_dev || out_dev ? &dev : NULL, job);
    if (in_dev || out_dev) braid_cuda_session_end(s);
    braid_devpipe_release(&pipe);
    braid_cuda_session_destroy(s);
    braid_scratch_release(job->tmpl.scratch);
    return rc;
}

#endif /* UNIT_CUDA_SESSION_H */
