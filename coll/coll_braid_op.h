/*
 * coll_braid_op.h - a (datatype, op) pair bound to braid's reduction
 * callback (coll_braid_op.c): a kernel's binding, the process's, or a
 * PMPI_Reduce_local one. The binding for a call is
 * mca_coll_braid_call_op's (coll_braid_request.h).
 */
#ifndef MCA_COLL_BRAID_OP_H
#define MCA_COLL_BRAID_OP_H

#include "coll_braid_module.h"

BEGIN_C_DECLS

void mca_coll_braid_op_bind(mca_coll_braid_op_t *b, MPI_Datatype dtype, MPI_Op op);
void mca_coll_braid_op_fini(void);

END_C_DECLS

#endif /* MCA_COLL_BRAID_OP_H */
