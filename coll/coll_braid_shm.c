/*
 * coll_braid_shm.c - glue of the shared-memory tier: when and where a
 * communicator gets its segment, and the agreement that keeps every rank
 * on the same path.
 *
 * A communicator's segment is set up at its coll_braid_shm_after-th braid
 * call (a dup used once and freed never pays for one), inside that call and
 * before its algorithm is chosen, on every rank alike:
 *   - ranks on one node: one segment for the communicator;
 *   - ranks on several nodes: one per node, for the node view that the
 *     hierarchical allreduce reduces and broadcasts in;
 *   1. the group's rank 0 creates the segment (shm_transport/, 0600) and
 *      formats it; its name goes to the group by a binomial bcast;
 *   2. the others map it and check the header;
 *   3. a MIN allreduce of "mapped" over the whole communicator: the tier
 *      is on only if every rank of every node has it;
 *   4. the creator unlinks the name - nothing is left in /dev/shm from here
 *      on, whatever happens to the job - and a failure anywhere unmaps it
 *      everywhere, with a warning from the rank that failed;
 *   5. single copy (coll_braid_shm_single_copy): each rank has published
 *      its process id and the address of a known word in its control line
 *      (before step 3, which orders them; under Yama's ptrace_scope 1 it
 *      has also allowed its peers to read it); it reads the next rank's word
 *      with process_vm_readv, and a second MIN allreduce turns the reader
 *      on for every rank or for none (warning, once per process, from a
 *      rank that could not: ptrace permission, seccomp, another PID
 *      namespace).
 * Steps 1 and 3 run braid's own message algorithms over UCX with scratch of
 * their own, so fault injection on the communicator's scratch does not
 * reach them.
 */
#include "coll_braid_module.h"

#include <string.h>
#include <unistd.h>

#include <errno.h>
#include <inttypes.h>

#include "braid_cma.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

static inline mca_coll_braid_component_t *cmp(void) { return &mca_coll_braid_component; }

/* what the group's creator tells the others */
typedef struct shm_offer {
    int32_t ok;
    char name[BRAID_SHM_NAME_MAX];
} shm_offer_t;

static void and_u64(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    const uint64_t *x = in;
    uint64_t *y = inout;
    for (size_t i = 0; i < n; i++) y[i] &= x[i];
}

/* One message collective of the set-up, on its own scratch, run by every
 * rank of the communicator: the collective's sequence number (the tags)
 * advances on every rank, also where c - a node of one rank - sends
 * nothing, or the next collective's tags would differ between ranks. */
static int run_setup_step(mca_coll_braid_module_t *m, braid_algo_fn_t fn, braid_comm_t *c,
                          braid_coll_args_t *a)
{
    braid_ucx_comm_begin(m->tcomm);
    if (c->size < 2) return BRAID_OK;
    braid_scratch_t scratch;
    memset(&scratch, 0, sizeof(scratch));
    a->scratch = &scratch;
    int rc = fn(c, a);
    braid_scratch_release(&scratch);
    return rc;
}

/* A channel for persistent requests is a segment of its own layout
 * (braid_shm.h) after the communicator's: two cells (a request's starts
 * are one after the other on every rank), the communicator's slot size. */
#define CHANNEL_CELLS 2
/* rounds of the set-up line probe of a two-rank segment (about 10-40 us) */
#define SHM_PROBE_ROUNDS 64

static size_t channel_bytes(int P)
{
    return braid_shm_segment_bytes(P, CHANNEL_CELLS, (size_t)cmp()->shm_slot_size);
}

static unsigned char *channel_base(const mca_coll_braid_module_t *m, int P, int ch)
{
    return (unsigned char *)m->shm_seg.base +
           braid_shm_segment_bytes(P, cmp()->shm_cells, (size_t)cmp()->shm_slot_size) +
           (size_t)ch * channel_bytes(P);
}

/* the control-line words of the single-copy reader */
enum { WORD_PID = 0, WORD_PROBE = 1 };
static const uint64_t cma_probe_word = 0x616d636469617262ull; /* "braidcma" */

static int cma_reader(void *arg, int r, void *dst, uint64_t src, size_t bytes)
{
    const braid_shm_t *s = arg;
    if (0 == braid_cma_read((long)braid_shm_word(s, r, WORD_PID), dst, src, bytes)) return BRAID_OK;
    opal_output(0, "braid: process_vm_readv of %zu bytes from rank %d of a shared-memory "
                "segment failed: %s", bytes, r, strerror(errno));
    return BRAID_ERR_TRANSPORT;
}

static int cma_writer(void *arg, int r, uint64_t dst, const void *src, size_t bytes)
{
    const braid_shm_t *s = arg;
    if (0 == braid_cma_write((long)braid_shm_word(s, r, WORD_PID), dst, src, bytes)) return BRAID_OK;
    opal_output(0, "braid: process_vm_writev of %zu bytes to rank %d of a shared-memory "
                "segment failed: %s", bytes, r, strerror(errno));
    return BRAID_ERR_TRANSPORT;
}

/* memory a peer's process_vm_readv may be refused: CUDA's */
static bool cuda_unreadable(void *arg, const void *p, size_t bytes)
{
    (void)arg, (void)bytes;
    return mca_coll_braid_is_cuda_memory(p);
}

/* this rank can read the next rank's memory: its known word arrives intact */
static bool cma_probe(const braid_shm_t *s, char *err, size_t errlen)
{
    if (s->size < 2) return true;
    int r = (s->rank + 1) % s->size;
    uint64_t v = 0;
    if (0 != braid_cma_read((long)braid_shm_word(s, r, WORD_PID), &v,
                            braid_shm_word(s, r, WORD_PROBE), sizeof v)) {
        snprintf(err, errlen, "process_vm_readv from process %ld: %s",
                 (long)braid_shm_word(s, r, WORD_PID), strerror(errno));
        return false;
    }
    if (cma_probe_word != v) {
        snprintf(err, errlen, "process_vm_readv from process %ld read a wrong value",
                 (long)braid_shm_word(s, r, WORD_PID));
        return false;
    }
    return true;
}

static void idle_progress(void *arg)
{
    (void)arg;
    (void)opal_progress();
}

/* map the group's segment on this rank: create (group rank 0) or open */
static bool map_segment(mca_coll_braid_module_t *m, braid_comm_t *group, size_t bytes,
                        int nchan, char *err, size_t errlen)
{
    mca_coll_braid_component_t *c = cmp();
    shm_offer_t offer;
    memset(&offer, 0, sizeof(offer));
    bool mapped = false;
    if (0 == group->rank) {
        mapped = 0 == braid_shm_segment_create(&m->shm_seg, bytes, err, errlen);
        if (mapped) {
            braid_shm_format(m->shm_seg.base, group->size, c->shm_cells,
                             (size_t)c->shm_slot_size);
            for (int ch = 0; ch < nchan; ch++)
                braid_shm_format(channel_base(m, group->size, ch), group->size,
                                 CHANNEL_CELLS, (size_t)c->shm_slot_size);
        }
        offer.ok = mapped;
        memcpy(offer.name, m->shm_seg.name, sizeof(offer.name));
    }
    braid_coll_args_t a;
    memset(&a, 0, sizeof(a));
    a.rbuf = &offer;
    a.count = sizeof(offer);
    a.esize = 1;
    if (BRAID_OK != run_setup_step(m, braid_bcast_binomial, group, &a)) {
        snprintf(err, errlen, "the segment's name did not arrive");
        return false;
    }
    if (0 != group->rank) {
        if (!offer.ok) {
            snprintf(err, errlen, "the node's first rank could not create the segment");
            return false;
        }
        if (c->shm_inject_failure == m->bcomm.rank) {
            snprintf(err, errlen, "injected failure (coll_braid_shm_inject_failure=%d)",
                     c->shm_inject_failure);
            return false;
        }
        mapped = 0 == braid_shm_segment_open(&m->shm_seg, offer.name, bytes, err, errlen);
    }
    if (!mapped) return false;
    /* ranks of an oversubscribed node yield while they wait */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    bool yield = opal_progress_yield_when_idle || (cpus > 0 && group->size > cpus);
    if (BRAID_OK != braid_shm_attach(&m->shm, m->shm_seg.base, group->rank, group->size, yield)) {
        snprintf(err, errlen, "segment %s has an unexpected header", m->shm_seg.name);
        return false;
    }
    /* every channel too, so that taking one later cannot fail on one rank */
    for (int ch = 0; ch < nchan; ch++) {
        braid_shm_t probe;
        if (BRAID_OK != braid_shm_attach(&probe, channel_base(m, group->size, ch), group->rank,
                                         group->size, yield)) {
            snprintf(err, errlen, "channel %d of segment %s has an unexpected header", ch,
                     m->shm_seg.name);
            return false;
        }
    }
    m->shm.idle = idle_progress;
    if (c->shm_single_copy) braid_cma_allow_peers();
    braid_shm_set_word(&m->shm, WORD_PID, (uint64_t)getpid());
    braid_shm_set_word(&m->shm, WORD_PROBE, (uint64_t)(uintptr_t)&cma_probe_word);
    return true;
}

/* The AND of every rank's mask over the whole communicator (0 if the
 * messages fail). */
static uint64_t agree_mask(mca_coll_braid_module_t *m, uint64_t mine)
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
    if (BRAID_OK != run_setup_step(m, braid_allreduce_recursive_doubling, &m->bcomm, &a))
        return 0;
    return v;
}

/* every rank of the communicator mapped its group's segment */
static bool agree(mca_coll_braid_module_t *m, bool mine)
{
    return 1 == agree_mask(m, mine ? 1 : 0);
}

/* step 5: the single-copy reader on every rank of the communicator or on none */
static void setup_single_copy(mca_coll_braid_module_t *m)
{
    static bool warned;
    mca_coll_braid_component_t *c = cmp();
    char err[256] = "";
    bool mine = c->shm_single_copy && cma_probe(&m->shm, err, sizeof(err));
    if (agree(m, mine)) {
        m->shm.read = cma_reader;
        m->shm.read_arg = &m->shm;
        m->shm.write = cma_writer;
        m->shm.unreadable = cuda_unreadable;
        m->shm.direct_above = (size_t)c->shm_single_copy_above;
        m->shm.split_from = (size_t)c->shm_reduce_split;
        return;
    }
    if (c->shm_single_copy && !mine && !warned) {
        warned = true;
        opal_output(0, "braid: warning: single-copy shared memory off on %s: %s; bcast, reduce "
                    "and allgather above %d bytes per rank go through UCX", m->comm->c_name, err,
                    c->shm_slot_size);
    }
}

static void setup(mca_coll_braid_module_t *m)
{
    mca_coll_braid_component_t *c = cmp();
    braid_comm_t *group = &m->bcomm;
    if (m->site.topo.nnodes > 1) {
        /* out of memory for a few ints: not agreed, the only set-up failure
         * that is not (the node views are needed to agree within a node) */
        if (BRAID_OK != braid_site_hier_views(&m->site)) return;
        group = &m->site.node_view.comm;
    }
    if (group->size > BRAID_SHM_MAX_P) return;
    /* persistent requests' channels: on a one-node communicator only */
    int nchan = group == &m->bcomm ? c->shm_persistent : 0;
    size_t bytes = braid_shm_segment_bytes(group->size, c->shm_cells, (size_t)c->shm_slot_size) +
                   (size_t)nchan * channel_bytes(group->size);
    char err[256] = "";
    bool mine = map_segment(m, group, bytes, nchan, err, sizeof(err));
    bool all = agree(m, mine);
    braid_shm_segment_unlink(&m->shm_seg);
    if (!all) {
        if (!mine)
            opal_output(0, "braid: warning: shared-memory tier off on %s: %s; its collectives go "
                        "through UCX", m->comm->c_name, err);
        braid_shm_segment_close(&m->shm_seg);
        memset(&m->shm, 0, sizeof(m->shm));
        return;
    }
    setup_single_copy(m);
    /* after the agreement: both ranks of a pair are here */
    uint64_t line_ns = NULL != m->shm.read && c->shm_far_ns > 0
                           ? braid_shm_line_probe(&m->shm, SHM_PROBE_ROUNDS, (uint64_t)c->shm_far_ns,
                                                  BRAID_SHM_PROBE_SLICE_NS)
                           : 0;
    group->shm = &m->shm;
    m->shm_nchan = nchan;
    m->shm_chan_free = 0 == nchan ? 0 : ~(uint64_t)0 >> (64 - nchan);
    /* choices made without the segment are stale */
    braid_site_forget(&m->site);
    opal_output_verbose(10, c->output, "braid: shared-memory tier on %s: %d ranks per segment, "
                        "%d cells x %d bytes per rank, %zu bytes; waits %s; %s; line round trip %" PRIu64
                        " ns%s",
                        m->comm->c_name, group->size, c->shm_cells, c->shm_slot_size, bytes,
                        m->shm.yield ? "yield the core (oversubscribed)" : "spin",
                        m->shm.read ? "single copy (process_vm_readv) above shm_single_copy_above"
                                    : "no single copy: UCX above a slot",
                        line_ns,
                        m->shm.far                              ? " (far: reduce copies 4 KiB - 512 KiB)"
                        : line_ns > BRAID_SHM_PROBE_SLICE_NS ? " (the ranks take turns on a core)"
                                                                : "");
}

void mca_coll_braid_shm_tick(mca_coll_braid_module_t *m)
{
    if (m->shm_tried) return;
    if (!cmp()->shm_enable) {
        m->shm_tried = true;
        return;
    }
    if (++m->shm_calls < (unsigned)cmp()->shm_after) return;
    m->shm_tried = true;
    setup(m);
}

int mca_coll_braid_shm_channel_take(mca_coll_braid_module_t *m, braid_shm_t *s)
{
    if (!m->shm_tried && cmp()->shm_enable) {
        m->shm_tried = true;
        setup(m);
    }
    if (NULL == m->bcomm.shm || 0 == m->shm_nchan) return -1;
    /* atomics: another thread may free a request of m meanwhile (local) */
    uint64_t free_all = agree_mask(m, __atomic_load_n(&m->shm_chan_free, __ATOMIC_ACQUIRE));
    if (0 == free_all) return -1;
    int ch = __builtin_ctzll(free_all);
    const braid_shm_t *t = &m->shm;
    /* checked at set-up on every rank (map_segment): cannot fail here */
    (void)braid_shm_attach(s, channel_base(m, t->size, ch), t->rank, t->size, t->yield);
    __atomic_fetch_and(&m->shm_chan_free, ~((uint64_t)1 << ch), __ATOMIC_ACQ_REL);
    /* the communicator's reader (its process ids) and thresholds */
    s->idle = t->idle;
    s->idle_arg = t->idle_arg;
    s->read = t->read;
    s->read_arg = t->read_arg;
    s->write = t->write;
    s->unreadable = t->unreadable;
    s->unreadable_arg = t->unreadable_arg;
    s->direct_above = t->direct_above;
    s->split_from = t->split_from;
    s->far = t->far;
    s->seq = m->shm_chan[ch].seq;
    s->safe = m->shm_chan[ch].safe;
    return ch;
}

void mca_coll_braid_shm_channel_give(mca_coll_braid_module_t *m, int ch, const braid_shm_t *s)
{
    m->shm_chan[ch].seq = s->seq;
    m->shm_chan[ch].safe = s->safe;
    __atomic_fetch_or(&m->shm_chan_free, (uint64_t)1 << ch, __ATOMIC_RELEASE);
}

void mca_coll_braid_shm_release(mca_coll_braid_module_t *m)
{
    m->bcomm.shm = NULL;
    m->site.node_view.comm.shm = NULL;
    braid_shm_segment_close(&m->shm_seg);
    memset(&m->shm, 0, sizeof(m->shm));
    m->shm_nchan = 0;
    m->shm_chan_free = 0;
}
