/*
 * coll_braid_log.h - a line in the component's log at a verbosity level,
 * and braid's return codes (BRAID_*) as MPI error codes (coll_braid_log.c).
 */
#ifndef MCA_COLL_BRAID_LOG_H
#define MCA_COLL_BRAID_LOG_H

#include "mpi.h"

#include <stdbool.h>

int mca_coll_braid_to_mpi_error(int braid_rc);
/* braid_dispatch's code as MPI's, but BRAID_ERR_UNSUPPORTED - the call
 * refused before it sent anything, on every rank alike (an op the
 * algorithm does not take, a transport not started) - sets *fall_back
 * and is MPI_SUCCESS: the previous module runs the call */
int mca_coll_braid_dispatched(int braid_rc, bool *fall_back);
void mca_coll_braid_log(int level, const char *fmt, ...);

#endif /* MCA_COLL_BRAID_LOG_H */
