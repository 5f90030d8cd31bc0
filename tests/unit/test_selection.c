/*
 * test_selection.c - braid's selection table: the rules parser on every
 * syntax form and every kind of error (exact messages: file, line, token),
 * lookup at range edges, gaps, precedence forced > rules file > built-in,
 * coverage of the built-in table, print -> parse round trips, and robustness
 * on garbage input.
 */
#include "unit_common.h"
#include "braid_select.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ERRLEN 512

static int parse(const char *text, braid_table_t *t, char *err)
{
    return braid_rules_parse_string(text, "rules.txt", t, err, ERRLEN);
}

static int same_rule(const braid_rule_t *a, const braid_rule_t *b)
{
    return a->coll == b->coll && a->comm_min == b->comm_min && a->comm_max == b->comm_max
        && a->msg_min == b->msg_min && a->msg_max == b->msg_max && a->choice.alg == b->choice.alg
        && a->choice.params.chunk_bytes == b->choice.params.chunk_bytes
        && a->choice.params.bcube_base == b->choice.params.bcube_base;
}

/* ------------------------------------------------------------------ */
/* valid files                                                         */
/* ------------------------------------------------------------------ */

static const char *valid_text =
    "# a comment line\n"
    "\n"
    "   \t  \n"
    "allreduce      2           0-64K-1      halving_doubling   # trailing comment\n"
    "allreduce      2-8         64K-inf      ring_chunked       chunk=1M\n"
    "allreduce\t9-inf\t*\tbcube\tbase=4\r\n"
    "bcast          *           0-8K         binomial\n"
    "reduce         3           17           dbtree             chunk=512k\n"
    "reduce         4-INF       1g-2G        binomial\n"
    "barrier        5-5         0            dissemination\n"
    "allgather      1K-2k       1m-inf       ring\n"
    "reduce_scatter 16          0-4096       auto               chunk=3M base=8\n"
    "allreduce      1           inf          ring\n"
    "allgather      2-3         0-10-3       recursive_doubling";  /* no final newline */

START_TEST(test_parse_valid_forms)
{
    braid_table_t t;
    char err[ERRLEN];
    ck_assert_msg(0 == parse(valid_text, &t, err), "%s", err);
    ck_assert_str_eq(err, "");
    ck_assert_str_eq(t.source, "rules.txt");
    ck_assert_uint_eq(t.nrules, 11);
    /* sorted by (collective, comm_min, msg_min): barrier, bcast, allreduce x4, reduce x2,
     * reduce_scatter, allgather x2 */
    const size_t K = 1024, M = K * K, G = K * M;
    const braid_rule_t want[] = {
        { BRAID_COLL_BARRIER, 5, 5, 0, 0, { BRAID_BARRIER_DISSEMINATION, { 0, 0 } }, 10 },
        { BRAID_COLL_BCAST, 1, INT_MAX, 0, 8 * K, { BRAID_BCAST_BINOMIAL, { 0, 0 } }, 7 },
        { BRAID_COLL_ALLREDUCE, 1, 1, SIZE_MAX, SIZE_MAX, { BRAID_ALLREDUCE_RING, { 0, 0 } }, 13 },
        { BRAID_COLL_ALLREDUCE, 2, 2, 0, 64 * K - 1,
          { BRAID_ALLREDUCE_HALVING_DOUBLING, { 0, 0 } }, 4 },
        { BRAID_COLL_ALLREDUCE, 2, 8, 64 * K, SIZE_MAX,
          { BRAID_ALLREDUCE_RING_CHUNKED, { M, 0 } }, 5 },
        { BRAID_COLL_ALLREDUCE, 9, INT_MAX, 0, SIZE_MAX, { BRAID_ALLREDUCE_BCUBE, { 0, 4 } }, 6 },
        { BRAID_COLL_REDUCE, 3, 3, 17, 17, { BRAID_REDUCE_DBTREE, { 512 * K, 0 } }, 8 },
        { BRAID_COLL_REDUCE, 4, INT_MAX, G, 2 * G, { BRAID_REDUCE_BINOMIAL, { 0, 0 } }, 9 },
        { BRAID_COLL_REDUCE_SCATTER, 16, 16, 0, 4096, { BRAID_ALG_AUTO, { 3 * M, 8 } }, 12 },
        { BRAID_COLL_ALLGATHER, 2, 3, 0, 7, { BRAID_ALLGATHER_RECURSIVE_DOUBLING, { 0, 0 } }, 14 },
        { BRAID_COLL_ALLGATHER, 1024, 2048, M, SIZE_MAX, { BRAID_ALLGATHER_RING, { 0, 0 } }, 11 },
    };
    int bad = -1;
    for (size_t i = 0; i < t.nrules && bad < 0; i++)
        if (!same_rule(&t.rules[i], &want[i]) || t.rules[i].line != want[i].line) bad = (int)i;
    ck_assert_msg(bad < 0, "rule %d differs (line %d)", bad, bad >= 0 ? t.rules[bad].line : 0);
    braid_table_free(&t);
    ck_assert_ptr_null(t.rules);
    ck_assert_ptr_null(t.source);
    braid_table_free(&t); /* twice is harmless */
    braid_table_free(NULL);
}
END_TEST

START_TEST(test_parse_empty)
{
    braid_table_t t;
    char err[ERRLEN];
    const char *texts[] = { "", "\n\n", "# only a comment\n   # another\n", "\t \r\n",
                            "\xef\xbb\xbf# a byte order mark\n" };
    size_t ok = 0;
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        if (0 == parse(texts[i], &t, err) && 0 == t.nrules && 0 == strcmp(t.source, "rules.txt"))
            ok++;
        braid_table_free(&t);
    }
    ck_assert_uint_eq(ok, sizeof texts / sizeof *texts);
    ck_assert_int_eq(braid_rules_parse_string(NULL, NULL, &t, err, ERRLEN), 0);
    ck_assert_str_eq(t.source, "rules");
    braid_table_free(&t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* errors: exact messages                                              */
/* ------------------------------------------------------------------ */

/* names_of: 1 + the collective whose algorithm names, as the parser lists
 * them (braid_alg_names_joined: "auto | ring | ..."), take the place of %s
 * in msg; 0: msg is the whole message */
typedef struct { const char *text, *msg; int names_of; } err_case_t;

/* the valid names the parser lists for coll */
static const char *valid_names(braid_coll_t coll)
{
    static char buf[BRAID_COLL_N][256];
    braid_alg_names_joined(coll, buf[coll], sizeof buf[coll]);
    return buf[coll];
}

/* the whole message of case c */
static void expected_msg(const err_case_t *c, char *out, size_t len)
{
    if (c->names_of) snprintf(out, len, c->msg, valid_names((braid_coll_t)(c->names_of - 1)));
    else snprintf(out, len, "%s", c->msg);
}

static const err_case_t err_cases[] = {
    { "allreduce 2 * ring\n\n# x\n\n\n\nallreduce 3 * rng\n",
      "rules.txt:7: unknown algorithm 'rng' for allreduce; valid: %s", 1 + BRAID_COLL_ALLREDUCE },
    { "\n\nbcast 2 12Q binomial\n",
      "rules.txt:3: bad size '12Q' (expected a number with optional K/M/G suffix, 'inf' or '*')" },
    { "bcast 2 1K-12Q binomial",
      "rules.txt:1: bad size '12Q' in '1K-12Q' (expected a number with optional K/M/G suffix, "
      "'inf' or '*')" },
    { "bcast 2 -5 binomial",
      "rules.txt:1: bad size '' in '-5' (expected a number with optional K/M/G suffix, 'inf' or "
      "'*')" },
    { "bcast 2 1KB binomial",
      "rules.txt:1: bad size '1KB' (expected a number with optional K/M/G suffix, 'inf' or '*')" },
    { "bcast 2 99999999999999999999 binomial",
      "rules.txt:1: bad size '99999999999999999999' (too large; write 'inf' for no upper bound)" },
    { "bcast 2 16777216T binomial",
      "rules.txt:1: bad size '16777216T' (expected a number with optional K/M/G suffix, 'inf' "
      "or '*')" },
    { "allreduce 0 * ring",
      "rules.txt:1: bad communicator size '0' (expected an integer >= 1 with optional K/M/G "
      "suffix, 'inf' or '*')" },
    { "allreduce x-4 * ring",
      "rules.txt:1: bad communicator size 'x' in 'x-4' (expected an integer >= 1 with optional "
      "K/M/G suffix, 'inf' or '*')" },
    { "allreduce 4G * ring",
      "rules.txt:1: bad communicator size '4G' (larger than 2147483647; write 'inf' for no "
      "upper bound)" },
    { "allreduce 2 64K-1K ring", "rules.txt:1: bad msg_size range '64K-1K' (min > max)" },
    { "allreduce 8-2 * ring", "rules.txt:1: bad comm_size range '8-2' (min > max)" },
    { "allreduce 2 inf-0 ring", "rules.txt:1: bad msg_size range 'inf-0' (min > max)" },
    { "allreduce 2 0-inf-1 ring",
      "rules.txt:1: bad size 'inf-1' in '0-inf-1' (nothing can be subtracted from 'inf')" },
    { "allreduce 2 0-1-2 ring", "rules.txt:1: bad size '1-2' in '0-1-2' (less than 0)" },
    { "allreduce 2-1-1 * ring",
      "rules.txt:1: bad communicator size '1-1' in '2-1-1' (less than 1)" },
    { "allreduce 2 0-1K-x ring",
      "rules.txt:1: bad size 'x' in '0-1K-x' (expected a number with optional K/M/G suffix "
      "after '1K-')" },
    { "allreduc 2 * ring",
      "rules.txt:1: unknown collective 'allreduc'; valid: barrier | bcast | allreduce | reduce | "
      "reduce_scatter | allgather | alltoall | scan | exscan | gather | scatter | "
      "allgatherv | alltoallv | gatherv | scatterv" },
    { "barrier * * ring",
      "rules.txt:1: unknown algorithm 'ring' for barrier; valid: %s", 1 + BRAID_COLL_BARRIER },
    { "allreduce 2 * ring_chunked size=1M",
      "rules.txt:1: unknown key 'size' in 'size=1M'; valid: chunk | base" },
    { "allreduce 2 * ring_chunked =1M",
      "rules.txt:1: unknown key '' in '=1M'; valid: chunk | base" },
    { "allreduce 2 * ring_chunked chunk",
      "rules.txt:1: expected key=value after the algorithm, got 'chunk'" },
    { "allreduce 2 * ring_chunked chunk=0",
      "rules.txt:1: bad value '0' for chunk (expected a size in bytes from 1 to 2147483647 with "
      "optional K/M/G suffix)" },
    { "allreduce 2 * ring_chunked chunk=inf",
      "rules.txt:1: bad value 'inf' for chunk (expected a size in bytes from 1 to 2147483647 with "
      "optional K/M/G suffix)" },
    { "allreduce 2 * ring_chunked chunk=",
      "rules.txt:1: bad value '' for chunk (expected a size in bytes from 1 to 2147483647 with "
      "optional K/M/G suffix)" },
    /* the fuzzer's input: 2^64-1 with leading zeros once parsed and printed
     * as chunk=inf, which does not parse */
    { "allreduce 2 * ring_chunked chunk=000018446744073709551615",
      "rules.txt:1: bad value '000018446744073709551615' for chunk (expected a size in bytes "
      "from 1 to 2147483647 with optional K/M/G suffix)" },
    { "allreduce 2 * ring_chunked chunk=2G",
      "rules.txt:1: bad value '2G' for chunk (expected a size in bytes from 1 to 2147483647 "
      "with optional K/M/G suffix)" },
    { "allreduce 2 * ring_chunked chunk=2147483648",
      "rules.txt:1: bad value '2147483648' for chunk (expected a size in bytes from 1 to "
      "2147483647 with optional K/M/G suffix)" },
    { "allreduce 2 * ring_chunked chunk=17179869184G",
      "rules.txt:1: bad value '17179869184G' for chunk (expected a size in bytes from 1 to "
      "2147483647 with optional K/M/G suffix)" },
    { "allreduce 2 * ring_chunked chunk=99999999999999999999",
      "rules.txt:1: bad value '99999999999999999999' for chunk (expected a size in bytes from 1 "
      "to 2147483647 with optional K/M/G suffix)" },
    { "allreduce 2 * ring_chunked chunk=1M-1",
      "rules.txt:1: bad value '1M-1' for chunk (expected a size in bytes from 1 to 2147483647 "
      "with optional K/M/G suffix)" },
    { "allreduce 2 * bcube base=0004x",
      "rules.txt:1: bad value '0004x' for base (expected an integer from 2 to 1024, or auto)" },
    { "allreduce 2 * bcube base=2K",
      "rules.txt:1: bad value '2K' for base (expected an integer from 2 to 1024, or auto)" },
    { "allreduce 2 * bcube base=inf",
      "rules.txt:1: bad value 'inf' for base (expected an integer from 2 to 1024, or auto)" },
    { "allreduce 2 * bcube base=1",
      "rules.txt:1: bad value '1' for base (expected an integer from 2 to 1024, or auto)" },
    { "allreduce 2 * bcube base=1025",
      "rules.txt:1: bad value '1025' for base (expected an integer from 2 to 1024, or auto)" },
    { "allreduce 2 * bcube base=4 base=8", "rules.txt:1: duplicate key 'base' in 'base=8'" },
    { "allreduce 2 * ring chunk=1M",
      "rules.txt:1: key 'chunk' does not apply to allreduce ring (it takes no keys)" },
    { "allreduce 2 * ring_chunked base=4",
      "rules.txt:1: key 'base' does not apply to allreduce ring_chunked (it takes: chunk)" },
    { "allreduce 2 * bcube base=4 chunk=1M x",
      "rules.txt:1: too many fields at 'x' (expected: collective comm_size msg_size algorithm "
      "and at most 2 key=value options)" },
    { "allreduce 2 *",
      "rules.txt:1: too few fields (3; expected: collective comm_size msg_size algorithm "
      "[key=value ...])" },
    { "bcast # 2 * binomial",
      "rules.txt:1: too few fields (1; expected: collective comm_size msg_size algorithm "
      "[key=value ...])" },
    { "allreduce 2 0-64K halving_doubling\nallreduce 2-8 64K-inf ring_chunked chunk=1M\n",
      "rules.txt:2: allreduce rule overlaps the rule on line 1 (comm_size 2-8 vs 2, msg_size "
      "64K-inf vs 0-64K); rows of one collective must not overlap" },
    { "bcast 1-4 * binomial\nreduce 1-4 * binomial\nbcast 4-inf 1G scatter_allgather\n",
      "rules.txt:3: bcast rule overlaps the rule on line 1 (comm_size 4-inf vs 1-4, msg_size 1G "
      "vs *); rows of one collective must not overlap" },
};

START_TEST(test_errors)
{
    const err_case_t *c = &err_cases[_i];
    braid_table_t t;
    char err[ERRLEN];
    char want[ERRLEN];
    expected_msg(c, want, sizeof want);
    memset(&t, 0x5a, sizeof t);
    ck_assert_int_eq(parse(c->text, &t, err), -1);
    ck_assert_str_eq(err, want);
    /* on error the table is left empty */
    ck_assert(NULL == t.rules && 0 == t.nrules && NULL == t.source);
    braid_table_free(&t);
}
END_TEST

START_TEST(test_error_limits)
{
    char err[ERRLEN];
    braid_table_t t;
    /* a line of exactly the maximum length is fine, one more is not */
    size_t n = BRAID_RULES_MAX_LINE;
    char *text = malloc(2 * n + 16);
    ck_assert_ptr_nonnull(text);
    memset(text, ' ', n);
    memcpy(text, "bcast 2 * binomial", 18);
    text[n] = '\n';
    memset(text + n + 1, ' ', n + 1);
    text[2 * n + 2] = '\0';
    ck_assert_int_eq(parse(text, &t, err), -1);
    ck_assert_str_eq(err, "rules.txt:2: line too long (1025 characters; at most 1024)");
    text[n + 1] = '\0';
    ck_assert_msg(0 == parse(text, &t, err), "%s", err);
    ck_assert_uint_eq(t.nrules, 1);
    braid_table_free(&t);
    free(text);

    /* a NUL byte inside the buffer */
    const char buf[] = "bcast 2 * binomial\nbcast 3 *\0 binomial\n";
    ck_assert_int_eq(braid_rules_parse_buffer(buf, sizeof buf - 1, "r", &t, err, ERRLEN), -1);
    ck_assert_str_eq(err, "r:2: NUL byte in the line (expected text)");

    /* long tokens are quoted cut to 64 characters */
    char lt[200];
    snprintf(lt, sizeof lt, "bcast 2 * %0100d", 7);
    ck_assert_int_eq(parse(lt, &t, err), -1);
    char want[ERRLEN];
    snprintf(want, sizeof want, "rules.txt:1: unknown algorithm '"
             "0000000000000000000000000000000000000000000000000000000000000000...' for "
             "bcast; valid: %s", valid_names(BRAID_COLL_BCAST));
    ck_assert_str_eq(err, want);
    /* non-printable bytes are quoted as '?' */
    ck_assert_int_eq(parse("bcast 2 * bin\x01omial\x7f", &t, err), -1);
    snprintf(want, sizeof want, "rules.txt:1: unknown algorithm 'bin?omial?' for bcast; valid: %s",
             valid_names(BRAID_COLL_BCAST));
    ck_assert_str_eq(err, want);

    /* too many rules */
    size_t nr = BRAID_RULES_MAX_RULES + 1;
    char *many = malloc(nr * 40);
    ck_assert_ptr_nonnull(many);
    size_t off = 0;
    for (size_t i = 0; i < nr; i++)
        off += (size_t)sprintf(many + off, "bcast %zu * binomial\n", i + 1);
    ck_assert_int_eq(parse(many, &t, err), -1);
    ck_assert_str_eq(err, "rules.txt:10001: too many rules (at most 10000)");
    free(many);
}
END_TEST

START_TEST(test_error_buffer)
{
    braid_table_t t;
    char small[16];
    ck_assert_int_eq(braid_rules_parse_string("bcast 2 12Q binomial", "rules.txt", &t, small,
                                              sizeof small), -1);
    ck_assert_str_eq(small, "rules.txt:1: ba"); /* cut, NUL-terminated */
    ck_assert_int_eq(braid_rules_parse_string("bcast 2 12Q binomial", "a-very-long-file-name",
                                              &t, small, sizeof small), -1);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert_int_eq(braid_rules_parse_string("bcast 2 12Q binomial", "r", &t, NULL, 0), -1);
    ck_assert_int_eq(braid_rules_parse_string("bcast 2 12Q binomial", "r", &t, small, 0), -1);
    ck_assert_int_eq(braid_rules_parse_string("bcast 2 * binomial", "r", NULL, small,
                                              sizeof small), -1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* files                                                               */
/* ------------------------------------------------------------------ */

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
}

START_TEST(test_parse_file)
{
    char dir[] = "/tmp/braid_rules_XXXXXX", path[64], err[ERRLEN];
    braid_table_t t;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/rules.txt", dir);

    write_file(path, valid_text, strlen(valid_text));
    ck_assert_msg(0 == braid_rules_parse_file(path, &t, err, ERRLEN), "%s", err);
    ck_assert_uint_eq(t.nrules, 11);
    ck_assert_str_eq(t.source, path);
    braid_table_free(&t);

    const char *bad = "bcast * * binomial\nreduce 2 * binomal\n";
    write_file(path, bad, strlen(bad));
    ck_assert_int_eq(braid_rules_parse_file(path, &t, err, ERRLEN), -1);
    char want[ERRLEN];
    snprintf(want, sizeof want, "%s:2: unknown algorithm 'binomal' for reduce; valid: %s", path,
             valid_names(BRAID_COLL_REDUCE));
    ck_assert_str_eq(err, want);

    /* a NUL byte in a file is an error, not the end of the text */
    write_file(path, "bcast * * binomial\0garbage\n", 27);
    ck_assert_int_eq(braid_rules_parse_file(path, &t, err, ERRLEN), -1);
    snprintf(want, sizeof want, "%s:1: NUL byte in the line (expected text)", path);
    ck_assert_str_eq(err, want);

    /* too large */
    size_t big = (size_t)BRAID_RULES_MAX_FILE + 1;
    char *text = malloc(big);
    ck_assert_ptr_nonnull(text);
    memset(text, '\n', big);
    write_file(path, text, big);
    free(text);
    ck_assert_int_eq(braid_rules_parse_file(path, &t, err, ERRLEN), -1);
    snprintf(want, sizeof want, "%s: rules file too large (more than 4194304 bytes)", path);
    ck_assert_str_eq(err, want);
    unlink(path);

    /* missing, a directory, no path */
    ck_assert_int_eq(braid_rules_parse_file(path, &t, err, ERRLEN), -1);
    snprintf(want, sizeof want, "%s: cannot open the rules file (No such file or directory)",
             path);
    ck_assert_str_eq(err, want);
    ck_assert(NULL == t.rules && NULL == t.source);
    ck_assert_int_eq(braid_rules_parse_file(dir, &t, err, ERRLEN), -1);
    snprintf(want, sizeof want, "%s: cannot read the rules file (Is a directory)", dir);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(braid_rules_parse_file(NULL, &t, err, ERRLEN), -1);
    ck_assert_str_eq(err, "(null): no rules file given");
    rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------------ */
/* lookup                                                              */
/* ------------------------------------------------------------------ */

START_TEST(test_range_edges)
{
    braid_table_t t;
    char err[ERRLEN];
    ck_assert_msg(0 == parse("allreduce 4-8 1K-64K-1 ring\n", &t, err), "%s", err);
    const braid_table_t *bt = &t;
    /* message edges at P inside */
    ck_assert_ptr_null(braid_table_find(bt, BRAID_COLL_ALLREDUCE, 6, 1023));
    ck_assert_ptr_nonnull(braid_table_find(bt, BRAID_COLL_ALLREDUCE, 6, 1024));
    ck_assert_ptr_nonnull(braid_table_find(bt, BRAID_COLL_ALLREDUCE, 6, 65535));
    ck_assert_ptr_null(braid_table_find(bt, BRAID_COLL_ALLREDUCE, 6, 65536));
    /* communicator edges */
    ck_assert_ptr_null(braid_table_find(bt, BRAID_COLL_ALLREDUCE, 3, 2048));
    ck_assert_ptr_nonnull(braid_table_find(bt, BRAID_COLL_ALLREDUCE, 4, 2048));
    ck_assert_ptr_nonnull(braid_table_find(bt, BRAID_COLL_ALLREDUCE, 8, 2048));
    ck_assert_ptr_null(braid_table_find(bt, BRAID_COLL_ALLREDUCE, 9, 2048));
    /* corners */
    ck_assert_ptr_nonnull(braid_table_find(bt, BRAID_COLL_ALLREDUCE, 4, 1024));
    ck_assert_ptr_nonnull(braid_table_find(bt, BRAID_COLL_ALLREDUCE, 8, 65535));
    /* another collective does not match */
    ck_assert_ptr_null(braid_table_find(bt, BRAID_COLL_REDUCE, 6, 2048));
    /* through braid_select: inside the row the file's choice, outside the built-in one */
    ck_assert_int_eq(braid_select(BRAID_COLL_ALLREDUCE, 4, 1024, 0, bt).alg,
                     BRAID_ALLREDUCE_RING);
    ck_assert_int_eq(braid_select(BRAID_COLL_ALLREDUCE, 8, 65535, 0, bt).alg,
                     BRAID_ALLREDUCE_RING);
    ck_assert_int_eq(braid_select(BRAID_COLL_ALLREDUCE, 4, 1023, 0, bt).alg,
                     braid_select(BRAID_COLL_ALLREDUCE, 4, 1023, 0, NULL).alg);
    ck_assert_int_eq(braid_select(BRAID_COLL_ALLREDUCE, 9, 2048, 0, bt).alg,
                     braid_select(BRAID_COLL_ALLREDUCE, 9, 2048, 0, NULL).alg);
    braid_table_free(&t);

    /* open ends */
    ck_assert_msg(0 == parse("bcast 2-inf 1G-inf scatter_allgather\nbcast 1 0 one_to_all\n", &t,
                             err), "%s", err);
    ck_assert_ptr_nonnull(braid_table_find(&t, BRAID_COLL_BCAST, INT_MAX, SIZE_MAX));
    ck_assert_ptr_nonnull(braid_table_find(&t, BRAID_COLL_BCAST, 2, (size_t)1 << 30));
    ck_assert_ptr_null(braid_table_find(&t, BRAID_COLL_BCAST, 2, ((size_t)1 << 30) - 1));
    ck_assert_ptr_nonnull(braid_table_find(&t, BRAID_COLL_BCAST, 1, 0));
    ck_assert_ptr_null(braid_table_find(&t, BRAID_COLL_BCAST, 1, 1));
    ck_assert_ptr_null(braid_table_find(&t, BRAID_COLL_BCAST, 0, 0));
    ck_assert_ptr_null(braid_table_find(NULL, BRAID_COLL_BCAST, 1, 0));
    braid_table_free(&t);
}
END_TEST

START_TEST(test_gaps_fall_through)
{
    braid_table_t t;
    char err[ERRLEN];
    /* a gap 4K..1M-1 for P = 2 and no rows for P > 2 */
    ck_assert_msg(0 == parse("allreduce 2 0-4K-1 ring\nallreduce 2 1M-inf dbtree\n", &t, err),
                  "%s", err);
    size_t sizes[] = { 4096, 65536, ((size_t)1 << 20) - 1 };
    int mismatches = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (int P = 2; P <= 4; P++) {
            braid_choice_t u = braid_select(BRAID_COLL_ALLREDUCE, P, sizes[i], 0, &t);
            const braid_rule_t *b = braid_table_find(braid_table_builtin(),
                                                     BRAID_COLL_ALLREDUCE, P, sizes[i]);
            if (NULL == b || u.alg != b->choice.alg
                || u.params.bcube_base != b->choice.params.bcube_base)
                mismatches++;
        }
    ck_assert_int_eq(mismatches, 0);
    ck_assert_int_eq(braid_select(BRAID_COLL_ALLREDUCE, 2, 4095, 0, &t).alg, BRAID_ALLREDUCE_RING);
    ck_assert_int_eq(braid_select(BRAID_COLL_ALLREDUCE, 2, (size_t)1 << 20, 0, &t).alg,
                     BRAID_ALLREDUCE_DBTREE);
    /* other collectives use the built-in table */
    ck_assert_int_eq(braid_select(BRAID_COLL_BARRIER, 2, 0, 0, &t).alg,
                     braid_select(BRAID_COLL_BARRIER, 2, 0, 0, NULL).alg);
    braid_table_free(&t);
}
END_TEST

START_TEST(test_precedence)
{
    braid_table_t t;
    char err[ERRLEN];
    ck_assert_msg(0 == parse("allreduce * 0-1M-1 ring_chunked chunk=64K\n"
                             "allreduce * 1M-16G-1 bcube base=3\n"
                             "allreduce * 16G-inf auto chunk=2M base=8\n", &t, err), "%s", err);
    /* the built-in table picks halving_doubling at P = 2, 1K (measured) */
    ck_assert_int_eq(braid_select(BRAID_COLL_ALLREDUCE, 2, 1024, 0, NULL).alg,
                     BRAID_ALLREDUCE_HALVING_DOUBLING);
    /* the file beats the built-in table, with its options */
    braid_choice_t c = braid_select(BRAID_COLL_ALLREDUCE, 2, 1024, 0, &t);
    ck_assert_int_eq(c.alg, BRAID_ALLREDUCE_RING_CHUNKED);
    ck_assert_uint_eq(c.params.chunk_bytes, 65536);
    ck_assert_int_eq(c.params.bcube_base, 0);
    c = braid_select(BRAID_COLL_ALLREDUCE, 2, (size_t)8 << 20, 0, &t);
    ck_assert_int_eq(c.alg, BRAID_ALLREDUCE_BCUBE);
    ck_assert_int_eq(c.params.bcube_base, 3);
    /* forcing beats the file, with default options */
    c = braid_select(BRAID_COLL_ALLREDUCE, 2, 1024, BRAID_ALLREDUCE_DBTREE, &t);
    ck_assert_int_eq(c.alg, BRAID_ALLREDUCE_DBTREE);
    ck_assert_uint_eq(c.params.chunk_bytes, 0);
    ck_assert_int_eq(c.params.bcube_base, 0);
    c = braid_select(BRAID_COLL_ALLREDUCE, 2, 1024, BRAID_ALLREDUCE_RING, NULL);
    ck_assert_int_eq(c.alg, BRAID_ALLREDUCE_RING);
    /* invalid forced ids are ignored */
    ck_assert_int_eq(braid_select(BRAID_COLL_ALLREDUCE, 2, 1024, BRAID_ALLREDUCE_NALGS, &t).alg,
                     BRAID_ALLREDUCE_RING_CHUNKED);
    ck_assert_int_eq(braid_select(BRAID_COLL_ALLREDUCE, 2, 1024, -1, &t).alg,
                     BRAID_ALLREDUCE_RING_CHUNKED);
    /* an auto row: the built-in algorithm with the row's options */
    c = braid_select(BRAID_COLL_ALLREDUCE, 2, SIZE_MAX, 0, &t);
    ck_assert_int_eq(c.alg, braid_select(BRAID_COLL_ALLREDUCE, 2, SIZE_MAX, 0, NULL).alg);
    ck_assert_uint_eq(c.params.chunk_bytes, (size_t)2 << 20);
    ck_assert_int_eq(c.params.bcube_base, 8);
    /* an invalid collective */
    ck_assert_int_eq(braid_select(BRAID_COLL_N, 2, 0, 0, &t).alg, BRAID_ALG_AUTO);
    ck_assert_int_eq(braid_select((braid_coll_t)-1, 2, 0, 1, NULL).alg, BRAID_ALG_AUTO);
    braid_table_free(&t);
    /* base=auto: bcube's two groups from the factors of P, printed back as auto */
    ck_assert_msg(0 == parse("allreduce 64-inf * bcube base=auto\n", &t, err), "%s", err);
    c = braid_select(BRAID_COLL_ALLREDUCE, 100, 1024, 0, &t);
    ck_assert_int_eq(c.alg, BRAID_ALLREDUCE_BCUBE);
    ck_assert_int_eq(c.params.bcube_base, -1);
    char line[BRAID_TABLE_LINE_MAX];
    bool printed = false;
    for (size_t i = 0; i < braid_table_nlines(&t); i++) {
        braid_table_line(&t, i, line, sizeof line);
        printed |= NULL != strstr(line, "bcube              base=auto");
    }
    ck_assert(printed);
    braid_table_free(&t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* the built-in table                                                  */
/* ------------------------------------------------------------------ */

static int nalgs(braid_coll_t coll)
{
    int n = 0;
    while (braid_alg_names(coll)[n]) n++;
    return n;
}

START_TEST(test_builtin_covers)
{
    const braid_table_t *b = braid_table_builtin();
    ck_assert_ptr_eq(b, braid_table_builtin());
    ck_assert_str_eq(b->source, "built-in");
    ck_assert_uint_gt(b->nrules, BRAID_COLL_N);
    size_t sizes[3 * 41 + 1], ns = 0;
    for (int e = 0; e <= 40; e++) {
        size_t s = (size_t)1 << e;
        sizes[ns++] = s - 1;
        sizes[ns++] = s;
        sizes[ns++] = s + 1;
    }
    sizes[ns++] = SIZE_MAX;
    long missing = 0, invalid = 0, first_P = 0;
    for (int c = 0; c < BRAID_COLL_N; c++)
        for (int P = 1; P <= 4096; P++)
            for (size_t i = 0; i < ns; i++) {
                const braid_rule_t *r = braid_table_find(b, (braid_coll_t)c, P, sizes[i]);
                braid_choice_t ch = braid_select((braid_coll_t)c, P, sizes[i], 0, NULL);
                if (NULL == r) {
                    if (!missing) first_P = P;
                    missing++;
                } else if (r->choice.alg <= 0 || r->choice.alg >= nalgs((braid_coll_t)c)
                           || ch.alg != r->choice.alg) {
                    invalid++;
                }
            }
    ck_assert_msg(0 == missing, "%ld holes, first at P = %ld", missing, first_P);
    ck_assert_int_eq(invalid, 0);
    /* huge communicators too */
    int big[] = { 4097, 65536, 1 << 20, INT_MAX - 1, INT_MAX };
    for (int c = 0; c < BRAID_COLL_N; c++)
        for (size_t k = 0; k < sizeof big / sizeof *big; k++)
            if (NULL == braid_table_find(b, (braid_coll_t)c, big[k], 12345)) missing++;
    ck_assert_int_eq(missing, 0);
    /* a communicator size the table does not know still gets an algorithm */
    ck_assert_int_gt(braid_select(BRAID_COLL_ALLREDUCE, 0, 8, 0, NULL).alg, 0);
}
END_TEST

/* The built-in rows stay close to the cost model they are derived from
 * (catches a typo such as a swapped algorithm). P = 2, 4, 8 and 16 are
 * left to measurement (their rows come from runs on real nodes and may
 * pick algorithms the model does not consider); the bands make the other
 * rows at most ~2.5x off. */
START_TEST(test_builtin_follows_model)
{
    int worse = 0;
    double worst = 1;
    for (int c = 0; c < BRAID_COLL_N; c++)
        for (int P = 3; P <= 1024; P += (P < 64 ? 1 : 61))
            for (int e = -1; e <= 32; e++) {
                size_t S = e < 0 ? 0 : (size_t)1 << e;
                double best = -1;
                for (int a = 1; a < nalgs((braid_coll_t)c); a++) {
                    double t = braid_model_time_us((braid_coll_t)c, a, P, S);
                    if (t >= 0 && (best < 0 || t < best)) best = t;
                }
                if (4 == P || 8 == P || 16 == P) continue;
                int alg = braid_select((braid_coll_t)c, P, S, 0, NULL).alg;
                double t = braid_model_time_us((braid_coll_t)c, alg, P, S);
                if (t < 0 || t > 3.0 * best) worse++;
                if (t / best > worst) worst = t / best;
            }
    ck_assert_msg(0 == worse, "%d points more than 3x off the model (worst %.2f)", worse, worst);
}
END_TEST

/* ------------------------------------------------------------------ */
/* printing                                                            */
/* ------------------------------------------------------------------ */

static char *print_to_string(const braid_table_t *t)
{
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    braid_table_print(t, f);
    long n = ftell(f);
    ck_assert_int_gt(n, 0);
    char *s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    rewind(f);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static void check_round_trip(const braid_table_t *t)
{
    char err[ERRLEN];
    braid_table_t back;
    char *text = print_to_string(t);
    ck_assert_msg(0 == braid_rules_parse_string(text, "printed", &back, err, ERRLEN), "%s\n%s",
                  err, text);
    ck_assert_uint_eq(back.nrules, t->nrules);
    size_t differ = 0;
    for (size_t i = 0; i < t->nrules; i++)
        if (!same_rule(&t->rules[i], &back.rules[i])) differ++;
    ck_assert_msg(0 == differ, "%zu rows differ after print -> parse:\n%s", differ, text);
    /* one line per row plus two header comment lines */
    size_t lines = 0;
    for (const char *p = text; *p; p++) lines += '\n' == *p;
    ck_assert_uint_eq(lines, t->nrules + 2);
    braid_table_free(&back);
    free(text);
}

START_TEST(test_print_round_trip)
{
    check_round_trip(braid_table_builtin());

    braid_table_t t;
    char err[ERRLEN];
    ck_assert_msg(0 == parse(valid_text, &t, err), "%s", err);
    check_round_trip(&t);
    braid_table_free(&t);

    ck_assert_msg(0 == parse("allreduce 3-7 1535-1536 dbtree chunk=1537\n"
                             "allreduce 8 1023-1K-1 ring\n"
                             "allreduce inf 5G-inf bcube base=1024\n"
                             "bcast 1-inf 0-0 binomial\n"
                             "reduce 2 inf-inf binomial\n", &t, err), "%s", err);
    check_round_trip(&t);
    char *text = print_to_string(&t);
    ck_assert_msg(NULL != strstr(text, "allreduce        3-7         1535-1536       dbtree"
                                       "             chunk=1537\n"), "%s", text);
    ck_assert_msg(NULL != strstr(text, "allreduce        inf         5G-inf          bcube"), "%s",
                  text);
    ck_assert_msg(NULL != strstr(text, "\nbcast            *           0               binomial\n"),
                  "%s", text);
    ck_assert_msg(0 == strncmp(text, "# braid selection table: rules.txt\n", 35), "%s", text);
    free(text);
    braid_table_free(&t);

    /* line by line: the same text */
    ck_assert_msg(0 == parse(valid_text, &t, err), "%s", err);
    text = print_to_string(&t);
    ck_assert_uint_eq(braid_table_nlines(&t), t.nrules + 2);
    char joined[4096] = "", line[256];
    for (size_t i = 0; i < braid_table_nlines(&t); i++) {
        braid_table_line(&t, i, line, sizeof line);
        strcat(joined, line);
        strcat(joined, "\n");
    }
    ck_assert_str_eq(joined, text);
    braid_table_line(&t, 0, line, 12);
    ck_assert_str_eq(line, "# braid sel");
    braid_table_line(&t, t.nrules + 2, line, sizeof line);
    ck_assert_str_eq(line, "");
    free(text);
    braid_table_free(&t);

    /* an empty table prints its header only */
    ck_assert_int_eq(parse("", &t, err), 0);
    check_round_trip(&t);
    braid_table_free(&t);
}
END_TEST

/* Every value at the edges of every field and option parses, prints and
 * parses back to the same rows: leading zeros, suffixes, the largest
 * values of each field, 'inf', ranges ending one below a unit. */
START_TEST(test_round_trip_edges)
{
    static const char *const rows[] = {
        /* the fuzzer's crash, at the largest chunk that parses */
        "allreduce 2 * ring_chunked chunk=0002147483647\n",
        "allreduce 2 * ring_chunked chunk=2097151K\n",
        "allreduce 2 * ring_chunked chunk=1\n",
        "allreduce 2 * ring_chunked chunk=1G\n",
        "allreduce 2 * ring_chunked chunk=01k\n",
        "allreduce 2 * dbtree chunk=2047M\n",
        "allreduce 2 * auto chunk=3M base=auto\n",
        "allreduce 2 * auto base=1024\n",
        "allreduce 2 * bcube base=002\n",
        "allreduce 2 * halving_doubling chunk=4K\n",
        "reduce_scatter 2 * ring chunk=5\n",
        "allgather 2 * ring chunk=1536\n",
        "bcast 2 * dbtree chunk=64K\n",
        "reduce 2 * dbtree chunk=7\n",
        /* sizes: every number that fits size_t, with and without suffixes */
        "allreduce 2 018446744073709551615 ring\n",
        "allreduce 2 18446744073709551614 ring\n",
        "allreduce 2 0-18446744073709551614 ring\n",
        "allreduce 2 18446744073709551615-inf ring\n",
        "allreduce 2 17179869183G-inf ring\n",
        "allreduce 2 0-17179869183G-1 ring\n",
        "allreduce 2 0-18014398509481983K-1 ring\n",
        "allreduce 2 0-16777215M-0 ring\n",
        "allreduce 2 1023-1K-1 ring\n",
        "allreduce 2 0-0 ring\n",
        "allreduce 2 inf-inf ring\n",
        "allreduce 2 0-inf ring\n",
        "allreduce 2 1-inf ring\n",
        /* communicator sizes up to INT_MAX (= inf) */
        "allreduce 2147483647 * ring\n",
        "allreduce 2147483646 * ring\n",
        "allreduce 1-2147483646 * ring\n",
        "allreduce 1-2147483647 * ring\n",
        "allreduce 1K-2147483646 * ring\n",
        "allreduce 0001-0002 * ring\n",
        "allreduce 1-inf * ring\n",
        "allreduce 2-1M-1 * ring\n",
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        braid_table_t t, back;
        char err[ERRLEN];
        ck_assert_msg(0 == parse(rows[i], &t, err), "%s: %s", rows[i], err);
        char *text = print_to_string(&t);
        if (0 != braid_rules_parse_string(text, "printed", &back, err, ERRLEN)) {
            fprintf(stderr, "%s printed as\n%s does not parse: %s\n", rows[i], text, err);
            bad++;
        } else if (back.nrules != t.nrules || !same_rule(&t.rules[0], &back.rules[0])) {
            fprintf(stderr, "%s printed as\n%s parses to another row\n", rows[i], text);
            bad++;
        }
        braid_table_free(&back);
        braid_table_free(&t);
        free(text);
    }
    ck_assert_int_eq(bad, 0);
}
END_TEST

START_TEST(test_size_format)
{
    struct { size_t v; const char *s; } cases[] = {
        { 0, "0" }, { 1, "1" }, { 1023, "1023" }, { 1024, "1K" }, { 1536, "1536" },
        { 3 << 20, "3M" }, { (size_t)1 << 30, "1G" }, { (size_t)1 << 40, "1024G" },
        { SIZE_MAX, "inf" }, { SIZE_MAX - 1, "18446744073709551614" },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[32];
        braid_size_format(cases[i].v, out, sizeof out);
        if (strcmp(out, cases[i].s)) bad++;
    }
    ck_assert_int_eq(bad, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* the documentation's examples                                        */
/* ------------------------------------------------------------------ */

#ifdef BRAID_SRCDIR
/* the fenced blocks of libbraid/selection/RULES.md: the format example and the full
 * example parse, the overlap example fails naming both lines */
START_TEST(test_rules_md_examples)
{
    const char *path = BRAID_SRCDIR "/libbraid/selection/RULES.md";
    FILE *f = fopen(path, "rb");
    ck_assert_msg(NULL != f, "cannot open %s", path);
    static char doc[1 << 16];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = '\0';
    char *blocks[8];
    int nb = 0;
    for (char *p = strstr(doc, "\n```\n"); p && nb < 8; p = strstr(p, "\n```\n")) {
        char *start = p + 5, *end = strstr(start, "\n```\n");
        if (NULL == end) break;
        end[1] = '\0';
        blocks[nb++] = start;
        p = end + 4;
    }
    ck_assert_int_ge(nb, 4);
    braid_table_t t;
    char err[ERRLEN];
    ck_assert_msg(0 == braid_rules_parse_string(blocks[0], "RULES.md", &t, err, ERRLEN), "%s",
                  err);
    ck_assert_uint_eq(t.nrules, 4);
    braid_table_free(&t);
    ck_assert_msg(0 == braid_rules_parse_string(blocks[1], "RULES.md", &t, err, ERRLEN), "%s",
                  err);
    ck_assert_uint_eq(t.nrules, 18);
    braid_table_free(&t);
    ck_assert_int_eq(braid_rules_parse_string(blocks[3], "RULES.md", &t, err, ERRLEN), -1);
    ck_assert_str_eq(err, "RULES.md:2: allreduce rule overlaps the rule on line 1 (comm_size "
                     "2-8 vs 2, msg_size 64K-inf vs 0-64K); rows of one collective must not "
                     "overlap");
    /* every documented error message is one the parser writes: its text after
     * "rules.txt:N: " appears among the unit tests' expected messages */
    int unknown = 0;
    for (char *line = blocks[2]; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        const char *msg = strchr(line, ' ');
        int found = 0;
        for (size_t i = 0; msg && i < sizeof err_cases / sizeof *err_cases && !found; i++) {
            char want[ERRLEN];
            expected_msg(&err_cases[i], want, sizeof want);
            const char *m = strchr(want, ' ');
            found = m && 0 == strcmp(m, msg);
        }
        if (!found && strstr(line, "line too long (") == NULL) {
            fprintf(stderr, "undocumented message: %s\n", line);
            unknown++;
        }
        line = nl ? nl + 1 : NULL;
    }
    ck_assert_int_eq(unknown, 0);
}
END_TEST
#endif

/* ------------------------------------------------------------------ */
/* robustness (the fuzz target explores further)                       */
/* ------------------------------------------------------------------ */

START_TEST(test_garbage)
{
    static const char *pieces[] = { "allreduce", "bcast", "barrier", "reduce_scatter", " ", "\t",
                                    "\n", "#", "*", "-", "inf", "0", "1", "64K", "9999999999G",
                                    "=", "chunk=", "base=", "ring", "auto", "bcube", "\r",
                                    "\x01", "x", "K", "2-8", "1M-inf" };
    const size_t np = sizeof pieces / sizeof *pieces;
    unsigned seed = 12345;
    int ok = 0, errors = 0, bad_err = 0;
    char text[512], err[ERRLEN];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = 0;
        int n = 1 + iter % 40;
        for (int k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            const char *p = pieces[(seed >> 16) % np];
            size_t pl = strlen(p);
            if (len + pl >= sizeof text) break;
            memcpy(text + len, p, pl);
            len += pl;
        }
        text[len] = '\0';
        braid_table_t t;
        if (0 == parse(text, &t, err)) {
            ok++;
            (void)braid_select(BRAID_COLL_ALLREDUCE, 4, 1000, 0, &t);
        } else {
            errors++;
            if (0 != strncmp(err, "rules.txt:", 10)) bad_err++;
        }
        braid_table_free(&t);
    }
    ck_assert_int_eq(bad_err, 0);
    ck_assert_int_gt(ok, 0);
    ck_assert_int_gt(errors, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("selection");
    TCase *tp = tcase_create("parser");
    tcase_set_timeout(tp, 60);
    tcase_add_test(tp, test_parse_valid_forms);
    tcase_add_test(tp, test_parse_empty);
    tcase_add_loop_test(tp, test_errors, 0, (int)(sizeof err_cases / sizeof *err_cases));
    tcase_add_test(tp, test_error_limits);
    tcase_add_test(tp, test_error_buffer);
    tcase_add_test(tp, test_parse_file);
    tcase_add_test(tp, test_garbage);
#ifdef BRAID_SRCDIR
    tcase_add_test(tp, test_rules_md_examples);
#endif
    suite_add_tcase(s, tp);
    TCase *tl = tcase_create("lookup");
    tcase_set_timeout(tl, 60);
    tcase_add_test(tl, test_range_edges);
    tcase_add_test(tl, test_gaps_fall_through);
    tcase_add_test(tl, test_precedence);
    tcase_add_test(tl, test_builtin_covers);
    tcase_add_test(tl, test_builtin_follows_model);
    suite_add_tcase(s, tl);
    TCase *tr = tcase_create("print");
    tcase_set_timeout(tr, 60);
    tcase_add_test(tr, test_print_round_trip);
    tcase_add_test(tr, test_round_trip_edges);
    tcase_add_test(tr, test_size_format);
    suite_add_tcase(s, tr);
    return unit_run_suite(s);
}
