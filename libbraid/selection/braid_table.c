/*
 * braid_table.c - the built-in selection table and the lookup.
 *
 * The built-in table is written in the rules-file syntax (braid_rules.c,
 * libbraid/selection/RULES.md) and parsed once at first use. Its rows come from the
 * cost model in braid_model.c (constants and formulas there), simplified to a
 * few bands of communicator sizes:
 *  - barrier: one all-to-all step costs alpha + (P-2) o, dissemination
 *    ceil(lg P) alpha: all_to_all up to P = 6;
 *  - bcast: binomial (lg P full copies) until the ring in scatter_allgather
 *    pays for its P-1 steps: S* = (P-1) alpha / ((lg P - 2(P-1)/P) beta),
 *    72K at P = 4, 190K at P = 64, 4.9M at P = 4096 (rounded to the bands);
 *  - allreduce: halving_doubling for small sizes (2 lg P steps); for P not a
 *    power of two its fold-in/fold-out costs 2 S beta + S gamma, so bcube (any
 *    P, no fold) takes the middle sizes there; ring_chunked once its 4(P-1)
 *    steps are paid back by reductions that overlap the transfers:
 *    S* ~ 120K at P = 2, 400K at P = 8, ~ 4 P alpha / gamma beyond;
 *  - reduce: binomial, then dbtree once it pipelines more than one 64K chunk;
 *    at P = 2 both trees are one edge, so binomial;
 *  - reduce_scatter: halving_doubling for powers of two (lg P steps), ring
 *    otherwise (listed to P = 4096; larger powers of two get ring);
 *  - allgather: recursive_doubling for small sizes, ring for large ones (the
 *    same bytes, neighbour-only traffic); P <= 3: ring (fewer steps).
 *  - alltoall: bruck (ceil(lg P) steps, each block sent about lg(P)/2
 *    times and copied in rotations and packing) for blocks below 1K from
 *    P = 4 (the model's crossover: about 0.9K at P = 4, 1.3K at P = 8-64);
 *    pairwise (P-1 exchanges) otherwise, and at P <= 3, where bruck takes
 *    as many steps.
 *  - scan, exscan: recursive_doubling (ceil(lg P) steps) at every size:
 *    the only message algorithm.
 *  - gather, scatter: binomial (lg P message times at the root) from
 *    P = 3; at P <= 2 linear, the same one message without a tree.
 *  - allgatherv: bruck (ceil(lg P) steps, plus one local copy of the
 *    result) for mean blocks below 2K at P = 4-8 (measured at np = 4 and
 *    8, oversubscribed: bruck 1.2-1.6x faster than ring to 8K per rank's
 *    S, slower from 16K) and below 8K from P = 9 (the model's crossover,
 *    (P-1-L) alpha = P S gamma, falls at 10-15K for P = 16-1024; rounded
 *    down as at P = 4-8, where the measurement fell below the model);
 *    ring elsewhere (P <= 3: as many steps).
 *  - alltoallv: pairwise (its one message algorithm) at every size.
 *  - gatherv, scatterv: linear (their one message algorithm: a rank
 *    knows only its own count, so no rank can forward another's block).
 *  - P = 2 allreduce is measured (contrib/compare.sh, np=2, 5 interleaved
 *    repetitions on the 2-core machine, docs/SELECTION.md): one exchange
 *    (recursive_doubling: a plain loop of 8-byte calls took 0.31 us against
 *    bcube's 0.48 us, whose group set-up is pure overhead at P = 2) below
 *    512 B, halving_doubling to 16M, ring_chunked
 *    beyond, where all the bandwidth algorithms meet at memory speed; small
 *    P = 4 and 8 allreduces use recursive_doubling (one whole-vector
 *    exchange per step) below the model's crossover with halving_doubling.
 *  - P = 64, 128, ..., 4096 allreduce come from the simulator (tools/sim,
 *    braid's own algorithm code over a two-level alpha-beta-gamma model,
 *    8 ranks per node; docs/SCALE.md "Simulator"): bcube with two groups from the
 *    factors of P (base=auto) for small sizes, base 4 for the middle ones,
 *    halving_doubling from 8M (64: ring_chunked from 64M). Only powers of
 *    two: for a prime P bcube is one group of P ranks, and the simulator
 *    puts it behind halving_doubling from 2K up (P = 131).
 *  - P = 4, 8 and 16, every collective: measured on a 16-core node (Xeon,
 *    one rank per core, Open MPI 4.1.4 + UCX 1.13; contrib/tune.sh -r 2,
 *    docs/SELECTION.md), with
 *    one-band blips of a 2-repetition run smoothed into their neighbours
 *    (bcast 8: one_to_all at 16-32K; allreduce 8: bcube at 32-64K; reduce:
 *    dbtree at 16-32K). bcast 16 from 4K re-measured on the same node by
 *    OSU's osu_bcast and braid_bench, every algorithm forced: binomial to
 *    32K, dbtree above (scatter_allgather lost to both by 1.1-1.7x at
 *    16K and 128K-1M). The sizes between (3, 5-7, 9-15) keep the model's
 *    bands until measured on a node with that many cores.
 *  - small messages on a one-node communicator go through the shared-memory
 *    tier (builtin_shm_rules below) before any of these rows.
 * contrib/tune.sh measures any machine and P and writes rules that
 * override these rows.
 */
#include "braid_select.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char builtin_rules[] =
    "# collective   comm_size   msg_size        algorithm          options\n"
    "barrier        1-6         *               all_to_all\n"
    "barrier        7-inf       *               dissemination\n"
    "\n"
    "bcast          1-2         *               binomial\n"
    "bcast          3           0-64K-1         binomial\n"
    "bcast          3           64K-inf         scatter_allgather\n"
    "bcast          4           0-256K-1        one_to_all\n"
    "bcast          4           256K-1M-1       scatter_allgather\n"
    "bcast          4           1M-inf          dbtree\n"
    "bcast          5-7         0-64K-1         binomial\n"
    "bcast          5-7         64K-inf         scatter_allgather\n"
    "bcast          8           0-127           one_to_all\n"
    "bcast          8           128-32K-1       binomial\n"
    "bcast          8           32K-128K-1      scatter_allgather\n"
    "bcast          8           128K-inf        dbtree\n"
    "bcast          9-15        0-128K-1        binomial\n"
    "bcast          9-15        128K-inf        scatter_allgather\n"
    "bcast          16          0-32K-1         binomial\n"
    "bcast          16          32K-inf         dbtree\n"
    "bcast          17-32       0-128K-1        binomial\n"
    "bcast          17-32       128K-inf        scatter_allgather\n"
    "bcast          33-128      0-256K-1        binomial\n"
    "bcast          33-128      256K-inf        scatter_allgather\n"
    "bcast          129-512     0-512K-1        binomial\n"
    "bcast          129-512     512K-inf        scatter_allgather\n"
    "bcast          513-2048    0-2M-1          binomial\n"
    "bcast          513-2048    2M-inf          scatter_allgather\n"
    "bcast          2049-inf    0-4M-1          binomial\n"
    "bcast          2049-inf    4M-inf          scatter_allgather\n"
    "\n"
    "allreduce      1-2         0-511           recursive_doubling\n"
    "allreduce      1-2         512-16M-1       halving_doubling\n"
    "allreduce      1-2         16M-inf         ring_chunked\n"
    "allreduce      3           0-128K-1        bcube              base=4\n"
    "allreduce      3           128K-inf        ring_chunked\n"
    "allreduce      4           0-16K-1         recursive_doubling\n"
    "allreduce      4           16K-1M-1        halving_doubling\n"
    "allreduce      4           1M-2M-1         ring\n"
    "allreduce      4           2M-inf          ring_chunked\n"
    "allreduce      5-7         0-8K-1          halving_doubling\n"
    "allreduce      5-7         8K-256K-1       bcube              base=4\n"
    "allreduce      5-7         256K-inf        ring_chunked\n"
    "allreduce      8           0-16K-1         recursive_doubling\n"
    "allreduce      8           16K-512K-1      halving_doubling\n"
    "allreduce      8           512K-inf        ring\n"
    "allreduce      9-15        0-8K-1          halving_doubling\n"
    "allreduce      9-15        8K-512K-1       bcube              base=4\n"
    "allreduce      9-15        512K-inf        ring_chunked\n"
    "allreduce      16          0-8K-1          recursive_doubling\n"
    "allreduce      16          8K-512K-1       bcube\n"
    "allreduce      16          512K-inf        ring_chunked\n"
    "allreduce      17-32       0-2M-1          halving_doubling\n"
    "allreduce      17-32       2M-inf          ring_chunked\n"
    "allreduce      33-63       0-4M-1          halving_doubling\n"
    "allreduce      33-63       4M-inf          ring_chunked\n"
    "allreduce      64          0-2M-1          bcube              base=auto\n"
    "allreduce      64          2M-64M-1        halving_doubling\n"
    "allreduce      64          64M-inf         ring_chunked\n"
    "allreduce      65-127      0-16M-1         halving_doubling\n"
    "allreduce      65-127      16M-inf         ring_chunked\n"
    "allreduce      128         0-1M-1          bcube              base=auto\n"
    "allreduce      128         1M-8M-1         bcube              base=4\n"
    "allreduce      128         8M-inf          halving_doubling\n"
    "allreduce      129-255     0-16M-1         halving_doubling\n"
    "allreduce      129-255     16M-inf         ring_chunked\n"
    "allreduce      256         0-1M-1          bcube              base=auto\n"
    "allreduce      256         1M-8M-1         bcube              base=4\n"
    "allreduce      256         8M-inf          halving_doubling\n"
    "allreduce      257-511     0-64M-1         halving_doubling\n"
    "allreduce      257-511     64M-inf         ring_chunked\n"
    "allreduce      512         0-128K-1        bcube              base=auto\n"
    "allreduce      512         128K-8M-1       bcube              base=4\n"
    "allreduce      512         8M-inf          halving_doubling\n"
    "allreduce      513-1023    0-64M-1         halving_doubling\n"
    "allreduce      513-1023    64M-inf         ring_chunked\n"
    "allreduce      1024        0-128K-1        bcube              base=auto\n"
    "allreduce      1024        128K-8M-1       bcube              base=4\n"
    "allreduce      1024        8M-inf          halving_doubling\n"
    "allreduce      1025-2047   0-256M-1        halving_doubling\n"
    "allreduce      1025-2047   256M-inf        ring_chunked\n"
    "allreduce      2048        0-255           bcube              base=auto\n"
    "allreduce      2048        256-8M-1        bcube              base=4\n"
    "allreduce      2048        8M-inf          halving_doubling\n"
    "allreduce      2049-4095   0-256M-1        halving_doubling\n"
    "allreduce      2049-4095   256M-inf        ring_chunked\n"
    "allreduce      4096        0-255           bcube              base=auto\n"
    "allreduce      4096        256-8M-1        bcube              base=4\n"
    "allreduce      4096        8M-inf          halving_doubling\n"
    "allreduce      4097-inf    0-256M-1        halving_doubling\n"
    "allreduce      4097-inf    256M-inf        ring_chunked\n"
    "\n"
    "reduce         1-2         *               binomial\n"
    "reduce         3           0-64K-1         binomial\n"
    "reduce         3           64K-inf         dbtree\n"
    "reduce         4           0-512K-1        binomial\n"
    "reduce         4           512K-inf        dbtree\n"
    "reduce         5-7         0-64K-1         binomial\n"
    "reduce         5-7         64K-inf         dbtree\n"
    "reduce         8           0-512K-1        binomial\n"
    "reduce         8           512K-inf        dbtree\n"
    "reduce         9-15        0-64K-1         binomial\n"
    "reduce         9-15        64K-inf         dbtree\n"
    "reduce         16          0-128K-1        binomial\n"
    "reduce         16          128K-inf        dbtree\n"
    "reduce         17-inf      0-64K-1         binomial\n"
    "reduce         17-inf      64K-inf         dbtree\n"
    "\n"
    "reduce_scatter 1-2         *               halving_doubling\n"
    "reduce_scatter 3           *               ring\n"
    "reduce_scatter 4           0-32K-1         halving_doubling\n"
    "reduce_scatter 4           32K-inf         ring\n"
    "reduce_scatter 5-7         *               ring\n"
    "reduce_scatter 8           0-2M-1          halving_doubling\n"
    "reduce_scatter 8           2M-inf          ring\n"
    "reduce_scatter 9-15        *               ring\n"
    "reduce_scatter 16          *               halving_doubling\n"
    "reduce_scatter 17-31       *               ring\n"
    "reduce_scatter 32          *               halving_doubling\n"
    "reduce_scatter 33-63       *               ring\n"
    "reduce_scatter 64          *               halving_doubling\n"
    "reduce_scatter 65-127      *               ring\n"
    "reduce_scatter 128         *               halving_doubling\n"
    "reduce_scatter 129-255     *               ring\n"
    "reduce_scatter 256         *               halving_doubling\n"
    "reduce_scatter 257-511     *               ring\n"
    "reduce_scatter 512         *               halving_doubling\n"
    "reduce_scatter 513-1023    *               ring\n"
    "reduce_scatter 1024        *               halving_doubling\n"
    "reduce_scatter 1025-2047   *               ring\n"
    "reduce_scatter 2048        *               halving_doubling\n"
    "reduce_scatter 2049-4095   *               ring\n"
    "reduce_scatter 4096        *               halving_doubling\n"
    "reduce_scatter 4097-inf    *               ring\n"
    "\n"
    "allgather      1-3         *               ring\n"
    "allgather      4           *               recursive_doubling\n"
    "allgather      5-7         0-4K-1          recursive_doubling\n"
    "allgather      5-7         4K-inf          ring\n"
    "allgather      8           0-64K-1         recursive_doubling\n"
    "allgather      8           64K-inf         ring\n"
    "allgather      9-15        0-16K-1         recursive_doubling\n"
    "allgather      9-15        16K-inf         ring\n"
    "allgather      16          0-1M-1          recursive_doubling\n"
    "allgather      16          1M-inf          ring\n"
    "allgather      17-inf      0-16K-1         recursive_doubling\n"
    "allgather      17-inf      16K-inf         ring\n"
    "\n"
    "alltoall       1-3         *               pairwise\n"
    "alltoall       4-inf       0-1K-1          bruck\n"
    "alltoall       4-inf       1K-inf          pairwise\n"
    "\n"
    "scan           1-inf       *               recursive_doubling\n"
    "exscan         1-inf       *               recursive_doubling\n"
    "\n"
    "gather         1-2         *               linear\n"
    "gather         3-inf       *               binomial\n"
    "scatter        1-2         *               linear\n"
    "scatter        3-inf       *               binomial\n"
    "\n"
    "allgatherv     1-3         *               ring\n"
    "allgatherv     4-8         0-2K-1          bruck\n"
    "allgatherv     4-8         2K-inf          ring\n"
    "allgatherv     9-inf       0-8K-1          bruck\n"
    "allgatherv     9-inf       8K-inf          ring\n"
    "alltoallv      1-inf       *               pairwise\n"
    "gatherv        1-inf       *               linear\n"
    "scatterv       1-inf       *               linear\n";

/* Where the shared-memory tier takes over on a communicator that has a
 * segment (every rank on one node, set up after a few calls: coll/
 * coll_braid_shm.c). Measured at np=2 on the 2-core machine (docs/BENCHMARKS.md
 * "Small messages" and "Mid-size messages"; contrib/bench/variants.sh and
 * methods.sh): through the cells shm wins every collective up to 4K
 * (reduce_scatter: 8K); above 4K per rank bcast, reduce and allgather go
 * single copy (process_vm_readv, where the node permits it) and win or tie
 * at every size measured, 8 KiB - 8 MiB, hence '*' at P <= 2.
 * P = 3..8: single copy measured at np=3, 4 and 8 on the same machine,
 * oversubscribed (docs/BENCHMARKS.md "P = 3, 4, 8"): against the message rows below
 * it takes bcast from 8K (0.31-0.94x the time), reduce from 16K (0.49-0.97x;
 * the root folds alone up to P S = 2 MiB, then every rank folds a share:
 * 0.60x the message rows at P=8 and 4 MiB), allgather from 8K per rank
 * (0.61-0.89x) and allreduce (every rank folds a share, then reads the
 * others') from 32K at P <= 4 and 64K above (0.53-0.97x; below, two
 * synchronisations cost more than the messages); between the cells and
 * those sizes the message rows stay. P > 8: the rows stop where the
 * cells stop (unmeasured: awaits the 16-core node), and the allreduce and
 * allgather rows stop earlier, below the sizes where one rank reading P
 * slots costs more than the message algorithms' log P steps. A size the
 * segment cannot carry (above its slot, coll_braid_shm_slot_size, without
 * single copy) falls back to the table above.
 * alltoall: at np=2 OSU osu_alltoall, 1 B - 64 KiB blocks: 1.15-2.03x
 * tuned with shm forced, 0.69-2.30x with pairwise. The cells take P blocks
 * up to the cells' reach (blocks spanning up to 4 cells of 8 KiB slots:
 * 32 KiB / P per block) and the single-copy threshold (4 KiB blocks),
 * single copy above. On a 16-core node, one rank per core (H200 machine,
 * braid_bench, 3 interleaved runs, docs/BENCHMARKS.md "alltoall through
 * the cells at P = 4, 8 and 16"): where the message rows ran before (2-8
 * KiB blocks at np 4, 1-4 KiB at np 8, 512 B - 2 KiB at np 16) shm took
 * 0.53-0.94x their time, and alltoall ran 1.13-2.17x tuned at np 4,
 * 1.33-3.31x at np 8 and 1.30-4.08x at np 16, 64 B - 256 KiB per rank.
 * scan, exscan: measured at np=2 (braid_bench against tuned, docs/
 * BENCHMARKS.md "scan and exscan"); at larger P the highest rank folds
 * P - 1 inputs, where recursive doubling reads and folds about 4 lg P
 * times S: single copy to P = 4, the cells to 8K up to P = 8 and to 1K up
 * to 64 (the model's reasoning, unmeasured).
 * gatherv, scatterv: measured at np=2 (OSU osu_gatherv, osu_scatterv,
 * docs/BENCHMARKS.md) and at np=4 and 8 oversubscribed (braid_bench,
 * 16 B - 64 KiB: gatherv's shm 0.73-0.94x linear's time, scatterv's
 * 0.72-1.32x, above 1 only at 16-64K); the selection size is 0 for both
 * (a rank knows only its own count), so the rows name communicator sizes
 * alone.
 * gather, scatter, alltoallv at P = 3-8: measured at np=4 and 8
 * oversubscribed (braid_bench, docs/BENCHMARKS.md "P = 4 and 8: the
 * newer collectives"): gather's shm 0.71-1.31x binomial's time at np=4
 * (above 1 only at 16K) and 0.34-0.55x at np=8, scatter's 0.36-0.81x at
 * every size, alltoallv's 0.16-1.29x pairwise's (above 1 only at 16-32K
 * at np=4; its selection size is 0: one row per P).
 * P = 16: measured on a 16-core node, one rank per core (an H200 machine,
 * braid_bench through contrib/bench/variants.sh: braid as selected, every
 * collective's shm forced and tuned, 3 interleaved runs; docs/BENCHMARKS.md
 * "16 ranks on 16 cores"). Forced shm against the rows above: allgather
 * 0.49-0.95x the time from 1 KiB per rank (a tie at 512 B), allgatherv
 * 0.30-0.75x likewise, gatherv 0.40-0.91x and alltoallv 0.24-0.93x at every
 * size but alltoallv's 1-2 KiB blocks (1.30-1.63x with one cell; its blocks
 * now span the cells, and alltoallv runs 1.41-3.74x tuned at every size),
 * scatterv 0.41-0.59x to 512 B blocks and 0.90-1.59x
 * above (one row per P: it still beats tuned 1.2-3.4x there), gather
 * 0.36-0.72x to 32 KiB blocks (0.95-1.11x from 64 KiB), scatter 0.34-0.48x
 * to 512 B blocks and 0.28-0.93x from 4 KiB (1.75-2.37x between), alltoall
 * (the cells spanning up to 4 cells, above) 1.30-4.08x tuned at every size,
 * scan and exscan 0.60-0.92x at 2-4 KiB (ties at 8 KiB, 1.2-2.0x above),
 * allreduce 0.79-0.92x from 512 KiB but at 8 MiB (1.16x), reduce_scatter
 * 0.70-0.92x from 1 MiB; bcast and reduce above the cells lost (1.1-5x). */
static const char builtin_shm_rules[] =
    "# collective   comm_size   msg_size        algorithm\n"
    "barrier        1-64        *               shm\n"
    "bcast          1-8         *               shm\n"
    "bcast          9-64        0-4K            shm\n"
    "allreduce      1-8         0-4K            shm\n"
    "allreduce      3-4         32K-inf         shm\n"
    "allreduce      5-8         64K-inf         shm\n"
    "allreduce      9-64        0-2K            shm\n"
    "allreduce      16          512K-inf        shm\n"
    "reduce         1-2         *               shm\n"
    "reduce         3-8         0-4K            shm\n"
    "reduce         3-8         16K-inf         shm\n"
    "reduce         9-64        0-4K            shm\n"
    "reduce_scatter 1-64        0-8K            shm\n"
    "reduce_scatter 16          1M-inf          shm\n"
    "allgather      1-2         *               shm\n"
    "allgather      3-8         0-4K            shm\n"
    "allgather      3-8         8K-inf          shm\n"
    "allgather      9-15        0-512           shm\n"
    "allgather      16          *               shm\n"
    "allgather      17-64       0-512           shm\n"
    "alltoall       1-8         *               shm\n"
    "alltoall       16          *               shm\n"
    "scan           1-4         *               shm\n"
    "scan           5-8         0-8K            shm\n"
    "scan           9-15        0-1K            shm\n"
    "scan           16          0-4K            shm\n"
    "scan           17-64       0-1K            shm\n"
    "exscan         1-4         *               shm\n"
    "exscan         5-8         0-8K            shm\n"
    "exscan         9-15        0-1K            shm\n"
    "exscan         16          0-4K            shm\n"
    "exscan         17-64       0-1K            shm\n"
    "gather         1-8         *               shm\n"
    "gather         16          0-64K           shm\n"
    "scatter        1-8         *               shm\n"
    "scatter        16          0-512           shm\n"
    "scatter        16          4K-inf          shm\n"
    "allgatherv     1-2         *               shm\n"
    "allgatherv     3-8         0-4K            shm\n"
    "allgatherv     3-8         8K-inf          shm\n"
    "allgatherv     9-15        0-512           shm\n"
    "allgatherv     16          *               shm\n"
    "allgatherv     17-64       0-512           shm\n"
    "alltoallv      1-8         *               shm\n"
    "alltoallv      16          *               shm\n"
    "gatherv        1-8         *               shm\n"
    "gatherv        16          *               shm\n"
    "scatterv       1-8         *               shm\n"
    "scatterv       16          *               shm\n";

static braid_table_t builtin, builtin_shm;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void parse_builtin(const char *text, const char *name, braid_table_t *t)
{
    char err[512];
    if (0 != braid_rules_parse_string(text, name, t, err, sizeof err)) {
        /* a defect in the text above; the unit tests catch it */
        fprintf(stderr, "braid: %s selection table: %s\n", name, err);
        memset(t, 0, sizeof *t);
    }
}

static void builtin_init(void)
{
    parse_builtin(builtin_rules, "built-in", &builtin);
    parse_builtin(builtin_shm_rules, "built-in shm", &builtin_shm);
}

const braid_table_t *braid_table_builtin(void)
{
    pthread_once(&builtin_once, builtin_init);
    return &builtin;
}

const braid_table_t *braid_table_builtin_shm(void)
{
    pthread_once(&builtin_once, builtin_init);
    return &builtin_shm;
}

/* Free the parsed built-in table when the library is unloaded (Open MPI
 * dlcloses the component after MPI_Finalize) or the program exits; without
 * this its rules and source text were lost at every MPI_Finalize
 * (valgrind, tests/valgrind/run_valgrind.sh). */
__attribute__((destructor)) static void builtin_fini(void)
{
    braid_table_free(&builtin);
    braid_table_free(&builtin_shm);
}

const braid_rule_t *braid_table_find(const braid_table_t *t, braid_coll_t coll, int comm_size,
                                     size_t msg_bytes)
{
    if (NULL == t) return NULL;
    for (size_t i = 0; i < t->nrules; i++) {
        const braid_rule_t *r = &t->rules[i];
        if (r->coll == coll && comm_size >= r->comm_min && comm_size <= r->comm_max
            && msg_bytes >= r->msg_min && msg_bytes <= r->msg_max)
            return r;
    }
    return NULL;
}

/* alg is an algorithm of coll that can run: the shm ones only where the
 * communicator has a segment that holds the message */
static int valid_alg(braid_coll_t coll, int alg, bool shm)
{
    const braid_algorithm_t *a = braid_algorithm(coll, alg);
    return NULL != a && (shm || !(a->options & BRAID_OPT_SHM));
}

braid_choice_t braid_select(braid_coll_t coll, int comm_size, size_t msg_bytes, int forced_alg,
                            const braid_table_t *user)
{
    return braid_select_on(coll, comm_size, msg_bytes, forced_alg, user, false);
}

braid_choice_t braid_select_on(braid_coll_t coll, int comm_size, size_t msg_bytes, int forced_alg,
                               const braid_table_t *user, bool shm)
{
    braid_choice_t none = { BRAID_ALG_AUTO, { 0, 0 } };
    if (NULL == braid_alg_names(coll)) return none;
    if (valid_alg(coll, forced_alg, shm)) {
        braid_choice_t c = { forced_alg, { 0, 0 } };
        return c;
    }
    const braid_rule_t *u = braid_table_find(user, coll, comm_size, msg_bytes);
    if (u && valid_alg(coll, u->choice.alg, shm)) return u->choice;

    const braid_rule_t *b = NULL;
    if (shm) {
        b = braid_table_find(braid_table_builtin_shm(), coll, comm_size, msg_bytes);
        if (b && !u) return b->choice;
    }
    b = braid_table_find(braid_table_builtin(), coll, comm_size, msg_bytes);
    braid_choice_t c = b && valid_alg(coll, b->choice.alg, false) ? b->choice
                                                           : (braid_choice_t){ 1, { 0, 0 } };
    if (u) { /* an auto row: the built-in algorithm with the row's options */
        if (u->choice.params.chunk_bytes) c.params.chunk_bytes = u->choice.params.chunk_bytes;
        if (u->choice.params.bcube_base) c.params.bcube_base = u->choice.params.bcube_base;
    }
    return c;
}

/* The effective table as lines, through the writer (braid_format.c):
 * the table calls the parser and the writer, never the other way. */
static void describe_table(const braid_table_t *t, void (*line)(void *, const char *), void *arg)
{
    char text[BRAID_TABLE_LINE_MAX + 2] = "  ";
    for (size_t i = 0; i < braid_table_nlines(t); i++) {
        braid_table_line(t, i, text + 2, sizeof(text) - 2);
        line(arg, text);
    }
}

void braid_select_describe(const int *forced, const braid_table_t *rules, const char *source,
                           void (*line)(void *arg, const char *text), void *arg)
{
    char text[256];
    snprintf(text, sizeof(text), "effective selection table (forced algorithms, then %s, then "
             "built-in):", rules ? source : "no rules file");
    line(arg, text);
    for (int coll = 0; coll < BRAID_COLL_N; coll++)
        if (BRAID_ALG_AUTO != forced[coll]) {
            snprintf(text, sizeof(text), "  forced %s = %s", braid_coll_name((braid_coll_t)coll),
                     braid_alg_name((braid_coll_t)coll, forced[coll]));
            line(arg, text);
        }
    if (rules) describe_table(rules, line, arg);
    describe_table(braid_table_builtin(), line, arg);
}
