/*
 * braid_shm_tier.h - bringing a communicator's shared-memory tier up, on
 * every rank alike, and its channels for persistent requests.
 *
 * The tier of a communicator is one segment for a group of its ranks (the
 * whole communicator when it is on one node, else each rank's node view):
 *   1. the group's rank 0 creates the segment (braid_shm_segment.h, 0600)
 *      and formats it; its name goes to the group by a binomial bcast;
 *   2. the others map it and check the header;
 *   3. a MIN allreduce of "mapped" over the whole communicator: the tier
 *      is on only if every rank of every node has it;
 *   4. the creator unlinks the name - nothing is left in /dev/shm from
 *      here on, whatever happens to the job - and a failure anywhere
 *      unmaps it everywhere, with a message from the rank that failed;
 *   5. single copy (conf.single_copy): each rank has published its process
 *      id and the address of a known word in its control line (before step
 *      3, which orders them; under Yama's ptrace_scope 1 it has also
 *      allowed its peers to read it); it reads the next rank's word with
 *      process_vm_readv, and a second MIN allreduce turns the reader on for
 *      every rank or for none (a message from a rank that could not:
 *      ptrace permission, seccomp, another PID namespace).
 * Steps 1 and 3 run braid's own message algorithms with scratch of their
 * own, each as a collective of the communicator (hooks.begin advances its
 * call number on every rank, also where a one-rank node sends nothing).
 *
 * A one-node communicator's segment has a second ring of cells for its
 * nonblocking calls (conf.nb_channel): blocking calls and nonblocking
 * posts each come in an order that is the same on every rank, but not
 * with each other (Open MPI posts some nonblocking collectives from its
 * progress loop, inside whatever call a rank is in), so each needs cells
 * numbered in its own order. Step 3 also agrees on the first nonblocking
 * call that uses the ring (nb_from): one past the most any rank had
 * posted when it got there, so that every rank decides alike for a post
 * it made before, during or after the set-up.
 */
#ifndef BRAID_SHM_TIER_H
#define BRAID_SHM_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "braid_algo.h"
#include "braid_shm.h"
#include "braid_shm_segment.h"

/* most channels for persistent requests (the bits of the mask the ranks
 * agree on) */
#define BRAID_SHM_CHANNELS_MAX 64

typedef struct braid_shm_tier_conf {
    int cells;                  /* cells in rotation */
    size_t slot_bytes;          /* bytes per rank and cell */
    int channels;               /* for persistent requests (one-node communicators) */
    bool yield;                 /* waits yield the core (oversubscribed) */
    bool single_copy;           /* try process_vm_readv */
    size_t direct_above;        /* single copy above this many bytes per rank */
    size_t split_from;          /* reduce splits its copies from this size */
    uint64_t far_ns;            /* two-rank line probe: far above this round trip (0: no probe) */
    int inject_failure;         /* this communicator rank fails to map (tests), -1: none */
    bool nb_channel;            /* a ring of cells for nonblocking calls (one-node communicators) */
} braid_shm_tier_conf_t;

typedef struct braid_shm_tier_hooks {
    void *arg;
    uint32_t (*begin)(void *arg);              /* the communicator's next call number */
    void (*idle)(void *arg);                   /* a wait on the segment: progress others */
    bool (*unreadable)(void *arg, const void *p, size_t bytes); /* memory single copy skips */
    void (*say)(void *arg, int level, const char *msg);         /* 0: a warning for the user */
    uint64_t (*nb_posted)(void *arg);          /* nonblocking calls numbered so far */
    braid_fault_t *fault;       /* the communicator's failure state (NULL: none) */
    /* NULL, or the set-up's agreements go through the host's collectives
     * instead of braid's messages (a host whose transport may not be up;
     * one node only: the group is the whole communicator): v[0..n) of
     * every rank combined in place, by AND (max false) or MAX (max true);
     * `bytes` of group rank 0's buf to every rank. A nonzero return: failed */
    int (*host_allreduce)(void *arg, uint64_t *v, int n, bool max);
    int (*host_bcast)(void *arg, void *buf, size_t bytes);
} braid_shm_tier_hooks_t;

/* A tier: a communicator's shared-memory segment as its calls use it -
 * the blocking calls' cells, the nonblocking calls' ring, the persistent
 * requests' channels. */
typedef struct braid_shm_tier {
    braid_shm_tier_hooks_t hooks;
    braid_shm_t shm;            /* this rank's view of the group's segment */
    /* the nonblocking calls' ring (conf.nb_channel; nb.base NULL: none),
     * used by the calls numbered nb_from and later (UINT64_MAX: none) */
    braid_shm_t nb;
    uint64_t nb_from;
    bool nb_ring;
    braid_shm_segment_t seg;
    int cells;
    size_t slot_bytes;
    /* channels: how many, those no request of this rank holds, and where
     * each one's call numbers stopped (its next holder goes on) */
    int nchan;
    uint64_t chan_free;
    struct { uint64_t seq, safe; } chan[BRAID_SHM_CHANNELS_MAX];
} braid_shm_tier_t;

/* Steps 1-5 over comm, for group (comm, or this rank's node of it; at
 * most BRAID_SHM_MAX_P ranks). Collective over comm; true on every rank
 * or on none, group->shm then set. */
bool braid_shm_tier_up(braid_shm_tier_t *t, braid_comm_t *comm, braid_comm_t *group,
                       const braid_shm_tier_conf_t *conf, const braid_shm_tier_hooks_t *hooks);
/* A channel free on every rank of comm (collective: a small allreduce of
 * the ranks' free masks), s bound to it: the channel, or -1 (none). */
int braid_shm_tier_channel_take(braid_shm_tier_t *t, braid_comm_t *comm, braid_shm_t *s);
/* the holder of channel ch is gone: its numbering is kept for the next */
void braid_shm_tier_channel_give(braid_shm_tier_t *t, int ch, const braid_shm_t *s);
/* unmap (the name is gone already) */
void braid_shm_tier_down(braid_shm_tier_t *t);

#endif /* BRAID_SHM_TIER_H */
