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
 *                                         equal to c_index unless the
 *                                         communicator was made from a group
 *                                         (MPI_Comm_create_from_group)
 *   no fault tolerance                    ULFM where built with it
 *                                         (OPAL_ENABLE_FT_MPI) and enabled
 *                                         at run time (mpi_ft_enable)
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

/* The context id every rank of comm agrees on (braid's tags carry it);
 * false when there is none that fits 32 bits (5.0: a communicator of more
 * than one rank made from a group, with an extended cid). */
static inline bool mca_coll_braid_comm_cid(ompi_communicator_t *comm, uint32_t *cid)
{
#if BRAID_OMPI5
    /* one rank (MPI_COMM_SELF among them): its local index is all there is
     * to agree on, and no other communicator of this process has it */
    if (ompi_comm_size(comm) > 1 &&
        (0 != comm->c_contextid.cid_base ||
         comm->c_contextid.cid_sub.u64 != (uint64_t)ompi_comm_get_local_cid(comm)))
        return false;
    *cid = ompi_comm_get_local_cid(comm);
#else
    *cid = ompi_comm_get_cid(comm);
#endif
    return true;
}

#if defined(OPAL_ENABLE_FT_MPI) && OPAL_ENABLE_FT_MPI
#define BRAID_FT 1
#include "ompi/runtime/params.h"
#else
#define BRAID_FT 0
#endif

/* The job runs with fault tolerance (ULFM): a process may fail and the
 * survivors go on */
static inline bool mca_coll_braid_ft_enabled(void)
{
#if BRAID_FT
    return ompi_ftmpi_enabled;
#else
    return false;
#endif
}

/* comm's collectives must fail: MCA_COLL_BRAID_REVOKED (MPI_Comm_revoke),
 * MCA_COLL_BRAID_PROC_FAILED (Open MPI marked a member failed: it then
 * stops collectives on every communicator that holds it), else 0. Two
 * loads, as Open MPI's own check of a collective's communicator. */
enum { MCA_COLL_BRAID_PROC_FAILED = 1, MCA_COLL_BRAID_REVOKED = 2 };
static inline int mca_coll_braid_comm_fault(ompi_communicator_t *comm)
{
#if BRAID_FT
    if (__atomic_load_n(&comm->comm_revoked, __ATOMIC_ACQUIRE)) return MCA_COLL_BRAID_REVOKED;
    if (__atomic_load_n(&comm->coll_revoked, __ATOMIC_ACQUIRE)) return MCA_COLL_BRAID_PROC_FAILED;
#else
    (void)comm;
#endif
    return 0;
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
