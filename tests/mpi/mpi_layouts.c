/*
 * mpi_layouts.c - buffers that do not start where their arguments point,
 * in the collectives that move data without reducing it.
 *
 *   - MPI_BOTTOM with absolute-address types (a struct of N ints at the
 *     address of an array): bcast, allgather (send side, receive side,
 *     both, and nonblocking), allgatherv, gather, gatherv, scatter,
 *     scatterv, alltoall and alltoallv with both sides at MPI_BOTTOM;
 *   - a type whose data lies before the buffer argument (one int at byte
 *     -8, lower bound -8, extent 16): allgather, bcast, gather, scatter
 *     and alltoall;
 *   - a type whose data starts 8 bytes in (true lower bound 8): allgather.
 *
 * Values are rank- and index-dependent and checked against the known
 * inputs; every element between the ones a call defines keeps -1.
 */
#include "mpi_test_common.h"

enum { N = 4, MAXP = 64, ROOM = 64 };

static int rank, P;

static int v(int q, int i) { return q * 1000 + i + 1; }

/* n ints at the absolute address of buf */
static MPI_Datatype at_address(int *buf, int n)
{
    MPI_Aint a;
    MPI_Get_address(buf, &a);
    MPI_Datatype t, in = MPI_INT;
    MPI_Type_create_struct(1, &n, &a, &in, &t);
    MPI_Type_commit(&t);
    return t;
}

/* got[0..n) against want[0..n) */
static void expect(const char *what, const int *got, const int *want, int n)
{
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += got[i] != want[i];
    mt_check(0 == wrong, "%s: np=%d rank=%d: %d of %d elements wrong", what, P, rank, wrong, n);
}

static void fill(int *b, int n, int x)
{
    for (int i = 0; i < n; i++) b[i] = x;
}

static void bottom(int *s, int *g, int *want)
{
    int counts[MAXP], displs[MAXP];
    for (int q = 0; q < P; q++) counts[q] = 1, displs[q] = q;
    MPI_Datatype ts, tg;
    MPI_Request req;

    for (int i = 0; i < N; i++) g[i] = 0 == rank ? v(0, i) : -1, want[i] = v(0, i);
    tg = at_address(g, N);
    MPI_Bcast(MPI_BOTTOM, 1, tg, 0, MPI_COMM_WORLD);
    expect("bcast at MPI_BOTTOM", g, want, N);
    MPI_Type_free(&tg);

    /* every rank's block q = v(q, i) */
    for (int i = 0; i < N; i++) s[i] = v(rank, i);
    for (int q = 0; q < P; q++)
        for (int i = 0; i < N; i++) want[q * N + i] = v(q, i);
    ts = at_address(s, N);
    tg = at_address(g, N);
    fill(g, N * P, -1);
    MPI_Allgather(MPI_BOTTOM, 1, ts, g, N, MPI_INT, MPI_COMM_WORLD);
    expect("allgather, send at MPI_BOTTOM", g, want, N * P);
    fill(g, N * P, -1);
    MPI_Allgather(s, N, MPI_INT, MPI_BOTTOM, 1, tg, MPI_COMM_WORLD);
    expect("allgather, receive at MPI_BOTTOM", g, want, N * P);
    fill(g, N * P, -1);
    MPI_Iallgather(MPI_BOTTOM, 1, ts, MPI_BOTTOM, 1, tg, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    expect("iallgather at MPI_BOTTOM", g, want, N * P);
    fill(g, N * P, -1);
    MPI_Allgatherv(MPI_BOTTOM, 1, ts, MPI_BOTTOM, counts, displs, tg, MPI_COMM_WORLD);
    expect("allgatherv at MPI_BOTTOM", g, want, N * P);
    fill(g, N * P, -1);
    MPI_Gather(MPI_BOTTOM, 1, ts, MPI_BOTTOM, 1, tg, P - 1, MPI_COMM_WORLD);
    if (P - 1 == rank) expect("gather at MPI_BOTTOM", g, want, N * P);
    fill(g, N * P, -1);
    MPI_Gatherv(MPI_BOTTOM, 1, ts, MPI_BOTTOM, counts, displs, tg, P - 1, MPI_COMM_WORLD);
    if (P - 1 == rank) expect("gatherv at MPI_BOTTOM", g, want, N * P);
    MPI_Type_free(&ts);
    MPI_Type_free(&tg);

    /* from root 0: block q = v(q, i) */
    for (int q = 0; q < P; q++)
        for (int i = 0; i < N; i++) s[q * N + i] = 0 == rank ? v(q, i) : -3;
    for (int i = 0; i < N; i++) want[i] = v(rank, i);
    ts = at_address(s, N);
    tg = at_address(g, N);
    fill(g, N, -1);
    MPI_Scatter(MPI_BOTTOM, 1, ts, MPI_BOTTOM, 1, tg, 0, MPI_COMM_WORLD);
    expect("scatter at MPI_BOTTOM", g, want, N);
    fill(g, N, -1);
    MPI_Scatterv(MPI_BOTTOM, counts, displs, ts, MPI_BOTTOM, 1, tg, 0, MPI_COMM_WORLD);
    expect("scatterv at MPI_BOTTOM", g, want, N);

    /* block from q to d = v(MAXP q + d, i) */
    for (int d = 0; d < P; d++)
        for (int i = 0; i < N; i++) {
            s[d * N + i] = v(MAXP * rank + d, i);
            want[d * N + i] = v(MAXP * d + rank, i);
        }
    fill(g, N * P, -1);
    MPI_Alltoall(MPI_BOTTOM, 1, ts, MPI_BOTTOM, 1, tg, MPI_COMM_WORLD);
    expect("alltoall at MPI_BOTTOM", g, want, N * P);
    fill(g, N * P, -1);
    MPI_Alltoallv(MPI_BOTTOM, counts, displs, ts, MPI_BOTTOM, counts, displs, tg, MPI_COMM_WORLD);
    expect("alltoallv at MPI_BOTTOM", g, want, N * P);
    MPI_Type_free(&ts);
    MPI_Type_free(&tg);
}

/* element k of a `before` message: the int 4 k - 2 ints from the argument */
#define AT(k) (4 * (k) - 2)

/* ints between the n elements' ints (and just before the first) that are
 * no longer -1 */
static int gaps_kept(const int *b, int n)
{
    int changed = 0;
    for (int j = AT(0) - 2; j < AT(n); j++)
        if ((j + 2) % 4) changed += b[j] != -1;
    return changed;
}

/* the n elements' ints of b into out */
static void spread(const int *b, int n, int *out)
{
    for (int k = 0; k < n; k++) out[k] = b[AT(k)];
}

static void before(int *sraw, int *graw, int *want, int *got)
{
    int *s = sraw + ROOM, *g = graw + ROOM, len = 4 * N * MAXP + 2 * ROOM;
    MPI_Datatype t, before;
    int one = 1;
    MPI_Aint at = -8;
    MPI_Type_create_hindexed(1, &one, &at, MPI_INT, &t);
    MPI_Type_create_resized(t, -8, 16, &before);
    MPI_Type_commit(&before);
    MPI_Type_free(&t);

    for (int i = 0; i < N; i++) s[i] = v(rank, i);
    for (int q = 0; q < P; q++)
        for (int i = 0; i < N; i++) want[q * N + i] = v(q, i);
    fill(graw, len, -1);
    MPI_Allgather(s, N, MPI_INT, g, N, before, MPI_COMM_WORLD);
    spread(g, N * P, got);
    expect("allgather, receive type's data before its buffer", got, want, N * P);
    mt_check(0 == gaps_kept(g, N * P), "allgather, data before the buffer: np=%d rank=%d: gaps written",
             P, rank);

    fill(graw, len, -1);
    for (int k = 0; k < N; k++)
        if (0 == rank) g[AT(k)] = v(0, k);
    MPI_Bcast(g, N, before, 0, MPI_COMM_WORLD);
    spread(g, N, got);
    expect("bcast, data before its buffer", got, want, N);

    fill(graw, len, -1);
    MPI_Gather(s, N, MPI_INT, g, N, before, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        spread(g, N * P, got);
        expect("gather, data before the root's buffer", got, want, N * P);
    }
    int mine[N];
    fill(mine, N, -1);
    MPI_Scatter(g, N, before, mine, N, MPI_INT, 0, MPI_COMM_WORLD);
    expect("scatter, data before the root's buffer", mine, want + rank * N, N);

    fill(sraw, len, -1);
    fill(graw, len, -1);
    for (int d = 0; d < P; d++)
        for (int i = 0; i < N; i++) {
            s[AT(d * N + i)] = v(MAXP * rank + d, i);
            want[d * N + i] = v(MAXP * d + rank, i);
        }
    MPI_Alltoall(s, N, before, g, N, before, MPI_COMM_WORLD);
    spread(g, N * P, got);
    expect("alltoall, data before both buffers", got, want, N * P);
    MPI_Type_free(&before);

    /* N ints 8 bytes in */
    MPI_Datatype inside;
    int n = N;
    MPI_Aint eight = 8;
    MPI_Type_create_hindexed(1, &n, &eight, MPI_INT, &t);
    MPI_Type_create_resized(t, 0, 8 + 4 * N, &inside);
    MPI_Type_commit(&inside);
    MPI_Type_free(&t);
    int stride = 2 + N;
    fill(sraw, len, -1);
    fill(graw, len, -1);
    for (int i = 0; i < N; i++) s[2 + i] = v(rank, i);
    MPI_Allgather(s, 1, inside, g, 1, inside, MPI_COMM_WORLD);
    for (int q = 0; q < P; q++)
        for (int i = 0; i < N; i++) got[q * N + i] = g[q * stride + 2 + i];
    for (int q = 0; q < P; q++)
        for (int i = 0; i < N; i++) want[q * N + i] = v(q, i);
    expect("allgather, data 8 bytes into each element", got, want, N * P);
    int holes = 0;
    for (int q = 0; q < P; q++) holes += (g[q * stride] != -1) + (g[q * stride + 1] != -1);
    mt_check(0 == holes, "allgather, data 8 bytes in: np=%d rank=%d: %d holes written", P, rank, holes);
    MPI_Type_free(&inside);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (P > MAXP) {
        if (0 == rank) printf("SKIP: mpi_layouts runs at most %d ranks\n", MAXP);
        MPI_Finalize();
        return 0;
    }
    size_t len = 4 * N * MAXP + 2 * ROOM;
    int *s = malloc(len * sizeof(int)), *g = malloc(len * sizeof(int));
    int *want = malloc(N * MAXP * sizeof(int)), *got = malloc(N * MAXP * sizeof(int));
    for (int round = 0; round < 3; round++) {   /* the shm tier sets up after a few calls */
        bottom(s, g, want);
        before(s, g, want, got);
    }
    free(s);
    free(g);
    free(want);
    free(got);
    return mt_finish("mpi_layouts");
}
