/*
 * mpi_topo.c - does braid keep its traffic inside nodes? Counts the
 * messages and bytes braid sends to other nodes (its MPI_T performance
 * variables coll_braid_inter_node_msgs/_bytes and intra_node_msgs/_bytes)
 * for one collective on two duplicates of MPI_COMM_WORLD: one made with
 * coll_braid_topo_aware=0 (rank order) and one with 1 (ranks grouped by
 * node), switched through MPI_T between the two MPI_Comm_dup calls.
 *
 * Usage: mpi_topo ALGORITHM   (the allreduce algorithm mpirun forced:
 *        ring, ring_chunked, halving_doubling, bcube, dbtree,
 *        recursive_doubling, hierarchical; or bcast for a broadcast test,
 *        allgather_ring / reduce_scatter_ring for those collectives with
 *        their ring forced)
 *
 * Nodes are what braid sees: process r is on node r % N when
 * coll_braid_test_nodes=N, else the node of MPI_COMM_TYPE_SHARED.
 *
 * Assertions, with C = #ring edges (r, r+1 mod P) joining two nodes in rank
 * order and N the number of nodes:
 *  - every algorithm: results are right on both communicators; the
 *    node-ordered one sends no more inter-node bytes than rank order;
 *  - ring, ring_chunked, allgather and reduce-scatter rings (every rank
 *    sends the same number of messages, all to its ring neighbours):
 *    inter-node messages are exactly
 *    total x N / P in node order and total x C / P in rank order;
 *  - hierarchical: only node leaders send to other nodes, in both orders;
 *  - bcast (binomial tree from every root): node order is no worse.
 */
#include "mpi_test_common.h"

#include <stdbool.h>
#include <stdint.h>

enum { PV_INTER_MSGS, PV_INTER_BYTES, PV_INTRA_MSGS, PV_INTRA_BYTES, PV_N };
static const char *const pvar_names[PV_N] = {
    "coll_braid_inter_node_msgs", "coll_braid_inter_node_bytes",
    "coll_braid_intra_node_msgs", "coll_braid_intra_node_bytes",
};

static MPI_T_pvar_session session;
static MPI_T_pvar_handle pvars[PV_N];

static void die(const char *what)
{
    fprintf(stderr, "mpi_topo: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static int cvar_index(const char *name)
{
    int idx;
    if (MPI_SUCCESS != MPI_T_cvar_get_index(name, &idx)) die("braid's control variables are missing (braid not loaded?)");
    return idx;
}

static int read_int_cvar(const char *name)
{
    MPI_T_cvar_handle h;
    int count, v = 0;
    MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count);
    MPI_T_cvar_read(h, &v);
    MPI_T_cvar_handle_free(&h);
    return v;
}

static void write_int_cvar(const char *name, int v)
{
    MPI_T_cvar_handle h;
    int count;
    MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count);
    if (MPI_SUCCESS != MPI_T_cvar_write(h, &v)) die("cannot set coll_braid_topo_aware through MPI_T");
    MPI_T_cvar_handle_free(&h);
}

static void open_pvars(void)
{
    if (MPI_SUCCESS != MPI_T_pvar_session_create(&session)) die("MPI_T_pvar_session_create failed");
    for (int i = 0; i < PV_N; i++) {
        int idx, count;
        if (MPI_SUCCESS != MPI_T_pvar_get_index(pvar_names[i], MPI_T_PVAR_CLASS_COUNTER, &idx))
            die("braid's traffic counters are missing (braid not loaded?)");
        if (MPI_SUCCESS != MPI_T_pvar_handle_alloc(session, idx, NULL, &pvars[i], &count))
            die("MPI_T_pvar_handle_alloc failed");
    }
}

static void read_pvars(unsigned long long v[PV_N])
{
    for (int i = 0; i < PV_N; i++) MPI_T_pvar_read(session, pvars[i], &v[i]);
}

/* node of every world rank, as braid sees it */
static void node_map(int P, int *node)
{
    int n = read_int_cvar("coll_braid_test_nodes");
    if (n > 0) {
        for (int r = 0; r < P; r++) node[r] = r % n;
        return;
    }
    MPI_Comm shared;
    int me, lowest;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    MPI_Allreduce(&me, &lowest, 1, MPI_INT, MPI_MIN, shared);
    MPI_Allgather(&lowest, 1, MPI_INT, node, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Comm_free(&shared);
}

typedef struct { unsigned long long d[PV_N]; } traffic_t;

/* Traffic this rank sent during fn(comm). */
static traffic_t measure(void (*fn)(MPI_Comm), MPI_Comm comm)
{
    unsigned long long before[PV_N], after[PV_N];
    traffic_t t;
    read_pvars(before);
    fn(comm);
    read_pvars(after);
    for (int i = 0; i < PV_N; i++) t.d[i] = after[i] - before[i];
    return t;
}

#define COUNT 40000   /* doubles: 320 KB, several ring_chunked chunks */

static void allreduce_checked(MPI_Comm comm)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    double *in = malloc(COUNT * sizeof(double)), *out = malloc(COUNT * sizeof(double));
    for (int i = 0; i < COUNT; i++) in[i] = (double)((rank + 1) * (i % 7 + 1));
    MPI_Allreduce(in, out, COUNT, MPI_DOUBLE, MPI_SUM, comm);
    int bad = 0;
    for (int i = 0; i < COUNT; i++)
        bad += out[i] != (double)(P * (P + 1) / 2 * (i % 7 + 1));
    mt_check(0 == bad, "allreduce: %d wrong elements", bad);
    free(in);
    free(out);
}

static void bcast_checked(MPI_Comm comm)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    int buf[256];
    for (int root = 0; root < P; root++) {
        for (int i = 0; i < 256; i++) buf[i] = rank == root ? root * 1000 + i : -1;
        MPI_Bcast(buf, 256, MPI_INT, root, comm);
        int bad = 0;
        for (int i = 0; i < 256; i++) bad += buf[i] != root * 1000 + i;
        mt_check(0 == bad, "bcast root %d: %d wrong elements", root, bad);
    }
}

static void allgather_checked(MPI_Comm comm)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    enum { BLOCK = 5000 };
    int *in = malloc(BLOCK * sizeof(int)), *out = malloc((size_t)P * BLOCK * sizeof(int));
    for (int i = 0; i < BLOCK; i++) in[i] = rank * 100000 + i;
    MPI_Allgather(in, BLOCK, MPI_INT, out, BLOCK, MPI_INT, comm);
    int bad = 0;
    for (int r = 0; r < P; r++)
        for (int i = 0; i < BLOCK; i++) bad += out[(size_t)r * BLOCK + i] != r * 100000 + i;
    mt_check(0 == bad, "allgather: %d wrong elements", bad);
    free(in);
    free(out);
}

/* uneven counts: rank r receives 1000 + 37 r elements */
static void reduce_scatter_checked(MPI_Comm comm)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    int *counts = malloc((size_t)P * sizeof(int)), total = 0, first = 0;
    for (int r = 0; r < P; r++) {
        counts[r] = 1000 + 37 * r;
        if (r < rank) first += counts[r];
        total += counts[r];
    }
    long *in = malloc((size_t)total * sizeof(long)), *out = malloc((size_t)counts[rank] * sizeof(long));
    for (int i = 0; i < total; i++) in[i] = (long)(rank + 1) * i;
    MPI_Reduce_scatter(in, out, counts, MPI_LONG, MPI_SUM, comm);
    int bad = 0;
    for (int i = 0; i < counts[rank]; i++)
        bad += out[i] != (long)P * (P + 1) / 2 * (first + i);
    mt_check(0 == bad, "reduce_scatter: %d wrong elements", bad);
    free(counts);
    free(in);
    free(out);
}

static unsigned long long sum_all(unsigned long long v)
{
    unsigned long long s = 0;
    PMPI_Allreduce(&v, &s, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

int main(int argc, char **argv)
{
    int provided, rank, P;
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    const char *alg = argc > 1 ? argv[1] : "ring";
    void (*coll)(MPI_Comm) = allreduce_checked;
    if (0 == strcmp(alg, "bcast")) coll = bcast_checked;
    if (0 == strcmp(alg, "allgather_ring")) coll = allgather_checked;
    if (0 == strcmp(alg, "reduce_scatter_ring")) coll = reduce_scatter_checked;
    bool is_ring = 0 == strcmp(alg, "ring") || 0 == strcmp(alg, "ring_chunked") ||
                   0 == strcmp(alg, "allgather_ring") || 0 == strcmp(alg, "reduce_scatter_ring");
    bool is_hier = 0 == strcmp(alg, "hierarchical");

    open_pvars();
    int *node = malloc((size_t)P * sizeof(int));
    node_map(P, node);
    int nodes = 0, crossings = 0, leader = 1;
    for (int r = 0; r < P; r++) {
        int first = 1;
        for (int q = 0; q < r; q++) first &= node[q] != node[r];
        nodes += first;
        crossings += node[r] != node[(r + 1) % P];
        if (r < rank && node[r] == node[rank]) leader = 0;
    }

    MPI_Comm comm[2];
    for (int t = 0; t < 2; t++) {
        write_int_cvar("coll_braid_topo_aware", t);
        MPI_Comm_dup(MPI_COMM_WORLD, &comm[t]);
    }
    write_int_cvar("coll_braid_topo_aware", 1);

    unsigned long long inter_msgs[2], inter_bytes[2], all_msgs[2], leaderless[2];
    for (int t = 0; t < 2; t++) {
        traffic_t tr = measure(coll, comm[t]);
        inter_msgs[t] = sum_all(tr.d[PV_INTER_MSGS]);
        inter_bytes[t] = sum_all(tr.d[PV_INTER_BYTES]);
        all_msgs[t] = sum_all(tr.d[PV_INTER_MSGS] + tr.d[PV_INTRA_MSGS]);
        leaderless[t] = sum_all(leader ? 0 : tr.d[PV_INTER_MSGS]);
    }
    if (0 == rank)
        printf("mpi_topo: %s np=%d nodes=%d ring-crossings=%d | rank order: %llu of %llu msgs and "
               "%llu bytes inter-node | node order: %llu of %llu msgs and %llu bytes inter-node\n",
               alg, P, nodes, crossings, inter_msgs[0], all_msgs[0], inter_bytes[0], inter_msgs[1],
               all_msgs[1], inter_bytes[1]);
    mt_check(all_msgs[0] > 0 || P == 1, "braid sent nothing: was it selected?");
    mt_check(inter_bytes[1] <= inter_bytes[0], "node order sends more inter-node bytes (%llu > %llu)",
             inter_bytes[1], inter_bytes[0]);
    if (is_ring && nodes > 1) {
        mt_check(inter_msgs[1] * (unsigned long long)P == all_msgs[1] * (unsigned long long)nodes,
                 "node-ordered ring: %llu of %llu messages inter-node, expected x%d/%d",
                 inter_msgs[1], all_msgs[1], nodes, P);
        mt_check(inter_msgs[0] * (unsigned long long)P == all_msgs[0] * (unsigned long long)crossings,
                 "rank-ordered ring: %llu of %llu messages inter-node, expected x%d/%d",
                 inter_msgs[0], all_msgs[0], crossings, P);
    }
    if (is_hier)
        for (int t = 0; t < 2; t++)
            mt_check(0 == leaderless[t], "hierarchical: ranks that do not lead a node sent %llu "
                     "inter-node messages", leaderless[t]);
    if (1 == nodes)
        mt_check(0 == inter_msgs[0] + inter_msgs[1], "one node, yet inter-node traffic");

    for (int t = 0; t < 2; t++) MPI_Comm_free(&comm[t]);
    for (int i = 0; i < PV_N; i++) MPI_T_pvar_handle_free(session, &pvars[i]);
    MPI_T_pvar_session_free(&session);
    free(node);
    MPI_T_finalize();
    return mt_finish("mpi_topo");
}
