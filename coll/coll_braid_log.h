/*
 * coll_braid_log.h - a line in the component's log at a verbosity level,
 * and braid's return codes (BRAID_*) as MPI error codes (coll_braid_log.c).
 */
#ifndef MCA_COLL_BRAID_LOG_H
#define MCA_COLL_BRAID_LOG_H

#include "mpi.h"

int mca_coll_braid_to_mpi_error(int braid_rc);
void mca_coll_braid_log(int level, const char *fmt, ...);

#endif /* MCA_COLL_BRAID_LOG_H */
