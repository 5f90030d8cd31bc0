/*
 * coll_braid_log.c - the glue's leaf: a line in the component's log, and
 * braid's return codes as MPI's. Calls nothing else of coll/.
 */
#include "coll_braid_log.h"
#include "coll_braid_component.h"

#include <stdarg.h>
#include <stdio.h>

#include "opal/util/output.h"

#include "braid_algo.h"

int mca_coll_braid_dispatched(int braid_rc, bool *fall_back)
{
    if (BRAID_ERR_UNSUPPORTED != braid_rc) return mca_coll_braid_to_mpi_error(braid_rc);
    *fall_back = true;
    return MPI_SUCCESS;
}

void mca_coll_braid_log(int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    opal_output_verbose(level, mca_coll_braid_component.output, "braid: %s", buf);
}

int mca_coll_braid_to_mpi_error(int braid_rc)
{
    switch (braid_rc) {
    case BRAID_OK: return MPI_SUCCESS;
    case BRAID_ERR_NOMEM: return MPI_ERR_NO_MEM;
    case BRAID_ERR_ARG: return MPI_ERR_ARG;
    case BRAID_ERR_DEVICE: return MPI_ERR_OTHER;   /* the CUDA error is logged at level 1 */
#ifdef MPI_ERR_PROC_FAILED
    case BRAID_ERR_PROC_FAILED: return MPI_ERR_PROC_FAILED;
    case BRAID_ERR_REVOKED: return MPI_ERR_REVOKED;
#endif
    default: return MPI_ERR_INTERN;
    }
}
