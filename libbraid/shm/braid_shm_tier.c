/*
 * braid_shm_tier.c - a communicator's shared-memory tier, brought up on
 * every rank alike (braid_shm_tier.h).
 */
#include "braid_shm_tier.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "braid_cma.h"
#include "braid_registry.h"

/* A channel for persistent requests is a segment of its own layout
 * (braid_shm.h) after the communicator's: two cells (a request's starts
 * are one after the other on every rank), the communicator's slot size. */
#define CHANNEL_CELLS 2
/* rounds of the set-up line probe of a two-rank segment (about 10-40 us) */
#define PROBE_ROUNDS 64

/* the control-line words of the single-copy reader */
enum { WORD_PID = 0, WORD_PROBE = 1 };
static const uint64_t cma_probe_word = 0x616d636469617262ull; /* "braidcma" */

/* what the group's creator tells the others */
typedef struct offer {
    int32_t ok;
    char name[BRAID_SHM_NAME_MAX];
} offer_t;

static void say(const braid_shm_tier_hooks_t *h, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const braid_shm_tier_hooks_t *h, int level, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    h->say(h->arg, level, line);
}

static size_t channel_bytes(int P, size_t slot) { return braid_shm_segment_bytes(P, CHANNEL_CELLS, slot); }

/* the communicator's cells, then the nonblocking calls' ring (as many
 * cells), then the channels */
static unsigned char *nb_base(const braid_shm_tier_t *t, int P)
{
    return (unsigned char *)t->seg.base + braid_shm_segment_bytes(P, t->cells, t->slot_bytes);
}

static unsigned char *channel_base(const braid_shm_tier_t *t, int P, int ch)
{
    size_t ring = braid_shm_segment_bytes(P, t->cells, t->slot_bytes);
    return nb_base(t, P) + (t->nb_ring ? ring : 0) + (size_t)ch * channel_bytes(P, t->slot_bytes);
}

static void inherit(braid_shm_t *s, const braid_shm_t *whole);

/* One message collective of the set-up, on its own scratch, run by every
 * rank of the communicator: the collective's call number advances on
 * every rank, also where c - a node of one rank - sends nothing, or the
 * next collective's tags would differ between ranks. */
static int run_step(braid_shm_tier_t *t, braid_algo_fn_t fn, braid_comm_t *c,
                    const braid_coll_args_t *a)
{
    uint32_t seq = t->hooks.begin(t->hooks.arg);
    if (c->size < 2) return BRAID_OK;
    braid_scratch_t scratch;
    memset(&scratch, 0, sizeof(scratch));
    braid_coll_args_t b = *a;
    b.scratch = &scratch;
    braid_comm_t v = braid_comm_for(c, seq, NULL);
    int rc = fn(&v, &b);
    braid_comm_count(c, &v);
    braid_scratch_release(&scratch);
    return rc;
}

static void and_u64(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    const uint64_t *x = in;
    uint64_t *y = inout;
    for (size_t i = 0; i < n; i++) y[i] &= x[i];
}

/* v[0] AND, v[1] MAX: the set-up's agreement */
static void and_max_u64(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    const uint64_t *x = in;
    uint64_t *y = inout;
    for (size_t i = 0; i < n; i++, x += 2, y += 2) {
        y[0] &= x[0];
        if (x[1] > y[1]) y[1] = x[1];
    }
}

/* v[0]: the AND of every rank's, v[1]: the largest (0 and 0 if the
 * messages fail) */
static void agree_and_max(braid_shm_tier_t *t, braid_comm_t *comm, uint64_t v[2])
{
    braid_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.rbuf = v;
    a.count = 1;
    a.esize = 2 * sizeof(uint64_t);
    a.op.fn = and_max_u64;
    a.op.commutative = true;
    a.exact = true;
    const braid_shm_tier_hooks_t *h = &t->hooks;
    if (NULL != h->host_allreduce) {
        if (0 != h->host_allreduce(h->arg, &v[0], 1, false) || 0 != h->host_allreduce(h->arg, &v[1], 1, true))
            v[0] = v[1] = 0;
        return;
    }
    if (BRAID_OK != run_step(t, braid_allreduce_recursive_doubling, comm, &a)) v[0] = v[1] = 0;
}

/* The AND of every rank's mask over comm (0 if the messages fail). */
static uint64_t agree_mask(braid_shm_tier_t *t, braid_comm_t *comm, uint64_t mine)
{
    uint64_t v = mine;
    braid_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.rbuf = &v;
    a.count = 1;
    a.esize = sizeof(v);
    a.op.fn = and_u64;
    a.op.commutative = true;
    a.exact = true;
    if (NULL != t->hooks.host_allreduce) return 0 == t->hooks.host_allreduce(t->hooks.arg, &v, 1, false) ? v : 0;
    return BRAID_OK == run_step(t, braid_allreduce_recursive_doubling, comm, &a) ? v : 0;
}

/* ------------------------------------------------------------------ */
/* single copy                                                         */
/* ------------------------------------------------------------------ */

static int cma_reader(void *arg, int r, void *dst, uint64_t src, size_t bytes)
{
    const braid_shm_t *s = arg;
    if (0 == braid_cma_read((long)braid_shm_word(s, r, WORD_PID), dst, src, bytes)) return BRAID_OK;
    /* the process is gone: under fault tolerance a failure, said by the host */
    if (ESRCH == errno && NULL != s->fault) return BRAID_ERR_PROC_FAILED;
    fprintf(stderr, "braid: process_vm_readv of %zu bytes from rank %d of a shared-memory "
            "segment failed: %s\n", bytes, r, strerror(errno));
    return BRAID_ERR_TRANSPORT;
}

static int cma_writer(void *arg, int r, uint64_t dst, const void *src, size_t bytes)
{
    const braid_shm_t *s = arg;
    if (0 == braid_cma_write((long)braid_shm_word(s, r, WORD_PID), dst, src, bytes)) return BRAID_OK;
    if (ESRCH == errno && NULL != s->fault) return BRAID_ERR_PROC_FAILED;
    fprintf(stderr, "braid: process_vm_writev of %zu bytes to rank %d of a shared-memory "
            "segment failed: %s\n", bytes, r, strerror(errno));
    return BRAID_ERR_TRANSPORT;
}

/* this rank can read the next rank's memory: its known word arrives intact */
static bool cma_probe(const braid_shm_t *s, char *err, size_t errlen)
{
    if (s->size < 2) return true;
    int r = (s->rank + 1) % s->size;
    long pid = (long)braid_shm_word(s, r, WORD_PID);
    uint64_t v = 0;
    if (0 != braid_cma_read(pid, &v, braid_shm_word(s, r, WORD_PROBE), sizeof v)) {
        snprintf(err, errlen, "process_vm_readv from process %ld: %s", pid, strerror(errno));
        return false;
    }
    if (cma_probe_word != v) {
        snprintf(err, errlen, "process_vm_readv from process %ld read a wrong value", pid);
        return false;
    }
    return true;
}

/* step 5: the single-copy reader on every rank of comm or on none */
static void single_copy(braid_shm_tier_t *t, braid_comm_t *comm, const braid_shm_tier_conf_t *cf)
{
    static bool warned;
    char err[256] = "";
    bool mine = cf->single_copy && cma_probe(&t->shm, err, sizeof(err));
    if (1 == agree_mask(t, comm, mine ? 1 : 0)) {
        t->shm.read = cma_reader;
        t->shm.read_arg = &t->shm;
        t->shm.write = cma_writer;
        t->shm.unreadable = t->hooks.unreadable;
        t->shm.unreadable_arg = t->hooks.arg;
        t->shm.direct_above = cf->direct_above;
        t->shm.split_from = cf->split_from;
        return;
    }
    if (cf->single_copy && !mine && !warned) {
        warned = true;
        say(&t->hooks, 0, "warning: single-copy shared memory off: %s; collectives whose "
            "data exceed a slot (%zu bytes per rank) go through UCX", err, cf->slot_bytes);
    }
}

/* ------------------------------------------------------------------ */
/* steps 1-4                                                           */
/* ------------------------------------------------------------------ */

/* map the group's segment on this rank: create (group rank 0) or open */
static bool map(braid_shm_tier_t *t, braid_comm_t *comm, braid_comm_t *group, size_t bytes,
                int nchan, const braid_shm_tier_conf_t *cf, char *err, size_t errlen)
{
    offer_t offer;
    memset(&offer, 0, sizeof(offer));
    bool mapped = false;
    if (0 == group->rank) {
        mapped = 0 == braid_shm_segment_create(&t->seg, bytes, err, errlen);
        if (mapped) {
            braid_shm_format(t->seg.base, group->size, cf->cells, cf->slot_bytes);
            if (t->nb_ring) braid_shm_format(nb_base(t, group->size), group->size, cf->cells, cf->slot_bytes);
            for (int ch = 0; ch < nchan; ch++)
                braid_shm_format(channel_base(t, group->size, ch), group->size, CHANNEL_CELLS,
                                 cf->slot_bytes);
        }
        offer.ok = mapped;
        memcpy(offer.name, t->seg.name, sizeof(offer.name));
    }
    braid_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.rbuf = &offer;
    a.count = sizeof(offer);
    a.esize = 1;
    int rc = NULL != t->hooks.host_bcast && group == comm
                 ? (0 == t->hooks.host_bcast(t->hooks.arg, &offer, sizeof(offer)) ? BRAID_OK : BRAID_ERR_TRANSPORT)
                 : run_step(t, braid_bcast_binomial, group, &a);
    if (BRAID_OK != rc) {
        snprintf(err, errlen, "the segment's name did not arrive");
        return false;
    }
    if (0 != group->rank) {
        if (!offer.ok) {
            snprintf(err, errlen, "the node's first rank could not create the segment");
            return false;
        }
        if (cf->inject_failure == comm->rank) {
            snprintf(err, errlen, "injected failure (coll_braid_shm_inject_failure=%d)",
                     cf->inject_failure);
            return false;
        }
        mapped = 0 == braid_shm_segment_open(&t->seg, offer.name, bytes, err, errlen);
    }
    if (!mapped) return false;
    if (BRAID_OK != braid_shm_attach(&t->shm, t->seg.base, group->rank, group->size, cf->yield)) {
        snprintf(err, errlen, "segment %s has an unexpected header", t->seg.name);
        return false;
    }
    if (t->nb_ring && BRAID_OK != braid_shm_attach(&t->nb, nb_base(t, group->size), group->rank,
                                                   group->size, cf->yield)) {
        snprintf(err, errlen, "the nonblocking ring of segment %s has an unexpected header",
                 t->seg.name);
        return false;
    }
    /* every channel too, so that taking one later cannot fail on one rank */
    for (int ch = 0; ch < nchan; ch++) {
        braid_shm_t probe;
        if (BRAID_OK != braid_shm_attach(&probe, channel_base(t, group->size, ch), group->rank,
                                         group->size, cf->yield)) {
            snprintf(err, errlen, "channel %d of segment %s has an unexpected header", ch,
                     t->seg.name);
            return false;
        }
    }
    t->shm.idle = t->hooks.idle;
    t->shm.idle_arg = t->hooks.arg;
    t->shm.fault = t->hooks.fault;
    if (cf->single_copy) braid_cma_allow_peers();
    braid_shm_set_word(&t->shm, WORD_PID, (uint64_t)getpid());
    braid_shm_set_word(&t->shm, WORD_PROBE, (uint64_t)(uintptr_t)&cma_probe_word);
    return true;
}

bool braid_shm_tier_up(braid_shm_tier_t *t, braid_comm_t *comm, braid_comm_t *group,
                       const braid_shm_tier_conf_t *cf, const braid_shm_tier_hooks_t *hooks)
{
    memset(t, 0, sizeof(*t));
    t->hooks = *hooks;
    t->cells = cf->cells;
    t->slot_bytes = cf->slot_bytes;
    t->nb_ring = cf->nb_channel;
    t->nb_from = UINT64_MAX;
    int nchan = cf->channels < BRAID_SHM_CHANNELS_MAX ? cf->channels : BRAID_SHM_CHANNELS_MAX;
    size_t ring = braid_shm_segment_bytes(group->size, cf->cells, cf->slot_bytes);
    size_t bytes = ring + (t->nb_ring ? ring : 0) + (size_t)nchan * channel_bytes(group->size, cf->slot_bytes);
    char err[256] = "";
    bool mine = map(t, comm, group, bytes, nchan, cf, err, sizeof(err));
    /* mapped everywhere, and the most nonblocking calls any rank has
     * numbered: every rank has numbered its posts up to that one before it
     * got here, so the ring serves the calls after it on every rank alike */
    uint64_t v[2] = { mine ? 1 : 0, NULL != t->hooks.nb_posted ? t->hooks.nb_posted(t->hooks.arg) : 0 };
    agree_and_max(t, comm, v);
    bool all = 1 == v[0];
    braid_shm_segment_unlink(&t->seg);
    if (!all) {
        if (!mine)
            say(&t->hooks, 0, "warning: shared-memory tier off: %s; its collectives go through UCX",
                err);
        braid_shm_tier_down(t);
        return false;
    }
    single_copy(t, comm, cf);
    /* after the agreement: both ranks of a pair are here */
    uint64_t line_ns = NULL != t->shm.read && cf->far_ns > 0
                           ? braid_shm_line_probe(&t->shm, PROBE_ROUNDS, cf->far_ns,
                                                  BRAID_SHM_PROBE_SLICE_NS)
                           : 0;
    if (t->nb_ring) {
        inherit(&t->nb, &t->shm);
        t->nb_from = v[1] + 1;
    }
    group->shm = &t->shm;
    t->nchan = nchan;
    t->chan_free = 0 == nchan ? 0 : ~(uint64_t)0 >> (64 - nchan);
    say(&t->hooks, 10, "shared-memory tier on with %d ranks per segment, %d cells x %zu bytes per "
        "rank, %zu bytes; waits %s; %s; line round trip %" PRIu64 " ns%s", group->size, cf->cells,
        cf->slot_bytes, bytes, t->shm.yield ? "yield the core (oversubscribed)" : "spin",
        t->shm.read ? "single copy (process_vm_readv) above shm_single_copy_above"
                    : "no single copy: UCX above a slot",
        line_ns,
        t->shm.far                           ? " (far: reduce copies 4 KiB - 512 KiB)"
        : line_ns > BRAID_SHM_PROBE_SLICE_NS ? " (the ranks take turns on a core)"
                                             : "");
    return true;
}

/* ------------------------------------------------------------------ */
/* channels                                                            */
/* ------------------------------------------------------------------ */

/* s, attached to a ring of its own, takes the communicator's reader (its
 * process ids), thresholds and waits */
static void inherit(braid_shm_t *s, const braid_shm_t *whole)
{
    s->idle = whole->idle;
    s->idle_arg = whole->idle_arg;
    s->fault = whole->fault;
    s->read = whole->read;
    s->read_arg = whole->read_arg;
    s->write = whole->write;
    s->unreadable = whole->unreadable;
    s->unreadable_arg = whole->unreadable_arg;
    s->direct_above = whole->direct_above;
    s->split_from = whole->split_from;
    s->far = whole->far;
}

int braid_shm_tier_channel_take(braid_shm_tier_t *t, braid_comm_t *comm, braid_shm_t *s)
{
    if (NULL == t->seg.base || 0 == t->nchan) return -1;
    /* atomics: another thread may free a request meanwhile (local) */
    uint64_t free_all = agree_mask(t, comm, __atomic_load_n(&t->chan_free, __ATOMIC_ACQUIRE));
    if (0 == free_all) return -1;
    int ch = __builtin_ctzll(free_all);
    const braid_shm_t *whole = &t->shm;
    /* checked when the tier came up, on every rank (map): cannot fail here */
    (void)braid_shm_attach(s, channel_base(t, whole->size, ch), whole->rank, whole->size,
                           whole->yield);
    __atomic_fetch_and(&t->chan_free, ~((uint64_t)1 << ch), __ATOMIC_ACQ_REL);
    inherit(s, whole);
    s->seq = t->chan[ch].seq;
    s->safe = t->chan[ch].safe;
    return ch;
}

void braid_shm_tier_channel_give(braid_shm_tier_t *t, int ch, const braid_shm_t *s)
{
    t->chan[ch].seq = s->seq;
    t->chan[ch].safe = s->safe;
    __atomic_fetch_or(&t->chan_free, (uint64_t)1 << ch, __ATOMIC_RELEASE);
}

void braid_shm_tier_down(braid_shm_tier_t *t)
{
    braid_shm_segment_close(&t->seg);
    memset(&t->shm, 0, sizeof(t->shm));
    memset(&t->nb, 0, sizeof(t->nb));
    t->nb_from = UINT64_MAX;
    t->nchan = 0;
    t->chan_free = 0;
}
