/*
 * braid_sim.h - a cooperative in-process scheduler and counting transport
 * that replays braid's own algorithm code (coll/algo/) for thousands of
 * ranks in one thread, with a two-level alpha-beta-gamma cost model.
 *
 * Every rank is a coroutine with a small stack (ucontext to start it,
 * _setjmp/_longjmp to switch: no system call per switch). isend enqueues a
 * message at the receiver (eager, completes at once); irecv matches it by
 * (source, folded step) in posting order, as the UCX transport does;
 * waitall yields to the scheduler until every request is matched. A rank
 * runs until it blocks; a completed request puts its owner back on the
 * ready queue. No runnable rank while some are blocked is a deadlock and is
 * reported, not hung on.
 *
 * Cost model (times in microseconds, bytes; all per rank, no shared links):
 *   link(src, dst) = intra when both ranks are on one node, else inter;
 *   isend of n bytes at the sender's clock t:
 *       t += o                                  (per-message CPU overhead)
 *       start = max(t, inj[link]); inj[link] = start + n beta_link
 *       (beta_link = beta_intra, or beta_inter x share[node]: a node's NIC
 *        is split evenly among the ranks of the node that send off-node in
 *        this collective, counted by the caller in a first run)
 *       the send completes (buffer reusable) at inj[link],
 *       the message arrives at inj[link] + alpha_link
 *     (a rank's sends on one link level serialise, intra and inter-node
 *      sends go out in parallel; receivers do not serialise arrivals);
 *   waitall: clock = max(clock, completion time of every request);
 *   reduction of n bytes (the reduce callback): clock += n gamma.
 * The predicted time of a collective is the largest final clock.
 *
 * Data: in real mode messages are copied (eager buffer) and the caller's
 * reduce function runs; in phantom mode nothing is copied and the caller
 * passes buffers that are never read (e.g. one shared MAP_NORESERVE region),
 * so P = 4096 ranks of 256 MiB each cost no memory; byte counts and times
 * are those of the full sizes either way.
 *
 * One simulation at a time per process (the scheduler state is global).
 */
#ifndef BRAID_SIM_H
#define BRAID_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "braid_algo.h"

typedef struct braid_sim_model {
    double alpha_intra, beta_intra;   /* us, us per byte */
    double alpha_inter, beta_inter;   /* beta_inter: the node's whole NIC */
    double gamma;                     /* us per byte reduced */
    double overhead;                  /* us of sender CPU per message */
} braid_sim_model_t;

/* defaults: shared memory as in libbraid/selection/braid_model.c (1.5 us, 8 GB/s,
 * 10 GB/s reduction); network 5 us, 200 Gb/s (25 GB/s) NIC per node */
void braid_sim_model_default(braid_sim_model_t *m);

typedef struct braid_sim_config {
    int P;
    const int *node_of;        /* node of each rank (P entries); NULL: all on node 0 */
    const int *nic_share;      /* per node: ranks sharing its NIC (>= 1); NULL: 1 */
    braid_sim_model_t model;
    bool phantom;              /* no data copies */
    size_t stack_bytes;        /* per coroutine; 0 = 256 KiB */
    FILE *timeline;            /* CSV of every message when non-NULL */
} braid_sim_config_t;

typedef struct braid_sim_rank_stats {
    uint64_t msgs_sent, bytes_sent;
    uint64_t msgs_inter, bytes_inter;   /* of those, to another node */
    uint64_t msgs_recv, bytes_recv;
    uint64_t bytes_reduced;
    double t_end;                       /* the rank's clock when it returned */
} braid_sim_rank_stats_t;

typedef struct braid_sim_result {
    int rc;                        /* first non-OK code of any rank, or transport error */
    bool deadlock;                 /* some ranks blocked forever */
    uint64_t leftover_msgs;        /* messages never received */
    double t_max;                  /* predicted completion time, us */
    uint64_t msgs_total, bytes_total, msgs_inter_total, bytes_inter_total;
    braid_sim_rank_stats_t *ranks; /* P entries, caller frees (braid_sim_result_free) */
} braid_sim_result_t;

/* Body of every rank: run the collective on c, return a BRAID_* code. */
typedef int (*braid_sim_rank_fn_t)(braid_comm_t *c, void *arg);

/* Run fn on cfg->P coroutines; 0 when the simulation itself could be set up
 * (look at res->rc / deadlock / leftover_msgs for the collective), -1 when
 * memory for it could not be had. */
int braid_sim_run(const braid_sim_config_t *cfg, braid_sim_rank_fn_t fn, void *arg,
                  braid_sim_result_t *res);
void braid_sim_result_free(braid_sim_result_t *res);

/* Charge the running rank for reducing `bytes` (call from reduce callbacks). */
void braid_sim_charge_reduce(size_t bytes);

/* Node of each rank for `ranks_per_node` and a mapping: block (ranks
 * 0..n-1 on node 0, ...) or cyclic (rank r on node r mod nodes, like
 * mpirun --map-by node). out has P entries; returns the number of nodes. */
int braid_sim_nodes(int P, int ranks_per_node, bool cyclic, int *out);

/* NIC shares from a finished run: share[n] = ranks of node n that sent a
 * message to another node (at least 1). share has `nodes` entries. */
void braid_sim_nic_shares(const braid_sim_result_t *res, int P, const int *node_of, int nodes,
                          int *share);

#endif
