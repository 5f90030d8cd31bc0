/*
 * strict_transport.h - a checking wrapper around a rank's transport for the
 * unit tests. The in-process transport copies a send at once, so it cannot
 * see an algorithm reuse a send buffer before the send completed, which
 * UCX's zero-copy rendezvous would punish. This wrapper records every send
 * until the algorithm waits for it and counts as violations:
 *  - a send buffer whose bytes changed between isend and its wait;
 *  - a receive posted into a region overlapping a send still outstanding;
 *  - sends never waited for when the collective returns.
 * One wrapper per rank (thread); no locking needed.
 */
#ifndef STRICT_TRANSPORT_H
#define STRICT_TRANSPORT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "braid_algo.h"

typedef struct strict_req {
    int is_send;
    braid_req_t inner;
    const unsigned char *buf;
    size_t len;
    uint64_t hash;
    struct strict_req *next;
} strict_req_t;

typedef struct strict_state {
    const braid_transport_ops_t *ops;
    void *st;
    strict_req_t *sends;   /* outstanding */
    int violations;
} strict_state_t;

/* FNV-1a over 8-byte words (any alignment), then the tail bytes */
static inline uint64_t strict_hash(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static inline int strict_isend(void *state, uint32_t seq, int peer, braid_step_t step,
                               const void *buf, size_t len, braid_req_t *req)
{
    strict_state_t *s = state;
    strict_req_t *r = calloc(1, sizeof *r);
    r->is_send = 1;
    r->buf = buf;
    r->len = len;
    r->hash = strict_hash(buf, len);
    int rc = s->ops->isend(s->st, seq, peer, step, buf, len, &r->inner);
    r->next = s->sends;
    s->sends = r;
    *req = (braid_req_t)r;
    return rc;
}

static inline int strict_irecv(void *state, uint32_t seq, int peer, braid_step_t step, void *buf,
                               size_t len, braid_req_t *req)
{
    strict_state_t *s = state;
    const unsigned char *b = buf;
    for (strict_req_t *o = s->sends; o; o = o->next)
        if (len > 0 && o->len > 0 && b < o->buf + o->len && o->buf < b + len) s->violations++;
    strict_req_t *r = calloc(1, sizeof *r);
    int rc = s->ops->irecv(s->st, seq, peer, step, buf, len, &r->inner);
    *req = (braid_req_t)r;
    return rc;
}

static inline int strict_waitall(void *state, const braid_yield_t *y, int n, braid_req_t *reqs)
{
    strict_state_t *s = state;
    int rc = BRAID_OK;
    for (int i = 0; i < n; i++) {
        strict_req_t *r = (strict_req_t *)reqs[i];
        if (NULL == r) continue;
        if (r->inner) {
            int wrc = s->ops->waitall(s->st, y, 1, &r->inner);
            if (BRAID_OK == rc) rc = wrc;
        }
        if (r->is_send) {
            if (strict_hash(r->buf, r->len) != r->hash) s->violations++;
            for (strict_req_t **pp = &s->sends; *pp; pp = &(*pp)->next)
                if (*pp == r) {
                    *pp = r->next;
                    break;
                }
        }
        free(r);
        reqs[i] = NULL;
    }
    return rc;
}

static const braid_transport_ops_t strict_ops = { strict_isend, strict_irecv, strict_waitall };

/* Route comm through the wrapper (ops/state saved in s). */
static inline void strict_wrap(braid_comm_t *c, strict_state_t *s)
{
    s->ops = c->ops;
    s->st = c->state;
    s->sends = NULL;
    s->violations = 0;
    c->ops = &strict_ops;
    c->state = s;
}

/* Restore comm; returns the violations, counting sends never waited. */
static inline int strict_unwrap(braid_comm_t *c, strict_state_t *s)
{
    while (s->sends) {
        strict_req_t *r = s->sends;
        s->sends = r->next;
        s->violations++;
        free(r);   /* the inner send already completed in the in-process transport */
    }
    c->ops = s->ops;
    c->state = s->st;
    return s->violations;
}

/* Run fn as this rank of c on a fresh scratch cache (failing allocations
 * when fail_alloc is set), under the strict checker: returns fn's code,
 * stores the number of buffer-reuse violations in *violations and, when
 * scratch_bytes is not NULL, the bytes of scratch fn left allocated (the
 * cache keeps every slot at its largest size). */
static inline int strict_run_counted(braid_comm_t *c, braid_algo_fn_t fn, braid_coll_args_t *a,
                                     int fail_alloc, int *violations, size_t *scratch_bytes)
{
    braid_scratch_t scratch;
    memset(&scratch, 0, sizeof scratch);
    scratch.fail_alloc = fail_alloc;
    a->scratch = &scratch;
    strict_state_t strict;
    strict_wrap(c, &strict);
    int rc = fn(c, a);
    *violations = strict_unwrap(c, &strict);
    if (NULL != scratch_bytes) {
        *scratch_bytes = 0;
        for (int i = 0; i < BRAID_SCRATCH_SLOTS; i++) *scratch_bytes += scratch.len[i];
    }
    braid_scratch_release(&scratch);
    a->scratch = NULL;
    return rc;
}

static inline int strict_run(braid_comm_t *c, braid_algo_fn_t fn, braid_coll_args_t *a,
                             int fail_alloc, int *violations)
{
    return strict_run_counted(c, fn, a, fail_alloc, violations, NULL);
}

#endif
