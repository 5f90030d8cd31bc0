/*
 * braid_blocks.h - building blocks shared by the allreduce, reduce_scatter,
 * allgather, scan and exscan algorithms (not part of the algorithm interface):
 *
 *  - the pipelined ring (ring_pipeline.c): reduce-scatter and/or allgather
 *    round a ring over P blocks of arbitrary sizes, each block cut into
 *    chunks so that a chunk is reduced while the next one is in flight and
 *    is forwarded as soon as it is reduced;
 *  - binary blocks and the chunked pairwise reduce-exchange
 *    (halving_doubling_common.c) used by the halving-doubling algorithms;
 *  - prefix reductions (prefix.c), the scan and exscan algorithms.
 *
 * Scratch slots used by these blocks:
 *   0  receive chunks (BRAID_PIPE_DEPTH chunks)
 *   1  work buffer (reduce_scatter, in place or not: the whole input's
 *      size; the input is only read and rbuf gets only the own block)
 *   2  reduce_scatter_ring's block offsets
 *   3  small tables (the ring's send requests, halving-doubling's offsets)
 */
#ifndef BRAID_BLOCKS_H
#define BRAID_BLOCKS_H

#include "braid_algo.h"

/* Receives (and, in the pairwise exchange, sends) kept in flight ahead of
 * the chunk being reduced. */
#define BRAID_PIPE_DEPTH 4
/* chunk size when a->params.chunk_bytes is 0 */
#define BRAID_DEFAULT_CHUNK_BYTES ((size_t)1 << 20)

enum {
    BRAID_SLOT_CHUNKS = 0,
    BRAID_SLOT_WORK = 1,
    BRAID_SLOT_BLOCK = 2,
    BRAID_SLOT_TABLE = 3
};

/* Elements per chunk: chunk_bytes (or the default) rounded down to whole
 * elements, at least one. */
static inline size_t braid_chunk_elems(const braid_coll_args_t *a)
{
    size_t bytes = a->params.chunk_bytes ? a->params.chunk_bytes : BRAID_DEFAULT_CHUNK_BYTES;
    size_t ce = a->esize ? bytes / a->esize : bytes;
    return ce ? ce : 1;
}

/* Chunks of n elements (0 for n == 0), without overflow for huge ce. */
static inline size_t braid_nchunks(size_t n, size_t ce)
{
    return n / ce + (n % ce != 0);
}

/* Chunk i of n elements: length. */
static inline size_t braid_chunk_len(size_t n, size_t ce, size_t i)
{
    size_t first = i * ce;
    return n - first < ce ? n - first : ce;
}

/* ------------------------------------------------------------------ */
/* Pipelined ring                                                      */
/* ------------------------------------------------------------------ */

/* Element offset at which block b starts, b = 0..P (bound(P) = total). */
typedef size_t (*braid_bound_fn_t)(const void *ctx, int b);

typedef struct braid_ring {
    braid_bound_fn_t bound;
    const void *bound_ctx;
    /* steps of each phase: reduce-scatter (0 or P-1), then allgather
     * (0 or P-1). In reduce-scatter step t rank r sends block r-t-1 and
     * reduces block r-t-2; in allgather step s it sends block r-s and
     * receives block r-s-1 (mod P). After the reduce-scatter rank r owns
     * block r. */
    int rs_steps, ag_steps;
    /* where the block sent in step 0 starts (block rank-1 of the input for
     * a reduce-scatter, the rank's own block for an allgather) */
    const char *first_src;
    /* reduce-scatter input (indexed by element offset); NULL when it is work */
    const char *in;
    /* where partial and final blocks are kept and forwarded from */
    char *work;
    /* reduce-scatter only: when non-NULL, block `rank` (reduced in the last
     * step) lands here (indexed from the block's start) instead of work */
    char *own_dst;
} braid_ring_t;

/* Run the ring. Requires a commutative op when rs_steps > 0. */
int braid_ring_run(braid_comm_t *c, const braid_coll_args_t *a, const braid_ring_t *ring);

/* bound functions: evenly split a->count (braid_block_start) and a prefix
 * table of P+1 offsets */
size_t braid_bound_even(const void *ctx, int b);   /* ctx: const braid_even_t * */
size_t braid_bound_table(const void *ctx, int b);  /* ctx: const size_t[P+1] */

/* reduce_scatter: the P+1 element offsets of the ranks' blocks
 * (a->rcounts, or a->count each when NULL), in scratch slot `slot`; NULL
 * when scratch fails. */
size_t *braid_rs_offsets(const braid_coll_args_t *a, int P, int slot);
/* reduce_scatter on one rank: the input is the result (copied unless in place) */
int braid_rs_single(const braid_coll_args_t *a);

typedef struct braid_even {
    size_t count;
    int n;
} braid_even_t;

/* ------------------------------------------------------------------ */
/* Halving-doubling: binary blocks and the chunked reduce-exchange      */
/* ------------------------------------------------------------------ */

/* P ranks split into power-of-two blocks, the largest first (lowest
 * ranks): P = 2^k0 + 2^k1 + ... with k0 > k1 > ... . The data is split into
 * M0 = 2^k0 "groups" (bound(G), G = 0..M0); a rank with index q in a block
 * of 2^k ranks holds, after k halving steps, the groups
 * [bitrev_k(q) * M0/2^k, (bitrev_k(q)+1) * M0/2^k). */
#define BRAID_MAX_BLOCKS 32
typedef struct braid_bblocks {
    int P, rank;
    int nblocks;
    int base[BRAID_MAX_BLOCKS], lg[BRAID_MAX_BLOCKS];
    int me;          /* my block */
    int q;           /* my index in my block */
    int M0, k0;      /* size and log2 of the largest block */
    braid_bound_fn_t bound;
    const void *bound_ctx;
} braid_bblocks_t;

void braid_bblocks_init(braid_bblocks_t *bb, int P, int rank, braid_bound_fn_t bound,
                        const void *bound_ctx);

static inline int braid_bitrev(int v, int bits)
{
    int r = 0;
    for (int i = 0; i < bits; i++) r |= ((v >> i) & 1) << (bits - 1 - i);
    return r;
}

/* Groups [*g0, *g1) held by index q of a block of 2^lg ranks after `level`
 * halving steps (level <= lg). */
void braid_bblocks_segment(const braid_bblocks_t *bb, int lg, int q, int level,
                           int *g0, int *g1);

/* Send sn elements at sptr to peer (chunked) and receive n elements from
 * peer (chunked), combining each received chunk with `mine` into dst in
 * rank order (peer_lower: the peer's data is the lower-ranked operand).
 * mine may equal dst. sn or n may be zero. */
int braid_reduce_exchange(braid_comm_t *c, const braid_coll_args_t *a, int peer,
                          braid_step_t step, const char *sptr, size_t sn,
                          char *dst, const char *mine, size_t n, bool peer_lower);

/* Send n elements at ptr to peer in the chunks braid_reduce_exchange
 * receives them in (no receive). */
int braid_send_chunked(braid_comm_t *c, const braid_coll_args_t *a, int peer,
                       braid_step_t step, const char *ptr, size_t n);

/* Binary-block reduce-scatter. *cur (in: the input, out: where the partial
 * lives) - work receives partials. On return the ranks of block 0 hold the
 * full reduction of their groups in work; other ranks' work holds their
 * block-level piece (sent up). last_dst: if non-NULL and P is a power of
 * two, the kept half of the last step is written there (indexed from the
 * piece's start) instead of work. Steps used: 0..31 and BRAID_HD_STEP_UP. */
int braid_bblocks_reduce_scatter(braid_comm_t *c, const braid_coll_args_t *a,
                                 const braid_bblocks_t *bb, const char *input, char *work,
                                 char *last_dst);

enum {
    BRAID_HD_STEP_RS = 0,       /* + step within block */
    BRAID_HD_STEP_UP = 40,      /* smaller block -> next larger */
    BRAID_HD_STEP_DOWN = 41,    /* larger block -> next smaller */
    BRAID_HD_STEP_AG = 50,      /* + step within block */
    BRAID_HD_STEP_FIX = 90      /* reduce_scatter: pieces to their owners */
};

/* ------------------------------------------------------------------ */
/* Binomial trees rooted anywhere (gather, scatter)                     */
/* ------------------------------------------------------------------ */

/* Rank r's place in the binomial tree of P ranks rooted at root: its
 * relative rank v = r - root (mod P), the size n of its subtree
 * v .. v + n - 1 (n = min(lowbit(v), P - v); the root: P), and the
 * distance `low` = lowbit(v) to its parent v - low (the root: the power
 * of two >= P) with the parent's rank in *parent. Subtree blocks travel
 * in relative order; the message to the parent uses step lg(low). */
typedef struct braid_subtree {
    int v, n, low, parent;
} braid_subtree_t;

static inline braid_subtree_t braid_subtree_of(int P, int r, int root)
{
    braid_subtree_t t;
    t.v = (r - root + P) % P;
    t.low = t.v ? (t.v & -t.v) : 1 << braid_ceil_log2(P);
    t.n = t.low < P - t.v ? t.low : P - t.v;
    t.parent = (t.v - t.low + root + P) % P;
    return t;
}

/* The root's side of a linear gatherv or scatterv: one message per
 * non-empty block q != the root, counts[q] elements at at[q] of base,
 * received from (send false) or sent to (send true) rank q, all posted at
 * once and waited for together. Request table: scratch slot 3. */
static inline int braid_root_blocks(braid_comm_t *c, const braid_coll_args_t *a, bool send,
                                    const void *base, const size_t *counts, const size_t *at)
{
    int P = c->size, nreq = 0, rc = BRAID_OK;
    size_t es = a->esize;
    braid_req_t *reqs = braid_scratch_get(a->scratch, BRAID_SLOT_TABLE, (size_t)P * sizeof *reqs);
    if (NULL == reqs) return BRAID_ERR_NOMEM;
    for (int q = 0; q < P && BRAID_OK == rc; q++) {
        if (q == a->root || 0 == counts[q]) continue;
        /* written only when receiving: base is then the caller's rbuf */
        char *p = (char *)(uintptr_t)base + at[q] * es;
        rc = send ? braid_isend(c, q, 0, p, counts[q] * es, &reqs[nreq++])
                  : braid_irecv(c, q, 0, p, counts[q] * es, &reqs[nreq++]);
    }
    int wrc = braid_waitall(c, nreq, reqs);
    return BRAID_OK != rc ? rc : wrc;
}

/* ------------------------------------------------------------------ */
/* Prefix reductions (prefix.c): scan, or exscan when exclusive         */
/* ------------------------------------------------------------------ */

/* rbuf = in[0] op ... op in[rank] (exclusive: ... op in[rank - 1]; rank 0's
 * rbuf is not written), by recursive doubling over messages, or through
 * the node's shared-memory cells (BRAID_ERR_UNSUPPORTED when the segment
 * is missing or S exceeds a slot, on every rank). */
int braid_prefix_doubling(braid_comm_t *c, const braid_coll_args_t *a, bool exclusive);
int braid_prefix_shm(braid_comm_t *c, const braid_coll_args_t *a, bool exclusive);
/* Whether rank r sends its window in a step after step `mask` of the
 * doubling (up to its upper partner, or down to a lower partner that
 * sends later): only then does the step's upper partner send its window
 * down to r. */
bool braid_prefix_sends_later(int r, int mask, int P);

#endif /* BRAID_BLOCKS_H */
