/*
 * unit_topo.h - node maps and communicator views (braid_topo.h) for the
 * unit tests that run algorithms on views: test_topo.c (node-ordered
 * views) and test_allreduce.c (the hierarchical allreduce).
 *
 *  - unit_make_map: a node key for every rank (cyclic as mpirun --map-by
 *    node, block, reversed, random);
 *  - unit_views_t: one rank's communicator wrapped to count the messages it
 *    sends to other nodes, its node grouping, and the node-ordered, node
 *    and leader views built on it.
 */
#ifndef UNIT_TOPO_H
#define UNIT_TOPO_H

#include <string.h>

#include "unit_coll.h"
#include "braid_topo.h"

typedef enum { UNIT_MAP_CYCLIC, UNIT_MAP_BLOCK, UNIT_MAP_REVERSED, UNIT_MAP_RANDOM } unit_map_t;

static inline void unit_make_map(unit_map_t kind, int P, int nodes, unsigned seed, uint64_t *key)
{
    int per = (P + nodes - 1) / nodes;
    for (int r = 0; r < P; r++) {
        switch (kind) {
        case UNIT_MAP_CYCLIC: key[r] = (uint64_t)(r % nodes); break;
        case UNIT_MAP_BLOCK: key[r] = (uint64_t)(r / per); break;
        case UNIT_MAP_REVERSED: key[r] = (uint64_t)((P - 1 - r) % nodes) * 1000003u; break;
        case UNIT_MAP_RANDOM:
            seed = seed * 1103515245u + 12345u;
            key[r] = 0xabcdef00ull + (seed >> 16) % (unsigned)nodes;
            break;
        }
    }
}

/* ------------------------------------------------------------------ */
/* a transport wrapper that counts messages to other nodes             */
/* ------------------------------------------------------------------ */

typedef struct unit_locality {
    braid_comm_t inner;      /* the in-process rank */
    const uint64_t *key;     /* node key of every rank */
    unsigned long inter_msgs, msgs;
} unit_locality_t;

static int unit_loc_isend(void *state, uint32_t seq, int peer, braid_step_t step, const void *buf,
                          size_t len, braid_req_t *req)
{
    unit_locality_t *l = state;
    l->msgs++;
    l->inter_msgs += l->key[peer] != l->key[l->inner.rank];
    l->inner.stats.msgs_sent++;
    l->inner.stats.bytes_sent += len;
    return l->inner.ops->isend(l->inner.state, seq, peer, step, buf, len, req);
}
static int unit_loc_irecv(void *state, uint32_t seq, int peer, braid_step_t step, void *buf,
                          size_t len, braid_req_t *req)
{
    unit_locality_t *l = state;
    return l->inner.ops->irecv(l->inner.state, seq, peer, step, buf, len, req);
}
static int unit_loc_waitall(void *state, const braid_yield_t *y, int n, braid_req_t *reqs)
{
    unit_locality_t *l = state;
    return l->inner.ops->waitall(l->inner.state, y, n, reqs);
}
static const braid_transport_ops_t unit_loc_ops = { unit_loc_isend, unit_loc_irecv, unit_loc_waitall };

/* ------------------------------------------------------------------ */
/* one rank's views                                                    */
/* ------------------------------------------------------------------ */

/* What the ranks of a run on views share: the node map, the phases of the
 * hierarchical allreduce, and what each rank saw. */
typedef struct unit_topo_ctx {
    const uint64_t *key;
    braid_hier_t phases;     /* hierarchical: the algorithms (views set per rank) */
    unsigned long inter_msgs[UNIT_MAX_P], msgs[UNIT_MAX_P];
    bool leads[UNIT_MAX_P];
} unit_topo_ctx_t;

typedef struct unit_views {
    unit_locality_t loc;
    braid_comm_t counted;     /* the rank's communicator, counting messages to other nodes */
    braid_topo_t topo;
    braid_subcomm_t ordered;  /* every rank, grouped by node */
    braid_subcomm_t node;     /* the ranks of this rank's node */
    braid_subcomm_t leaders;  /* the first rank of every node */
} unit_views_t;

/* Build the views of rank c (v must stay where it is until fini). */
static inline void unit_views_init(unit_views_t *v, braid_comm_t *c, const uint64_t *key)
{
    memset(v, 0, sizeof(*v));
    v->loc.inner = *c;
    v->loc.key = key;
    v->counted = *c;
    v->counted.ops = &unit_loc_ops;
    v->counted.state = &v->loc;
    braid_topo_t *t = &v->topo;
    ck_assert_int_eq(braid_topo_init(t, c->size, key), BRAID_OK);
    int k = t->node_of[c->rank], lead[UNIT_MAX_P];
    braid_topo_leaders(t, lead);
    ck_assert_int_eq(braid_subcomm_init(&v->ordered, &v->counted, c->size, t->order), BRAID_OK);
    ck_assert_int_eq(braid_subcomm_init(&v->node, &v->counted, braid_topo_node_size(t, k),
                                        braid_topo_node_ranks(t, k)), BRAID_OK);
    ck_assert_int_eq(braid_subcomm_init(&v->leaders, &v->counted, t->nnodes, lead), BRAID_OK);
}

/* Free the views; what the rank sent goes to c->stats and x. */
static inline void unit_views_fini(unit_views_t *v, braid_comm_t *c, unit_topo_ctx_t *x)
{
    c->stats = v->counted.stats;
    x->inter_msgs[c->rank] = v->loc.inter_msgs;
    x->msgs[c->rank] = v->loc.msgs;
    braid_subcomm_fini(&v->ordered);
    braid_subcomm_fini(&v->node);
    braid_subcomm_fini(&v->leaders);
    braid_topo_fini(&v->topo);
}

#endif
