/*
 * inproc_transport.h - an in-process transport for unit tests: every rank of
 * a communicator is a thread of this process, messages are copied through
 * per-rank mailboxes with MPI matching rules (per source and folded step, in
 * posting order). Lets every algorithm run at P = 1..64 without mpirun and
 * count the messages and bytes each rank sends.
 */
#ifndef INPROC_TRANSPORT_H
#define INPROC_TRANSPORT_H

#include "braid_algo.h"

/* Body run by every rank; returns a BRAID_* code. */
typedef int (*inproc_rank_fn_t)(braid_comm_t *comm, void *arg);

typedef struct inproc_result {
    int rc;                 /* first non-OK code of any rank */
    braid_stats_t *stats;   /* per rank, P entries, owned by caller (free) */
    int leftover_msgs;      /* messages never received (a contract bug) */
} inproc_result_t;

/* Run fn on P threads; arg[rank] is passed to rank `rank` when args is
 * non-NULL (array of P pointers), else shared_arg. */
inproc_result_t inproc_run(int P, inproc_rank_fn_t fn, void **args, void *shared_arg);

#endif
