/* test_tag.c - braid's UCX tag layout: round trip, field isolation and
 * uniqueness across communicators, collectives, steps and sources; the
 * persistent requests' numbers (braid_tag_numbers.h), picked the same on ranks
 * that hold different ones. */
#include "unit_common.h"

#include <limits.h>
#include "braid_tag_numbers.h"
#include "braid_tag.h"

START_TEST(test_round_trip)
{
    uint32_t cids[] = { 0, 1, 2, 4095, (uint32_t)BRAID_TAG_MAX_CID };
    uint32_t seqs[] = { 0, 1, 65535 };
    uint32_t steps[] = { 0, 1, 4095 };
    uint32_t srcs[] = { 0, 1, BRAID_TAG_MAX_RANKS - 1 };
    for (size_t a = 0; a < sizeof cids / sizeof *cids; a++)
        for (size_t b = 0; b < sizeof seqs / sizeof *seqs; b++)
            for (size_t c = 0; c < sizeof steps / sizeof *steps; c++)
                for (size_t d = 0; d < sizeof srcs / sizeof *srcs; d++) {
                    uint64_t t = braid_tag_make(cids[a], seqs[b], steps[c], srcs[d]);
                    braid_tag_fields_t f = braid_tag_split(t);
                    ck_assert_uint_eq(f.cid, cids[a]);
                    ck_assert_uint_eq(f.seq, seqs[b]);
                    ck_assert_uint_eq(f.step, steps[c]);
                    ck_assert_uint_eq(f.src, srcs[d]);
                }
}
END_TEST

START_TEST(test_fields_cover_64_bits)
{
    ck_assert_int_eq(BRAID_TAG_CID_BITS + BRAID_TAG_SEQ_BITS + BRAID_TAG_STEP_BITS
                     + BRAID_TAG_SRC_BITS, 64);
    /* each field alone lights only its own bits */
    uint64_t all = braid_tag_make((uint32_t)BRAID_TAG_MAX_CID, 0xffff, 0xfff, 0xfffff);
    ck_assert(all == BRAID_TAG_FULL_MASK);
    uint64_t c = braid_tag_make((uint32_t)BRAID_TAG_MAX_CID, 0, 0, 0);
    uint64_t s = braid_tag_make(0, 0xffff, 0, 0);
    uint64_t st = braid_tag_make(0, 0, 0xfff, 0);
    uint64_t r = braid_tag_make(0, 0, 0, 0xfffff);
    ck_assert(0 == (c & s) && 0 == (c & st) && 0 == (c & r));
    ck_assert(0 == (s & st) && 0 == (s & r) && 0 == (st & r));
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

START_TEST(test_unique)
{
    /* 64 communicators x 16 consecutive collectives x 32 steps x 16 sources */
    size_t n = 64 * 16 * 32 * 16, k = 0;
    uint64_t *tags = malloc(n * sizeof(*tags));
    ck_assert_ptr_nonnull(tags);
    for (uint32_t cid = 0; cid < 64; cid++)
        for (uint32_t seq = 0; seq < 16; seq++)
            for (uint32_t step = 0; step < 32; step++)
                for (uint32_t src = 0; src < 16; src++)
                    tags[k++] = braid_tag_make(cid * 1021u % 65536u, seq + 65530u, step, src);
    qsort(tags, n, sizeof(*tags), cmp_u64);
    size_t repeats = 0;   /* asserted once: each passing ck_assert messages Check's parent */
    for (size_t i = 1; i < n; i++) repeats += tags[i] == tags[i - 1];
    ck_assert_uint_eq(repeats, 0);
    free(tags);
}
END_TEST

START_TEST(test_step_folds)
{
    ck_assert_uint_eq(braid_tag_fold_step(4096), 0);
    ck_assert_uint_eq(braid_tag_fold_step(4097), 1);
    ck_assert_uint_eq(braid_tag_split(braid_tag_make(0, 0, 4096 + 7, 0)).step, 7);
}
END_TEST

/* The collective pick (braid_tag_numbers_agree) across R ranks, one after
 * the other: each rank's OR of a window is taken over every rank's masks
 * as they were before any of them took, as the ranks' allreduce sees
 * them - the current masks less the numbers the ranks before it took
 * (a number taken was free on every rank). The number all take, or -1
 * when every number is held. */
enum { PICK_R_MAX = 4 };
typedef struct { braid_tag_numbers_t *ranks; int R, done; unsigned taken[PICK_R_MAX]; } pick_t;
/* picks whose ranks started from different windows or took different
 * numbers: counted, asserted once per test (a passing ck_assert costs a
 * message to Check's parent; the loops below pick 10^5 times) */
static unsigned pick_differ;

static int or_before(void *arg, unsigned w, const uint64_t mine[2], uint64_t all[2])
{
    const pick_t *p = arg;
    all[0] = mine[0];
    all[1] = mine[1];
    for (int r = 0; r < p->R; r++) {
        uint64_t m = braid_tag_numbers_window(&p->ranks[r], w);
        if (r < p->done && p->taken[r] / 64 == w) m &= ~(1ull << (p->taken[r] % 64));
        all[0] |= m;
    }
    return 0;
}

static int pick(braid_tag_numbers_t *ranks, int R)
{
    pick_t p = { ranks, R, 0, { 0 } };
    int got = -2;
    for (int r = 0; r < R; r++) pick_differ += braid_tag_numbers_start(&ranks[r]) != braid_tag_numbers_start(&ranks[0]);
    for (int r = 0; r < R; r++) {
        unsigned n = 0;
        int rc = braid_tag_numbers_agree(&ranks[r], BRAID_TAG_SEQ_PERSISTENT, or_before, &p, &n);
        int mine = BRAID_OK == rc ? (int)n : BRAID_ERR_ARG == rc ? -1 : -3;
        pick_differ += r > 0 && mine != got;   /* the same on every rank */
        got = mine;
        p.taken[r] = BRAID_OK == rc ? n : UINT_MAX;   /* UINT_MAX: in no window */
        p.done = r + 1;
    }
    return got;
}

START_TEST(test_persistent_numbers)
{
    enum { R = 3, SPACE = BRAID_TAG_SEQ_PERSISTENT };
    braid_tag_numbers_t ranks[R];
    for (int r = 0; r < R; r++) ck_assert_int_eq(braid_tag_numbers_init(&ranks[r], SPACE), BRAID_OK);
    /* ranks free requests at different times (MPI_Request_free is local):
     * a number still held by any rank is never handed out again */
    static unsigned char holders[SPACE];   /* bit r: rank r holds it */
    unsigned lcg = 12345;
    for (int k = 0; k < 2 * SPACE; k++) {   /* round the space once more */
        int n = pick(ranks, R);
        if (n < 0 || 0 != holders[n])   /* none free, or one still held */
            ck_abort_msg("pick %d: number %d (held by ranks 0x%x)", k, n, n < 0 ? 0u : holders[n]);
        holders[n] = (1u << R) - 1;
        /* free a random earlier number on a random rank */
        lcg = lcg * 1103515245u + 12345u;
        unsigned old = (lcg >> 8) % SPACE, r = (lcg >> 24) % R;
        if (holders[old] & (1u << r)) {
            braid_tag_numbers_give(&ranks[r], old);
            holders[old] &= (unsigned char)~(1u << r);
        }
        /* and most of what is held, on every rank */
        if (k % 3) {
            for (int q = 0; q < R; q++) braid_tag_numbers_give(&ranks[q], (unsigned)n);
            holders[n] = 0;
        }
    }
    for (int r = 0; r < R; r++) braid_tag_numbers_release(&ranks[r]);
    for (int r = 0; r < R; r++) ck_assert_int_eq(braid_tag_numbers_init(&ranks[r], SPACE), BRAID_OK);
    /* every number held somewhere but one: that one comes out on all */
    unsigned out_of_order = 0;
    for (unsigned n = 0; n < SPACE; n++) out_of_order += pick(ranks, R) != (int)n;
    ck_assert_uint_eq(out_of_order, 0);
    for (unsigned n = 0; n < SPACE; n++)
        for (int r = 0; r < R; r++)
            if ((unsigned)r != n % R || 4321 == n) braid_tag_numbers_give(&ranks[r], n);
    ck_assert_int_eq(pick(ranks, R), 4321);
    for (int r = 0; r < R; r++) ck_assert(braid_tag_numbers_held(&ranks[r], 4321));
    /* none free: an error on every rank alike */
    ck_assert_int_eq(pick(ranks, R), -1);
    ck_assert_uint_eq(pick_differ, 0);
    for (int r = 0; r < R; r++) braid_tag_numbers_release(&ranks[r]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tag");
    TCase *tc = unit_tcase(s, "layout", 60);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_fields_cover_64_bits);
    tcase_add_test(tc, test_unique);
    tcase_add_test(tc, test_step_folds);
    tcase_add_test(tc, test_persistent_numbers);
    return unit_run_suite(s);
}
