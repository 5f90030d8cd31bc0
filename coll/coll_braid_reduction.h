/*
 * coll_braid_reduction.h - the reduction path allreduce, reduce, scan and
 * exscan share (coll_braid_reduction.c).
 */
#ifndef MCA_COLL_BRAID_REDUCTION_H
#define MCA_COLL_BRAID_REDUCTION_H

#include "coll_braid_module.h"

BEGIN_C_DECLS

/* The reduction path of allreduce, reduce, scan and exscan
 * (coll_braid_reduction.c): an MPI code, or *fall_back when the previous
 * module must run the call (the same decision on every rank). root: reduce
 * only. r: the request running the call, NULL when blocking. */
struct mca_coll_braid_request;
int mca_coll_braid_reduction(mca_coll_braid_module_t *m, struct mca_coll_braid_request *r,
                             braid_coll_t coll, const void *sbuf, void *rbuf, int count,
                             MPI_Datatype dtype, MPI_Op op, int root, bool *fall_back);

END_C_DECLS

#endif /* MCA_COLL_BRAID_REDUCTION_H */
