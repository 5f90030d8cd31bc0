/*
 * coll_braid_cuda.h - device (CUDA) buffers (coll_braid_cuda.c): the
 * driver's presence, the staging pipeline's hook, copies, and the host
 * copies of a call's device buffers. Whether a pointer is device memory
 * is coll_braid_component.h's (every collective asks).
 */
#ifndef MCA_COLL_BRAID_CUDA_H
#define MCA_COLL_BRAID_CUDA_H

#include "coll_braid_component.h"
#include "coll_braid_module.h"

BEGIN_C_DECLS

bool mca_coll_braid_cuda_probe(void);          /* this process can load the driver */
/* CUDA knows p (pinned host, device or managed memory; false in a job
 * without CUDA): the shm tier's single copy does not read it in place */
bool mca_coll_braid_is_cuda_memory(const void *p);
/* the dispatch's staged_run hook: fn on view through the staging
 * pipeline, seg_count elements at a time (arg: the module) */
int mca_coll_braid_cuda_run(void *arg, braid_comm_t *view, braid_algo_fn_t fn,
                            const braid_call_t *call, size_t seg_count);
int mca_coll_braid_copy(void *dst, const void *src, size_t len, bool device);
/* Host copies of a call's device buffers (sbuf: count elements of sdtype,
 * read; rbuf, when not NULL: rcount elements of rdtype, filled from the
 * device when rfill, written back by close when rc is MPI_SUCCESS). The
 * pointers are replaced by their copies; buffers not on a device stay.
 * open: MPI_SUCCESS or MPI_ERR_NO_MEM (close it either way); close returns
 * rc, or MPI_ERR_OTHER when the copy back failed. */
typedef struct mca_coll_braid_host_copies mca_coll_braid_host_copies_t;
int mca_coll_braid_host_copies_make(mca_coll_braid_host_copies_t **hc, const void **sbuf,
                                    size_t scount, MPI_Datatype sdtype, void **rbuf,
                                    size_t rcount, MPI_Datatype rdtype, bool rfill);
int mca_coll_braid_host_copies_end(mca_coll_braid_host_copies_t *hc, int rc);
static inline int mca_coll_braid_host_copies_open(mca_coll_braid_host_copies_t **hc,
                                                  const void **sbuf, size_t scount,
                                                  MPI_Datatype sdtype, void **rbuf, size_t rcount,
                                                  MPI_Datatype rdtype, bool rfill)
{
    *hc = NULL;
    if (!mca_coll_braid_component.cuda_job) return MPI_SUCCESS;
    return mca_coll_braid_host_copies_make(hc, sbuf, scount, sdtype, rbuf, rcount, rdtype, rfill);
}
static inline int mca_coll_braid_host_copies_close(mca_coll_braid_host_copies_t *hc, int rc)
{
    return NULL == hc ? rc : mca_coll_braid_host_copies_end(hc, rc);
}
void mca_coll_braid_cuda_release(mca_coll_braid_module_t *m);

END_C_DECLS

#endif /* MCA_COLL_BRAID_CUDA_H */
