/*
 * test_dispatch.c - the dispatch (braid_dispatch.h) as the component runs
 * it, over the in-process transport, P = 1..8: a call built by
 * braid_call_init and run by braid_dispatch, blocking and as tasks of a
 * request engine (braid_task.h).
 *
 * Checks, on every rank: allreduce values against the reference; the
 * choice is the selection table's, cached per collective and size (the
 * cache is what a later call reads), and a forced algorithm wins; the
 * trace names the call as the component's log shows it ("allreduce",
 * "iallreduce", "allreduce_init", the algorithm, np, bytes); a
 * non-commutative op given to an algorithm that refuses it falls back
 * (BRAID_ERR_UNSUPPORTED) before any message; the transport's call number
 * is taken by blocking and nonblocking calls, each in its own order (a
 * nonblocking post never advances the blocking calls' numbers), and not by
 * a persistent request, which carries its own number and keeps its
 * choice; with a
 * progress-thread size (progress_thread_bytes), a request that large leaves its post
 * before its first message; a host's messages hook (a transport started
 * on first need) is asked before a message algorithm runs, with the
 * nonblocking call's number, and its refusal falls back before any
 * message or call number.
 */
#include <stdio.h>
#include <string.h>

#include "unit_common.h"
#include "inproc_transport.h"
#include "braid_dispatch.h"

#define DP_MAX_P 8
#define DP_COUNT 37

typedef struct dp_rank {
    braid_site_conf_t conf;
    uint32_t calls;             /* the transport's call numbers taken (hooks.begin) */
    uint32_t nb_calls;          /* ... of which by nonblocking posts */
    char last[256];             /* the last line logged */
    int lines;
    int messages_rc;            /* what the messages hook answers */
    int messages_asked;
    uint64_t messages_nb;       /* the nb_number of the last call it was asked about */
} dp_rank_t;

typedef struct dp_case {
    int forced;                 /* allreduce algorithm, BRAID_ALG_AUTO: the table */
    dp_rank_t rank[DP_MAX_P];
    int failures[DP_MAX_P];
    char why[DP_MAX_P][320];
} dp_case_t;

static uint32_t dp_begin(void *arg, bool nonblocking)
{
    dp_rank_t *r = arg;
    r->nb_calls += nonblocking;
    return ++r->calls;
}

static void dp_log(void *arg, int level, const char *msg)
{
    dp_rank_t *r = arg;
    (void)level;
    snprintf(r->last, sizeof r->last, "%s", msg);
    r->lines++;
}

static int dp_messages(void *arg, const braid_call_t *call)
{
    dp_rank_t *r = arg;
    r->messages_asked++;
    r->messages_nb = call->nb_number;
    return r->messages_rc;
}

static void sum_i64(const void *in, void *inout, size_t n, void *arg)
{
    const int64_t *x = in;
    int64_t *y = inout;
    (void)arg;
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* y = x - y: not commutative (the tests never let it run) */
static void minus_i64(const void *in, void *inout, size_t n, void *arg)
{
    const int64_t *x = in;
    int64_t *y = inout;
    (void)arg;
    for (size_t i = 0; i < n; i++) y[i] = x[i] - y[i];
}

#define DP_CHECK(cond, ...)                                                        \
    do {                                                                           \
        if (!(cond) && 0 == C->failures[c->rank]++)                                \
            snprintf(C->why[c->rank], sizeof C->why[c->rank], __VA_ARGS__);       \
    } while (0)

/* One allreduce of DP_COUNT int64 on site s, as task t (NULL: blocking). */
static int dp_allreduce(braid_site_t *s, braid_task_t *t, braid_reduce_fn_t fn, bool commutative,
                        int64_t *buf)
{
    braid_call_t call;
    if (!braid_call_init(s, &call, BRAID_COLL_ALLREDUCE, DP_COUNT * sizeof(int64_t), t))
        return BRAID_ERR_UNSUPPORTED;
    call.args.rbuf = buf;
    call.args.count = DP_COUNT;
    call.args.esize = sizeof(int64_t);
    call.args.op.fn = fn;
    call.args.op.commutative = commutative;
    call.args.exact = commutative;
    return braid_dispatch(s, &call);
}

typedef struct dp_job {
    braid_site_t *s;
    braid_task_t task;
    int64_t *buf;
} dp_job_t;

static int dp_job(void *arg)
{
    dp_job_t *j = arg;
    return dp_allreduce(j->s, &j->task, sum_i64, true, j->buf);
}

static void dp_complete(void *arg, braid_task_t *t)
{
    (void)arg;
    t->result = braid_task_finish(t);
}

static void dp_fill(int64_t *buf, int rank)
{
    for (int i = 0; i < DP_COUNT; i++) buf[i] = (int64_t)(rank + 1) * 1000 + i;
}

static bool dp_values_ok(const int64_t *buf, int P)
{
    for (int i = 0; i < DP_COUNT; i++)
        if (buf[i] != (int64_t)P * (P + 1) / 2 * 1000 + (int64_t)P * i) return false;
    return true;
}

/* Run j as a task of a fresh engine to the end. */
static int dp_run_task(dp_job_t *j, braid_task_kind_t kind, uint32_t seq)
{
    braid_engine_hooks_t hooks = { .complete = dp_complete };
    braid_engine_t eng;
    braid_engine_init(&eng, &hooks);
    braid_task_prepare(&j->task, kind, -1);
    j->task.seq = seq;
    int st = braid_task_post(&j->task, dp_job, j);
    if (BRAID_TASK_PENDING == st) {
        braid_engine_add(&eng, &j->task);
        while (braid_engine_outstanding(&eng)) braid_engine_progress(&eng, true);
    }
    return st < 0 ? st : j->task.result;
}

static int dp_rank_body(braid_comm_t *c, void *arg)
{
    dp_case_t *C = arg;
    dp_rank_t *R = &C->rank[c->rank];
    int P = c->size;
    for (int k = 0; k < BRAID_COLL_N; k++) R->conf.forced[k] = BRAID_ALG_AUTO;
    R->conf.forced[BRAID_COLL_ALLREDUCE] = C->forced;
    R->conf.trace = true;
    braid_site_hooks_t hooks = { .arg = R, .begin = dp_begin, .log = dp_log };
    braid_site_t s;
    braid_site_init(&s, c, &R->conf, &hooks);
    int64_t buf[DP_COUNT];
    size_t bytes = DP_COUNT * sizeof(int64_t);
    braid_choice_t want = braid_site_select(&s, BRAID_COLL_ALLREDUCE, P, bytes, false);
    const char *alg = braid_alg_name(BRAID_COLL_ALLREDUCE, want.alg);
    char line[160];

    /* blocking, twice: the table's (or the forced) choice, then the cache */
    for (int round = 0; round < 2; round++) {
        dp_fill(buf, c->rank);
        int rc = dp_allreduce(&s, NULL, sum_i64, true, buf);
        DP_CHECK(BRAID_OK == rc, "blocking allreduce: rc %d", rc);
        DP_CHECK(dp_values_ok(buf, P), "blocking allreduce: wrong values");
        DP_CHECK(s.choice_cache[0][BRAID_COLL_ALLREDUCE].valid &&
                     s.choice_cache[0][BRAID_COLL_ALLREDUCE].bytes == bytes &&
                     s.choice_cache[0][BRAID_COLL_ALLREDUCE].choice.alg == want.alg &&
                     s.choice_cache[0][BRAID_COLL_ALLREDUCE].alg ==
                         braid_algorithm(BRAID_COLL_ALLREDUCE, want.alg),
                 "the choice is not cached");
    }
    if (BRAID_ALG_AUTO != C->forced)
        DP_CHECK(want.alg == C->forced, "forced %d, chosen %d", C->forced, want.alg);
    snprintf(line, sizeof line, "allreduce %s np=%d bytes=%zu", alg, P, bytes);
    DP_CHECK(0 != c->rank || 0 == strcmp(R->last, line), "trace '%.100s', want '%.100s'", R->last, line);
    DP_CHECK(0 == c->rank || 0 == R->lines, "rank %d traced", c->rank);
    DP_CHECK(2 == R->calls, "%u call numbers after 2 blocking calls", R->calls);

    /* a cached choice is what the next call runs: poison it (its
     * algorithm and the registry row kept with it), see it read */
    s.choice_cache[0][BRAID_COLL_ALLREDUCE].choice.alg = BRAID_ALG_AUTO;
    s.choice_cache[0][BRAID_COLL_ALLREDUCE].alg = NULL;
    braid_call_t probe;
    DP_CHECK(!braid_call_init(&s, &probe, BRAID_COLL_ALLREDUCE, bytes, NULL),
             "the cache was not read");
    braid_site_forget(&s);

    /* nonblocking: a task of an engine, traced as such, the next call number */
    dp_job_t j = { .s = &s, .buf = buf };
    dp_fill(buf, c->rank);
    int rc = dp_run_task(&j, BRAID_TASK_NONBLOCKING, 0);
    DP_CHECK(BRAID_OK == rc && dp_values_ok(buf, P), "iallreduce: rc %d or wrong values", rc);
    snprintf(line, sizeof line, "iallreduce %s np=%d bytes=%zu", alg, P, bytes);
    DP_CHECK(0 != c->rank || 0 == strcmp(R->last, line), "trace '%.100s', want '%.100s'", R->last, line);
    DP_CHECK(3 == R->calls && 1 == R->nb_calls, "%u call numbers (%u nonblocking) after the nonblocking call",
             R->calls, R->nb_calls);
    DP_CHECK(1 == s.nb_calls && !s.choice_cache[1][BRAID_COLL_ALLREDUCE].ring,
             "nonblocking calls numbered: %llu", (unsigned long long)s.nb_calls);

    /* persistent: its own number, no call number taken, its choice kept
     * (not in the communicator's cache) */
    braid_site_forget(&s);
    dp_fill(buf, c->rank);
    j.task.view = *c;
    rc = dp_run_task(&j, BRAID_TASK_PERSISTENT, 0x8000u | 5u);
    DP_CHECK(BRAID_OK == rc && dp_values_ok(buf, P), "allreduce_init: rc %d or wrong values", rc);
    snprintf(line, sizeof line, "allreduce_init %s np=%d bytes=%zu", alg, P, bytes);
    DP_CHECK(0 != c->rank || 0 == strcmp(R->last, line), "trace '%.100s', want '%.100s'", R->last, line);
    DP_CHECK(3 == R->calls, "a persistent start took a call number (%u)", R->calls);
    DP_CHECK(j.task.chosen && j.task.choice_bytes == bytes && j.task.choice.alg == want.alg,
             "the persistent request did not keep its choice");
    DP_CHECK(!s.choice_cache[0][BRAID_COLL_ALLREDUCE].valid,
             "a persistent start wrote the communicator's cache");
    braid_task_release(&j.task);

    /* the yield to a progress thread: a request of progress_thread_bytes
     * returns from its post before sending anything (its number taken),
     * traced as such, and finishes when progressed; one byte larger than
     * the call, the yield stays off (at P = 1 the call then completes
     * inside its post); blocking calls never yield */
    for (int k = 0; k < 2; k++) {
        braid_site_forget(&s);
        R->conf.progress_thread_bytes = bytes + (size_t)k;
        braid_engine_hooks_t eh = { .complete = dp_complete };
        braid_engine_t eng;
        braid_engine_init(&eng, &eh);
        braid_task_prepare(&j.task, BRAID_TASK_NONBLOCKING, -1);
        dp_fill(buf, c->rank);
        uint64_t sent = c->stats.msgs_sent;
        uint32_t calls = R->calls;
        int st = braid_task_post(&j.task, dp_job, &j);
        if (0 == k) {
            DP_CHECK(BRAID_TASK_PENDING == st, "yielded: post returned %d", st);
            DP_CHECK(c->stats.msgs_sent == sent, "yielded: messages sent inside the post");
            DP_CHECK(R->calls == calls + 1, "yielded: no call number taken at post");
            DP_CHECK(0 != c->rank || 0 == strcmp(R->last, "iallreduce left to the progress thread"),
                     "yield trace '%.100s'", R->last);
        } else if (1 == P) {
            DP_CHECK(BRAID_TASK_DONE == st, "below the yield size at P=1: post returned %d", st);
        }
        if (BRAID_TASK_PENDING == st) {
            braid_engine_add(&eng, &j.task);
            while (braid_engine_outstanding(&eng)) braid_engine_progress(&eng, true);
        }
        rc = st < 0 ? st : j.task.result;
        DP_CHECK(BRAID_OK == rc && dp_values_ok(buf, P), "yield %d: rc %d or wrong values", k, rc);
        braid_task_release(&j.task);
    }
    dp_fill(buf, c->rank);
    R->conf.progress_thread_bytes = 1;
    rc = dp_allreduce(&s, NULL, sum_i64, true, buf);
    DP_CHECK(BRAID_OK == rc && dp_values_ok(buf, P), "blocking call with a yield size: rc %d", rc);
    R->conf.progress_thread_bytes = 0;

    /* a non-commutative op where the algorithm refuses it: falls back
     * before any message, on every rank */
    if (P > 1 && !braid_alg_takes_op(BRAID_COLL_ALLREDUCE, want.alg, P, false, false)) {
        uint64_t sent = c->stats.msgs_sent;
        dp_fill(buf, c->rank);
        rc = dp_allreduce(&s, NULL, minus_i64, false, buf);
        DP_CHECK(BRAID_ERR_UNSUPPORTED == rc, "non-commutative op: rc %d", rc);
        DP_CHECK(c->stats.msgs_sent == sent, "non-commutative op: messages sent before refusing");
    }

    /* the messages hook: asked before a message algorithm (no segment
     * here) runs; its refusal falls back before any message and before
     * the blocking call takes a number; a nonblocking call shows its number */
    braid_site_forget(&s);
    s.hooks.messages = dp_messages;
    R->messages_rc = BRAID_ERR_UNSUPPORTED;
    uint64_t sent = c->stats.msgs_sent;
    uint32_t calls = R->calls;
    dp_fill(buf, c->rank);
    rc = dp_allreduce(&s, NULL, sum_i64, true, buf);
    DP_CHECK(BRAID_ERR_UNSUPPORTED == rc && 1 == R->messages_asked && 0 == R->messages_nb,
             "refused blocking call: rc %d, hook asked %d times", rc, R->messages_asked);
    DP_CHECK(c->stats.msgs_sent == sent && R->calls == calls,
             "refused blocking call: messages sent or a call number taken");
    braid_task_prepare(&j.task, BRAID_TASK_NONBLOCKING, -1);
    rc = dp_run_task(&j, BRAID_TASK_NONBLOCKING, 0);
    DP_CHECK(BRAID_TASK_FELL_BACK == rc || BRAID_ERR_UNSUPPORTED == rc,
             "refused nonblocking call: rc %d", rc);
    DP_CHECK(2 == R->messages_asked && s.nb_calls == R->messages_nb,
             "hook asked %d times, nonblocking number %llu (site: %llu)", R->messages_asked,
             (unsigned long long)R->messages_nb, (unsigned long long)s.nb_calls);
    braid_task_release(&j.task);
    R->messages_rc = BRAID_OK;
    dp_fill(buf, c->rank);
    rc = dp_allreduce(&s, NULL, sum_i64, true, buf);
    DP_CHECK(BRAID_OK == rc && dp_values_ok(buf, P) && 3 == R->messages_asked,
             "allowed blocking call: rc %d or wrong values", rc);
    braid_site_fini(&s);
    return BRAID_OK;
}

static void dp_run(int P, int forced)
{
    static dp_case_t C;
    memset(&C, 0, sizeof C);
    C.forced = forced;
    inproc_result_t res = inproc_run(P, dp_rank_body, NULL, &C);
    free(res.stats);
    ck_assert_int_eq(res.rc, BRAID_OK);
    ck_assert_int_eq(res.leftover_msgs, 0);
    for (int r = 0; r < P; r++)
        ck_assert_msg(0 == C.failures[r], "P=%d forced=%s rank %d: %d failures, first: %s", P,
                      BRAID_ALG_AUTO == forced ? "auto" : braid_alg_name(BRAID_COLL_ALLREDUCE, forced),
                      r, C.failures[r], C.why[r]);
}

START_TEST(test_table_choice)
{
    for (int P = 1; P <= DP_MAX_P; P++) dp_run(P, BRAID_ALG_AUTO);
}
END_TEST

START_TEST(test_forced)
{
    /* ring_chunked refuses non-commutative ops at P > 1 */
    const int algs[] = { BRAID_ALLREDUCE_RING_CHUNKED, BRAID_ALLREDUCE_HALVING_DOUBLING,
                         BRAID_ALLREDUCE_DBTREE };
    for (size_t a = 0; a < sizeof algs / sizeof *algs; a++)
        for (int P = 1; P <= DP_MAX_P; P++) dp_run(P, algs[a]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dispatch");
    TCase *tc = unit_tcase(s, "dispatch", 120);
    tcase_add_test(tc, test_table_choice);
    tcase_add_test(tc, test_forced);
    return unit_run_suite(s);
}
