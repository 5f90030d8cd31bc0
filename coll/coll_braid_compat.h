/*
 * coll_braid_compat.h - what differs between the Open MPI versions braid
 * builds against (4.1.x, 5.0.x and main; configure checks which), so the glue
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
 *   no fault tolerance                    ULFM where built with it
 *                                         (OPAL_ENABLE_FT_MPI) and enabled
 *                                         at run time (mpi_ft_enable)
 */
#ifndef MCA_COLL_BRAID_COMPAT_H
#define MCA_COLL_BRAID_COMPAT_H

#include "ompi_config.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"

#if !defined(OMPI_MAJOR_VERSION) || OMPI_MAJOR_VERSION < 4                                         \
    || (OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION < 1)
#error "braid builds against Open MPI 4.1.x, 5.0.x and main"
#endif

#include "ompi/mca/coll/coll.h"

/* The coll interface: 3.0.0 on main (size_t counts, count and
 * displacement arrays that hold int or 64-bit values), 2.x before (int
 * counts, int arrays). braid's own code counts in int; an entry point
 * turns what it gets into that (braid_count_fits, braid_counts_int) or
 * gives the call, untouched, to the previous module. configure checks that this agrees with
 * the function types coll.h declares (BRAID_COLL_SIZE_T_COUNTS). */
#if defined(MCA_COLL_BASE_VERSION_3_0_0)
#define BRAID_COLL_V3 1
typedef size_t braid_count_t;
typedef ompi_count_array_t braid_counts_t;
typedef ompi_disp_array_t braid_displs_t;
#define braid_count_fits(n, dt) ((void)(dt), (size_t)(n) <= (size_t)INT_MAX)
#define braid_counts_are_int(a) (!ompi_count_array_is_64bit(a))
#define braid_displs_are_int(a) (!ompi_disp_array_is_64bit(a))
#define braid_counts_int(a)     ((const int *)ompi_count_array_ptr(a))
#define braid_displs_int(a)     ((const int *)ompi_disp_array_ptr(a))
/* braid's int arrays as the interface's, for the previous module (the
 * _init form: every main with this interface has it; _create came later) */
static inline braid_counts_t braid_counts_of(const int *p)
{
    braid_counts_t a;
    ompi_count_array_init(&a, p);
    return a;
}
static inline braid_displs_t braid_displs_of(const int *p)
{
    braid_displs_t a;
    ompi_disp_array_init(&a, p);
    return a;
}
#define BRAID_COUNTS(p) braid_counts_of(p)
#define BRAID_DISPLS(p) braid_displs_of(p)
#else
#define BRAID_COLL_V3           0
typedef int braid_count_t;
typedef const int *braid_counts_t;
typedef const int *braid_displs_t;
#define braid_count_fits(n, dt) ((void)(n), (void)(dt), true)
#define braid_counts_are_int(a) ((void)(a), true)
#define braid_displs_are_int(a) ((void)(a), true)
#define braid_counts_int(a)     (a)
#define braid_displs_int(a)     (a)
#define BRAID_COUNTS(p)         (p)
#define BRAID_DISPLS(p)         (p)
#endif
#if defined(BRAID_COLL_SIZE_T_COUNTS) && BRAID_COLL_SIZE_T_COUNTS != BRAID_COLL_V3
#error "configure found another coll interface than these headers declare"
#endif

#if BRAID_COLL_V3
#define BRAID_OMPI5 1
#include "ompi/runtime/ompi_rte.h"
#define BRAID_COLL_BASE_VERSION  MCA_COLL_BASE_VERSION_3_0_0
#define BRAID_COMPONENT_DECLSPEC OMPI_DECLSPEC
#elif OMPI_MAJOR_VERSION >= 5
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
