/*
 * coll_braid_entry.h - the collective families braid installs, one per
 * file (coll_braid_<family>.c), each with its blocking, nonblocking and
 * persistent entry points.
 */
#ifndef MCA_COLL_BRAID_ENTRY_H
#define MCA_COLL_BRAID_ENTRY_H

#include "coll_braid_module.h"

BEGIN_C_DECLS

/* Module enable: the family's blocking entry points in place of the
 * previous module's (false: one has no previous function, and braid cannot
 * take the communicator), and with requests its nonblocking and persistent
 * ones where a previous module backs them. */
bool mca_coll_braid_barrier_install(mca_coll_braid_module_t *m, bool requests);
bool mca_coll_braid_bcast_install(mca_coll_braid_module_t *m, bool requests);
bool mca_coll_braid_allgather_install(mca_coll_braid_module_t *m, bool requests);
bool mca_coll_braid_allreduce_install(mca_coll_braid_module_t *m, bool requests);
bool mca_coll_braid_reduce_scatter_install(mca_coll_braid_module_t *m, bool requests);
bool mca_coll_braid_alltoall_install(mca_coll_braid_module_t *m, bool requests);
bool mca_coll_braid_scan_install(mca_coll_braid_module_t *m, bool requests);
bool mca_coll_braid_gather_install(mca_coll_braid_module_t *m, bool requests);
bool mca_coll_braid_allgatherv_install(mca_coll_braid_module_t *m, bool requests);
bool mca_coll_braid_alltoallv_install(mca_coll_braid_module_t *m, bool requests);
bool mca_coll_braid_gatherv_install(mca_coll_braid_module_t *m, bool requests);

END_C_DECLS

#endif /* MCA_COLL_BRAID_ENTRY_H */
