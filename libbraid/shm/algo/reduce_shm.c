/*
 * reduce shm: every rank's vector through the node's shared-memory segment,
 * reduced by the root
 *
 *   cells (up to the single-copy threshold; at P = 2 up to a slot):
 *                          steps: 1   bytes: each rank copies S in; the
 *                          root reads P S
 *   above (single copy, braid_shm_reduce.c):
 *     pair  (P = 2)        steps: 1   bytes: the root reads 2S/5 (S/2
 *                          below 64 KiB) of the other's vector, the other
 *                          writes the rest into the root's result
 *     copy  (P = 2, far apart, 4 KiB - 512 KiB, far_copy)  steps: 1
 *                          bytes: the root reads S of the other's vector
 *                          into its result, then folds its own into it
 *     flat  (P S < 2 MiB, P > 2 or no writer)  steps: 1   bytes: the root
 *                          reads (P - 1) S straight from the others' buffers
 *     split (otherwise)    steps: 2   bytes: each rank reads (P - 1) S / P
 *                          for its share, the root (P - 1) S / P of shares
 *   reductions: cells and flat (P - 1) S at the root; split (P - 1) S / P
 *   per rank
 *
 * Cells: only the root waits. The others leave once their slot is
 * published and may run up to ncells calls ahead (braid_shm_claim stops
 * them from overwriting a slot the root has not read), which is what makes
 * a loop of reduces cheap for them.
 *
 * Single copy: the others publish their buffers' addresses and wait until
 * their readers are done. Flat keeps one synchronisation, which wins for
 * small P S; above, every rank folds a share, since a root that folds
 * P - 1 long vectors alone falls behind (split_for).
 *
 * All fold in rank order, out = v0 op (v1 op (... op v(P-1))), so
 * non-commutative ops get the order MPI wants.
 */
#include "braid_algo.h"
#include "braid_cost.h"
#include "braid_registry.h"
#include "braid_shm.h"

/* Split from 3 ranks once P S reaches s->split_from (BRAID_SHM_SPLIT_FROM,
 * 2 MiB): measured (2-core machine, docs/BENCHMARKS.md "P = 3, 4, 8"), the flat root
 * was 0.44-0.76x split's time at P=8 from 16 to 64 KiB and 0.58-0.75x at
 * P=4 from 16 to 128 KiB, split was 0.67-0.75x flat's at P=8 from 256 KiB
 * and at P=4 from 512 KiB; at P=2 and P=3 split never won by more than
 * noise. */
static bool split_for(const braid_shm_t *s, int P, size_t bytes)
{
    return P >= 3 && bytes * (size_t)P >= s->split_from;
}

/* Two ranks whose cores pass a cache line slowly (s->far: sockets apart,
 * or a virtual machine's vCPUs on distant cores) copy 4 KiB - 512 KiB:
 * the root reads the other's vector into its result, releases it and
 * folds there. Written through a slot or into the root's result, every
 * line crosses between the cores twice; read, once, and the fold then
 * runs on lines already in the root's cache. Measured (np=2, an Intel
 * VM, OSU's osu_reduce, docs/BENCHMARKS.md "An Intel VM: copy"): copy
 * 0.97-1.23x tuned at 8-512 KiB where pair was 0.59-0.85x and flat
 * 0.83-1.24x; pair stays ahead from 1 MiB (1.32-1.65x), where the other
 * rank's write halves the root's copy. */
#define FAR_COPY_FROM ((size_t)4 << 10)
#define FAR_COPY_TO ((size_t)512 << 10)
static braid_shm_t *far_copy(const braid_comm_t *c, size_t bytes)
{
    braid_shm_t *s = c->shm;
    return bytes >= FAR_COPY_FROM && bytes <= FAR_COPY_TO && 2 == c->size && NULL != s && s->far &&
                   NULL != s->read
               ? s
               : NULL;
}

int braid_reduce_shm(braid_comm_t *c, const braid_coll_args_t *a)
{
    size_t bytes = a->count * a->esize;
    braid_shm_t *f = far_copy(c, bytes);
    if (NULL != f) return braid_shm_reduce_direct(f, a, a->root, BRAID_SHM_COPY);
    /* two ranks: through the cells whenever a slot holds the vector, above
     * the single-copy threshold too - the other rank leaves as soon as its
     * slot is written, where pair (and flat) hold it until the root has
     * read (8 KiB: 1.9x tuned by OSU's method against pair's 1.2x,
     * docs/BENCHMARKS.md "Reduce at np=2") */
    braid_shm_t *s = braid_shm_of(c, bytes), *d = braid_shm_direct(c, bytes);
    if (NULL != d && (NULL == s || 2 != c->size))
        return braid_shm_reduce_direct(d, a, a->root,
                                       split_for(d, c->size, bytes) ? BRAID_SHM_SPLIT : BRAID_SHM_PAIR);
    if (NULL == s) return BRAID_ERR_UNSUPPORTED;
    if (0 == bytes) return BRAID_OK;
    const void *in = NULL != a->sbuf ? a->sbuf : a->rbuf;
    uint64_t seq = braid_shm_begin(s);
    braid_shm_publish(s, seq, in, bytes);
    if (c->rank == a->root) {
        braid_shm_wait_all(s, seq);
        braid_shm_fold(s, seq, 0, a->count, a->esize, &a->op, in, a->rbuf);
    }
    braid_shm_done(s, seq);
    return BRAID_OK;
}

/* not in the alpha-beta model (no messages): measured, see the table */
BRAID_COST_NOT_MODELLED(braid_cost_reduce_shm)
