/*
 * test_registry.c - the rows of libbraid/braid_registry.h and the look-ups of
 * libbraid/braid_registry.c, for every collective:
 *
 *  - ids: 1..braid_alg_count(coll)-1 are algorithms, equal to the
 *    BRAID_<COLL>_NALGS enums, at most BRAID_MAX_ALGS with "auto"; id 0,
 *    negative ids, ids past the end and collectives past BRAID_COLL_N give
 *    NULL, "?", 0 or -1;
 *  - every row has a name (lower case, digits and '_', not "auto"), a
 *    function and a cost function; names are unique per collective;
 *    braid_alg_lookup(name) is the id, braid_alg_name(id) and
 *    braid_alg_names()[id] the name, the name list ends with NULL, "auto"
 *    is 0 and an unknown name -1; braid_alg_names_joined lists them all;
 *  - collective names are unique, MPI names start with "MPI_";
 *  - option keys: only known BRAID_OPT_* bits; not both chunk keys (one
 *    params field); BRAID_OPT_BASE exactly on the bcube algorithms,
 *    BRAID_OPT_TREE_CHUNK exactly on the dbtree ones, BRAID_OPT_HIER only
 *    on allreduce hierarchical; barriers read no options;
 *  - costs: never NaN; either negative (the model does not consider the
 *    algorithm) or finite, and not decreasing in the message size;
 *  - non-commutative ops: every row states what it does (noncomm), "no op"
 *    exactly on the collectives that reduce nothing; braid_alg_takes_op
 *    follows it;
 *  - forced MPI cases: every algorithm of every collective has a case in
 *    tests/mpi/mpi_tests.list (MPI_TESTS_LIST overrides the path) that
 *    forces it (coll_braid_<coll>_algorithm=<name> among the MCA settings),
 *    runs at some np >= 2, is not a FAIL case, and expects the proof that
 *    it ran ("braid: <coll> <name> np=" among the regexes).
 */
#include "unit_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int nalgs_enum[BRAID_COLL_N] = {
    [BRAID_COLL_BARRIER] = BRAID_BARRIER_NALGS,
    [BRAID_COLL_BCAST] = BRAID_BCAST_NALGS,
    [BRAID_COLL_ALLREDUCE] = BRAID_ALLREDUCE_NALGS,
    [BRAID_COLL_REDUCE] = BRAID_REDUCE_NALGS,
    [BRAID_COLL_REDUCE_SCATTER] = BRAID_REDUCE_SCATTER_NALGS,
    [BRAID_COLL_ALLGATHER] = BRAID_ALLGATHER_NALGS,
    [BRAID_COLL_ALLTOALL] = BRAID_ALLTOALL_NALGS,
    [BRAID_COLL_SCAN] = BRAID_SCAN_NALGS,
    [BRAID_COLL_EXSCAN] = BRAID_EXSCAN_NALGS,
    [BRAID_COLL_GATHER] = BRAID_GATHER_NALGS,
    [BRAID_COLL_SCATTER] = BRAID_SCATTER_NALGS,
    [BRAID_COLL_ALLGATHERV] = BRAID_ALLGATHERV_NALGS,
    [BRAID_COLL_ALLTOALLV] = BRAID_ALLTOALLV_NALGS,
    [BRAID_COLL_GATHERV] = BRAID_GATHERV_NALGS,
    [BRAID_COLL_SCATTERV] = BRAID_SCATTERV_NALGS,
};

START_TEST(ids)
{
    braid_coll_t coll = (braid_coll_t)_i;
    int n = braid_alg_count(coll);
    ck_assert_int_eq(n, nalgs_enum[coll]);
    ck_assert_int_ge(n, 2);
    ck_assert_int_le(n, BRAID_MAX_ALGS);
    ck_assert_ptr_null(braid_algorithm(coll, BRAID_ALG_AUTO));
    ck_assert_ptr_null(braid_algorithm(coll, -1));
    ck_assert_ptr_null(braid_algorithm(coll, n));
    ck_assert_str_eq(braid_alg_name(coll, n), "?");
    ck_assert_str_eq(braid_alg_name(coll, -1), "?");
    for (int id = 1; id < n; id++) ck_assert_ptr_nonnull(braid_algorithm(coll, id));
}
END_TEST

START_TEST(invalid_collective)
{
    ck_assert_int_eq(braid_alg_count(BRAID_COLL_N), 0);
    ck_assert_ptr_null(braid_algorithm(BRAID_COLL_N, 1));
    ck_assert_ptr_null(braid_alg_names(BRAID_COLL_N));
    ck_assert_str_eq(braid_coll_name(BRAID_COLL_N), "?");
    ck_assert_str_eq(braid_coll_mpi_name(BRAID_COLL_N), "?");
    ck_assert_str_eq(braid_alg_name(BRAID_COLL_N, 1), "?");
    ck_assert_int_eq(braid_alg_lookup(BRAID_COLL_N, "ring"), -1);
}
END_TEST

START_TEST(names)
{
    braid_coll_t coll = (braid_coll_t)_i;
    int n = braid_alg_count(coll);
    const char *const *names = braid_alg_names(coll);
    ck_assert_ptr_nonnull(names);
    ck_assert_str_eq(names[0], "auto");
    ck_assert_ptr_null(names[n]);
    ck_assert_int_eq(braid_alg_lookup(coll, "auto"), BRAID_ALG_AUTO);
    ck_assert_int_eq(braid_alg_lookup(coll, "no_such_algorithm"), -1);
    ck_assert_int_eq(braid_alg_lookup(coll, NULL), -1);
    char joined[512], expect[512] = "auto";
    for (int id = 1; id < n; id++) {
        const braid_algorithm_t *A = braid_algorithm(coll, id);
        ck_assert_ptr_nonnull(A->name);
        ck_assert_ptr_nonnull(A->run);
        ck_assert_ptr_nonnull(A->cost);
        ck_assert_msg(A->name[0] != '\0' && strspn(A->name, "abcdefghijklmnopqrstuvwxyz0123456789_") ==
                                                strlen(A->name),
                      "%s algorithm %d: name \"%s\"", braid_coll_name(coll), id, A->name);
        ck_assert_str_ne(A->name, "auto");
        for (int other = 1; other < id; other++)
            ck_assert_str_ne(A->name, braid_algorithm(coll, other)->name);
        ck_assert_int_eq(braid_alg_lookup(coll, A->name), id);
        ck_assert_str_eq(braid_alg_name(coll, id), A->name);
        ck_assert_str_eq(names[id], A->name);
        strcat(expect, " | ");
        strcat(expect, A->name);
    }
    braid_alg_names_joined(coll, joined, sizeof joined);
    ck_assert_str_eq(joined, expect);
}
END_TEST

START_TEST(collective_names)
{
    for (int c = 0; c < BRAID_COLL_N; c++) {
        ck_assert_str_ne(braid_coll_name((braid_coll_t)c), "?");
        ck_assert_int_eq(strncmp(braid_coll_mpi_name((braid_coll_t)c), "MPI_", 4), 0);
        for (int d = 0; d < c; d++)
            ck_assert_str_ne(braid_coll_name((braid_coll_t)c), braid_coll_name((braid_coll_t)d));
    }
}
END_TEST

START_TEST(option_keys)
{
    braid_coll_t coll = (braid_coll_t)_i;
    const unsigned known = BRAID_OPT_CHUNK | BRAID_OPT_TREE_CHUNK | BRAID_OPT_BASE | BRAID_OPT_HIER |
                           BRAID_OPT_SHM | BRAID_OPT_SHM_DIRECT | BRAID_OPT_SHM_MESSAGES;
    for (int id = 1; id < braid_alg_count(coll); id++) {
        const braid_algorithm_t *A = braid_algorithm(coll, id);
        unsigned o = A->options;
        const char *what = A->name;
        ck_assert_msg(0 == (o & ~known), "%s: unknown option bits %#x", what, o & ~known);
        ck_assert_msg((o & BRAID_OPT_CHUNK) == 0 || (o & BRAID_OPT_TREE_CHUNK) == 0,
                      "%s: both chunk keys", what);
        ck_assert_msg(!(o & BRAID_OPT_BASE) == !!strcmp(what, "bcube"),
                      "%s %s: BRAID_OPT_BASE is bcube's", braid_coll_name(coll), what);
        ck_assert_msg(!(o & BRAID_OPT_TREE_CHUNK) == !!strcmp(what, "dbtree"),
                      "%s %s: BRAID_OPT_TREE_CHUNK is the dbtree algorithms'", braid_coll_name(coll), what);
        if (o & BRAID_OPT_HIER)
            ck_assert_msg(BRAID_COLL_ALLREDUCE == coll && 0 == strcmp(what, "hierarchical"),
                          "%s %s: BRAID_OPT_HIER", braid_coll_name(coll), what);
        ck_assert_msg(!(o & BRAID_OPT_SHM) == !!strcmp(what, "shm"),
                      "%s %s: BRAID_OPT_SHM is the shm algorithms'", braid_coll_name(coll), what);
        ck_assert_msg(!(o & BRAID_OPT_SHM_DIRECT) || (o & BRAID_OPT_SHM),
                      "%s %s: BRAID_OPT_SHM_DIRECT without BRAID_OPT_SHM", braid_coll_name(coll), what);
        /* the shm algorithms that send the blocks no slot holds where there
         * is no single-copy reader: gatherv's, scatterv's, alltoallv's */
        bool messages = (BRAID_COLL_GATHERV == coll || BRAID_COLL_SCATTERV == coll ||
                         BRAID_COLL_ALLTOALLV == coll) && (o & BRAID_OPT_SHM);
        ck_assert_msg(!(o & BRAID_OPT_SHM_MESSAGES) == !messages,
                      "%s %s: BRAID_OPT_SHM_MESSAGES is the shm v forms' that send messages",
                      braid_coll_name(coll), what);
        if (BRAID_COLL_BARRIER == coll)
            ck_assert_msg(0 == (o & ~BRAID_OPT_SHM), "barrier %s reads options", what);
    }
}
END_TEST

START_TEST(costs)
{
    braid_coll_t coll = (braid_coll_t)_i;
    static const int Ps[] = { 1, 2, 3, 16, 1000, 1024 };
    static const double Ss[] = { 0, 8, 4096, 1 << 20, 1 << 30 };
    for (int id = 1; id < braid_alg_count(coll); id++) {
        const braid_algorithm_t *A = braid_algorithm(coll, id);
        for (size_t p = 0; p < sizeof Ps / sizeof *Ps; p++) {
            double prev = -1;
            for (size_t s = 0; s < sizeof Ss / sizeof *Ss; s++) {
                double v = A->cost(Ps[p], Ss[s]);
                ck_assert_msg(!isnan(v) && (v < 0 || isfinite(v)), "%s %s P=%d S=%g: cost %g",
                              braid_coll_name(coll), A->name, Ps[p], Ss[s], v);
                if (v >= 0 && prev >= 0)
                    ck_assert_msg(v >= prev, "%s %s P=%d: cost falls from %g to %g at S=%g",
                                  braid_coll_name(coll), A->name, Ps[p], prev, v, Ss[s]);
                if (v >= 0) prev = v;
            }
        }
    }
}
END_TEST

START_TEST(noncomm)
{
    braid_coll_t coll = (braid_coll_t)_i;
    bool reduces = BRAID_COLL_ALLREDUCE == coll || BRAID_COLL_REDUCE == coll
                || BRAID_COLL_REDUCE_SCATTER == coll || BRAID_COLL_SCAN == coll
                || BRAID_COLL_EXSCAN == coll;
    for (int id = 1; id < braid_alg_count(coll); id++) {
        const braid_algorithm_t *A = braid_algorithm(coll, id);
        const char *c = braid_coll_name(coll);
        ck_assert_msg(A->noncomm >= BRAID_NONCOMM_NO_OP && A->noncomm <= BRAID_NONCOMM_REFUSED_ALL_P,
                      "%s %s: noncomm %d is none of BRAID_NONCOMM_* (say what it does with a "
                      "non-commutative op)", c, A->name, (int)A->noncomm);
        ck_assert_msg((BRAID_NONCOMM_NO_OP == A->noncomm) == !reduces,
                      "%s %s: BRAID_NONCOMM_NO_OP is for the collectives that reduce nothing", c,
                      A->name);
        for (int P = 1; P <= 3; P++)
            for (int exact = 0; exact < 2; exact++) {
                ck_assert(braid_alg_takes_op(coll, id, P, true, exact));
                bool takes = braid_alg_takes_op(coll, id, P, false, exact);
                bool want = BRAID_NONCOMM_NO_OP == A->noncomm || BRAID_NONCOMM_KEPT == A->noncomm
                         || (BRAID_NONCOMM_EXACT == A->noncomm && (1 == P || exact))
                         || (BRAID_NONCOMM_REFUSED == A->noncomm && 1 == P);
                ck_assert_msg(takes == want, "%s %s P=%d exact=%d: takes a non-commutative op: %d",
                              c, A->name, P, exact, (int)takes);
            }
    }
    ck_assert(!braid_alg_takes_op(coll, BRAID_ALG_AUTO, 2, true, true));
    ck_assert(!braid_alg_takes_op(coll, braid_alg_count(coll), 2, true, true));
}
END_TEST

#ifndef BRAID_SRCDIR
#error "BRAID_SRCDIR (the source tree, for tests/mpi/mpi_tests.list) is set by Makefile.am"
#endif
static char *trim(char *s)
{
    while (' ' == *s || '\t' == *s) s++;
    size_t n = strlen(s);
    while (n && (' ' == s[n - 1] || '\t' == s[n - 1] || '\r' == s[n - 1] || '\n' == s[n - 1])) s[--n] = '\0';
    return s;
}

/* some np of a list field ("1-8", "2,5", "3") is at least 2 */
static bool np_reaches_two(const char *spec)
{
    for (const char *p = spec; *p; p++)
        if (*p >= '0' && *p <= '9' && (p == spec || p[-1] < '0' || p[-1] > '9') && atoi(p) >= 2)
            return true;
    return false;
}

/* Does the MCA field set name=value (a whole blank-separated word)? */
static bool sets(const char *mca, const char *kv)
{
    size_t n = strlen(kv);
    for (const char *p = strstr(mca, kv); p; p = strstr(p + 1, kv))
        if ((p == mca || ' ' == p[-1] || '\t' == p[-1]) && (' ' == p[n] || '\t' == p[n] || '\0' == p[n]))
            return true;
    return false;
}

START_TEST(mpi_forced_cases)
{
    const char *path = getenv("MPI_TESTS_LIST");
    if (NULL == path || !*path) path = BRAID_SRCDIR "/tests/mpi/mpi_tests.list";
    FILE *f = fopen(path, "r");
    ck_assert_msg(NULL != f, "cannot open %s", path);
    int cases[BRAID_COLL_N][BRAID_MAX_ALGS];
    memset(cases, 0, sizeof cases);
    char line[8192];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *field[4] = { NULL, NULL, NULL, NULL };
        char *p = line;
        for (int k = 0; k < 4 && p; k++) {
            field[k] = p;
            p = k < 3 ? strchr(p, '|') : NULL;
            if (p) *p++ = '\0';
        }
        if (NULL == field[3]) continue;
        rows++;
        char *np = trim(field[0]), *mca = trim(field[2]), *expect = trim(field[3]);
        if (0 == strncmp(expect, "FAIL", 4) || !np_reaches_two(np)) continue;
        for (int c = 0; c < BRAID_COLL_N; c++)
            for (int id = 1; id < braid_alg_count((braid_coll_t)c); id++) {
                char kv[128], proof[128];
                const char *cn = braid_coll_name((braid_coll_t)c), *an = braid_alg_name((braid_coll_t)c, id);
                snprintf(kv, sizeof kv, "coll_braid_%s_algorithm=%s", cn, an);
                snprintf(proof, sizeof proof, "braid: %s %s np=", cn, an);
                if (sets(mca, kv) && NULL != strstr(expect, proof)) cases[c][id]++;
            }
    }
    fclose(f);
    ck_assert_msg(rows > 0, "%s: no cases", path);
    int missing = 0;
    for (int c = 0; c < BRAID_COLL_N; c++)
        for (int id = 1; id < braid_alg_count((braid_coll_t)c); id++)
            if (0 == cases[c][id]) {
                const char *cn = braid_coll_name((braid_coll_t)c), *an = braid_alg_name((braid_coll_t)c, id);
                fprintf(stderr, "%s: no forced case of %s %s: add a row with np >= 2, MCA "
                        "coll_braid_%s_algorithm=%s and the regex 'braid: %s %s np='\n", path, cn,
                        an, cn, an, cn, an);
                missing++;
            }
    ck_assert_msg(0 == missing, "%d registry algorithms have no forced MPI case in %s (listed above)",
                  missing, path);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = unit_tcase(s, "registry", 60);
    tcase_add_loop_test(tc, ids, 0, BRAID_COLL_N);
    tcase_add_test(tc, invalid_collective);
    tcase_add_loop_test(tc, names, 0, BRAID_COLL_N);
    tcase_add_test(tc, collective_names);
    tcase_add_loop_test(tc, option_keys, 0, BRAID_COLL_N);
    tcase_add_loop_test(tc, costs, 0, BRAID_COLL_N);
    tcase_add_loop_test(tc, noncomm, 0, BRAID_COLL_N);
    tcase_add_test(tc, mpi_forced_cases);
    return unit_run_suite(s);
}
