/*
 * mpi_cuda.c - MPI_Allreduce, MPI_Reduce and MPI_Bcast on CUDA device
 * buffers under braid, np ranks sharing the GPUs of the node (rank r uses
 * device r % ndevices). Each rank puts its send and receive buffers on the
 * device, the host, or in managed memory independently of the other ranks
 * (in place or not), for several types, ops, sizes (below, at and across
 * braid's staging segments) and roots; every result is compared with a
 * reference computed locally from the known inputs.
 *
 * MPI_Allgather, MPI_Reduce_scatter_block and MPI_Reduce_scatter take the
 * same mixes (braid runs them on host copies of device buffers); pinned
 * host memory (cuMemHostAlloc) is a fourth place. MPI_Alltoall,
 * MPI_Alltoallv, MPI_Allgatherv, MPI_Gather, MPI_Scatter, MPI_Gatherv and
 * MPI_Scatterv take the four places too (host copies as well), and so do
 * MPI_Scan and MPI_Exscan (int sums, staged like allreduce), with uneven
 * counts including a zero, displacements in reverse rank order whose gaps
 * must keep their values, roots 0 and P - 1, and in place (at the root, on
 * every rank, or on some ranks for the scans); the v forms also with the
 * buffer arguments in the middle of their layouts (displacements below 0),
 * blocking and nonblocking.
 *
 * MPI_Iallreduce with MPI_Ibcast outstanding, and a persistent allreduce
 * started three times with new inputs, on the same mixes: braid runs a
 * request on host copies of its device buffers and copies the results
 * back when it completes.
 *
 * Also: a pair type (MPI_2INT, MAXLOC: staged layout), a strided vector
 * broadcast (packed through a host copy), a non-commutative user op (handed
 * to the previous module through host copies; as MPI_Iallreduce, posted
 * locally before a synchronous send the peer receives before it posts),
 * and rank 0's buffers on the
 * host while the others are on the device. And single-rank communicators
 * (MPI_COMM_SELF, a split of one rank each, MPI_COMM_WORLD at np=1), which
 * braid takes in a job that uses CUDA: coll/self, which would take them
 * otherwise, is not CUDA-aware and crashed on a device pointer.
 *
 * The CUDA driver is loaded with dlopen, so the program builds and runs
 * without CUDA: with no driver or no GPU every rank prints nothing, rank 0
 * prints "SKIP: no CUDA device" and the job exits 0 (the test runner counts
 * it as skipped).
 *
 * usage: mpi_cuda                 the tests
 *        mpi_cuda bench [SIZE...]  device-buffer MPI_Allreduce (float sum, in
 *                                 place) against braid's host-buffer allreduce
 *                                 of the same size and against copy-to-host +
 *                                 host MPI_Allreduce + copy-back, at each SIZE
 *                                 in bytes (K/M/G suffixes; default 8 64K 1M
 *                                 16M 64M 256M); goal from 4 MiB: device/host
 *                                 time <= 1.2, baseline/device time >= 2
 */
#include "mpi_test_common.h"
#include "mpi_persistent.h"

#include <dlfcn.h>
#include <stdint.h>

/* ---- the driver API slice the test needs (dlopen'ed) ---- */
typedef int cu_result_t;
typedef unsigned long long cu_ptr_t;
static struct {
    cu_result_t (*Init)(unsigned);
    cu_result_t (*DeviceGetCount)(int *);
    cu_result_t (*DeviceGet)(int *, int);
    cu_result_t (*DevicePrimaryCtxRetain)(void **, int);
    cu_result_t (*CtxSetCurrent)(void *);
    cu_result_t (*CtxSynchronize)(void);
    cu_result_t (*MemAlloc)(cu_ptr_t *, size_t);
    cu_result_t (*MemAllocManaged)(cu_ptr_t *, size_t, unsigned);
    cu_result_t (*MemFree)(cu_ptr_t);
    cu_result_t (*MemHostAlloc)(void **, size_t, unsigned);
    cu_result_t (*MemFreeHost)(void *);
    cu_result_t (*MemcpyHtoD)(cu_ptr_t, const void *, size_t);
    cu_result_t (*MemcpyDtoH)(void *, cu_ptr_t, size_t);
} cu;

static int cuda_setup(int rank)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (NULL == lib) return 0;
    struct { void **fn; const char *name; } syms[] = {
        { (void **)&cu.Init, "cuInit" },
        { (void **)&cu.DeviceGetCount, "cuDeviceGetCount" },
        { (void **)&cu.DeviceGet, "cuDeviceGet" },
        { (void **)&cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain" },
        { (void **)&cu.CtxSetCurrent, "cuCtxSetCurrent" },
        { (void **)&cu.CtxSynchronize, "cuCtxSynchronize" },
        { (void **)&cu.MemAlloc, "cuMemAlloc_v2" },
        { (void **)&cu.MemAllocManaged, "cuMemAllocManaged" },
        { (void **)&cu.MemFree, "cuMemFree_v2" },
        { (void **)&cu.MemHostAlloc, "cuMemHostAlloc" },
        { (void **)&cu.MemFreeHost, "cuMemFreeHost" },
        { (void **)&cu.MemcpyHtoD, "cuMemcpyHtoD_v2" },
        { (void **)&cu.MemcpyDtoH, "cuMemcpyDtoH_v2" },
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
        if (NULL == (*syms[i].fn = dlsym(lib, syms[i].name))) return 0;
    int n = 0, dev;
    void *ctx;
    if (cu.Init(0) || cu.DeviceGetCount(&n) || n <= 0) return 0;
    if (cu.DeviceGet(&dev, rank % n) || cu.DevicePrimaryCtxRetain(&ctx, dev) ||
        cu.CtxSetCurrent(ctx))
        return 0;
    return n;
}

/* ---- buffers in a chosen place ---- */
typedef enum { WHERE_HOST, WHERE_DEVICE, WHERE_MANAGED, WHERE_PINNED, WHERE_N } where_t;
static const char *where_name[WHERE_N] = { "host", "device", "managed", "pinned" };

typedef struct buf {
    where_t where;
    size_t len;
    void *p;
} buf_t;

static buf_t buf_alloc(where_t w, size_t len)
{
    buf_t b = { w, len, NULL };
    cu_ptr_t d = 0;
    if (WHERE_HOST == w) b.p = malloc(len ? len : 1);
    else if (WHERE_DEVICE == w && 0 == cu.MemAlloc(&d, len ? len : 1)) b.p = (void *)(uintptr_t)d;
    else if (WHERE_MANAGED == w && 0 == cu.MemAllocManaged(&d, len ? len : 1, 1)) b.p = (void *)(uintptr_t)d;
    else if (WHERE_PINNED == w && 0 != cu.MemHostAlloc(&b.p, len ? len : 1, 0)) b.p = NULL;
    if (NULL == b.p) {
        fprintf(stderr, "mpi_cuda: cannot allocate %zu bytes of %s memory\n", len, where_name[w]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return b;
}

static void buf_free(buf_t *b)
{
    if (WHERE_HOST == b->where) free(b->p);
    else if (WHERE_PINNED == b->where) cu.MemFreeHost(b->p);
    else cu.MemFree((cu_ptr_t)(uintptr_t)b->p);
    b->p = NULL;
}

static void buf_put(buf_t *b, const void *host, size_t len)
{
    if (WHERE_HOST == b->where || WHERE_PINNED == b->where) memcpy(b->p, host, len);
    else cu.MemcpyHtoD((cu_ptr_t)(uintptr_t)b->p, host, len);
}

static void buf_get(const buf_t *b, void *host, size_t len)
{
    cu.CtxSynchronize();
    if (WHERE_HOST == b->where || WHERE_PINNED == b->where) memcpy(host, b->p, len);
    else cu.MemcpyDtoH(host, (cu_ptr_t)(uintptr_t)b->p, len);
}

/* ---- typed cases ---- */
typedef enum { T_INT_SUM, T_DOUBLE_SUM, T_FLOAT_MAX, T_LONG_BXOR, T_UINT8_PROD, T_N } tcase_t;
static const char *tcase_name[T_N] = { "int SUM", "double SUM", "float MAX", "long BXOR",
                                       "uint8 PROD" };
static MPI_Datatype tcase_type(tcase_t t)
{
    MPI_Datatype ts[T_N] = { MPI_INT, MPI_DOUBLE, MPI_FLOAT, MPI_LONG, MPI_UINT8_T };
    return ts[t];
}
static MPI_Op tcase_op(tcase_t t)
{
    MPI_Op os[T_N] = { MPI_SUM, MPI_SUM, MPI_MAX, MPI_BXOR, MPI_PROD };
    return os[t];
}
static size_t tcase_size(tcase_t t)
{
    size_t s[T_N] = { sizeof(int), sizeof(double), sizeof(float), sizeof(long), 1 };
    return s[t];
}

/* input of rank r at element i, and the reduction over ranks 0..P-1 */
static void put_input(tcase_t t, int r, size_t i, void *at)
{
    switch (t) {
    case T_INT_SUM: { int v = (int)((i * 7 + (size_t)r * 13) % 1000) - 500; memcpy(at, &v, sizeof v); break; }
    case T_DOUBLE_SUM: { double v = (double)((i + (size_t)r * 3) % 4096) * 0.25; memcpy(at, &v, sizeof v); break; }
    case T_FLOAT_MAX: { float v = (float)((i * 31 + (size_t)r * 17) % 997) - 400.0f; memcpy(at, &v, sizeof v); break; }
    case T_LONG_BXOR: { long v = (long)(i * 2654435761u + (size_t)r * 40503u); memcpy(at, &v, sizeof v); break; }
    case T_UINT8_PROD: { uint8_t v = (uint8_t)((i + (size_t)r) % 5 + 1); memcpy(at, &v, 1); break; }
    default: break;
    }
}

static void reduce_into(tcase_t t, const void *in, void *io)
{
    switch (t) {
    case T_INT_SUM: { int a, b; memcpy(&a, in, 4); memcpy(&b, io, 4); b += a; memcpy(io, &b, 4); break; }
    case T_DOUBLE_SUM: { double a, b; memcpy(&a, in, 8); memcpy(&b, io, 8); b += a; memcpy(io, &b, 8); break; }
    case T_FLOAT_MAX: { float a, b; memcpy(&a, in, 4); memcpy(&b, io, 4); if (a > b) b = a; memcpy(io, &b, 4); break; }
    case T_LONG_BXOR: { long a, b; memcpy(&a, in, sizeof a); memcpy(&b, io, sizeof b); b ^= a; memcpy(io, &b, sizeof b); break; }
    case T_UINT8_PROD: { uint8_t a, b; memcpy(&a, in, 1); memcpy(&b, io, 1); b = (uint8_t)(a * b); memcpy(io, &b, 1); break; }
    default: break;
    }
}

static void make_input(tcase_t t, int r, size_t n, unsigned char *h)
{
    size_t es = tcase_size(t);
    for (size_t i = 0; i < n; i++) put_input(t, r, i, h + i * es);
}

/* the reduction of the inputs of ranks base .. base + P - 1 */
static void make_reference_from(tcase_t t, int base, int P, size_t n, unsigned char *ref)
{
    size_t es = tcase_size(t);
    unsigned char tmp[8];
    make_input(t, base, n, ref);
    for (int r = base + 1; r < base + P; r++)
        for (size_t i = 0; i < n; i++) {
            put_input(t, r, i, tmp);
            reduce_into(t, tmp, ref + i * es);
        }
}

static void make_reference(tcase_t t, int P, size_t n, unsigned char *ref)
{
    make_reference_from(t, 0, P, n, ref);
}

/* rank r's placement in round k: (send, recv, in_place) */
static void placement(int r, int k, where_t *s, where_t *d, int *in_place)
{
    int v = (r * 2 + k) % 6;
    static const where_t S[6] = { WHERE_DEVICE, WHERE_DEVICE, WHERE_PINNED, WHERE_DEVICE, WHERE_MANAGED, WHERE_HOST };
    static const where_t D[6] = { WHERE_DEVICE, WHERE_HOST, WHERE_DEVICE, WHERE_DEVICE, WHERE_DEVICE, WHERE_HOST };
    *s = S[v];
    *d = D[v];
    *in_place = (3 == v);
}

static void test_allreduce_reduce(MPI_Comm comm, size_t n, tcase_t t, int k)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t es = tcase_size(t), bytes = n * es;
    unsigned char *in = malloc(bytes + 1), *ref = malloc(bytes + 1), *got = malloc(bytes + 1);
    make_input(t, rank, n, in);
    make_reference(t, P, n, ref);
    where_t sw, dw;
    int in_place;
    placement(rank, k, &sw, &dw, &in_place);

    /* allreduce */
    buf_t sb = buf_alloc(sw, bytes), rb = buf_alloc(in_place ? sw : dw, bytes);
    if (in_place) buf_put(&rb, in, bytes);
    else buf_put(&sb, in, bytes);
    int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : sb.p, rb.p, (int)n, tcase_type(t), tcase_op(t), comm);
    buf_get(&rb, got, bytes);
    mt_check(MPI_SUCCESS == rc && 0 == memcmp(got, ref, bytes),
             "allreduce %s n=%zu np=%d send=%s recv=%s%s: rc=%d, values %s", tcase_name[t], n, P,
             where_name[sw], where_name[in_place ? sw : dw], in_place ? " (in place)" : "", rc,
             memcmp(got, ref, bytes) ? "wrong" : "right");

    /* reduce at a rotating root */
    int root = (k + (int)n) % P;
    if (in_place && rank == root) buf_put(&rb, in, bytes);
    else buf_put(&sb, in, bytes);
    rc = MPI_Reduce(in_place && rank == root ? MPI_IN_PLACE : sb.p, rank == root ? rb.p : NULL,
                    (int)n, tcase_type(t), tcase_op(t), root, comm);
    if (rank == root) {
        buf_get(&rb, got, bytes);
        mt_check(MPI_SUCCESS == rc && 0 == memcmp(got, ref, bytes),
                 "reduce %s n=%zu np=%d root=%d send=%s recv=%s: rc=%d, values %s", tcase_name[t],
                 n, P, root, where_name[sw], where_name[in_place ? sw : dw], rc,
                 memcmp(got, ref, bytes) ? "wrong" : "right");
    } else {
        mt_check(MPI_SUCCESS == rc, "reduce rc=%d", rc);
    }
    buf_free(&sb);
    buf_free(&rb);
    free(in); free(ref); free(got);
}

static void test_bcast(MPI_Comm comm, size_t bytes, int k)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    int root = k % P;
    where_t w = (where_t)((rank + k) % WHERE_N);
    unsigned char *h = malloc(bytes), *got = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) h[i] = rank == root ? mt_byte(k, i) : 0;
    buf_t b = buf_alloc(w, bytes);
    buf_put(&b, h, bytes);
    int rc = MPI_Bcast(b.p, (int)bytes, MPI_BYTE, root, comm);
    buf_get(&b, got, bytes);
    size_t wrong = 0;
    for (size_t i = 0; i < bytes; i++) wrong += got[i] != mt_byte(k, i);
    mt_check(MPI_SUCCESS == rc && 0 == wrong, "bcast %zu bytes np=%d root=%d on %s: rc=%d, %zu wrong",
             bytes, P, root, where_name[w], rc, wrong);
    buf_free(&b);
    free(h); free(got);
}

/* MPI_Iallreduce and MPI_Ibcast outstanding together, then a persistent
 * allreduce started three times, its inputs changed between starts (start
 * s reduces the inputs of "ranks" s*P .. s*P + P - 1) */
static void test_requests(MPI_Comm comm, size_t n, tcase_t t, int k)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    size_t es = tcase_size(t), bytes = n * es;
    unsigned char *in = malloc(bytes + 1), *ref = malloc(bytes + 1), *got = malloc(bytes + 1);
    where_t sw, dw;
    int in_place, root = k % P;
    placement(rank, k, &sw, &dw, &in_place);
    buf_t sb = buf_alloc(sw, bytes), rb = buf_alloc(in_place ? sw : dw, bytes);
    buf_t bb = buf_alloc((where_t)((rank + k) % WHERE_N), bytes);
    buf_t *inb = in_place ? &rb : &sb;
    const void *sp = in_place ? MPI_IN_PLACE : sb.p;
    char what[96];
    snprintf(what, sizeof what, "%s n=%zu np=%d send=%s recv=%s%s", tcase_name[t], n, P,
             where_name[sw], where_name[in_place ? sw : dw], in_place ? " (in place)" : "");

    make_input(t, rank, n, in);
    make_reference(t, P, n, ref);
    buf_put(inb, in, bytes);
    for (size_t i = 0; i < bytes; i++) got[i] = rank == root ? mt_byte(k, i) : 0;
    buf_put(&bb, got, bytes);
    MPI_Request req[2];
    int rc = MPI_Iallreduce(sp, rb.p, (int)n, tcase_type(t), tcase_op(t), comm, &req[0]);
    rc |= MPI_Ibcast(bb.p, (int)bytes, MPI_BYTE, root, comm, &req[1]);
    rc |= MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    buf_get(&rb, got, bytes);
    mt_check(MPI_SUCCESS == rc && 0 == memcmp(got, ref, bytes), "iallreduce %s: rc=%d, values %s",
             what, rc, memcmp(got, ref, bytes) ? "wrong" : "right");
    buf_get(&bb, got, bytes);
    size_t wrong = 0;
    for (size_t i = 0; i < bytes; i++) wrong += got[i] != mt_byte(k, i);
    mt_check(0 == wrong, "ibcast %zu bytes root=%d on %s: %zu wrong", bytes, root,
             where_name[(rank + k) % WHERE_N], wrong);

    MPI_Request p;
    rc = Allreduce_init(sp, rb.p, (int)n, tcase_type(t), tcase_op(t), comm, MPI_INFO_NULL, &p);
    for (int st = 0; st < 3; st++) {
        make_input(t, st * P + rank, n, in);
        make_reference_from(t, st * P, P, n, ref);
        buf_put(inb, in, bytes);
        rc |= MPI_Start(&p);
        rc |= MPI_Wait(&p, MPI_STATUS_IGNORE);
        buf_get(&rb, got, bytes);
        mt_check(MPI_SUCCESS == rc && 0 == memcmp(got, ref, bytes),
                 "allreduce_init start %d %s: rc=%d, values %s", st, what, rc,
                 memcmp(got, ref, bytes) ? "wrong" : "right");
    }
    MPI_Request_free(&p);
    buf_free(&sb);
    buf_free(&rb);
    buf_free(&bb);
    free(in); free(ref); free(got);
}

/* a strided vector (every other int) broadcast into device memory: the
 * holes must keep their values */
static void test_bcast_vector(MPI_Comm comm)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    const int n = 10000;
    MPI_Datatype vec;
    MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *h = malloc(sizeof(int) * 2 * n), *got = malloc(sizeof(int) * 2 * n);
    for (int i = 0; i < 2 * n; i++) h[i] = (i % 2) ? -rank - 1 : (rank == 0 ? i * 3 : 0);
    buf_t b = buf_alloc(rank % 2 ? WHERE_HOST : WHERE_DEVICE, sizeof(int) * 2 * n);
    buf_put(&b, h, sizeof(int) * 2 * n);
    int rc = MPI_Bcast(b.p, 1, vec, 0, comm);
    buf_get(&b, got, sizeof(int) * 2 * n);
    int wrong = 0;
    for (int i = 0; i < 2 * n; i++) wrong += got[i] != ((i % 2) ? -rank - 1 : i * 3);
    mt_check(MPI_SUCCESS == rc && 0 == wrong, "bcast vector np=%d on %s: rc=%d, %d wrong", P,
             where_name[b.where], rc, wrong);
    buf_free(&b);
    MPI_Type_free(&vec);
    free(h); free(got);
}

/* MPI_2INT with MAXLOC on device buffers (braid's staged layout) */
static void test_pair_maxloc(MPI_Comm comm)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    const int n = 5000;
    int *h = malloc(sizeof(int) * 2 * n), *got = malloc(sizeof(int) * 2 * n);
    for (int i = 0; i < n; i++) { h[2 * i] = (i * 7 + rank * 13) % 101; h[2 * i + 1] = rank; }
    buf_t s = buf_alloc(rank % 3 == 1 ? WHERE_HOST : WHERE_DEVICE, sizeof(int) * 2 * n);
    buf_t r = buf_alloc(rank % 2 ? WHERE_HOST : WHERE_DEVICE, sizeof(int) * 2 * n);
    buf_put(&s, h, sizeof(int) * 2 * n);
    int rc = MPI_Allreduce(s.p, r.p, n, MPI_2INT, MPI_MAXLOC, comm);
    buf_get(&r, got, sizeof(int) * 2 * n);
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        int best = -1, at = 0;
        for (int q = 0; q < P; q++) {
            int v = (i * 7 + q * 13) % 101;
            if (v > best) { best = v; at = q; }
        }
        wrong += got[2 * i] != best || got[2 * i + 1] != at;
    }
    mt_check(MPI_SUCCESS == rc && 0 == wrong, "allreduce MPI_2INT MAXLOC np=%d send=%s recv=%s: rc=%d, %d wrong",
             P, where_name[s.where], where_name[r.where], rc, wrong);
    buf_free(&s);
    buf_free(&r);
    free(h); free(got);
}

/* a non-commutative user op: 2x2 integer matrix product in rank order */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    long *a = in, *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        long r0 = (a[0] * b[0] + a[1] * b[2]) % 1000003, r1 = (a[0] * b[1] + a[1] * b[3]) % 1000003;
        long r2 = (a[2] * b[0] + a[3] * b[2]) % 1000003, r3 = (a[2] * b[1] + a[3] * b[3]) % 1000003;
        b[0] = r0; b[1] = r1; b[2] = r2; b[3] = r3;
    }
}

/* n 2x2 matrices per rank (variant k) as a 4-long type, the op, this
 * rank's input h and the product over the ranks in rank order, ref */
typedef struct {
    int rank, P, n;
    size_t bytes;
    MPI_Datatype m4;
    MPI_Op op;
    long *h, *got, *ref;
} mats_t;

static void mats_open(mats_t *t, MPI_Comm comm, int n, int k)
{
    MPI_Comm_rank(comm, &t->rank);
    MPI_Comm_size(comm, &t->P);
    t->n = n;
    t->bytes = sizeof(long) * 4 * (size_t)n;
    MPI_Type_contiguous(4, MPI_LONG, &t->m4);
    MPI_Type_commit(&t->m4);
    MPI_Op_create(matmul, 0, &t->op);
    t->h = malloc(t->bytes);
    t->got = malloc(t->bytes);
    t->ref = malloc(t->bytes);
    for (int q = t->P - 1; q >= 0; q--)
        for (int i = 0; i < n; i++) {
            long x[4] = { q + 1 + k, (i + 2 + k) % 7, q % (3 + k), (i * (5 - k) + q) % (11 + k) + 1 };
            if (q == t->rank) memcpy(t->h + 4 * i, x, sizeof x);
            if (q == t->P - 1) memcpy(t->ref + 4 * i, x, sizeof x);
            else { int one = 1; matmul(x, t->ref + 4 * i, &one, NULL); }
        }
}

static void mats_close(mats_t *t)
{
    MPI_Op_free(&t->op);
    MPI_Type_free(&t->m4);
    free(t->h); free(t->got); free(t->ref);
}

static void test_noncommutative(MPI_Comm comm)
{
    mats_t t;
    mats_open(&t, comm, 3000, 0);
    buf_t b = buf_alloc(t.rank % 2 ? WHERE_HOST : WHERE_DEVICE, t.bytes);
    buf_put(&b, t.h, t.bytes);
    int rc = MPI_Allreduce(MPI_IN_PLACE, b.p, t.n, t.m4, t.op, comm);
    buf_get(&b, t.got, t.bytes);
    mt_check(MPI_SUCCESS == rc && 0 == memcmp(t.got, t.ref, t.bytes),
             "allreduce non-commutative user op np=%d on %s: rc=%d", t.P, where_name[b.where], rc);
    buf_free(&b);
    mats_close(&t);
}

/* Starting a nonblocking collective is local, device buffers and a call
 * braid hands to the previous module included (the non-commutative op
 * under an algorithm that refuses it): rank 0 posts MPI_Iallreduce and
 * then MPI_Ssend to rank 1, which receives before it posts its own. */
static void test_local_post(MPI_Comm comm)
{
    mats_t t;
    mats_open(&t, comm, 1000, 1);
    if (t.P < 2) {
        mats_close(&t);
        return;
    }
    buf_t sb = buf_alloc(WHERE_DEVICE, t.bytes);
    buf_t rb = buf_alloc(t.rank % 2 ? WHERE_HOST : WHERE_DEVICE, t.bytes);
    buf_put(&sb, t.h, t.bytes);
    MPI_Request q;
    int token = 42, rc;
    if (1 == t.rank) MPI_Recv(&token, 1, MPI_INT, 0, 7, comm, MPI_STATUS_IGNORE);
    rc = MPI_Iallreduce(sb.p, rb.p, t.n, t.m4, t.op, comm, &q);
    if (0 == t.rank) MPI_Ssend(&token, 1, MPI_INT, 1, 7, comm);
    if (MPI_SUCCESS == rc) rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    buf_get(&rb, t.got, t.bytes);
    mt_check(MPI_SUCCESS == rc && 0 == memcmp(t.got, t.ref, t.bytes) && 42 == token,
             "Iallreduce fell back from device buffers, posted before a synchronous send np=%d: rc=%d",
             t.P, rc);
    buf_free(&sb);
    buf_free(&rb);
    mats_close(&t);
}

/* MPI_Allgather of int blocks: each rank's send and receive buffers in a
 * place of its own (host, device, managed), in place on some ranks; braid
 * runs it on host copies of device buffers (the receive buffer is filled
 * from the device only when the call reads it: in place). */
static int ag_value(int r, size_t i, int k) { return (int)((size_t)r * 1000003u + i * 7u) + k; }

static void test_allgather(MPI_Comm comm, size_t n, int k)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    where_t sw = (where_t)((rank + k) % WHERE_N), dw = (where_t)((rank + 2 * k + 1) % WHERE_N);
    int in_place = 3 == (rank + k) % 4;
    size_t bytes = n * sizeof(int), total = bytes * (size_t)P;
    int *h = malloc(total + 1), *got = malloc(total + 1);
    for (int r = 0; r < P; r++)
        for (size_t i = 0; i < n; i++) h[(size_t)r * n + i] = r == rank ? ag_value(r, i, k) : -1;
    buf_t sb = buf_alloc(sw, bytes), rb = buf_alloc(dw, total);
    buf_put(&sb, h + (size_t)rank * n, bytes);
    buf_put(&rb, h, total);   /* own block (in place) and -1 elsewhere */
    int rc = MPI_Allgather(in_place ? MPI_IN_PLACE : sb.p, (int)n, MPI_INT, rb.p, (int)n, MPI_INT,
                           comm);
    buf_get(&rb, got, total);
    size_t wrong = 0;
    for (int r = 0; r < P; r++)
        for (size_t i = 0; i < n; i++) wrong += got[(size_t)r * n + i] != ag_value(r, i, k);
    mt_check(MPI_SUCCESS == rc && 0 == wrong,
             "allgather %zu ints np=%d send=%s recv=%s%s: rc=%d, %zu wrong", n, P,
             where_name[sw], where_name[dw], in_place ? " (in place)" : "", rc, wrong);
    buf_free(&sb);
    buf_free(&rb);
    free(h); free(got);
}

/* MPI_Reduce_scatter_block and MPI_Reduce_scatter (rank r receives
 * n + r elements, rank 1 none) of int sums, buffers placed as above. */
static int rs_input(int r, size_t j, int k) { return (int)(((size_t)r + 1) * (j % 977u)) - k; }

static void test_reduce_scatter(MPI_Comm comm, size_t n, int k, int varied)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    int *rcounts = malloc((size_t)P * sizeof(int));
    size_t total = 0, first = 0;
    for (int r = 0; r < P; r++) {
        rcounts[r] = !varied ? (int)n : 1 == r ? 0 : (int)n + r;
        if (r < rank) first += (size_t)rcounts[r];
        total += (size_t)rcounts[r];
    }
    size_t mine = (size_t)rcounts[rank];
    where_t sw = (where_t)((rank + k + 1) % WHERE_N), dw = (where_t)((rank + 2 * k) % WHERE_N);
    int in_place = 2 == (rank + k) % 4;
    int *in = malloc(total * sizeof(int) + 1), *got = malloc(total * sizeof(int) + 1);
    for (size_t j = 0; j < total; j++) in[j] = rs_input(rank, j, k);
    buf_t sb = buf_alloc(sw, total * sizeof(int));
    buf_t rb = buf_alloc(in_place ? sw : dw, (in_place ? total : mine) * sizeof(int));
    if (in_place) buf_put(&rb, in, total * sizeof(int));
    else buf_put(&sb, in, total * sizeof(int));
    const void *s = in_place ? MPI_IN_PLACE : sb.p;
    int rc = varied ? MPI_Reduce_scatter(s, rb.p, rcounts, MPI_INT, MPI_SUM, comm)
                    : MPI_Reduce_scatter_block(s, rb.p, (int)n, MPI_INT, MPI_SUM, comm);
    buf_get(&rb, got, mine * sizeof(int));
    size_t wrong = 0;
    for (size_t i = 0; i < mine; i++) {
        long want = 0;
        for (int r = 0; r < P; r++) want += rs_input(r, first + i, k);
        wrong += got[i] != (int)want;
    }
    mt_check(MPI_SUCCESS == rc && 0 == wrong,
             "%s %zu ints np=%d send=%s recv=%s%s: rc=%d, %zu wrong",
             varied ? "reduce_scatter" : "reduce_scatter_block", mine, P, where_name[sw],
             where_name[in_place ? sw : dw], in_place ? " (in place)" : "", rc, wrong);
    buf_free(&sb);
    buf_free(&rb);
    free(in); free(got); free(rcounts);
}

/* ---- MPI_Alltoall(v), MPI_Allgatherv, MPI_Gather(v), MPI_Scatter(v),
 * MPI_Scan and MPI_Exscan: braid runs them on host copies of device
 * buffers (the whole span of a receive buffer read first where the call
 * reads it or its gaps must keep their values). Int blocks of known
 * values: xv(src, dst, i, k) is element i of what rank src sends to rank
 * dst (dst the root in a gather, src the root in a scatter). Receive
 * buffers are filled with gap_value (and copied to the device) before the
 * call: the gaps between blocks must keep it. The send and receive sides
 * are placed by kinds(), rotated with the rank and k. ---- */
static int xv(int src, int dst, size_t i, int k)
{
    return src * 1000003 + dst * 10007 + (int)(i * 7u) + k;
}
static int gap_value(size_t j) { return -1 - (int)(j % 1000003u); }   /* < 0, xv >= 0 */

/* How a v collective is called, by k % 3: blocking; blocking with the
 * buffer arguments in the middle of their layouts and the displacements
 * counted from there (the lower ones below 0); nonblocking, likewise. */
enum { V_PLAIN, V_BELOW, V_NONBLOCKING_BELOW };
static const char *v_way_name[] = { "", ", displacements below 0",
                                    ", nonblocking, displacements below 0" };

/* displs less shift (a new array) */
static int *lowered(const int *displs, int P, int shift)
{
    int *d = malloc((size_t)P * sizeof(int));
    for (int q = 0; q < P; q++) d[q] = displs[q] - shift;
    return d;
}

/* p moved by shift ints (NULL and MPI_IN_PLACE stay) */
static void *ints_in(void *p, int shift)
{
    return NULL == p || MPI_IN_PLACE == p ? p : (int *)p + shift;
}

static int v_wait(int rc, MPI_Request *req)
{
    return MPI_SUCCESS == rc ? MPI_Wait(req, MPI_STATUS_IGNORE) : rc;
}

static void kinds(int rank, int k, int salt, where_t *sw, where_t *dw)
{
    *sw = (where_t)((rank + k + salt) % WHERE_N);
    *dw = (where_t)((rank + 2 * k + 1 + salt) % WHERE_N);
}

/* elements of got that differ from want: in blocks (want >= 0) and in gaps */
static void count_wrong(const int *got, const int *want, size_t len, size_t *wrong, size_t *gaps)
{
    *wrong = *gaps = 0;
    for (size_t j = 0; j < len; j++)
        if (got[j] != want[j]) ++*(want[j] < 0 ? gaps : wrong);
}

/* MPI_Alltoall of n-int blocks, in place on every rank when k % 4 == 3 */
static void test_alltoall(MPI_Comm comm, size_t n, int k)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    where_t sw, dw;
    kinds(rank, k, 1, &sw, &dw);
    int in_place = 3 == k % 4;
    size_t total = n * (size_t)P, bytes = total * sizeof(int);
    int *h = malloc(bytes + 1), *got = malloc(bytes + 1), *want = malloc(bytes + 1);
    for (int q = 0; q < P; q++)
        for (size_t i = 0; i < n; i++) {
            h[(size_t)q * n + i] = xv(rank, q, i, k);
            want[(size_t)q * n + i] = xv(q, rank, i, k);
        }
    buf_t sb = buf_alloc(sw, bytes), rb = buf_alloc(dw, bytes);
    if (in_place) {
        buf_put(&rb, h, bytes);
    } else {
        buf_put(&sb, h, bytes);
        for (size_t j = 0; j < total; j++) got[j] = gap_value(j);
        buf_put(&rb, got, bytes);
    }
    int rc = MPI_Alltoall(in_place ? MPI_IN_PLACE : sb.p, (int)n, MPI_INT, rb.p, (int)n, MPI_INT,
                          comm);
    buf_get(&rb, got, bytes);
    size_t wrong, gaps;
    count_wrong(got, want, total, &wrong, &gaps);
    mt_check(MPI_SUCCESS == rc && 0 == wrong,
             "alltoall %zu ints np=%d send=%s recv=%s%s: rc=%d, %zu wrong", n, P, where_name[sw],
             where_name[dw], in_place ? " (in place)" : "", rc, wrong);
    buf_free(&sb);
    buf_free(&rb);
    free(h); free(got); free(want);
}

/* MPI_Alltoallv: count(r, q) elements from rank r to rank q, symmetric
 * (in place needs it), none between ranks r and q with r + q == 2; the
 * send blocks in rank order one element apart, the receive blocks in
 * reverse rank order with gaps of 2 (and before the first) that must keep
 * their values. In place on every rank when k % 4 == 3. */
static int a2av_count(int r, int q, size_t n) { return r + q == 2 ? 0 : (int)n + (r * q + r + q) % 4; }

static void test_alltoallv(MPI_Comm comm, size_t n, int k)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    where_t sw, dw;
    kinds(rank, k, 2, &sw, &dw);
    int in_place = 3 == k % 4;
    int *sc = malloc((size_t)P * sizeof(int)), *sd = malloc((size_t)P * sizeof(int));
    int *rcnt = malloc((size_t)P * sizeof(int)), *rd = malloc((size_t)P * sizeof(int));
    size_t slen = 0, rlen = 2;
    for (int q = 0; q < P; q++) {
        sc[q] = a2av_count(rank, q, n);
        sd[q] = (int)slen;
        slen += (size_t)sc[q] + 1;
    }
    for (int q = P - 1; q >= 0; q--) {
        rcnt[q] = a2av_count(q, rank, n);
        rd[q] = (int)rlen;
        rlen += (size_t)rcnt[q] + 2;
    }
    int *h = malloc(slen * sizeof(int) + 1), *img = malloc(rlen * sizeof(int) + 1);
    int *want = malloc(rlen * sizeof(int) + 1), *got = malloc(rlen * sizeof(int) + 1);
    for (size_t j = 0; j < slen; j++) h[j] = -5;
    for (size_t j = 0; j < rlen; j++) img[j] = want[j] = gap_value(j);
    for (int q = 0; q < P; q++) {
        for (int i = 0; i < sc[q]; i++) h[sd[q] + i] = xv(rank, q, (size_t)i, k);
        for (int i = 0; i < rcnt[q]; i++) {
            want[rd[q] + i] = xv(q, rank, (size_t)i, k);
            if (in_place) img[rd[q] + i] = xv(rank, q, (size_t)i, k);
        }
    }
    buf_t sb = buf_alloc(sw, slen * sizeof(int)), rb = buf_alloc(dw, rlen * sizeof(int));
    if (!in_place) buf_put(&sb, h, slen * sizeof(int));
    buf_put(&rb, img, rlen * sizeof(int));
    int way = k % 3, ss = V_PLAIN == way ? 0 : (int)slen / 2, rs = V_PLAIN == way ? 0 : (int)rlen / 2;
    int *sdl = lowered(sd, P, ss), *rdl = lowered(rd, P, rs), rc;
    void *sp = in_place ? MPI_IN_PLACE : ints_in(sb.p, ss);
    MPI_Request req;
    if (V_NONBLOCKING_BELOW == way)
        rc = v_wait(MPI_Ialltoallv(sp, sc, sdl, MPI_INT, ints_in(rb.p, rs), rcnt, rdl, MPI_INT, comm,
                                   &req),
                    &req);
    else
        rc = MPI_Alltoallv(sp, sc, sdl, MPI_INT, ints_in(rb.p, rs), rcnt, rdl, MPI_INT, comm);
    buf_get(&rb, got, rlen * sizeof(int));
    size_t wrong, gaps;
    count_wrong(got, want, rlen, &wrong, &gaps);
    mt_check(MPI_SUCCESS == rc && 0 == wrong && 0 == gaps,
             "alltoallv n=%zu np=%d send=%s recv=%s%s%s: rc=%d, %zu wrong, %zu gap elements changed",
             n, P, where_name[sw], where_name[dw], in_place ? " (in place)" : "", v_way_name[way], rc,
             wrong, gaps);
    buf_free(&sb);
    buf_free(&rb);
    free(sc); free(sd); free(rcnt); free(rd); free(sdl); free(rdl);
    free(h); free(img); free(want); free(got);
}

/* uneven counts with a zero (rank 1) for the v collectives, and their
 * displacements in reverse rank order with gaps of 2 (also before the
 * first block); returns the span */
static int v_count(int r, size_t n) { return 1 == r ? 0 : (int)n + 2 * r; }

static size_t v_layout(int P, size_t n, int *counts, int *displs)
{
    size_t len = 2;
    for (int r = P - 1; r >= 0; r--) {
        counts[r] = v_count(r, n);
        displs[r] = (int)len;
        len += (size_t)counts[r] + 2;
    }
    return len;
}

/* MPI_Allgatherv, in place on every rank when k % 4 == 3 */
static void test_allgatherv(MPI_Comm comm, size_t n, int k)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    where_t sw, dw;
    kinds(rank, k, 3, &sw, &dw);
    int in_place = 3 == k % 4;
    int *counts = malloc((size_t)P * sizeof(int)), *displs = malloc((size_t)P * sizeof(int));
    size_t len = v_layout(P, n, counts, displs), mine = (size_t)counts[rank];
    int *h = malloc(mine * sizeof(int) + 1), *img = malloc(len * sizeof(int) + 1);
    int *want = malloc(len * sizeof(int) + 1), *got = malloc(len * sizeof(int) + 1);
    for (size_t j = 0; j < len; j++) img[j] = want[j] = gap_value(j);
    for (size_t i = 0; i < mine; i++) h[i] = xv(rank, 0, i, k);
    for (int q = 0; q < P; q++)
        for (int i = 0; i < counts[q]; i++) want[displs[q] + i] = xv(q, 0, (size_t)i, k);
    if (in_place) memcpy(img + displs[rank], h, mine * sizeof(int));
    buf_t sb = buf_alloc(sw, mine * sizeof(int)), rb = buf_alloc(dw, len * sizeof(int));
    if (!in_place) buf_put(&sb, h, mine * sizeof(int));
    buf_put(&rb, img, len * sizeof(int));
    int way = k % 3, rs = V_PLAIN == way ? 0 : (int)len / 2, *dl = lowered(displs, P, rs), rc;
    void *sp = in_place ? MPI_IN_PLACE : sb.p;
    MPI_Request req;
    if (V_NONBLOCKING_BELOW == way)
        rc = v_wait(MPI_Iallgatherv(sp, (int)mine, MPI_INT, ints_in(rb.p, rs), counts, dl, MPI_INT,
                                    comm, &req),
                    &req);
    else
        rc = MPI_Allgatherv(sp, (int)mine, MPI_INT, ints_in(rb.p, rs), counts, dl, MPI_INT, comm);
    buf_get(&rb, got, len * sizeof(int));
    size_t wrong, gaps;
    count_wrong(got, want, len, &wrong, &gaps);
    mt_check(MPI_SUCCESS == rc && 0 == wrong && 0 == gaps,
             "allgatherv n=%zu np=%d send=%s recv=%s%s%s: rc=%d, %zu wrong, %zu gap elements changed",
             n, P, where_name[sw], where_name[dw], in_place ? " (in place)" : "", v_way_name[way], rc,
             wrong, gaps);
    buf_free(&sb);
    buf_free(&rb);
    free(counts); free(displs); free(dl);
    free(h); free(img); free(want); free(got);
}

/* MPI_Gather then MPI_Scatter of n-int blocks at root 0 (k even) or P - 1
 * (k odd), in place at the root when (k / 2) % 2: the gather sends from
 * the send kind into the root's P blocks of the receive kind, the scatter
 * sends from those blocks back into the send kind's buffer. */
static void test_gather_scatter(MPI_Comm comm, size_t n, int k)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    where_t sw, dw;
    kinds(rank, k, 0, &sw, &dw);
    int root = k % 2 ? P - 1 : 0, is_root = rank == root;
    int in_place = is_root && 1 == (k / 2) % 2;
    size_t total = n * (size_t)P, bytes = total * sizeof(int);
    int *img = malloc(bytes + 1), *want = malloc(bytes + 1), *got = malloc(bytes + 1);
    int *mine = malloc(n * sizeof(int) + 1);
    buf_t sb = buf_alloc(sw, n * sizeof(int)), rb = buf_alloc(dw, bytes);
    size_t wrong, gaps;

    /* gather */
    for (size_t i = 0; i < n; i++) mine[i] = xv(rank, root, i, k);
    for (size_t j = 0; j < total; j++) img[j] = gap_value(j);
    for (int q = 0; q < P; q++)
        for (size_t i = 0; i < n; i++) want[(size_t)q * n + i] = xv(q, root, i, k);
    if (in_place) memcpy(img + (size_t)root * n, mine, n * sizeof(int));
    else buf_put(&sb, mine, n * sizeof(int));
    if (is_root) buf_put(&rb, img, bytes);
    int rc = MPI_Gather(in_place ? MPI_IN_PLACE : sb.p, (int)n, MPI_INT, is_root ? rb.p : NULL,
                        (int)n, MPI_INT, root, comm);
    if (is_root) {
        buf_get(&rb, got, bytes);
        count_wrong(got, want, total, &wrong, &gaps);
        mt_check(MPI_SUCCESS == rc && 0 == wrong && 0 == gaps,
                 "gather %zu ints np=%d root=%d send=%s recv=%s%s: rc=%d, %zu wrong, %zu unwritten",
                 n, P, root, where_name[sw], where_name[dw], in_place ? " (in place)" : "", rc,
                 wrong, gaps);
    } else {
        mt_check(MPI_SUCCESS == rc, "gather np=%d root=%d send=%s: rc=%d", P, root,
                 where_name[sw], rc);
    }

    /* scatter: the root's blocks from rb; the root's own stays there in place */
    for (int q = 0; q < P; q++)
        for (size_t i = 0; i < n; i++) img[(size_t)q * n + i] = xv(root, q, i, k);
    for (size_t i = 0; i < n; i++) mine[i] = gap_value(i);
    if (is_root) buf_put(&rb, img, bytes);
    if (!in_place) buf_put(&sb, mine, n * sizeof(int));
    rc = MPI_Scatter(is_root ? rb.p : NULL, (int)n, MPI_INT, in_place ? MPI_IN_PLACE : sb.p,
                     (int)n, MPI_INT, root, comm);
    if (in_place) {
        buf_get(&rb, got, bytes);
        count_wrong(got, img, total, &wrong, &gaps);
    } else {
        for (size_t i = 0; i < n; i++) want[i] = xv(root, rank, i, k);
        buf_get(&sb, got, n * sizeof(int));
        count_wrong(got, want, n, &wrong, &gaps);
    }
    mt_check(MPI_SUCCESS == rc && 0 == wrong,
             "scatter %zu ints np=%d root=%d send=%s recv=%s%s: rc=%d, %zu wrong", n, P, root,
             where_name[dw], where_name[sw], in_place ? " (in place)" : "", rc, wrong);
    buf_free(&sb);
    buf_free(&rb);
    free(img); free(want); free(got); free(mine);
}

/* MPI_Gatherv then MPI_Scatterv, v_count elements per rank (none on rank
 * 1), the root's blocks laid out by v_layout (its gaps must keep their
 * values); root 0 (k even) or P - 1 (k odd), in place at the root when
 * k % 4 is 1 or 2. Each rank's own buffer has 2 elements more, which
 * the scatterv must not write. */
static void test_gatherv_scatterv(MPI_Comm comm, size_t n, int k)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    where_t sw, dw;
    kinds(rank, k, 2, &sw, &dw);
    int root = k % 2 ? P - 1 : 0, is_root = rank == root;
    int in_place = is_root && 1 == ((k + 1) / 2) % 2;
    int *counts = malloc((size_t)P * sizeof(int)), *displs = malloc((size_t)P * sizeof(int));
    size_t len = v_layout(P, n, counts, displs), mine = (size_t)counts[rank], olen = mine + 2;
    int *img = malloc(len * sizeof(int) + 1), *want = malloc(len * sizeof(int) + 1);
    int *got = malloc(len * sizeof(int) + 1), *own = malloc(olen * sizeof(int) + 1);
    buf_t sb = buf_alloc(sw, olen * sizeof(int)), rb = buf_alloc(dw, len * sizeof(int));
    size_t wrong, gaps;

    /* gatherv */
    for (size_t i = 0; i < olen; i++) own[i] = i < mine ? xv(rank, root, i, k) : -5;
    for (size_t j = 0; j < len; j++) img[j] = want[j] = gap_value(j);
    for (int q = 0; q < P; q++)
        for (int i = 0; i < counts[q]; i++) want[displs[q] + i] = xv(q, root, (size_t)i, k);
    if (in_place) memcpy(img + displs[root], own, mine * sizeof(int));
    else buf_put(&sb, own, olen * sizeof(int));
    if (is_root) buf_put(&rb, img, len * sizeof(int));
    int way = k % 3, rs = V_PLAIN == way ? 0 : (int)len / 2, *dl = lowered(displs, P, rs), rc;
    void *rp = is_root ? ints_in(rb.p, rs) : NULL;
    MPI_Request req;
    if (V_NONBLOCKING_BELOW == way)
        rc = v_wait(MPI_Igatherv(in_place ? MPI_IN_PLACE : sb.p, (int)mine, MPI_INT, rp, counts, dl,
                                 MPI_INT, root, comm, &req),
                    &req);
    else
        rc = MPI_Gatherv(in_place ? MPI_IN_PLACE : sb.p, (int)mine, MPI_INT, rp, counts, dl, MPI_INT, root,
                         comm);
    if (is_root) {
        buf_get(&rb, got, len * sizeof(int));
        count_wrong(got, want, len, &wrong, &gaps);
        mt_check(MPI_SUCCESS == rc && 0 == wrong && 0 == gaps,
                 "gatherv n=%zu np=%d root=%d send=%s recv=%s%s%s: rc=%d, %zu wrong, "
                 "%zu gap elements changed", n, P, root, where_name[sw], where_name[dw],
                 in_place ? " (in place)" : "", v_way_name[way], rc, wrong, gaps);
    } else {
        mt_check(MPI_SUCCESS == rc, "gatherv np=%d root=%d send=%s: rc=%d", P, root,
                 where_name[sw], rc);
    }

    /* scatterv from the root's blocks in rb (gaps: gap_value) */
    for (size_t j = 0; j < len; j++) img[j] = gap_value(j);
    for (int q = 0; q < P; q++)
        for (int i = 0; i < counts[q]; i++) img[displs[q] + i] = xv(root, q, (size_t)i, k);
    for (size_t i = 0; i < olen; i++) {
        own[i] = gap_value(i);
        want[i] = i < mine ? xv(root, rank, i, k) : gap_value(i);
    }
    if (is_root) buf_put(&rb, img, len * sizeof(int));
    if (!in_place) buf_put(&sb, own, olen * sizeof(int));
    if (V_NONBLOCKING_BELOW == way)
        rc = v_wait(MPI_Iscatterv(rp, counts, dl, MPI_INT, in_place ? MPI_IN_PLACE : sb.p, (int)mine, MPI_INT,
                                  root, comm, &req), &req);
    else
        rc = MPI_Scatterv(rp, counts, dl, MPI_INT, in_place ? MPI_IN_PLACE : sb.p, (int)mine, MPI_INT, root,
                          comm);
    if (in_place) {
        buf_get(&rb, got, len * sizeof(int));
        count_wrong(got, img, len, &wrong, &gaps);
    } else {
        buf_get(&sb, got, olen * sizeof(int));
        count_wrong(got, want, olen, &wrong, &gaps);
    }
    mt_check(MPI_SUCCESS == rc && 0 == wrong && 0 == gaps,
             "scatterv %zu ints np=%d root=%d send=%s recv=%s%s%s: rc=%d, %zu wrong, "
             "%zu beyond the block changed", mine, P, root, where_name[dw], where_name[sw],
             in_place ? " (in place)" : "", v_way_name[way], rc, wrong, gaps);
    buf_free(&sb);
    buf_free(&rb);
    free(counts); free(displs); free(dl);
    free(img); free(want); free(got); free(own);
}

/* MPI_Scan then MPI_Exscan, int sums, in place on some ranks (k decides);
 * exscan's result on rank 0 is undefined and not checked */
static int scan_input(int r, size_t i, int k) { return (int)(((size_t)r + 1) * (i % 1013u)) - 3 * r - k; }

static void test_scan_exscan(MPI_Comm comm, size_t n, int k)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    where_t sw, dw;
    kinds(rank, k, 1, &sw, &dw);
    int in_place = 3 == (rank + k) % 4;
    size_t bytes = n * sizeof(int);
    int *in = malloc(bytes + 1), *got = malloc(bytes + 1), *fill = malloc(bytes + 1);
    for (size_t i = 0; i < n; i++) {
        in[i] = scan_input(rank, i, k);
        fill[i] = gap_value(i);
    }
    buf_t sb = buf_alloc(sw, bytes), rb = buf_alloc(dw, bytes);
    for (int ex = 0; ex < 2; ex++) {
        if (in_place) {
            buf_put(&rb, in, bytes);
        } else {
            buf_put(&sb, in, bytes);
            buf_put(&rb, fill, bytes);
        }
        const void *s = in_place ? MPI_IN_PLACE : sb.p;
        int rc = ex ? MPI_Exscan(s, rb.p, (int)n, MPI_INT, MPI_SUM, comm)
                    : MPI_Scan(s, rb.p, (int)n, MPI_INT, MPI_SUM, comm);
        buf_get(&rb, got, bytes);
        size_t wrong = 0;
        int upto = ex ? rank - 1 : rank;
        for (size_t i = 0; i < n && upto >= 0; i++) {
            int want = 0;
            for (int q = 0; q <= upto; q++) want += scan_input(q, i, k);
            wrong += got[i] != want;
        }
        mt_check(MPI_SUCCESS == rc && 0 == wrong,
                 "%s %zu ints np=%d rank=%d send=%s recv=%s%s: rc=%d, %zu wrong",
                 ex ? "exscan" : "scan", n, P, rank, where_name[sw], where_name[dw],
                 in_place ? " (in place)" : "", rc, wrong);
    }
    buf_free(&sb);
    buf_free(&rb);
    free(in); free(got); free(fill);
}

/* Every placement of send and receive buffers (host, device, managed, in
 * place), reductions below, at and across the staging segments, on a
 * communicator of one rank. */
static void test_single_rank(MPI_Comm comm)
{
    /* (1 << 18) + 5 eight-byte elements: more than one 2 MiB segment */
    static const size_t counts[] = { 1, 1000, (1u << 18) + 5 };
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
        for (int k = 0; k < 6; k++) test_allreduce_reduce(comm, counts[c], (tcase_t)((c + (size_t)k) % T_N), k);
    for (int k = 0; k < 3; k++) test_bcast(comm, 4099, k);
    for (int k = 0; k < 4; k++) {
        test_allgather(comm, 1000, k);
        test_reduce_scatter(comm, 1000, k, k & 1);
        test_alltoall(comm, 1000, k);
        test_alltoallv(comm, 1000, k);
        test_allgatherv(comm, 1000, k);
        test_gather_scatter(comm, 1000, k);
        test_gatherv_scatterv(comm, 1000, k);
        test_scan_exscan(comm, 1000, k);
    }
    test_pair_maxloc(comm);
    test_noncommutative(comm);
}

/* ---- benchmark ---- */

static double now(void) { return MPI_Wtime(); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of_slowest(double *t, int reps)
{
    double slowest[32];   /* the slowest rank's time per rep */
    MPI_Reduce(t, slowest, reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    qsort(slowest, (size_t)reps, sizeof(double), cmp_double);
    return slowest[reps / 2];
}

/* Parses "8", "64K", "1M", "64M" (bytes, binary suffixes); 0 on a bad size. */
static size_t parse_size(const char *a)
{
    char *end;
    unsigned long long v = strtoull(a, &end, 10);
    if ('K' == *end || 'k' == *end) v <<= 10, end++;
    else if ('M' == *end || 'm' == *end) v <<= 20, end++;
    else if ('G' == *end || 'g' == *end) v <<= 30, end++;
    return *end ? 0 : (size_t)v;
}

/* Three in-place float sums of the same size, interleaved in every rep:
 * the device buffer through braid, a host buffer through braid, and the
 * baseline an application without a CUDA-aware MPI writes (the device
 * buffer copied to the host, summed there, copied back). Columns: time of
 * each (median over reps of the slowest rank), device / host and
 * baseline / device. */
static void bench(int nsizes, char **sizes)
{
    static const char *dflt[] = { "8", "64K", "1M", "16M", "64M", "256M" };
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (0 == nsizes) nsizes = (int)(sizeof dflt / sizeof *dflt), sizes = (char **)dflt;
    if (0 == rank)
        printf("# np=%d  float SUM in place, median of reps of the slowest rank\n"
               "# %10s %12s %12s %12s %14s %16s\n", P, "bytes", "device us", "host us",
               "baseline us", "device/host t", "baseline/device t");
    for (int s = 0; s < nsizes; s++) {
        size_t bytes = parse_size(sizes[s]), n = bytes / sizeof(float);
        if (n == 0) {
            if (0 == rank) printf("# bad size %s (at least 4 bytes: 8, 64K, 1M)\n", sizes[s]);
            continue;
        }
        bytes = n * sizeof(float);
        int reps = bytes <= (1u << 20) ? 31 : bytes <= (64u << 20) ? 11 : 5;
        float *h = malloc(bytes), *hb = malloc(bytes);
        for (size_t i = 0; i < n; i++) h[i] = hb[i] = (float)(i % 7);
        buf_t d = buf_alloc(WHERE_DEVICE, bytes);
        buf_put(&d, h, bytes);
        double td[32], th[32], tb[32];
        for (int it = 0; it < reps + 2; it++) {
            /* device buffer through braid */
            cu.CtxSynchronize();
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now();
            MPI_Allreduce(MPI_IN_PLACE, d.p, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            cu.CtxSynchronize();
            double t1 = now();
            /* host buffer through braid */
            MPI_Barrier(MPI_COMM_WORLD);
            double t2 = now();
            MPI_Allreduce(MPI_IN_PLACE, hb, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t3 = now();
            /* baseline: whole buffer to host, host allreduce, back */
            MPI_Barrier(MPI_COMM_WORLD);
            double t4 = now();
            cu.MemcpyDtoH(h, (cu_ptr_t)(uintptr_t)d.p, bytes);
            MPI_Allreduce(MPI_IN_PLACE, h, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            cu.MemcpyHtoD((cu_ptr_t)(uintptr_t)d.p, h, bytes);
            cu.CtxSynchronize();
            double t5 = now();
            if (it >= 2) { td[it - 2] = t1 - t0; th[it - 2] = t3 - t2; tb[it - 2] = t5 - t4; }
        }
        double md = median_of_slowest(td, reps), mh = median_of_slowest(th, reps),
               mb = median_of_slowest(tb, reps);
        if (0 == rank) {
            printf("  %10zu %12.1f %12.1f %12.1f %14.2f %16.2f\n", bytes, md * 1e6, mh * 1e6,
                   mb * 1e6, md / mh, mb / md);
            fflush(stdout);
        }
        buf_free(&d);
        free(h); free(hb);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int ndev = cuda_setup(rank), min_dev = ndev;
    MPI_Allreduce(&ndev, &min_dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (min_dev <= 0) {
        if (0 == rank) printf("SKIP: no CUDA device (libcuda.so.1 missing, cuInit failing or no GPU)\n");
        MPI_Finalize();
        return 0;
    }
    if (argc > 1 && 0 == strcmp(argv[1], "bench")) {
        bench(argc - 2, argv + 2);
        MPI_Finalize();
        return 0;
    }
    /* the largest count fills braid's three staging slots of the default
     * 2 MiB segment more than once for the 4- and 8-byte types */
    static const size_t counts[] = { 1, 3, 1000, 65536 + 7, (1u << 20) + 5, (2u << 20) + 3 };
    int k = 0;
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
        for (int t = 0; t < T_N; t++, k++) test_allreduce_reduce(MPI_COMM_WORLD, counts[c], (tcase_t)t, k);
    static const size_t bsizes[] = { 1, 4099, (3u << 20) + 11, 9u << 20 };
    for (size_t i = 0; i < sizeof bsizes / sizeof *bsizes; i++)
        for (int j = 0; j < 3; j++) test_bcast(MPI_COMM_WORLD, bsizes[i], (int)(i * 3) + j);
    static const size_t gsizes[] = { 1, 1000, (1u << 18) + 3 };
    for (size_t i = 0; i < sizeof gsizes / sizeof *gsizes; i++)
        for (int j = 0; j < 4; j++) {
            test_allgather(MPI_COMM_WORLD, gsizes[i], (int)(i * 4) + j);
            test_reduce_scatter(MPI_COMM_WORLD, gsizes[i], (int)(i * 4) + j, j & 1);
            test_alltoall(MPI_COMM_WORLD, gsizes[i], (int)(i * 4) + j);
            test_alltoallv(MPI_COMM_WORLD, gsizes[i], (int)(i * 4) + j);
            test_allgatherv(MPI_COMM_WORLD, gsizes[i], (int)(i * 4) + j);
            test_gather_scatter(MPI_COMM_WORLD, gsizes[i], (int)(i * 4) + j);
            test_gatherv_scatterv(MPI_COMM_WORLD, gsizes[i], (int)(i * 4) + j);
            test_scan_exscan(MPI_COMM_WORLD, gsizes[i], (int)(i * 4) + j);
        }
    static const size_t rsizes[] = { 3, 1000, 65536 + 7 };
    for (size_t i = 0; i < sizeof rsizes / sizeof *rsizes; i++)
        for (int t = 0; t < T_N; t++, k++) test_requests(MPI_COMM_WORLD, rsizes[i], (tcase_t)t, k);
    test_bcast_vector(MPI_COMM_WORLD);
    test_pair_maxloc(MPI_COMM_WORLD);
    test_noncommutative(MPI_COMM_WORLD);
    test_local_post(MPI_COMM_WORLD);
    MPI_Comm rev = mt_reversed_comm(MPI_COMM_WORLD);
    test_allreduce_reduce(rev, (1u << 20) + 5, T_DOUBLE_SUM, 1);
    MPI_Comm_free(&rev);
    test_single_rank(MPI_COMM_SELF);
    MPI_Comm alone;
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &alone);
    test_single_rank(alone);
    MPI_Comm_free(&alone);
    return mt_finish("mpi_cuda");
}
