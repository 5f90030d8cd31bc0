/*
 * braid_shm_reduce.c - the single-copy reduction behind reduce shm and
 * allreduce shm above the cells: every rank's vector is read straight from
 * its owner's memory (s->read), so each element crosses between processes
 * once per reader and is reduced while it is still in cache.
 *
 * Two ways to share the work (P ranks, S bytes per rank, "read" = one copy
 * out of a peer's memory):
 *
 *   flat   (reduce only) the root folds everything:
 *            reads (P - 1) S and reduces (P - 1) S at the root; 1 step
 *   split  every rank folds one share of S / P elements and publishes it:
 *            reads (P - 1) S / P + reduces (P - 1) S / P per rank, then
 *            the root (reduce) or every rank (allreduce) reads the other
 *            P - 1 shares: (P - 1) S / P; 2 steps
 *
 * and at P = 2 (reduce; pair needs a writer, s->write):
 *
 *   pair   the root reads and folds the first part of the other's
 *          vector while the other writes the rest straight into the
 *          root's result (process_vm_writev); the root then folds its own
 *          operand into that part. Root: reads (1 - f) S, reduces S;
 *          the other: writes f S (f = 1/2, 3/5 from 64 KiB); 1 step
 *          (also MPI_Scan and MPI_Exscan at P = 2 with rank 1 as the
 *          root: braid_shm_prefix_pair; exscan reads its part and folds
 *          nothing, scan's rank 0 copies its input to its result while
 *          rank 1 reads)
 *   copy   the root reads the other's whole vector into its result,
 *          releases it, then folds its own operand in (tuned's order):
 *          root: reads S, reduces S; 1 step
 *
 * Flat is the shorter path for small P (one synchronisation); at P = 2
 * pair also puts the other rank's idle core to work on the copy, and
 * releases it once the root has read its part (the OSU method averages
 * the root's time with the other's); split spreads the reads and reductions
 * over the ranks, which is what a node with a core per rank has to spare:
 * at P = 8 and 4 MiB the flat root alone loses to a tree
 * (docs/BENCHMARKS.md, "P = 3, 4, 8"). Within a share the fold goes a chunk at a time (256 KiB: accumulator
 * and operand stay in L2) in rank order, out = v0 op (v1 op (...)), so a
 * non-commutative op keeps MPI's order and every element is computed once,
 * by one rank, with the same bits wherever it ends up.
 *
 * Lifetimes. A rank's input is read by the others in step 1, its share in
 * step 2; MPI lets the caller reuse both buffers once the call returns, so a
 * rank returns only when their readers are done (braid_shm_wait_done). In
 * place the input is the output: a rank writes a region of it only after
 * the one rank that reads that region has finished step 1, which its step-2
 * arrival proves. Shares are folded into scratch (slot 3, ordinary memory
 * the reader can always reach) and inputs CUDA knows are exposed as host
 * copies (braid_shm_expose). Pair writes into the root's result only
 * when the root offers it (a non-NULL address): not in place (the result
 * is then the root's operand), not into memory the writer cannot reach,
 * and with a non-commutative op only when the root is rank 0 (the written
 * part is folded as own op written); otherwise the root reads everything,
 * as flat does.
 */
#include <string.h>

#include "braid_algo.h"
#include "braid_shm.h"

#define SHM_FOLD_CHUNK ((size_t)256 << 10)
#define SHM_SHARE_SLOT 3   /* scratch slot of a rank's folded share */

/* elements [first, first + n) of count: rank r's share */
static void share_of(size_t count, int P, int r, size_t *first, size_t *n)
{
    size_t lo = count / (size_t)P * (size_t)r + (count % (size_t)P < (size_t)r ? count % (size_t)P : (size_t)r);
    *first = lo;
    *n = count / (size_t)P + ((size_t)r < count % (size_t)P ? 1 : 0);
}

/* rank r's n bytes at byte offset off: this rank's straight from in,
 * another's read into tmp */
static int operand(braid_shm_t *s, uint64_t seq, int r, const unsigned char *in, size_t off,
                   size_t n, void *tmp, const void **src)
{
    if (r == s->rank) {
        *src = in + off;
        return BRAID_OK;
    }
    *src = tmp;
    return s->read(s->read_arg, r, tmp, braid_shm_addr(s, seq, r) + off, n);
}

/* acc = v0 op (v1 op (... v(P-1))) over elements [first, first + n) */
static int fold_chunk(braid_shm_t *s, uint64_t seq, const braid_coll_args_t *a,
                      const unsigned char *in, size_t first, size_t n, void *acc, void *tmp)
{
    size_t off = first * a->esize, b = n * a->esize;
    const void *src;
    int rc = operand(s, seq, s->size - 1, in, off, b, acc, &src);
    if (BRAID_OK != rc) return rc;
    if (src != acc) braid_copy(acc, src, b);
    for (int r = s->size - 2; r >= 0 && BRAID_OK == rc; r--) {
        rc = operand(s, seq, r, in, off, b, tmp, &src);
        if (BRAID_OK == rc) a->op.fn(src, acc, n, a->op.arg);
    }
    return rc;
}

/* Fold elements [first, first + n) into out (out[0] is element first).
 * out may be the rank's own input (in place): the chunk then accumulates
 * apart and is copied over once its own operand has been used. */
static int fold_range(braid_shm_t *s, uint64_t seq, const braid_coll_args_t *a,
                      const unsigned char *in, size_t first, size_t n, unsigned char *out)
{
    if (0 == n) return BRAID_OK;
    size_t chunk = (SHM_FOLD_CHUNK / a->esize) ? (SHM_FOLD_CHUNK / a->esize) : 1;
    if (a->params.chunk_bytes)
        chunk = (a->params.chunk_bytes / a->esize) ? (a->params.chunk_bytes / a->esize) : 1;
    if (chunk > n) chunk = n;
    bool alias = out == in + first * a->esize;
    void *tmp = braid_scratch_get(a->scratch, 0, chunk * a->esize);
    void *acc = alias ? braid_scratch_get(a->scratch, 1, chunk * a->esize) : NULL;
    if (NULL == tmp || (alias && NULL == acc)) return BRAID_ERR_NOMEM;
    int rc = BRAID_OK;
    for (size_t done = 0; done < n && BRAID_OK == rc; done += chunk) {
        size_t k = n - done < chunk ? n - done : chunk;
        unsigned char *dst = out + done * a->esize;
        rc = fold_chunk(s, seq, a, in, first + done, k, alias ? acc : dst, tmp);
        if (BRAID_OK == rc && alias) braid_copy(dst, acc, k * a->esize);
    }
    return rc;
}

/* Step 2 of split: every rank publishes its share; the root (or every
 * rank, root < 0) reads the others' into rbuf. */
static int gather_shares(braid_shm_t *s, const braid_coll_args_t *a, int root, const void *share)
{
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish_addr(s, seq, share);
    int rc = BRAID_OK;
    if (root < 0 || s->rank == root) {
        for (int q = 0; q < s->size; q++) {
            if (q == s->rank) continue;
            size_t first, n;
            share_of(a->count, s->size, q, &first, &n);
            braid_shm_wait_one(s, seq, q);
            int rq = 0 == n ? BRAID_OK
                            : s->read(s->read_arg, q, (unsigned char *)a->rbuf + first * a->esize,
                                      braid_shm_addr(s, seq, q), n * a->esize);
            if (BRAID_OK == rc) rc = rq;
        }
    }
    braid_shm_done(s, seq);
    /* the readers of this rank's share (and, before, of its input) */
    if (root < 0) braid_shm_wait_all_done(s, seq);
    else if (s->rank != root) braid_shm_wait_done(s, seq, root);
    return rc;
}

/* ------------------------------------------------------------------ */
/* P = 2: the copy shared by both ranks                                */
/* ------------------------------------------------------------------ */

/* Where the root's part ends: the other rank writes elements [m, count)
 * into the root's result while the root reads and folds [0, m). The root
 * also folds the written part afterwards, so from 64 KiB on the other
 * takes the larger part (3/5: measured best of 2/5, 1/2, 3/5 and 2/3 at
 * 64 KiB-4 MiB, docs/BENCHMARKS.md "Reduce at np=2"); below, where the
 * two system calls dominate, half. A prefix (scan, exscan) splits in
 * half at every size: the other rank has its own copy to make (scan) or
 * the root no fold of its own (exscan); half measured 1.02-1.23x faster
 * than 3/5 from 64 KiB (docs/BENCHMARKS.md, "scan and exscan at np=2"). */
#define PAIR_LARGE ((size_t)64 << 10)
static size_t pair_split(size_t count, size_t esize, bool prefix)
{
    size_t theirs = count * esize >= PAIR_LARGE && !prefix ? count / 5 * 3 + count % 5 * 3 / 5
                                                           : count / 2;
    return count - theirs;
}

/* The root: publishes where the other may write (NULL: nowhere), reads
 * and folds [0, m) as flat does, waits for the other's done mark and takes
 * its status word, releases the other, then folds its own operand into
 * [m, count), where the other's write now is. Without fold (an exclusive
 * prefix at P = 2: the result is the other's vector) it reads [0, m) into
 * its result and adds nothing of its own.
 *
 * The status word lies in the other's slot of this call's cell, so it is
 * read before this rank says done: from then on the other may claim that
 * cell again ncells calls later (it never waits for the root in between,
 * a loop of bcasts from it for instance) and overwrite the word. */
static int pair_root(braid_shm_t *s, const braid_coll_args_t *a, const unsigned char *in, bool fold,
                     bool prefix)
{
    int other = 1 - s->rank;
    size_t bytes = a->count * a->esize;
    /* the written part becomes v_other and is folded with fn(own, part):
     * own op v_other, which is v0 op v1 for root 0 and, commutative, for
     * root 1; in place the write would overwrite the root's operand */
    bool give = (!fold || (in != (const unsigned char *)a->rbuf && (0 == s->rank || a->op.commutative))) &&
                braid_shm_writable(s, a->rbuf, bytes);
    size_t m = give ? pair_split(a->count, a->esize, prefix) : a->count;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish_addr(s, seq, give ? a->rbuf : NULL);
    braid_shm_wait_one(s, seq, other);
    int rc = fold ? fold_range(s, seq, a, in, 0, m, a->rbuf)
                  : s->read(s->read_arg, other, a->rbuf, braid_shm_addr(s, seq, other), m * a->esize);
    if (give) {
        /* the other says done before it waits for this rank: no cycle */
        braid_shm_wait_done(s, seq, other);
        if (BRAID_OK == rc && BRAID_OK != braid_shm_status(s, seq, other)) rc = BRAID_ERR_TRANSPORT;
    }
    braid_shm_done(s, seq);
    size_t off = m * a->esize;
    if (BRAID_OK == rc && fold && m < a->count)
        a->op.fn(in + off, (unsigned char *)a->rbuf + off, a->count - m, a->op.arg);
    return rc;
}

/* The other rank: publishes its input, writes [m, count) of it into the
 * root's result when the root offers it, copies its input to own_out
 * (an inclusive prefix's rank 0: its result is its input; NULL: nothing)
 * while the root reads, and returns once the root has read the rest. */
static int pair_other(braid_shm_t *s, const braid_coll_args_t *a, int root, const unsigned char *in,
                      void *own_out, bool prefix)
{
    size_t bytes = a->count * a->esize;
    uint64_t seq = braid_shm_begin(s);
    const unsigned char *pub = braid_shm_expose(s, in, bytes, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    braid_shm_wait_one(s, seq, root);
    uint64_t dst = braid_shm_addr(s, seq, root);
    size_t m = pair_split(a->count, a->esize, prefix), off = m * a->esize;
    if (0 != dst && BRAID_OK == rc && m < a->count)
        rc = s->write(s->read_arg, root, dst + off, pub + off, bytes - off);
    braid_shm_set_status(s, seq, rc);
    braid_shm_done(s, seq);
    if (NULL != own_out) braid_copy(own_out, in, bytes);
    braid_shm_wait_done(s, seq, root);
    return rc;
}

/* Copy: the root reads the other's whole vector into its result,
 * releases the other, then folds its own operand in: own op other, which
 * is v0 op v1 for root 0 and, commutative, for root 1. The other rank
 * does what it does for flat, so only the root decides. */
static bool copy_usable(const braid_shm_t *s, const braid_coll_args_t *a, const unsigned char *in)
{
    return in != (const unsigned char *)a->rbuf && (0 == s->rank || a->op.commutative) &&
           (NULL == s->unreadable || !s->unreadable(s->unreadable_arg, a->rbuf, a->count * a->esize));
}

static int copy_root(braid_shm_t *s, const braid_coll_args_t *a, const unsigned char *in)
{
    int other = 1 - s->rank;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish_addr(s, seq, in);
    braid_shm_wait_one(s, seq, other);
    int rc = s->read(s->read_arg, other, a->rbuf, braid_shm_addr(s, seq, other), a->count * a->esize);
    braid_shm_done(s, seq);
    if (BRAID_OK == rc) a->op.fn(in, a->rbuf, a->count, a->op.arg);
    return rc;
}

int braid_shm_reduce_direct(braid_shm_t *s, const braid_coll_args_t *a, int root, braid_shm_way_t way)
{
    const unsigned char *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    if (BRAID_SHM_COPY == way && 2 == s->size && root == s->rank && copy_usable(s, a, in))
        return copy_root(s, a, in);
    if (BRAID_SHM_PAIR == way && braid_shm_pairs(s) && root >= 0)
        return s->rank == root ? pair_root(s, a, in, true, false)
                                : pair_other(s, a, root, in, NULL, false);
    bool split = BRAID_SHM_SPLIT == way;
    bool flat_root = !split && s->rank == root;
    uint64_t seq = braid_shm_begin(s);
    /* step 1: inputs (a flat root reads its own in place; nobody else does) */
    const void *pub = flat_root ? in : braid_shm_expose(s, in, a->count * a->esize, a->scratch);
    braid_shm_publish_addr(s, seq, pub);
    int rc = NULL == pub ? BRAID_ERR_NOMEM : BRAID_OK;
    size_t first = 0, n = 0;
    if (split) share_of(a->count, s->size, s->rank, &first, &n);
    else if (flat_root) n = a->count;
    /* the root of a reduce folds into its result; the others (and every
     * rank of an allreduce, whose result others read) into scratch */
    bool own = s->rank == root;
    unsigned char *out = NULL;
    if (n > 0) {
        out = own ? (unsigned char *)a->rbuf + first * a->esize
                  : braid_scratch_get(a->scratch, SHM_SHARE_SLOT, n * a->esize);
        braid_shm_wait_all(s, seq);
        int rf = NULL == out ? BRAID_ERR_NOMEM : fold_range(s, seq, a, in, first, n, out);
        if (BRAID_OK == rc) rc = rf;
    }
    braid_shm_done(s, seq);
    if (!split) {
        /* flat: the root read the others' inputs, nothing else to wait for */
        if (!flat_root) braid_shm_wait_done(s, seq, root);
        return rc;
    }
    /* an allreduce's own share goes to its result too; in place this
     * overwrites only this rank's region of its input, which no other rank
     * reads */
    if (root < 0 && n > 0 && NULL != out) braid_copy((unsigned char *)a->rbuf + first * a->esize, out, n * a->esize);
    int rg = gather_shares(s, a, root, own ? NULL : out);
    return BRAID_OK != rc ? rc : rg;
}

int braid_shm_prefix_pair(braid_shm_t *s, const braid_coll_args_t *a, bool exclusive)
{
    const unsigned char *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    if (1 == s->rank) return pair_root(s, a, in, !exclusive, true);
    return pair_other(s, a, 1, in, exclusive || NULL == a->sbuf ? NULL : a->rbuf, true);
}
