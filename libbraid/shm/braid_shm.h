/*
 * braid_shm.h - the flag protocol of braid's shared-memory tier: one
 * segment per communicator, mapped by every rank of a node, through which
 * the shm algorithms (libbraid/shm/algo/<coll>_shm.c) move small messages without
 * the message transport.
 *
 * Layout (braid_shm_segment_bytes), all offsets multiples of 128 bytes so
 * that no two writers share a cache line or an adjacent-line prefetch pair:
 *
 *   header   magic, P, ncells, slot_bytes (written once by the creator)
 *   ctrl[P]  one line per rank, written only by that rank:
 *              done    the last call it finished (reading included)
 *              round   the last round of an in-place swap it finished
 *                      (braid_shm_swap)
 *              words   BRAID_SHM_WORDS values the glue publishes for
 *                      its peers once, at set-up (the single-copy
 *                      reader's process id and probe address)
 *   cells    ncells x P slots: call s uses cell s % ncells, rank r writes
 *            only slot r of it: a stamp (the last call whose contribution
 *            the slot holds: rank r "arrived" at that call) and then the
 *            data, so that a short message and its flag travel in one
 *            cache line
 *
 * Every rank numbers the shm calls on the communicator 1, 2, ... (MPI makes
 * every rank call the collectives of a communicator in the same order), so
 * the numbers are sequence numbers that never reset: a flag is "set for
 * call s" when it holds s or more, written with release and read with
 * acquire ordering. There are no locks and no resets, and ncells cells in
 * rotation replace a closing barrier: a rank writes its slot of cell
 * s % ncells only when every rank is done with call s - ncells
 * (braid_shm_claim), which it usually knows without looking - a rank that
 * arrived at call t has finished call t - 1, so seeing every rank arrive at
 * t proves cells up to t - 1 free.
 *
 * Waiting (braid_shm_wait_*) spins, calls the idle hook every few hundred
 * turns (the glue passes Open MPI's progress, so that a point-to-point
 * transfer another rank waits for still moves), and yields the core when
 * the node is oversubscribed.
 *
 * Single copy (optional): above a threshold (s->direct_above; at the
 * latest above a slot's size) the data do not go through the cells. A rank publishes the address of its buffer in its slot and
 * the others read it straight from its memory with the reader the glue
 * installs (s->read: process_vm_readv, where the node permits it; memcpy
 * in the unit tests, whose ranks are threads): one copy instead of two and
 * no size limit. The owner of a buffer that others read returns only when
 * they are done with it (braid_shm_wait_done), since MPI lets the caller
 * reuse the buffer at once.
 *
 * Pure C11 atomics: no Open MPI, no UCX, no system calls but sched_yield.
 * The segment's memory comes from the caller (braid_shm_segment.c maps a POSIX
 * segment; the unit tests share a heap block between threads).
 */
#ifndef BRAID_SHM_H
#define BRAID_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BRAID_SHM_LINE 128u           /* alignment of every field */
#define BRAID_SHM_STAMP 16u           /* a slot's stamp, before its data (16: the data
                                         stay 16-byte aligned for any element type) */
#define BRAID_SHM_MAGIC 0x62726169647368ull /* "braidsh" */
#define BRAID_SHM_MAX_P 256           /* ranks of one segment */

#define BRAID_SHM_WORDS 2             /* per-rank words of the control line */
#define BRAID_SHM_SPLIT_FROM ((size_t)2 << 20) /* braid_shm_t.split_from: measured, reduce_shm.c */

/* Read bytes at address src of rank r's memory (r: rank in the segment)
 * into dst: BRAID_OK, or an error code when the copy failed. */
typedef int (*braid_shm_read_fn)(void *arg, int r, void *dst, uint64_t src, size_t bytes);

/* Write bytes at src of this process to address dst of rank r's memory:
 * BRAID_OK, or an error code when the copy failed. */
typedef int (*braid_shm_write_fn)(void *arg, int r, uint64_t dst, const void *src, size_t bytes);

/* Whether the reader cannot reach [p, p + bytes) of this process: memory a
 * driver mapped (CUDA's pinned, device or managed memory: the kernel's
 * cross-memory attach refuses pages it cannot pin, EFAULT). Such a buffer
 * is copied to ordinary memory before its address is published. */
typedef bool (*braid_shm_unreadable_fn)(void *arg, const void *p, size_t bytes);

typedef struct braid_shm {
    unsigned char *base;      /* the mapped segment */
    int rank, size;
    int ncells;
    size_t slot_bytes;        /* data bytes of one rank's slot in a cell */
    size_t stride;            /* bytes from one slot to the next: stamp + data, whole lines */
    unsigned char *cells;     /* rank 0's slot data in cell 0 (braid_shm_slot) */
    size_t cell_bytes;        /* bytes from one cell to the next: size x stride */
    uint64_t cell_mask;       /* ncells - 1 where ncells is a power of two, else 0 */
    uint64_t seq;             /* the last call numbered on this rank */
    uint64_t safe;            /* every rank is done with calls <= safe */
    bool yield;               /* oversubscribed: yield the core while waiting */
    bool far;                 /* two ranks whose cores pass a cache line slowly
                                 (braid_shm_line_probe; the same on both) */
    void (*idle)(void *);     /* called now and then while waiting; may be NULL */
    void *idle_arg;
    /* the communicator's failure state (braid_algo.h; NULL: none), polled
     * with idle. A wait that finds a failure returns as if its flag were
     * set, so does every later wait, and the single-copy reader and writer
     * return errors from then on: the call runs to its end on whatever the
     * cells hold, touching no peer's memory, and the dispatch fails it. */
    struct braid_fault *fault;
    uint64_t waits;           /* turns spent waiting (statistics) */
    braid_shm_read_fn read;   /* single copy from a peer's memory; NULL: cells only */
    void *read_arg;
    braid_shm_write_fn write; /* single copy into a peer's memory (with read only); may be NULL */
    braid_shm_unreadable_fn unreadable; /* NULL: every buffer is readable */
    void *unreadable_arg;
    size_t direct_above;      /* with a reader: single copy above these bytes per rank
                                 (at most slot_bytes; beyond the slot it is the only way) */
    size_t split_from;        /* single-copy reduce: every rank folds a share once
                                 P x bytes reaches this (braid_shm_attach sets
                                 BRAID_SHM_SPLIT_FROM; the unit tests vary it) */
} braid_shm_t;

/* Bytes of a segment for P ranks, ncells cells of slot_bytes per rank
 * (slot_bytes rounded up to 16; each slot also holds its stamp and is
 * padded to whole lines). */
size_t braid_shm_segment_bytes(int P, int ncells, size_t slot_bytes);

/* Write the header into zeroed memory of braid_shm_segment_bytes(). */
void braid_shm_format(void *base, int P, int ncells, size_t slot_bytes);

/* Bind s to a formatted segment as rank of size; BRAID_ERR_ARG when the
 * header does not describe a segment for size ranks. */
int braid_shm_attach(braid_shm_t *s, void *base, int rank, int size, bool yield);

/* ------------------------------------------------------------------ */
/* the protocol, as the algorithms use it                              */
/* ------------------------------------------------------------------ */

/* c's segment when one rank's bytes fit a slot, else NULL (the same
 * answer on every rank: the segment exists on all or none, and MPI makes
 * the sizes match). */
struct braid_comm;
braid_shm_t *braid_shm_of(const struct braid_comm *c, size_t bytes);

/* c's segment when a call of bytes per rank goes single copy: the segment
 * has a reader and bytes exceed direct_above or the slot; else NULL (the
 * same answer on every rank: the glue installs the reader on all or none,
 * with one threshold). */
braid_shm_t *braid_shm_direct(const struct braid_comm *c, size_t bytes);

/* A call whose rank puts n parts of `bytes` each through the cells
 * (alltoall: P blocks) may span consecutive cells, each carrying a piece of
 * every part, n pieces to a slot: the cells it spans (1 when the parts fit
 * one slot, up to ncells), *piece set to a piece's bytes (the last piece of
 * a part may be shorter); 0 when the cells cannot hold it. The same answer
 * on every rank for the same n and bytes. */
int braid_shm_span(const braid_shm_t *s, int n, size_t bytes, size_t *piece);

/* c's segment when braid_shm_span holds n parts of bytes, else NULL */
braid_shm_t *braid_shm_spanned(const struct braid_comm *c, int n, size_t bytes);

/* The cells a rooted call of P ranks with blocks of `bytes` spans (gather,
 * scatter), *piece as braid_shm_span's: as long as the root's P - 1 blocks
 * fit them (beyond, the root's copies, one after another on its core, cost
 * more than single copy's, one per core). own_slots: each block goes
 * through its owner's slot (gather), so a block up to a slot takes one
 * cell however large P is; else the root's slot holds them all (scatter).
 * 0: not through the cells. The same answer on every rank. */
int braid_shm_rooted_span(const braid_shm_t *s, int P, size_t bytes, bool own_slots, size_t *piece);

/* Piece j of a part of `bytes` cut into pieces of `piece` (braid_shm_span):
 * its offset in the part and its length (the last may be shorter) */
static inline size_t braid_shm_piece(size_t bytes, size_t piece, int j, size_t *off)
{
    *off = (size_t)j * piece;
    return bytes - *off < piece ? bytes - *off : piece;
}

/* The reads of a call that spans k cells from call number `first`: for
 * each cell j, each rank q but `me` (from the one after it) once q has
 * arrived there (every rank at the first cell, braid_shm_wait_all: that
 * frees the cells before the call; q alone at the later ones: arriving
 * at a later cell says nothing of the earlier), take(arg, q, its slot of
 * cell j, the piece's offset in the part, its length). */
typedef void (*braid_shm_take_piece_fn)(void *arg, int q, const unsigned char *slot, size_t off,
                                        size_t n);
void braid_shm_read_span(braid_shm_t *s, uint64_t first, int k, size_t bytes, size_t piece, int me,
                         braid_shm_take_piece_fn take, void *arg);

/* The words of the control lines: this rank publishes word i (set-up,
 * before the ranks synchronise); any rank reads rank r's. */
void braid_shm_set_word(braid_shm_t *s, int i, uint64_t v);
uint64_t braid_shm_word(const braid_shm_t *s, int r, int i);

/* Two ranks' cache-line round trip (set-up, both ranks at once): rank 0
 * and rank 1 pass a stamp back and forth through the cells, 2 x ncells
 * rounds untimed, then `rounds` (1..256) that rank 0 times one by one.
 * Rank 0 alone decides how many rounds there are (its word in each round
 * says whether another follows): a round longer than slice_ns is not
 * timed, and the third such round ends the probe - the ranks take turns
 * on one core, and a round costs a time slice. Returns rank 0's median
 * round trip in ns (or the round that ended it) and sets s->far to
 * whether the median exceeds far_ns, the
 * same on both ranks; never far where the probe was cut short or rank 0
 * yields the core (s->yield), whose figure is the scheduler's, not the
 * line's - except with far_ns BRAID_SHM_FAR_ALWAYS, far whatever the
 * rounds took (a choice made on every rank alike, so a test of the far
 * path does not hang on the machine's moment). 0 and s->far false for a
 * segment of other than two ranks. */
#define BRAID_SHM_PROBE_SLICE_NS 50000u   /* the glue's slice_ns */
#define BRAID_SHM_FAR_ALWAYS 1u           /* far_ns: far, whatever the probe sees */
uint64_t braid_shm_line_probe(braid_shm_t *s, int rounds, uint64_t far_ns, uint64_t slice_ns);

/* out = slot[0] op (slot[1] op (... op slot[P-1])) of call seq over
 * count elements of esize bytes from byte offset off of every slot, in
 * rank order, so non-commutative ops get the order MPI wants and every
 * rank that folds gets the same bits. own: what this rank published (the
 * bytes it copied into its slot), read from there instead of its slot -
 * the others' reads of the slot may have taken its lines away, and
 * reading them back is a miss each; NULL, or own overlapping out where
 * out changes before its turn, reads the slot. */
struct braid_op;
void braid_shm_fold(const braid_shm_t *s, uint64_t seq, size_t off, size_t count, size_t esize,
                    const struct braid_op *op, const void *own, void *out);
/* the same over the slots of ranks 0..n-1 only (n >= 1): scan and exscan */
void braid_shm_fold_prefix(const braid_shm_t *s, uint64_t seq, size_t off, size_t count,
                           size_t esize, const struct braid_op *op, int n, const void *own,
                           void *out);
/* ------------------------------------------------------------------ */

/* Number the next call (every rank, every shm call). */
static inline uint64_t braid_shm_begin(braid_shm_t *s) { return ++s->seq; }

/* Rank r's slot of call seq's cell. */
static inline unsigned char *braid_shm_slot(const braid_shm_t *s, uint64_t seq, int r)
{
    /* a small call takes a dozen slots: a mask, not a division, with the
     * default (power of two) number of cells */
    size_t cell = (size_t)(s->cell_mask ? seq & s->cell_mask : seq % (uint64_t)s->ncells);
    return s->cells + cell * s->cell_bytes + (size_t)r * s->stride;
}

/* Wait until this rank may write its slot of call seq: every rank is done
 * with call seq - ncells, the last one that used the cell. */
void braid_shm_claim(braid_shm_t *s, uint64_t seq);

/* Publish: this rank's slot holds its contribution to call seq (release). */
void braid_shm_arrive(braid_shm_t *s, uint64_t seq);

/* Wait until rank r arrived at call seq (acquire). */
void braid_shm_wait_one(braid_shm_t *s, uint64_t seq, int r);

/* Wait until every rank arrived at call seq; cells up to seq - 1 are then
 * known free. A call that spans cells (braid_shm_span) waits so on its
 * first number alone, braid_shm_wait_one on the others: arriving at a
 * later number of the same call says nothing of the cells before it. */
void braid_shm_wait_all(braid_shm_t *s, uint64_t seq);

/* claim + copy bytes of in into this rank's slot + arrive: this rank's
 * contribution to call seq, published */
void braid_shm_publish(braid_shm_t *s, uint64_t seq, const void *in, size_t bytes);

/* This rank finished call seq: it reads nothing of the cell any more.
 * Every word of a peer's slot it needs (stamp, address, status word,
 * table, data) is read before: from here on the peers may claim the cell
 * for call seq + ncells and overwrite their slots, and one that never
 * waits for this rank does so ncells calls later (docs/SHM.md, "What a
 * rank reads of a peer's slot, and until when"). */
void braid_shm_done(braid_shm_t *s, uint64_t seq);

/* Wait until rank r / every other rank is done with call seq (acquire):
 * what a rank whose buffer the others read waits for before returning. */
void braid_shm_wait_done(braid_shm_t *s, uint64_t seq, int r);
void braid_shm_wait_all_done(braid_shm_t *s, uint64_t seq);

/* In-place single copy (alltoall and alltoallv with MPI_IN_PLACE): a rank's
 * block for q lies where q's block for it goes, so it may overwrite it only
 * once q has read it. Instead of publishing a copy of its whole input, each
 * rank swaps with one partner per round: P rounds within call seq (whose
 * cells hold what the takes read: finish the call, braid_shm_done, only
 * after the rounds). Round k pairs this rank r with q = (k - r) mod P (the
 * pairing is symmetric; r's own round is idle): r takes q's block for it
 * (w->take), says so, and when w->live (the others read r's blocks from
 * its receive buffer) waits until q has said so too before it copies the
 * block from tmp into place (w->dst); not live, the take writes straight
 * into place. tmp: the largest block (NULL only where every block is
 * empty). The first code a take returned, or BRAID_ERR_NOMEM; the rounds
 * run to the end either way, so no rank waits for ever. */
typedef struct braid_shm_swap {
    char *(*dst)(void *arg, int q, size_t *bytes);          /* where q's block goes, its bytes */
    int (*take)(void *arg, int q, char *into, size_t bytes); /* q's block for this rank, into `into` */
    void *arg;
    bool live;
} braid_shm_swap_t;
int braid_shm_swap(braid_shm_t *s, uint64_t seq, const braid_shm_swap_t *w, char *tmp);

/* Single copy: publish the address of this rank's buffer for call seq
 * (claim + address into the slot + arrive), and read rank r's. */
void braid_shm_publish_addr(braid_shm_t *s, uint64_t seq, const void *p);

/* Where the others can read this rank's bytes at p: p itself, or (memory
 * the reader cannot reach, s->unreadable) a copy in scratch slot
 * BRAID_SHM_SCRATCH; NULL when that copy cannot be allocated (publish it
 * anyway - the readers then fail instead of waiting for ever). */
#define BRAID_SHM_SCRATCH 2
struct braid_scratch;
const void *braid_shm_expose(const braid_shm_t *s, const void *p, size_t bytes,
                             struct braid_scratch *scratch);
uint64_t braid_shm_addr(const braid_shm_t *s, uint64_t seq, int r);

/* Whether this rank's [p, p + bytes) can take the others' writes: the
 * segment has a writer and the memory is not s->unreadable. Only the rank
 * written to knows; it offers the address (non-NULL) or not. */
bool braid_shm_writable(const braid_shm_t *s, const void *p, size_t bytes);

/* A writer's outcome of call seq (single copy into a peer's memory,
 * s->write): the word after the address in its slot, set before it says
 * done (braid_shm_done) and read by the rank written to once it waited
 * for that (braid_shm_wait_done). */
void braid_shm_set_status(braid_shm_t *s, uint64_t seq, int rc);
int braid_shm_status(const braid_shm_t *s, uint64_t seq, int r);

/* Pair copy: two ranks share one single copy of a block of bytes from
 * the source rank's memory into the destination rank's, so that both
 * cores copy at once. Within call seq the destination publishes where the
 * block goes (braid_shm_publish_addr; NULL where its memory cannot take
 * writes, braid_shm_writable: it then reads the whole block) and the
 * source where it lies (its status word follows its address); each waits
 * for the other's word (braid_shm_wait_one) and passes the address it
 * found; the destination reads [0, m), the source writes [m, bytes).
 *   braid_shm_pair_split   m for a destination share num / den of the
 *                          block (rounded down to a page from 8 KiB, a
 *                          line below, so that the two copies touch
 *                          pages of their own); the same on both ranks
 *   braid_shm_pair_write   the source, once it has the block's place
 *                          at in the destination's memory (0: none
 *                          offered): writes its part of src there, sets
 *                          its status word to the outcome (rc other than
 *                          BRAID_OK: writes nothing and passes rc on) and
 *                          returns it
 *   braid_shm_pair_read    the destination, once it has the block's
 *                          address at in the source's memory: reads its
 *                          part (everything without an offer) into dst;
 *                          with an offer and a part for the source, waits
 *                          for the source's done mark and takes its
 *                          status. Call before this rank's braid_shm_done.
 * The source returns after the destination is done unless it offered and
 * m is 0 (nobody reads the source's buffer then). braid_shm_pairs: a
 * segment of two ranks with a writer, where the rooted collectives share
 * their copy so (the same answer on both ranks). */
static inline bool braid_shm_pairs(const braid_shm_t *s) { return 2 == s->size && NULL != s->write; }
/* The two ends of a rooted collective's single copy from the root to the
 * other rank (bcast, scatter, scatterv), shared where braid_shm_pairs:
 *   braid_shm_give  the root, after publishing its buffer: waits for the
 *                   other's offer and writes [m, bytes) of src (nothing
 *                   without a pair); returns the outcome
 *   braid_shm_take  the other, once it has the block's address at in the
 *                   root's memory: offers dst (with a pair), then reads
 *                   [0, m) - everything without a pair or an offer */
int braid_shm_give(braid_shm_t *s, uint64_t seq, const void *src, size_t m, size_t bytes, int rc);
int braid_shm_take(braid_shm_t *s, uint64_t seq, int root, uint64_t at, void *dst, size_t m, size_t bytes);
/* A whole call of the other side (bcast's readers, scatter's others):
 * numbers the call, waits for the root, takes the block at off of the
 * root's published address, and is done. */
int braid_shm_take_call(braid_shm_t *s, int root, uint64_t off, void *dst, size_t m, size_t bytes);
size_t braid_shm_pair_split(size_t bytes, unsigned num, unsigned den);
int braid_shm_pair_write(braid_shm_t *s, uint64_t seq, int dst, uint64_t at, const void *src,
                         size_t m, size_t bytes, int rc);
int braid_shm_pair_read(braid_shm_t *s, uint64_t seq, int src, uint64_t at, void *dst, size_t m,
                        size_t bytes, bool offered);

/* Single-copy reduction of a's count elements (braid_shm_reduce.c): into
 * root's rbuf (reduce) or every rank's (root < 0, allreduce, split only).
 *   FLAT   the root reads and folds everything (one step)
 *   PAIR   two ranks with a writer, reduce: the root reads part, the other
 *          writes the rest into the root's result (one step; FLAT otherwise)
 *   SPLIT  every rank folds a share and the shares are gathered (two steps)
 *   COPY   two ranks, reduce: the root reads the other's vector into its
 *          result, releases it, folds its own in (one step; FLAT where
 *          that order is not MPI's: in place, root 1 non-commutative)
 * Call on a segment with a reader, on every rank with the same root and
 * way. */
typedef enum { BRAID_SHM_FLAT, BRAID_SHM_PAIR, BRAID_SHM_SPLIT, BRAID_SHM_COPY } braid_shm_way_t;
struct braid_coll_args;
int braid_shm_reduce_direct(braid_shm_t *s, const struct braid_coll_args *a, int root, braid_shm_way_t way);

/* A prefix reduction (MPI_Scan, exclusive: MPI_Exscan) of two ranks by the
 * pair way: rank 1 reads and folds a part of rank 0's input while rank 0
 * writes the rest straight into rank 1's result; rank 0's own result (scan)
 * is its input. Call on a two-rank segment with a reader and a writer. */
int braid_shm_prefix_pair(braid_shm_t *s, const struct braid_coll_args *a, bool exclusive);

#ifdef __cplusplus
}
#endif
#endif /* BRAID_SHM_H */
