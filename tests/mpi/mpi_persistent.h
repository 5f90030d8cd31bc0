/*
 * mpi_persistent.h - MPI-4's persistent collective initialisers under one
 * name for the tests: Open MPI 5.0 has them as MPI_ (its MPI_VERSION is
 * still 3), 4.1 as MPIX_ in its pcollreq extension.
 */
#ifndef MPI_PERSISTENT_H
#define MPI_PERSISTENT_H

#include <mpi.h>

/* MPI-4's names; Open MPI 5.0 has them (its MPI_VERSION is still 3), 4.1
 * has them as MPIX_ in its pcollreq extension */
#if MPI_VERSION < 4 && !(defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#include <mpi-ext.h>
#define Allreduce_init MPIX_Allreduce_init
#define Bcast_init MPIX_Bcast_init
#define Reduce_init MPIX_Reduce_init
#define Allgather_init MPIX_Allgather_init
#define Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define Reduce_scatter_init MPIX_Reduce_scatter_init
#define Barrier_init MPIX_Barrier_init
#define Alltoall_init MPIX_Alltoall_init
#else
#define Allreduce_init MPI_Allreduce_init
#define Bcast_init MPI_Bcast_init
#define Reduce_init MPI_Reduce_init
#define Allgather_init MPI_Allgather_init
#define Reduce_scatter_block_init MPI_Reduce_scatter_block_init
#define Reduce_scatter_init MPI_Reduce_scatter_init
#define Barrier_init MPI_Barrier_init
#define Alltoall_init MPI_Alltoall_init
#endif

#endif
