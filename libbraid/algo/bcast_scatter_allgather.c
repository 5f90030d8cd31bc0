/*
 * bcast scatter_allgather (van de Geijn: binomial scatter + ring allgather)
 *
 *   steps: ceil(lg P) + P-1
 *   bytes sent: scatter <= S (root), then (P-1)/P * S per rank on the ring
 *
 * The buffer is cut into P nearly equal blocks, block b belonging to the rank
 * v = b relative to the root (v = (r - root) mod P).
 *  1. Scatter down a binomial tree: rank v receives blocks [v, v + extent)
 *     from its parent, where extent is its subtree size, and forwards each
 *     child's sub-range.
 *  2. Ring allgather in relative order: in step s rank v sends block
 *     (v - s) mod P to v+1 and receives block (v - s - 1) mod P from v-1.
 * Large messages move about 2S per rank instead of lg(P)*S.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"

enum { STEP_SCATTER = 0, STEP_RING = 1 };

typedef struct {
    size_t bytes;
    int P;
} blocks_t;

static size_t blk_off(const blocks_t *b, int i) { return braid_block_start(b->bytes, b->P, i); }

/* bytes of blocks [first, first + n) (clipped to P) */
static size_t blk_span(const blocks_t *b, int first, int n)
{
    int last = first + n > b->P ? b->P : first + n;
    return blk_off(b, last) - blk_off(b, first);
}

static int scatter(braid_comm_t *c, const braid_coll_args_t *a, const blocks_t *b, int v)
{
    int P = c->size, root = a->root;
    char *buf = a->rbuf;
    int mask = 1;
    while (mask < P) {
        if (v & mask) {
            int parent = (v - mask + root) % P;
            int rc = braid_recv(c, parent, STEP_SCATTER, buf + blk_off(b, v),
                                blk_span(b, v, mask));
            if (BRAID_OK != rc) return rc;
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (v + mask < P) {
            int child = (v + mask + root) % P;
            int rc = braid_send(c, child, STEP_SCATTER, buf + blk_off(b, v + mask),
                                blk_span(b, v + mask, mask));
            if (BRAID_OK != rc) return rc;
        }
    }
    return BRAID_OK;
}

static int ring_allgather(braid_comm_t *c, const braid_coll_args_t *a, const blocks_t *b, int v)
{
    int P = c->size, root = a->root;
    char *buf = a->rbuf;
    int right = (v + 1 + root) % P, left = (v - 1 + P + root) % P;
    for (int s = 0; s < P - 1; s++) {
        int sb = (v - s + P) % P, rb = (v - s - 1 + P) % P;
        int rc = braid_sendrecv(c, right, STEP_RING, buf + blk_off(b, sb), blk_span(b, sb, 1),
                                left, STEP_RING, buf + blk_off(b, rb), blk_span(b, rb, 1));
        if (BRAID_OK != rc) return rc;
    }
    return BRAID_OK;
}

int braid_bcast_scatter_allgather(braid_comm_t *c, const braid_coll_args_t *a)
{
    int P = c->size;
    if (P < 2) return BRAID_OK;
    blocks_t b = { a->count * a->esize, P };
    int v = (c->rank - a->root + P) % P;
    int rc = scatter(c, a, &b, v);
    if (BRAID_OK != rc) return rc;
    return ring_allgather(c, a, &b, v);
}

/* (L + P-1) alpha + 2(P-1)/P S beta */
double braid_cost_bcast_scatter_allgather(int P, double S)
{
    return (braid_cost_L(P) + P - 1) * BRAID_COST_ALPHA + 2.0 * (P - 1) / P * S * BRAID_COST_BETA;
}
