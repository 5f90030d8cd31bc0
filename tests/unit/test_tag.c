/* test_tag.c - braid's UCX tag layout: round trip, field isolation and
 * uniqueness across communicators, collectives, steps and sources. */
#include "unit_common.h"
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
    for (size_t i = 1; i < n; i++) ck_assert(tags[i] != tags[i - 1]);
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

int main(void)
{
    Suite *s = suite_create("tag");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_fields_cover_64_bits);
    tcase_add_test(tc, test_unique);
    tcase_add_test(tc, test_step_folds);
    suite_add_tcase(s, tc);
    return unit_run_suite(s);
}
