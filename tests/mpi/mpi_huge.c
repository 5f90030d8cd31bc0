/*
 * mpi_huge.c - the collectives that move blocks, and the scans and
 * reduce_scatter, each with more than 2^31 bytes in one call.
 *
 * Blocks are B = 2^28 + 5 words of 8 bytes (2 GiB + 40 B): a block's byte
 * count, and every offset past the first block, overflows a 32-bit int,
 * while the element counts MPI passes stay ints. The calls that cannot
 * hold P such blocks twice over at P = 2 in 24 GiB (alltoall, alltoallv
 * not in place) use half blocks, whose totals still pass 2^31 bytes. Each
 * word of a block is a function of its source rank, its block and its
 * index, so a block that lands in the wrong place, shifted or cut short,
 * is caught; gaps between the v forms' blocks keep a marker that must
 * survive. Words are MPI_UINT64_T; the scans sum small integers exactly.
 *
 * usage: mpi_huge [collective ...]   (default: all of them, in order)
 *   allgather allgatherv alltoall alltoall_in_place alltoallv gather
 *   gatherv scatter scatterv scan exscan reduce_scatter_block
 *   reduce_scatter iallgatherv
 */
#include <stdint.h>
#include <sys/mman.h>

#include "mpi_test_common.h"

typedef uint64_t word_t;

#define BIG (((size_t)1 << 28) + 5)
#define HALF (((size_t)1 << 27) + 3)
#define GAP 3                              /* words between the v forms' blocks */
#define MARK ((word_t)0xfeedfacecafebeefULL) /* what a gap holds */

static int me, P;

static word_t word(int src, int blk, size_t i)
{
    return ((word_t)(unsigned)src << 56) ^ ((word_t)(unsigned)blk << 48) ^ (word_t)i;
}

static void fill(word_t *x, size_t n, int src, int blk)
{
    for (size_t i = 0; i < n; i++) x[i] = word(src, blk, i);
}

static void set(word_t *x, size_t n, word_t v)
{
    for (size_t i = 0; i < n; i++) x[i] = v;
}

/* the words of x that are not block (src, blk); the first of them in *first */
static size_t wrong(const word_t *x, size_t n, int src, int blk, size_t *first)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (x[i] != word(src, blk, i) && 0 == bad++) *first = i;
    return bad;
}

static void expect_block(const char *what, const word_t *x, size_t n, int src, int blk)
{
    size_t first = 0, bad = wrong(x, n, src, blk, &first);
    mt_check(0 == bad, "%s: block from rank %d (%zu bytes): %zu words wrong, the first at %zu", what,
             src, n * sizeof(word_t), bad, first);
}

static void expect_gap(const char *what, const word_t *x)
{
    size_t bad = 0;
    for (size_t i = 0; i < GAP; i++) bad += MARK != x[i];
    mt_check(0 == bad, "%s: %zu words of a gap between blocks were written", what, bad);
}

/* Every rank allocates or none goes on: a rank short of memory would
 * leave the others waiting in the collective. Transparent huge pages
 * where the kernel has them on request: a first touch of 4 KiB pages
 * costs this test most of its time on a virtual machine. */
static struct {
    void *at;
    size_t len;
} maps[4];

static word_t *take(const char *what, size_t words)
{
    size_t len = words * sizeof(word_t), slot = 0;
    while (slot < 4 && NULL != maps[slot].at) slot++;
    void *p = slot < 4 ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                       : MAP_FAILED;
    word_t *x = MAP_FAILED == p ? NULL : p;
#ifdef MADV_HUGEPAGE
    if (x) (void)madvise(x, len, MADV_HUGEPAGE);
#endif
    int ok = NULL != x, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        mt_check(0, "%s: %zu bytes could not be mapped on some rank", what, len);
        if (x) munmap(x, len);
        return NULL;
    }
    maps[slot].at = x;
    maps[slot].len = len;
    return x;
}

static void give(word_t *x)
{
    for (size_t slot = 0; slot < 4 && x; slot++)
        if (maps[slot].at == x) {
            munmap(x, maps[slot].len);
            maps[slot].at = NULL;
        }
}

/* v-form layout: block r of counts[r] = BIG - r words, in reverse rank
 * order, GAP words before each; returns the words the layout spans */
static size_t layout_v(int *counts, int *displs)
{
    size_t at = 0;
    for (int r = P - 1; r >= 0; r--) {
        counts[r] = (int)(BIG - (size_t)r);
        displs[r] = (int)(at + GAP);
        at += GAP + (size_t)counts[r];
    }
    return at;
}

/* the v layout's displacements count blocks of 8 bytes; a block's
 * displacement in words stays below 2^31 when BIG words fit an int */
static void expect_v(const char *what, const word_t *x, const int *counts, const int *displs,
                     int only, int blk_of_src)
{
    for (int r = 0; r < P; r++) {
        expect_gap(what, x + displs[r] - GAP);
        if (only >= 0 && r != only) continue;
        expect_block(what, x + displs[r], (size_t)counts[r], r, blk_of_src ? r : 0);
    }
}

/* ------------------------------------------------------------------ */

static void t_allgather(void)
{
    word_t *x = take("allgather", P * BIG);
    if (!x) return;
    fill(x + (size_t)me * BIG, BIG, me, 0);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, (int)BIG, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = 0; r < P; r++) expect_block("allgather in place", x + (size_t)r * BIG, BIG, r, 0);
    give(x);
}

static void allgatherv(int nonblocking)
{
    const char *what = nonblocking ? "iallgatherv in place" : "allgatherv in place";
    int counts[P], displs[P];
    size_t n = layout_v(counts, displs);
    word_t *x = take(what, n);
    if (!x) return;
    set(x, n, MARK);
    fill(x + displs[me], (size_t)counts[me], me, 0);
    if (nonblocking) {
        MPI_Request req;
        MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, counts, displs, MPI_UINT64_T,
                        MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, counts, displs, MPI_UINT64_T,
                       MPI_COMM_WORLD);
    }
    expect_v(what, x, counts, displs, -1, 0);
    give(x);
}

static void t_allgatherv(void) { allgatherv(0); }
static void t_iallgatherv(void) { allgatherv(1); }

/* half blocks: P of them to send and P to receive */
static void t_alltoall(void)
{
    word_t *s = take("alltoall", P * HALF), *r = s ? take("alltoall", P * HALF) : NULL;
    if (!r) {
        give(s);
        return;
    }
    for (int j = 0; j < P; j++) fill(s + (size_t)j * HALF, HALF, me, j);
    set(r, P * HALF, MARK);
    MPI_Alltoall(s, (int)HALF, MPI_UINT64_T, r, (int)HALF, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int j = 0; j < P; j++) expect_block("alltoall", r + (size_t)j * HALF, HALF, j, me);
    for (int j = 0; j < P; j++) expect_block("alltoall's send buffer", s + (size_t)j * HALF, HALF, me, j);
    give(s);
    give(r);
}

static void t_alltoall_in_place(void)
{
    word_t *x = take("alltoall in place", P * BIG);
    if (!x) return;
    for (int j = 0; j < P; j++) fill(x + (size_t)j * BIG, BIG, me, j);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, (int)BIG, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int j = 0; j < P; j++) expect_block("alltoall in place", x + (size_t)j * BIG, BIG, j, me);
    give(x);
}

/* half blocks, counts that differ by sender and receiver, both buffers
 * laid out in reverse rank order with gaps */
static size_t a2av_count(int from, int to) { return HALF - (size_t)(2 * from + to); }

static void t_alltoallv(void)
{
    int sc[P], sd[P], rc[P], rd[P];
    size_t sn = 0, rn = 0;
    for (int j = P - 1; j >= 0; j--) {
        sc[j] = (int)a2av_count(me, j);
        sd[j] = (int)(sn + GAP);
        sn += GAP + (size_t)sc[j];
        rc[j] = (int)a2av_count(j, me);
        rd[j] = (int)(rn + GAP);
        rn += GAP + (size_t)rc[j];
    }
    word_t *s = take("alltoallv", sn), *r = s ? take("alltoallv", rn) : NULL;
    if (!r) {
        give(s);
        return;
    }
    set(s, sn, MARK);
    set(r, rn, MARK);
    for (int j = 0; j < P; j++) fill(s + sd[j], (size_t)sc[j], me, j);
    MPI_Alltoallv(s, sc, sd, MPI_UINT64_T, r, rc, rd, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int j = 0; j < P; j++) {
        expect_gap("alltoallv", r + rd[j] - GAP);
        expect_block("alltoallv", r + rd[j], (size_t)rc[j], j, me);
    }
    give(s);
    give(r);
}

/* the root (the last rank) in place */
static void t_gather(void)
{
    int root = P - 1;
    size_t n = me == root ? P * BIG : BIG;
    word_t *x = take("gather", n);
    if (!x) return;
    fill(x + (me == root ? (size_t)me * BIG : 0), BIG, me, 0);
    if (me == root)
        MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, (int)BIG, MPI_UINT64_T, root, MPI_COMM_WORLD);
    else
        MPI_Gather(x, (int)BIG, MPI_UINT64_T, NULL, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    if (me == root)
        for (int r = 0; r < P; r++) expect_block("gather, root in place", x + (size_t)r * BIG, BIG, r, 0);
    else
        expect_block("gather's send buffer", x, BIG, me, 0);
    give(x);
}

/* root 0, in place, the v layout */
static void t_gatherv(void)
{
    int counts[P], displs[P];
    size_t n = layout_v(counts, displs);
    word_t *x = take("gatherv", 0 == me ? n : (size_t)counts[me]);
    if (!x) return;
    if (0 == me) {
        set(x, n, MARK);
        fill(x + displs[0], (size_t)counts[0], 0, 0);
        MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, counts, displs, MPI_UINT64_T, 0,
                    MPI_COMM_WORLD);
        expect_v("gatherv, root in place", x, counts, displs, -1, 0);
    } else {
        fill(x, (size_t)counts[me], me, 0);
        MPI_Gatherv(x, counts[me], MPI_UINT64_T, NULL, NULL, NULL, MPI_DATATYPE_NULL, 0,
                    MPI_COMM_WORLD);
    }
    give(x);
}

/* root 0 in place */
static void t_scatter(void)
{
    size_t n = 0 == me ? P * BIG : BIG;
    word_t *x = take("scatter", n);
    if (!x) return;
    if (0 == me) {
        for (int r = 0; r < P; r++) fill(x + (size_t)r * BIG, BIG, 0, r);
        MPI_Scatter(x, (int)BIG, MPI_UINT64_T, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD);
        for (int r = 0; r < P; r++) expect_block("scatter's send buffer", x + (size_t)r * BIG, BIG, 0, r);
    } else {
        set(x, BIG, MARK);
        MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, x, (int)BIG, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        expect_block("scatter", x, BIG, 0, me);
    }
    give(x);
}

/* the root (the last rank) in place, the v layout */
static void t_scatterv(void)
{
    int root = P - 1, counts[P], displs[P];
    size_t n = layout_v(counts, displs);
    word_t *x = take("scatterv", me == root ? n : (size_t)counts[me]);
    if (!x) return;
    if (me == root) {
        set(x, n, MARK);
        for (int r = 0; r < P; r++) fill(x + displs[r], (size_t)counts[r], r, 0);
        MPI_Scatterv(x, counts, displs, MPI_UINT64_T, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root,
                     MPI_COMM_WORLD);
        expect_v("scatterv's send buffer", x, counts, displs, -1, 0);
    } else {
        set(x, (size_t)counts[me], MARK);
        MPI_Scatterv(NULL, NULL, NULL, MPI_DATATYPE_NULL, x, counts[me], MPI_UINT64_T, root,
                     MPI_COMM_WORLD);
        expect_block("scatterv", x, (size_t)counts[me], me, 0);
    }
    give(x);
}

/* rank r contributes i % 1000 + r + k at word i of block k */
static word_t term(int r, int k, size_t i) { return (word_t)(i % 1000) + (word_t)r + (word_t)k; }

/* the sum of term(r, k, i) over the ranks r in [lo, hi) */
static word_t sum_terms(int lo, int hi, int k, size_t i)
{
    word_t n = (word_t)(hi - lo);
    return n * ((word_t)(i % 1000) + (word_t)k) + (word_t)(hi - 1 + lo) * n / 2;
}

static void expect_sums(const char *what, const word_t *x, size_t n, int lo, int hi, int k)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (x[i] != sum_terms(lo, hi, k, i) && 0 == bad++) first = i;
    mt_check(0 == bad, "%s (%zu bytes): %zu words wrong, the first at %zu", what,
             n * sizeof(word_t), bad, first);
}

static void scan(int exclusive)
{
    const char *what = exclusive ? "exscan in place" : "scan in place";
    word_t *x = take(what, BIG);
    if (!x) return;
    for (size_t i = 0; i < BIG; i++) x[i] = term(me, 0, i);
    if (exclusive)
        MPI_Exscan(MPI_IN_PLACE, x, (int)BIG, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Scan(MPI_IN_PLACE, x, (int)BIG, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (!exclusive || me > 0) expect_sums(what, x, BIG, 0, exclusive ? me : me + 1, 0);
    give(x);
}

static void t_scan(void) { scan(0); }
static void t_exscan(void) { scan(1); }

/* in place: block k of rank r's input is term(r, k, .); rank r's result,
 * at the start of its buffer, is the sum of everyone's block r */
static void reduce_scatter(int block)
{
    const char *what = block ? "reduce_scatter_block in place" : "reduce_scatter in place";
    int counts[P];
    size_t n = 0;
    for (int r = 0; r < P; r++) n += (size_t)(counts[r] = block ? (int)BIG : (int)(BIG - (size_t)r));
    word_t *x = take(what, n);
    if (!x) return;
    for (int k = 0, at = 0; k < P; at += counts[k++])
        for (size_t i = 0; i < (size_t)counts[k]; i++) x[(size_t)at + i] = term(me, k, i);
    if (block)
        MPI_Reduce_scatter_block(MPI_IN_PLACE, x, (int)BIG, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Reduce_scatter(MPI_IN_PLACE, x, counts, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    expect_sums(what, x, (size_t)counts[me], 0, P, me);
    give(x);
}

static void t_reduce_scatter_block(void) { reduce_scatter(1); }
static void t_reduce_scatter(void) { reduce_scatter(0); }

static const struct {
    const char *name;
    void (*run)(void);
} tests[] = {
    { "allgather", t_allgather },
    { "allgatherv", t_allgatherv },
    { "alltoall", t_alltoall },
    { "alltoall_in_place", t_alltoall_in_place },
    { "alltoallv", t_alltoallv },
    { "gather", t_gather },
    { "gatherv", t_gatherv },
    { "scatter", t_scatter },
    { "scatterv", t_scatterv },
    { "scan", t_scan },
    { "exscan", t_exscan },
    { "reduce_scatter_block", t_reduce_scatter_block },
    { "reduce_scatter", t_reduce_scatter },
    { "iallgatherv", t_iallgatherv },
};
#define NTESTS (sizeof(tests) / sizeof(tests[0]))

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    for (size_t t = 0; t < NTESTS; t++) {
        int chosen = argc < 2;
        for (int a = 1; a < argc; a++) chosen |= 0 == strcmp(argv[a], tests[t].name);
        if (chosen) tests[t].run();
    }
    for (int a = 1; a < argc; a++) {
        int known = 0;
        for (size_t t = 0; t < NTESTS; t++) known |= 0 == strcmp(argv[a], tests[t].name);
        mt_check(known, "no collective called %s", argv[a]);
    }
    return mt_finish("mpi_huge");
}
