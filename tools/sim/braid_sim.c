/*
 * braid_sim.c - cost-model simulator of braid's allreduce algorithms for
 * thousands of ranks: replays the algorithm code of coll/algo/ over the
 * coroutine transport of braid_sim_sched.c (phantom data: nothing is copied
 * or reduced, byte counts and times are those of the full sizes) and prints
 * the predicted time of every algorithm per message size, the fastest one,
 * what the built-in selection table picks, and the crossover points.
 *
 *   braid_sim -P 4096 [-n ranks_per_node] [--map block|node]
 *             [-a ring_chunked,halving_doubling,...] [--min 8] [--max 64M]
 *             [--factor 4] [--alpha-intra us] [--beta-intra GB/s]
 *             [--alpha-inter us] [--nic GB/s] [--gamma GB/s]
 *             [--overhead us] [--chunk bytes] [--timeline file.csv]
 *             [--topo-aware 0|1]
 *
 * Sizes are the allreduce message size (count x 4-byte floats, one rank's
 * vector). Every (algorithm, size) runs twice: a counting pass finds the
 * ranks of each node that send off-node (they share the node's NIC), the
 * second pass predicts the time. --timeline writes every message of the last (algorithm, size)
 * run as CSV. Model: see braid_sim.h.
 *
 * As in the component, the algorithms run on the ranks grouped by node
 * (braid_topo.h) unless --topo-aware 0; "hierarchical" runs on the node and
 * leader views with the phase algorithms the built-in table picks for them.
 */
#define _GNU_SOURCE
#include "braid_sim.h"
#include "braid_select.h"
#include "braid_topo.h"
#include "braid_trees.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_ALGS 8
#define MAX_SIZES 64

/* An allreduce algorithm from the registry, with the bcube base it runs
 * with: "bcube" is base 4 (the table's middle sizes), "bcube_auto" two
 * groups from P's factors. */
typedef struct sim_alg {
    char name[32];         /* as printed */
    int id;                /* registry id */
    braid_algo_fn_t fn;
    int bcube_base;
} sim_alg_t;

typedef struct job {
    braid_algo_fn_t fn;
    char *rbuf;            /* one phantom buffer shared by all ranks */
    size_t count, esize;
    braid_params_t params;
    braid_scratch_t *scratch;
    const braid_topo_t *topo;  /* ranks grouped by node */
    bool topo_aware;           /* run in node order, as coll_braid_topo_aware=1 */
    braid_hier_t phases;       /* hierarchical: the phase algorithms (views per rank) */
} job_t;

static void phantom_reduce(const void *in, void *inout, size_t count, void *arg)
{
    (void)in;
    (void)inout;
    braid_sim_charge_reduce(count * *(const size_t *)arg);
}

static int rank_body(braid_comm_t *c, void *arg)
{
    job_t *j = arg;
    braid_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.rbuf = j->rbuf;
    a.count = j->count;
    a.esize = j->esize;
    a.op.fn = phantom_reduce;
    a.op.arg = &j->esize;
    a.op.commutative = true;
    a.scratch = &j->scratch[c->rank];
    a.params = j->params;
    const braid_topo_t *t = j->topo;
    braid_subcomm_t view, node, leaders;
    int rc, lead_rc = BRAID_OK;
    if (braid_allreduce_hierarchical == j->fn) {
        /* the component's views: this rank's node, and the node leaders */
        int k = t->node_of[c->rank];
        int *lead = malloc((size_t)t->nnodes * sizeof(int));
        if (NULL == lead) return BRAID_ERR_NOMEM;
        braid_topo_leaders(t, lead);
        rc = braid_subcomm_init(&node, c, braid_topo_node_size(t, k), braid_topo_node_ranks(t, k));
        if (BRAID_OK == rc) lead_rc = braid_subcomm_init(&leaders, c, t->nnodes, lead);
        free(lead);
        if (BRAID_OK != rc || BRAID_OK != lead_rc) return BRAID_ERR_NOMEM;
        braid_hier_t h = j->phases;
        h.node = &node.comm;
        h.leaders = braid_subcomm_is_member(&leaders) ? &leaders.comm : NULL;
        a.hier = &h;
        rc = j->fn(c, &a);
        braid_subcomm_fini(&node);
        braid_subcomm_fini(&leaders);
    } else if (j->topo_aware && !braid_topo_is_grouped(t)) {
        if (BRAID_OK != braid_subcomm_init(&view, c, c->size, t->order)) return BRAID_ERR_NOMEM;
        rc = j->fn(&view.comm, &a);
        braid_subcomm_fini(&view);
    } else {
        rc = j->fn(c, &a);
    }
    braid_scratch_release(a.scratch);
    return rc;
}

/* The hierarchical allreduce's phases, chosen as the component chooses
 * them: the built-in table for the size of each view. */
static braid_hier_t hier_phases(const braid_topo_t *t, size_t bytes)
{
    int local = braid_topo_node_size(t, 0);
    braid_choice_t r = braid_select(BRAID_COLL_REDUCE, local, bytes, 0, NULL);
    braid_choice_t l = braid_select(BRAID_COLL_ALLREDUCE, t->nnodes, bytes, 0, NULL);
    braid_choice_t b = braid_select(BRAID_COLL_BCAST, local, bytes, 0, NULL);
    if (BRAID_ALLREDUCE_HIERARCHICAL == l.alg) l.alg = BRAID_ALLREDUCE_HALVING_DOUBLING;
    braid_hier_t h;
    memset(&h, 0, sizeof(h));
    h.node_reduce = braid_algorithm(BRAID_COLL_REDUCE, r.alg)->run;
    h.node_bcast = braid_algorithm(BRAID_COLL_BCAST, b.alg)->run;
    h.leaders_allreduce = braid_algorithm(BRAID_COLL_ALLREDUCE, l.alg)->run;
    h.node_reduce_params = r.params;
    h.leaders_params = l.params;
    h.node_bcast_params = b.params;
    return h;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (size_t)v;
}

static void fmt_size(size_t b, char *out, size_t len)
{
    if (b >= ((size_t)1 << 30) && 0 == b % ((size_t)1 << 30)) snprintf(out, len, "%zuG", b >> 30);
    else if (b >= ((size_t)1 << 20) && 0 == b % ((size_t)1 << 20)) snprintf(out, len, "%zuM", b >> 20);
    else if (b >= 1024 && 0 == b % 1024) snprintf(out, len, "%zuK", b >> 10);
    else snprintf(out, len, "%zu", b);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: braid_sim -P ranks [-n ranks_per_node] [--map block|node]\n"
            "       [-a alg,alg,...] [--min bytes] [--max bytes] [--factor f]\n"
            "       [--alpha-intra us] [--beta-intra GB/s] [--alpha-inter us]\n"
            "       [--nic GB/s] [--gamma GB/s] [--overhead us] [--chunk bytes]\n"
            "       [--timeline file.csv] [--topo-aware 0|1]\n"
            "algorithms: any allreduce algorithm of the registry (ring ring_chunked\n"
            "            halving_doubling bcube dbtree recursive_doubling hierarchical)\n"
            "            and bcube_auto (bcube with two groups from P's factors)\n");
}

/* One registry row by name (plus the "bcube_auto" variant). */
static int lookup_alg(const char *name, sim_alg_t *out)
{
    bool bcube_auto = 0 == strcmp(name, "bcube_auto");
    int id = braid_alg_lookup(BRAID_COLL_ALLREDUCE, bcube_auto ? "bcube" : name);
    const braid_algorithm_t *alg = braid_algorithm(BRAID_COLL_ALLREDUCE, id);
    if (NULL == alg) return -1;
    snprintf(out->name, sizeof out->name, "%s", name);
    out->id = id;
    out->fn = alg->run;
    out->bcube_base = 0;
    if (alg->options & BRAID_OPT_BASE) out->bcube_base = bcube_auto ? BRAID_BCUBE_AUTO : 4;
    return 0;
}

static int pick_algs(const char *list, sim_alg_t *out)
{
    int n = 0;
    char *dup = strdup(list), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t && n < MAX_ALGS; t = strtok_r(NULL, ",", &save)) {
        if (0 != lookup_alg(t, &out[n])) {
            fprintf(stderr, "braid_sim: unknown algorithm '%s'\n", t);
            free(dup);
            return -1;
        }
        n++;
    }
    free(dup);
    return n;
}

int main(int argc, char **argv)
{
    int P = 0, rpn = 8, cyclic = 0, topo_aware = 1, nalgs;
    size_t smin = 8, smax = (size_t)64 << 20, chunk = 0;
    double factor = 4;
    const char *alglist = "ring_chunked,halving_doubling,bcube,bcube_auto,dbtree";
    const char *timeline_path = NULL;
    braid_sim_model_t m;
    braid_sim_model_default(&m);
    static const struct option opts[] = {
        { "map", 1, NULL, 'm' }, { "min", 1, NULL, 1 }, { "max", 1, NULL, 2 },
        { "factor", 1, NULL, 3 }, { "alpha-intra", 1, NULL, 4 }, { "beta-intra", 1, NULL, 5 },
        { "alpha-inter", 1, NULL, 6 }, { "nic", 1, NULL, 7 }, { "gamma", 1, NULL, 8 },
        { "overhead", 1, NULL, 9 }, { "chunk", 1, NULL, 10 }, { "timeline", 1, NULL, 11 },
        { "topo-aware", 1, NULL, 12 },
        { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    for (int c; -1 != (c = getopt_long(argc, argv, "P:n:a:m:h", opts, NULL));) {
        switch (c) {
        case 'P': P = atoi(optarg); break;
        case 'n': rpn = atoi(optarg); break;
        case 'a': alglist = optarg; break;
        case 'm': cyclic = 0 == strcmp(optarg, "node"); break;
        case 1: smin = parse_size(optarg); break;
        case 2: smax = parse_size(optarg); break;
        case 3: factor = atof(optarg); break;
        case 4: m.alpha_intra = atof(optarg); break;
        case 5: m.beta_intra = 1.0 / (atof(optarg) * 1000.0); break;
        case 6: m.alpha_inter = atof(optarg); break;
        case 7: m.beta_inter = 1.0 / (atof(optarg) * 1000.0); break;
        case 8: m.gamma = 1.0 / (atof(optarg) * 1000.0); break;
        case 9: m.overhead = atof(optarg); break;
        case 10: chunk = parse_size(optarg); break;
        case 11: timeline_path = optarg; break;
        case 12: topo_aware = atoi(optarg); break;
        default: usage(); return 'h' == c ? 0 : 2;
        }
    }
    sim_alg_t algs[MAX_ALGS];
    if (P < 1 || factor <= 1 || smin < 4 || smax < smin || (nalgs = pick_algs(alglist, algs)) <= 0) {
        usage();
        return 2;
    }

    int *node_of = malloc((size_t)P * sizeof(int)), *share = malloc((size_t)P * sizeof(int));
    job_t job = { 0 };
    job.esize = 4;
    job.scratch = calloc((size_t)P, sizeof(braid_scratch_t));
    job.rbuf = mmap(NULL, smax, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                    -1, 0);
    if (!node_of || !share || !job.scratch || MAP_FAILED == job.rbuf) {
        fprintf(stderr, "braid_sim: out of memory\n");
        return 1;
    }
    int nodes = braid_sim_nodes(P, rpn, cyclic, node_of);
    uint64_t *keys = malloc((size_t)P * sizeof(uint64_t));
    braid_topo_t topo;
    if (NULL == keys) return 1;
    for (int r = 0; r < P; r++) keys[r] = (uint64_t)node_of[r];
    if (BRAID_OK != braid_topo_init(&topo, P, keys)) {
        fprintf(stderr, "braid_sim: out of memory\n");
        return 1;
    }
    free(keys);
    job.topo = &topo;
    job.topo_aware = 0 != topo_aware;
    braid_sim_config_t cfg = { .P = P, .node_of = node_of, .model = m, .phantom = true };

    printf("# braid_sim: P=%d, %d ranks per node (%d nodes, map-by %s), algorithms in %s order\n",
           P, rpn, nodes, cyclic ? "node" : "slot/block", topo_aware ? "node" : "rank");
    printf("# model: intra alpha %.2f us beta %.2f GB/s | inter alpha %.2f us, NIC %.2f GB/s "
           "shared by the node's off-node senders | gamma %.2f GB/s | overhead %.2f us/msg\n",
           m.alpha_intra, 1e-3 / m.beta_intra, m.alpha_inter, 1e-3 / m.beta_inter,
           1e-3 / m.gamma, m.overhead);
    printf("# predicted time (us) per allreduce algorithm; 'table' = built-in selection\n");
    printf("%-8s", "bytes");
    for (int k = 0; k < nalgs; k++) printf(" %16s", algs[k].name);
    printf("  %-16s %-16s %s\n", "best", "table", "table/best");

    const char *prev_best = NULL;
    char crossings[4096] = "";
    size_t clen = 0;
    for (size_t S = smin; S <= smax; S = (size_t)((double)S * factor)) {
        S -= S % job.esize;
        double t[MAX_ALGS];
        int best = -1;
        char sz[32];
        fmt_size(S, sz, sizeof sz);
        printf("%-8s", sz);
        for (int k = 0; k < nalgs; k++) {
            job.fn = algs[k].fn;
            job.count = S / job.esize;
            job.params.chunk_bytes = chunk;
            job.params.bcube_base = algs[k].bcube_base;
            if (braid_allreduce_hierarchical == job.fn) job.phases = hier_phases(&topo, S);
            /* pass 1 counts who talks off-node (the NIC shares), pass 2 times */
            braid_sim_result_t res;
            cfg.timeline = NULL;
            cfg.nic_share = NULL;
            if (nodes > 1) {
                if (0 != braid_sim_run(&cfg, rank_body, &job, &res)) {
                    fprintf(stderr, "braid_sim: cannot set up P=%d\n", P);
                    return 1;
                }
                braid_sim_nic_shares(&res, P, node_of, nodes, share);
                braid_sim_result_free(&res);
                cfg.nic_share = share;
            }
            FILE *tl = NULL;
            if (timeline_path && k == nalgs - 1 && (double)S * factor > (double)smax)
                tl = fopen(timeline_path, "w");
            cfg.timeline = tl;
            if (0 != braid_sim_run(&cfg, rank_body, &job, &res)) {
                fprintf(stderr, "braid_sim: cannot set up P=%d\n", P);
                return 1;
            }
            if (tl) fclose(tl);
            t[k] = (BRAID_OK == res.rc && !res.deadlock) ? res.t_max : -1;
            if (res.leftover_msgs || res.deadlock)
                fprintf(stderr, "braid_sim: %s at %zu: rc %d deadlock %d leftover %llu\n",
                        algs[k].name, S, res.rc, res.deadlock, (unsigned long long)res.leftover_msgs);
            braid_sim_result_free(&res);
            printf(" %16.1f", t[k]);
            fflush(stdout);
            if (t[k] >= 0 && (best < 0 || t[k] < t[best])) best = k;
        }
        braid_choice_t ch = braid_select(BRAID_COLL_ALLREDUCE, P, S, 0, NULL);
        const char *tname = braid_alg_name(BRAID_COLL_ALLREDUCE, ch.alg);
        double ttab = -1;
        for (int k = 0; k < nalgs; k++)
            if (algs[k].id == ch.alg && (BRAID_ALLREDUCE_BCUBE != ch.alg ||
                                         algs[k].bcube_base == ch.params.bcube_base ||
                                         (0 == ch.params.bcube_base && 4 == algs[k].bcube_base)))
                ttab = t[k];
        const char *bname = best >= 0 ? algs[best].name : "-";
        printf("  %-16s %-16s ", bname, tname);
        if (ttab > 0 && best >= 0) printf("%.2f\n", ttab / t[best]);
        else printf("n/a\n");
        if (prev_best && best >= 0 && strcmp(prev_best, bname) && clen < sizeof crossings - 100)
            clen += (size_t)snprintf(crossings + clen, sizeof crossings - clen, "#   %s -> %s at %s\n",
                                     prev_best, bname, sz);
        if (best >= 0) prev_best = bname;
        if ((double)S * factor > (double)SIZE_MAX / 2) break;
    }
    printf("# crossovers (fastest algorithm changes; at the first size listed):\n%s",
           clen ? crossings : "#   none\n");
    munmap(job.rbuf, smax);
    braid_topo_fini(&topo);
    free(job.scratch);
    free(node_of);
    free(share);
    return 0;
}
