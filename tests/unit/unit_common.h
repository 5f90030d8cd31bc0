/* unit_common.h - helpers shared by braid's Check unit tests. */
#ifndef UNIT_COMMON_H
#define UNIT_COMMON_H

#include <check.h>
#include <stdlib.h>

#include "braid_algo.h"
#include "braid_registry.h"
#include "inproc_transport.h"

/* Run a suite in fork mode (a hang is killed by Check's timeout) and return
 * the process exit status. */
static inline int unit_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* A test case of suite s named name, each test killed after timeout
 * seconds. */
static inline TCase *unit_tcase(Suite *s, const char *name, double timeout)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout);
    suite_add_tcase(s, tc);
    return tc;
}

/* Deterministic per-rank test data. */
static inline unsigned char unit_byte(int rank, size_t i)
{
    return (unsigned char)((i * 131u + (size_t)rank * 7u + 11u) & 0xff);
}

#endif
