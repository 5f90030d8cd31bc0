/*
 * coll_braid_compat.h - what differs between the Open MPI versions braid
 * builds against (4.1.x and 5.0.x; configure checks which), so the glue
 * reads the same on both. Only differences that can be named here are;
 * the coll framework's own differences (the disable hook, the component
 * version) are #if blocks in coll_braid_component.c and coll_braid_module.c.
 *
 *   4.1                                   5.0
 *   ompi/mca/rte/rte.h (ORTE)             ompi/runtime/ompi_rte.h (PMIx)
 *   MCA_COLL_BASE_VERSION_2_0_0           MCA_COLL_BASE_VERSION_2_4_0
 *   OMPI_MODULE_DECLSPEC                  OMPI_DECLSPEC
 *   ompi_comm_get_cid(): the agreed cid   c_index is local; the agreed cid is
 *                                         c_contextid (128 bits: base, sub),
 *                                         equal to c_index when the
 *                                         OMPI_COMM_GLOBAL_INDEX flag is set,
 *                                         not for a communicator made from a
 *                                         group (MPI_Comm_create_from_group)
 */
#ifndef MCA_COLL_BRAID_COMPAT_H
#define MCA_COLL_BRAID_COMPAT_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"

#if !defined(OMPI_MAJOR_VERSION) || OMPI_MAJOR_VERSION < 4 || OMPI_MAJOR_VERSION > 5 || \
    (OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION < 1)
#error "braid builds against Open MPI 4.1.x and 5.0.x"
#endif

#if OMPI_MAJOR_VERSION >= 5
#define BRAID_OMPI5 1
#include "ompi/runtime/ompi_rte.h"
#define BRAID_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#define BRAID_COMPONENT_DECLSPEC OMPI_DECLSPEC
#else
#define BRAID_OMPI5 0
#include "ompi/mca/rte/rte.h"
#define BRAID_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#define BRAID_COMPONENT_DECLSPEC OMPI_MODULE_DECLSPEC
#endif

/* The context id every rank of comm agrees on, which no other live
 * communicator of this process has (braid's tags carry it); false for a
 * communicator that has none (5.0: made from a group, by
 * MPI_Comm_create_from_group or inside MPI_Intercomm_create_from_groups,
 * whose agreed id is the 128-bit extended cid): braid's ranks agree on a
 * number of their own for it when it is enabled (coll_braid_module.c). */
static inline bool mca_coll_braid_comm_cid(ompi_communicator_t *comm, uint32_t *cid)
{
#if BRAID_OMPI5
    /* one rank (MPI_COMM_SELF among them): its local index is all there is
     * to agree on, and no other communicator of this process has it */
#ifdef OMPI_COMM_IS_GLOBAL_INDEX
    if (ompi_comm_size(comm) > 1 && !OMPI_COMM_IS_GLOBAL_INDEX(comm)) return false;
#else
    if (ompi_comm_size(comm) > 1 &&
        (0 != comm->c_contextid.cid_base ||
         comm->c_contextid.cid_sub.u64 != (uint64_t)ompi_comm_get_local_cid(comm)))
        return false;
#endif
    *cid = ompi_comm_get_local_cid(comm);
#else
    *cid = ompi_comm_get_cid(comm);
#endif
    return true;
}

/* The processes of the job (MPI_COMM_WORLD's size, also where there is
 * no MPI_COMM_WORLD). */
static inline int mca_coll_braid_job_size(void)
{
#if BRAID_OMPI5
    return (int)opal_process_info.num_procs;
#else
    return (int)ompi_process_info.num_procs;
#endif
}

/* The local id of comm, for messages only. */
static inline unsigned mca_coll_braid_comm_id(ompi_communicator_t *comm)
{
#if BRAID_OMPI5
    return ompi_comm_get_local_cid(comm);
#else
    return ompi_comm_get_cid(comm);
#endif
}

#endif /* MCA_COLL_BRAID_COMPAT_H */
