/*
 * braid_shm.c - segment layout and the waits of the shared-memory flag
 * protocol (braid_shm.h says what the flags mean and why the cells rotate).
 */
#include "braid_shm.h"
#include "braid_fiber.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid_algo.h"

typedef struct shm_header {
    uint64_t magic;
    uint64_t size, ncells, slot_bytes;
} shm_header_t;

/* one rank's control line, written by that rank only */
typedef struct shm_ctrl {
    _Atomic uint64_t done;
    _Atomic uint64_t words[BRAID_SHM_WORDS];
    _Atomic uint64_t round;   /* braid_shm_swap: round_mark() of the last round taken */
} shm_ctrl_t;

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* a slot's capacity as stored: whole 16-byte units */
static size_t slot_capacity(size_t slot_bytes) { return round_up(slot_bytes, 16); }

/* distance between slots: the stamp, the data, whole lines */
static size_t slot_stride(size_t capacity) { return round_up(BRAID_SHM_STAMP + capacity, BRAID_SHM_LINE); }

size_t braid_shm_segment_bytes(int P, int ncells, size_t slot_bytes)
{
    return BRAID_SHM_LINE + (size_t)P * BRAID_SHM_LINE +
           (size_t)ncells * (size_t)P * slot_stride(slot_capacity(slot_bytes));
}

void braid_shm_format(void *base, int P, int ncells, size_t slot_bytes)
{
    shm_header_t *h = base;
    h->size = (uint64_t)P;
    h->ncells = (uint64_t)ncells;
    h->slot_bytes = slot_capacity(slot_bytes);
    /* the magic last: a rank that sees it sees the rest */
    atomic_thread_fence(memory_order_release);
    h->magic = BRAID_SHM_MAGIC;
}

int braid_shm_attach(braid_shm_t *s, void *base, int rank, int size, bool yield)
{
    const shm_header_t *h = base;
    memset(s, 0, sizeof *s);
    if (NULL == base || BRAID_SHM_MAGIC != h->magic || (uint64_t)size != h->size ||
        size < 1 || size > BRAID_SHM_MAX_P || rank < 0 || rank >= size || h->ncells < 2 ||
        0 == h->slot_bytes)
        return BRAID_ERR_ARG;
    s->base = base;
    s->rank = rank;
    s->size = size;
    s->ncells = (int)h->ncells;
    s->slot_bytes = (size_t)h->slot_bytes;
    s->stride = slot_stride(s->slot_bytes);
    s->cells = s->base + BRAID_SHM_LINE + (size_t)size * BRAID_SHM_LINE + BRAID_SHM_STAMP;
    s->cell_bytes = (size_t)size * s->stride;
    s->cell_mask = 0 == (h->ncells & (h->ncells - 1)) ? h->ncells - 1 : 0;
    s->yield = yield;
    s->direct_above = SIZE_MAX;
    s->split_from = BRAID_SHM_SPLIT_FROM;
    return BRAID_OK;
}

static inline shm_ctrl_t *ctrl(const braid_shm_t *s, int r)
{
    return (shm_ctrl_t *)(s->base + BRAID_SHM_LINE + (size_t)r * BRAID_SHM_LINE);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* One turn of a wait loop: the idle hook every 256 turns; on an
 * oversubscribed node the core is given up (sched_yield) after a short
 * spin, because a spinning rank there keeps the rank it waits for off the
 * core for a whole time slice (4 ms at 250 Hz). Otherwise it spins, as
 * Open MPI's and UCX's progress loops do: yielding to another job's
 * process would hand it the core for a time slice at every wait. */
#define SHM_SPIN_OVERSUBSCRIBED 16u

/* the reader and writer of a segment whose communicator failed */
static int failed_read(void *arg, int r, void *dst, uint64_t src, size_t bytes)
{
    (void)arg, (void)r, (void)dst, (void)src, (void)bytes;
    return BRAID_ERR_PROC_FAILED;
}

static int failed_write(void *arg, int r, uint64_t dst, const void *src, size_t bytes)
{
    (void)arg, (void)r, (void)dst, (void)src, (void)bytes;
    return BRAID_ERR_PROC_FAILED;
}

/* s's communicator failed (s->fault): single copy off, so the call that
 * runs on to its end reads and writes no peer's memory */
static bool give_up(braid_shm_t *s)
{
    if (NULL != s->read) s->read = failed_read;
    if (NULL != s->write) s->write = failed_write;
    return true;
}

/* true: stop waiting, the communicator failed (s->fault). Asked at once
 * once it has failed; else with the idle hook, every 256 turns */
static bool wait_turn(braid_shm_t *s, unsigned *turn)
{
    unsigned t = ++*turn;
    s->waits++;
    if (NULL != s->fault && BRAID_OK != braid_fault_poll(s->fault, 0 == (t & 255)))
        return give_up(s);
    /* a nonblocking collective (braid_fiber.h): its resumer polls. Asked
     * every 8th turn, so a blocking call's first turns stay a plain spin */
    braid_fiber_t *f;
    if (0 == (t & 7) && NULL != (f = braid_fiber_self())) {
        if (braid_fiber_yield_due(f, t, s->yield)) {
            braid_fiber_yield();
            return false;
        }
    }
    if (0 == (t & 255) && s->idle) s->idle(s->idle_arg);
    if (s->yield && t > SHM_SPIN_OVERSUBSCRIBED) {
        sched_yield();
        return false;
    }
    cpu_relax();
    return false;
}

/* the stamp of rank r's slot of call seq's cell: the last call whose
 * contribution the slot holds */
static inline _Atomic uint64_t *stamp(const braid_shm_t *s, uint64_t seq, int r)
{
    return (_Atomic uint64_t *)(void *)(braid_shm_slot(s, seq, r) - BRAID_SHM_STAMP);
}

void braid_shm_arrive(braid_shm_t *s, uint64_t seq)
{
    atomic_store_explicit(stamp(s, seq, s->rank), seq, memory_order_release);
}

void braid_shm_done(braid_shm_t *s, uint64_t seq)
{
    atomic_store_explicit(&ctrl(s, s->rank)->done, seq, memory_order_release);
}

void braid_shm_set_word(braid_shm_t *s, int i, uint64_t v)
{
    atomic_store_explicit(&ctrl(s, s->rank)->words[i], v, memory_order_release);
}

uint64_t braid_shm_word(const braid_shm_t *s, int r, int i)
{
    return atomic_load_explicit(&ctrl(s, r)->words[i], memory_order_acquire);
}

void braid_shm_wait_done(braid_shm_t *s, uint64_t seq, int r)
{
    _Atomic uint64_t *f = &ctrl(s, r)->done;
    unsigned turn = 0;
    while (atomic_load_explicit(f, memory_order_acquire) < seq && !wait_turn(s, &turn)) {}
}

void braid_shm_wait_all_done(braid_shm_t *s, uint64_t seq)
{
    for (int r = 0; r < s->size; r++)
        if (r != s->rank) braid_shm_wait_done(s, seq, r);
    /* this rank is done too (its caller said so first) */
    if (seq > s->safe) s->safe = seq;
}

/* Round k of call seq as one number that grows from call to call and
 * round to round (k < P <= BRAID_SHM_MAX_P). */
static uint64_t round_mark(uint64_t seq, int k) { return seq * 2 * BRAID_SHM_MAX_P + (uint64_t)k + 1; }

int braid_shm_swap(braid_shm_t *s, uint64_t seq, const braid_shm_swap_t *w, char *tmp)
{
    int P = s->size, me = s->rank, rc = BRAID_OK;
    for (int k = 0; k < P; k++) {
        int q = k >= me ? k - me : k - me + P;   /* (k - me) mod P, no division */
        size_t n = 0;
        char *dst = q == me ? NULL : w->dst(w->arg, q, &n);
        char *into = w->live ? tmp : dst;
        if (n && BRAID_OK == rc) rc = NULL == into ? BRAID_ERR_NOMEM : w->take(w->arg, q, into, n);
        atomic_store_explicit(&ctrl(s, me)->round, round_mark(seq, k), memory_order_release);
        if (!w->live || 0 == n) continue;
        _Atomic uint64_t *f = &ctrl(s, q)->round;
        unsigned turn = 0;
        while (atomic_load_explicit(f, memory_order_acquire) < round_mark(seq, k) &&
               !wait_turn(s, &turn)) {}
        if (BRAID_OK == rc) braid_copy(dst, tmp, n);
    }
    return rc;
}

void braid_shm_wait_one(braid_shm_t *s, uint64_t seq, int r)
{
    _Atomic uint64_t *f = stamp(s, seq, r);
    unsigned turn = 0;
    while (atomic_load_explicit(f, memory_order_acquire) < seq && !wait_turn(s, &turn)) {}
}

void braid_shm_wait_all(braid_shm_t *s, uint64_t seq)
{
    for (int r = 0; r < s->size; r++)
        if (r != s->rank) braid_shm_wait_one(s, seq, r);
    /* every rank arrived at seq, so each had finished seq - 1 */
    if (seq - 1 > s->safe) s->safe = seq - 1;
}

void braid_shm_claim(braid_shm_t *s, uint64_t seq)
{
    if (seq <= (uint64_t)s->ncells) return;   /* the cell was never used */
    uint64_t need = seq - (uint64_t)s->ncells;
    if (s->safe >= need) return;
    uint64_t lowest = UINT64_MAX;
    for (int r = 0; r < s->size; r++) {
        _Atomic uint64_t *f = &ctrl(s, r)->done;
        uint64_t d;
        unsigned turn = 0;
        while ((d = atomic_load_explicit(f, memory_order_acquire)) < need && !wait_turn(s, &turn)) {
        }
        if (d < lowest) lowest = d;
    }
    s->safe = lowest;
}

void braid_shm_publish(braid_shm_t *s, uint64_t seq, const void *in, size_t bytes)
{
    braid_shm_claim(s, seq);
    braid_copy(braid_shm_slot(s, seq, s->rank), in, bytes);
    braid_shm_arrive(s, seq);
}

void braid_shm_publish_addr(braid_shm_t *s, uint64_t seq, const void *p)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    braid_shm_publish(s, seq, &a, sizeof a);
}

const void *braid_shm_expose(const braid_shm_t *s, const void *p, size_t bytes,
                             braid_scratch_t *scratch)
{
    if (NULL == s->unreadable || !s->unreadable(s->unreadable_arg, p, bytes)) return p;
    void *copy = braid_scratch_get(scratch, BRAID_SHM_SCRATCH, bytes);
    if (NULL != copy) braid_copy(copy, p, bytes);
    return copy;
}

uint64_t braid_shm_addr(const braid_shm_t *s, uint64_t seq, int r)
{
    uint64_t a;
    memcpy(&a, braid_shm_slot(s, seq, r), sizeof a);
    return a;
}

bool braid_shm_writable(const braid_shm_t *s, const void *p, size_t bytes)
{
    return NULL != s->write && (NULL == s->unreadable || !s->unreadable(s->unreadable_arg, p, bytes));
}

static _Atomic int *status_word(const braid_shm_t *s, uint64_t seq, int r)
{
    return (_Atomic int *)(void *)(braid_shm_slot(s, seq, r) + sizeof(uint64_t));
}

void braid_shm_set_status(braid_shm_t *s, uint64_t seq, int rc)
{
    /* relaxed: braid_shm_done's release publishes it */
    atomic_store_explicit(status_word(s, seq, s->rank), rc, memory_order_relaxed);
}

int braid_shm_status(const braid_shm_t *s, uint64_t seq, int r)
{
    return atomic_load_explicit(status_word(s, seq, r), memory_order_relaxed);
}

size_t braid_shm_pair_split(size_t bytes, unsigned num, unsigned den)
{
    size_t grain = bytes >= 8192 ? 4096 : 64;
    size_t m = bytes / den * num + bytes % den * num / den;
    return m / grain * grain;
}

int braid_shm_pair_write(braid_shm_t *s, uint64_t seq, int dst, uint64_t at, const void *src,
                         size_t m, size_t bytes, int rc)
{
    if (0 != at && BRAID_OK == rc && m < bytes)
        rc = s->write(s->read_arg, dst, at + m, (const unsigned char *)src + m, bytes - m);
    braid_shm_set_status(s, seq, rc);
    return rc;
}

int braid_shm_pair_read(braid_shm_t *s, uint64_t seq, int src, uint64_t at, void *dst, size_t m,
                        size_t bytes, bool offered)
{
    size_t n = offered ? m : bytes;
    int rc = 0 == n ? BRAID_OK : s->read(s->read_arg, src, dst, at, n);
    if (offered && m < bytes) {
        /* the status word before this rank is done: until then the source
         * cannot take the cell for a later call */
        braid_shm_wait_done(s, seq, src);
        if (BRAID_OK == rc && BRAID_OK != braid_shm_status(s, seq, src)) rc = BRAID_ERR_TRANSPORT;
    }
    return rc;
}

int braid_shm_give(braid_shm_t *s, uint64_t seq, const void *src, size_t m, size_t bytes, int rc)
{
    if (!braid_shm_pairs(s)) return rc;
    int other = 1 - s->rank;
    braid_shm_wait_one(s, seq, other);
    return braid_shm_pair_write(s, seq, other, braid_shm_addr(s, seq, other), src, m, bytes, rc);
}

int braid_shm_take(braid_shm_t *s, uint64_t seq, int root, uint64_t at, void *dst, size_t m, size_t bytes)
{
    bool pair = braid_shm_pairs(s), give = pair && braid_shm_writable(s, dst, bytes);
    if (pair) braid_shm_publish_addr(s, seq, give ? dst : NULL);
    return braid_shm_pair_read(s, seq, root, at, dst, m, bytes, give);
}

int braid_shm_take_call(braid_shm_t *s, int root, uint64_t off, void *dst, size_t m, size_t bytes)
{
    uint64_t seq = braid_shm_begin(s);
    braid_shm_wait_one(s, seq, root);
    uint64_t base = braid_shm_addr(s, seq, root);
    int rc = braid_shm_take(s, seq, root, base ? base + off : 0, dst, m, bytes);
    braid_shm_done(s, seq);
    return rc;
}

braid_shm_t *braid_shm_direct(const braid_comm_t *c, size_t bytes)
{
    braid_shm_t *s = c->shm;
    return NULL != s && NULL != s->read && (bytes > s->direct_above || bytes > s->slot_bytes)
               ? s : NULL;
}

int braid_shm_span(const braid_shm_t *s, int n, size_t bytes, size_t *piece)
{
    *piece = bytes;
    /* bytes <= slot_bytes / n, without the division (bytes <= slot_bytes
     * first: the product cannot overflow) */
    if (n < 1 || (bytes <= s->slot_bytes && bytes * (size_t)n <= s->slot_bytes)) return 1;
    size_t most = s->slot_bytes / (size_t)n;   /* a part's bytes in one slot */
    if (0 == most) return 0;
    size_t k = bytes / most + (0 != bytes % most);
    if (k > (size_t)s->ncells) return 0;
    /* even pieces: ceil(bytes / k) <= most */
    *piece = bytes / k + (0 != bytes % k);
    return (int)k;
}

braid_shm_t *braid_shm_spanned(const braid_comm_t *c, int n, size_t bytes)
{
    size_t piece;
    braid_shm_t *s = c->shm;
    return NULL != s && 0 != braid_shm_span(s, n, bytes, &piece) ? s : NULL;
}

int braid_shm_rooted_span(const braid_shm_t *s, int P, size_t bytes, bool own_slots, size_t *piece)
{
    if (own_slots && bytes <= s->slot_bytes) {
        *piece = bytes;
        return 1;
    }
    return braid_shm_span(s, P - 1, bytes, piece);
}

void braid_shm_read_span(braid_shm_t *s, uint64_t first, int k, size_t bytes, size_t piece, int me,
                         braid_shm_take_piece_fn take, void *arg)
{
    int P = s->size;
    for (int j = 0; j < k; j++) {
        uint64_t seq = first + (uint64_t)j;
        size_t off, n = braid_shm_piece(bytes, piece, j, &off);
        if (0 == j) braid_shm_wait_all(s, seq);
        for (int i = 1; i < P; i++) {
            int q = braid_ring_after(me, i, P);
            if (0 != j) braid_shm_wait_one(s, seq, q);
            take(arg, q, braid_shm_slot(s, seq, q), off, n);
        }
    }
}

braid_shm_t *braid_shm_of(const braid_comm_t *c, size_t bytes)
{
    braid_shm_t *s = c->shm;
    return NULL != s && bytes <= s->slot_bytes ? s : NULL;
}

/* Where the fold reads rank r's operand */
static const unsigned char *operand(const braid_shm_t *s, uint64_t seq, int r, size_t off,
                                    const unsigned char *own)
{
    return r == s->rank && NULL != own ? own : braid_shm_slot(s, seq, r) + off;
}

void braid_shm_fold_prefix(const braid_shm_t *s, uint64_t seq, size_t off, size_t count,
                           size_t esize, const braid_op_t *op, int n, const void *own, void *out)
{
    size_t len = count * esize;
    const unsigned char *mine = NULL != own ? (const unsigned char *)own + off : NULL;
    const unsigned char *o = out;
    /* out is written first with rank n - 1's operand: own is safe there
     * only where it is out itself and this rank is n - 1, or apart */
    if (NULL != mine && mine < o + len && o < mine + len && (mine != o || s->rank != n - 1))
        mine = NULL;
    /* right to left: fn(in, inout) computes inout = in op inout with `in`
     * the lower-ranked operand, so the accumulator stays in out */
    const unsigned char *last = operand(s, seq, n - 1, off, mine);
    if (last != o) braid_copy(out, last, len);
    for (int r = n - 2; r >= 0; r--) op->fn(operand(s, seq, r, off, mine), out, count, op->arg);
}

void braid_shm_fold(const braid_shm_t *s, uint64_t seq, size_t off, size_t count, size_t esize,
                    const braid_op_t *op, const void *own, void *out)
{
    braid_shm_fold_prefix(s, seq, off, count, esize, op, s->size, own, out);
}

/* ------------------------------------------------------------------ */
/* how far apart two ranks' cores are                                  */
/* ------------------------------------------------------------------ */

#define PROBE_ROUNDS_MAX 256

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One round: rank 0 arrives, rank 1 answers once it sees it; the stamp's
 * line crosses twice, as a two-rank call's data do (v: rank 0's word for
 * rank 1, in the slot's data). */
static uint64_t probe_round(braid_shm_t *s, uint64_t v)
{
    uint64_t seq = braid_shm_begin(s);
    if (0 == s->rank) {
        braid_shm_claim(s, seq);
        memcpy(braid_shm_slot(s, seq, 0), &v, sizeof(v));
        braid_shm_arrive(s, seq);
        braid_shm_wait_one(s, seq, 1);
    } else {
        braid_shm_wait_one(s, seq, 0);
        memcpy(&v, braid_shm_slot(s, seq, 0), sizeof(v));
        braid_shm_claim(s, seq);
        braid_shm_arrive(s, seq);
    }
    braid_shm_done(s, seq);
    return v;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* rank 0's word in a round: more rounds follow (even), or the last round's
 * result: ns << 2 | far << 1 | 1 */
#define PROBE_MORE 0u

/* Rank 0: untimed rounds (every cell's pages touched), then timed ones.
 * A round longer than slice_ns is not timed: one such round is a rank
 * the scheduler or the hypervisor stopped for a moment (2-3 set-ups of 8
 * on a 2-vCPU VM, bound to cores), PROBE_SLICES of them end the
 * probe (the ranks take turns on a core: what it measures is the
 * scheduler) */
#define PROBE_SLICES 3
static uint64_t probe_lead(braid_shm_t *s, int rounds, uint64_t far_ns, uint64_t slice_ns)
{
    uint64_t t[PROBE_ROUNDS_MAX] = { 0 }, sliced = 0;
    int warm = 2 * s->ncells, n = 0, slices = 0;
    int want = rounds < 1 ? 1 : rounds > PROBE_ROUNDS_MAX ? PROBE_ROUNDS_MAX : rounds;
    for (int i = 0; n < want && slices < PROBE_SLICES; i++) {
        uint64_t t0 = now_ns();
        (void)probe_round(s, PROBE_MORE);
        uint64_t dt = now_ns() - t0;
        if (dt > slice_ns) {
            sliced = dt;
            slices++;
        } else if (i >= warm) {
            t[n++] = dt;
        }
    }
    bool cut = slices >= PROBE_SLICES;
    uint64_t ns = sliced;
    if (!cut) {
        /* the median */
        qsort(t, (size_t)n, sizeof(t[0]), cmp_u64);
        ns = t[n / 2];
    }
    /* a rank that yields the core (an oversubscribed node) timed the
     * scheduler too */
    bool far = BRAID_SHM_FAR_ALWAYS == far_ns || (!cut && ns > far_ns && !s->yield);
    return probe_round(s, ns << 2 | (far ? 2u : 0u) | 1u);
}

uint64_t braid_shm_line_probe(braid_shm_t *s, int rounds, uint64_t far_ns, uint64_t slice_ns)
{
    s->far = false;
    if (2 != s->size) return 0;
    uint64_t v = PROBE_MORE;
    if (0 == s->rank) v = probe_lead(s, rounds, far_ns, slice_ns);
    else
        /* a failed communicator's waits return at once (wait_turn): stop */
        while (0 == (v & 1) && (NULL == s->fault || BRAID_OK == braid_fault_poll(s->fault, false)))
            v = probe_round(s, PROBE_MORE);
    s->far = 0 != (v & 2);
    return v >> 2;
}
