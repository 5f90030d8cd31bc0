/*
 * coll_braid.h - braid, an Open MPI coll component whose collectives run
 * over UCX point-to-point and a shared-memory tier, with algorithms from
 * Gloo, NCCL and the MPI literature.
 *
 * The coll_braid_*.c files are the glue to Open MPI, and the only place
 * Open MPI's internals appear. By concern:
 *   coll_braid_component.h  MCA parameters, job-wide state, log, progress
 *   coll_braid_module.h     a communicator's module; datatypes and ops,
 *                           device buffers, node grouping, the shm tier
 *   coll_braid_request.h    MPI requests on braid's request engine, and
 *                           what a collective family gives it
 *   coll_braid_entry.h      the MPI entry points, one family per file
 * The glue calls only down: into the dispatch and the request engine
 * (libbraid/braid_dispatch.h, libbraid/engines/braid_task.h), the
 * algorithms through the registry, the selection table and the transports.
 */
#ifndef MCA_COLL_BRAID_H
#define MCA_COLL_BRAID_H

#include "coll_braid_entry.h"

#endif /* MCA_COLL_BRAID_H */
