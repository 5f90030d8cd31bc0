#!/usr/bin/env bash
# test.sh - set up a fresh machine and run braid's whole test suite:
# unit tests (Check, in-process transport) and MPI integration tests
# (mpirun, np = 1..9, every algorithm forced), and as root the MPI cases
# across two simulated hosts. Exit status 0 = all passed.
#
#   tools/test.sh            # from the repository root
#   BUILD_DIR=... tools/test.sh
# Then the unit tests at P = 1..16 and the MPI cases at np 3 (and the
# engine-edge and failure programs at every np) again in a second
# build directory configured with --enable-sanitizers (ASan + UBSan;
# SAN_BUILD_DIR, default build-san; SANITIZERS=0 skips it), and as root the
# MPI cases at np 1, 3 and 8 against Open MPI 5.0 in a Debian 13 root
# (tools/ompi5.sh; BRAID_OMPI5=0 skips it): every case runs in the plain
# pass, each of the others at a share of the sizes, to keep CI within its
# time; and
# the README's first command in a pristine Debian 13 root (tools/fresh_root.sh;
# BRAID_FRESH13=0 skips it); and LAMMPS and HPCC from Debian's packages
# under braid and under tuned, results equal (tests/apps/check_apps.sh;
# BRAID_APPS=0 skips it). tools/lint.sh --tracked (the tree's cheap
# checks: tracked files, test timeouts, document sizes, rendered tables) runs too; BRAID_LINT=full runs all of lint.sh, 0 none of it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# one line as each stage starts and ends, with the time since the start, so
# that a run cut short by a time limit shows how far it came
stage() { echo "test.sh: [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }
build=${BUILD_DIR:-$top/build}
case ${BRAID_LINT:-tracked} in 0|tracked|full) ;;
*) echo "test.sh: BRAID_LINT must be tracked, full or 0, not '$BRAID_LINT'" >&2; exit 2 ;; esac

# clang + its libFuzzer runtime for the rules-parser fuzz step (the
# runtime's package is named after clang's major version: 14 on Debian 12,
# 19 on Debian 13); iproute2 for the multihost cases
# shellcheck disable=SC2086
stage "deps and build"
"$top/contrib/install_deps.sh" clang iproute2 ${BRAID_EXTRA_DEPS:-}
clang_major=$(clang -dumpversion | cut -d. -f1)
"$top/contrib/install_deps.sh" "libclang-rt-$clang_major-dev"
"$top/contrib/build.sh" "$build"
cd "$build"
status=0
stage "plain pass: make check (unit tests, MPI list, fuzzer)"
# the unit tests two at a time (PAIRED_TESTS in Makefile.am), then the MPI
# list and the fuzzer alone (ALONE_TESTS)
make -j2 check TESTS='$(PAIRED_TESTS)' || status=$?
make -j1 check TESTS='$(ALONE_TESTS)' || status=$?
# across simulated hosts (network namespaces, 2 hosts x 2 ranks):
# BRAID_MULTIHOST=1 always, 0 never, default when root. The script skips
# (exit 77) where the sandbox cannot make network namespaces.
multihost=${BRAID_MULTIHOST:-auto}
if [ "$multihost" = 1 ] || { [ "$multihost" = auto ] && [ "$(id -u)" -eq 0 ]; }; then
    mh_status=0
    stage "multihost cases"
    BRAID_BUILDDIR=$PWD BRAID_SRCDIR=$top BRAID_MH_HOSTS=${BRAID_MH_HOSTS:-2} \
        BRAID_MH_SLOTS=${BRAID_MH_SLOTS:-2} bash "$top/tests/multihost/run_multihost.sh" \
        >tests/multihost.log 2>&1 || mh_status=$?
    tail -n 20 tests/multihost.log
    [ $mh_status -eq 0 ] || [ $mh_status -eq 77 ] || status=$mh_status
fi
logdirs=(tests)
if [ "${SANITIZERS:-1}" != 0 ]; then
    # sanitizer build: unit and MPI tests (the fuzz step above already runs
    # under ASan/UBSan)
    san=${SAN_BUILD_DIR:-$top/build-san}
    mkdir -p "$san"
    logdirs+=("$san/tests")
    stage "sanitizer pass: build, unit tests, MPI list"
    # The unit tests at P = 1..16 (SAN_UNIT_MAX_NP, the tests' UNIT_MAX_NP;
    # the plain pass runs them to 64): every algorithm at every shape of P;
    # the simulator's contracts at P = 1024 (SAN_UNIT_SIM_MAX_P; 4096 in
    # the plain pass). Two at a time, as in the plain pass.
    # The MPI cases at np 3 and the programs of the engine's edges, of
    # call order and of failures at every np (SAN_MPI_FILTER, a run_mpi_tests.sh filter; ''
    # runs all): the glue, the transport, the shared-memory tier and the
    # nonblocking engine under the sanitizers, every program and algorithm
    # once. Left to the plain pass (SAN_MPI_EXCLUDE): the other np, the
    # messages above 2^31 bytes (2 GiB buffers, 1.5 min under ASan) and
    # three of the six mock-CUDA cases (30 s each under ASan; the three
    # kept stage every collective, both mock queue modes)
    (cd "$san" && { [ -f Makefile ] || "$top/configure" -q --enable-sanitizers ${CONFIGURE_ARGS:-}; } &&
        make -j"${JOBS:-2}" >/dev/null || exit 1
        rc=0
        UNIT_MAX_NP=${SAN_UNIT_MAX_NP-16} UNIT_SIM_MAX_P=${SAN_UNIT_SIM_MAX_P-1024} \
            make -j2 check TESTS='$(UNIT_TESTS)' || rc=1
        MPI_TEST_FILTER=${SAN_MPI_FILTER-'^np=3 |mpi_nbc_edges|mpi_faults|mpi_order'} \
            MPI_TEST_EXCLUDE=${SAN_MPI_EXCLUDE-'mpi_reductions huge|mockcuda mpi_cuda \[coll_braid_(allreduce_algorithm=(ring_chunked|halving_doubling)|allgather_algorithm=ring) '} \
            make -j1 check TESTS=tests/mpi/run_mpi_tests.sh || rc=1
        exit $rc) || status=1
fi
# Open MPI 5 pass (tools/ompi5.sh): the MPI tests (below), the
# multihost cases unless BRAID_MULTIHOST=0, and the install check (make
# install, then mpirun with no component path in the environment must load
# braid; tests/install/check_install.sh), built against Open MPI 5.0 in a
# Debian 13 root made with debootstrap the first time and reused
# (BRAID_OMPI5_ROOT, default /var/tmp/braid-trixie); no sanitizer build
# there. BRAID_OMPI5=1 always, 0 never, auto (default) when root. A sandbox
# that cannot bind-mount makes it a SKIP.
ompi5=${BRAID_OMPI5:-auto}
if [ "$ompi5" = 1 ] || { [ "$ompi5" = auto ] && [ "$(id -u)" -eq 0 ]; }; then
    o5_status=0
    o5_start=$SECONDS
    o5_logs=$("$top/tools/ompi5.sh" builddir)/tests
    # the MPI cases at np 1, 3 and 8 (BRAID_OMPI5_MPI_FILTER; '' runs all):
    # the glue on Open MPI 5 at one rank, an odd size and a power of two,
    # every program; the other np run in the plain pass; every MPI-4
    # sessions case (mpi_sessions: skipped on 4.1); the ULFM cases (fault
    # tolerance, which 4.1 lacks) at every np they name. The unit tests,
    # which link no Open MPI, run in the plain and sanitizer passes alone
    # (BRAID_OMPI5_TESTS adds them here). Across hosts the topology and
    # barrier cases (BRAID_OMPI5_MH_FILTER: the allreduce, bcast, allgather
    # and reduce_scatter algorithms they name, values checked); every case
    # on Open MPI 4.1. Its
    # progress lines show as it runs; the whole output goes to ompi5.out.
    stage "Open MPI 5 pass (Debian 13 root): build, MPI list, multihost, main job, install"
    set +e
    BRAID_OMPI5_TESTS=${BRAID_OMPI5_TESTS-tests/mpi/run_mpi_tests.sh} \
        BRAID_OMPI5_MPI_FILTER=${BRAID_OMPI5_MPI_FILTER-'^np=(1|3|8) |mpi_sessions| ULFM=1 '} \
        BRAID_OMPI5_MH_FILTER=${BRAID_OMPI5_MH_FILTER-'mpi_topo|mpi_barrier_bcast'} \
        "$top/tools/ompi5.sh" test 2>&1 | tee tests/ompi5.out |
        grep --line-buffered -E '^ompi5.sh: |^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS):|^# (TOTAL|PASS|FAIL)|^mpi tests: |^run_multihost'
    o5_status=${PIPESTATUS[0]}
    set -e
    echo "ompi5: Open MPI 5 pass: exit $o5_status in $((SECONDS - o5_start))s (output: $build/tests/ompi5.out, logs: $o5_logs)"
    # its unit and MPI logs count in the summary below (77: skipped, none)
    [ $o5_status -ne 77 ] && [ -d "$o5_logs" ] && logdirs+=("$o5_logs")
    [ $o5_status -eq 0 ] || [ $o5_status -eq 77 ] || status=$o5_status
fi
# tools/lint.sh: by default only its cheap checks (--tracked: tracked files,
# test timeouts, document sizes, rendered tables); BRAID_LINT=full runs all of it (cppcheck,
# gcc -fanalyzer), 0 nothing. Counts as one test in the summary.
lint_passed=0 lint_failed=0
case ${BRAID_LINT:-tracked} in
0) ;;
full|tracked)
    l_args=(); [ "${BRAID_LINT:-tracked}" = tracked ] && l_args=(--tracked)
    if "$top/tools/lint.sh" "${l_args[@]}" >tests/lint.log 2>&1; then lint_passed=1; else lint_failed=1; status=1; fi
    grep '^lint: ' tests/lint.log || true ;;
esac
# the README's first command, contrib/quickstart.sh, exactly as written, as
# root in a pristine Debian 13 root made for this run by debootstrap and
# removed after (tools/fresh_root.sh): a fresh machine needs nothing but
# what the README says. BRAID_FRESH13=1 always, 0 never, auto (default)
# when root; counts as one test in the summary (77 from fresh_root.sh,
# where this machine cannot debootstrap or bind-mount: skipped).
fresh_passed=0 fresh_failed=0
fresh13=${BRAID_FRESH13:-auto}
if [ "$fresh13" = 1 ] || { [ "$fresh13" = auto ] && [ "$(id -u)" -eq 0 ]; }; then
    f_status=0
    f_start=$SECONDS
    stage "README's first command in a pristine Debian 13 root"
    BRAID_FRESH_SUITE=trixie "$top/tools/fresh_root.sh" contrib/quickstart.sh \
        >tests/fresh13.log 2>&1 || f_status=$?
    grep -E '^fresh_root.sh: |losses agree|identical|^install_deps|^configure: (error|fetching)' tests/fresh13.log | tail -n 20
    echo "fresh13: contrib/quickstart.sh in a pristine Debian 13 root: exit $f_status in $((SECONDS - f_start))s (log: $build/tests/fresh13.log)"
    case $f_status in 0) fresh_passed=1 ;; 77) ;; *) fresh_failed=1; status=$f_status ;; esac
fi
# packaged applications (tests/apps/check_apps.sh): LAMMPS (peptide, 50
# steps, PPPM's remap through MPI_Alltoallv) and HPCC (N=500) from Debian's
# packages, installed here when missing, each under braid and under tuned
# at np=2 with the profile library preloaded: the results must be equal.
# About a minute once the packages are there. Its "apps:" line counts each
# application as one test (exit 77, the packages not to be had: none);
# BRAID_APPS=0 skips it.
apps_passed=0 apps_failed=0
if [ "${BRAID_APPS:-1}" != 0 ]; then
    a_status=0
    a_start=$SECONDS
    stage "packaged applications under braid and tuned"
    BRAID_BUILDDIR=$build "$top/tests/apps/check_apps.sh" >tests/apps.log 2>&1 || a_status=$?
    grep -E '^(ok|FAIL|SKIP): |^apps: ' tests/apps.log || true
    echo "apps: tests/apps/check_apps.sh: exit $a_status in $((SECONDS - a_start))s (log: $build/tests/apps.log)"
    a_counts=$(sed -n 's/^apps: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' tests/apps.log | tail -n 1)
    if [ -n "$a_counts" ]; then
        apps_passed=${a_counts% *} apps_failed=${a_counts#* }
    fi
    case $a_status in
    0|77) ;;
    *) status=1; [ "$apps_failed" -gt 0 ] || apps_failed=1 ;;
    esac
fi
# one summary line over every test program (Check and the MPI runner)
passed=0 failed=0
# (each MPI case's own output, under tests/*-logs, is not a test log)
for log in $(find "${logdirs[@]}" -name '*.log' ! -name 'test-suite.log' ! -path '*-logs/*' | sort -u); do
    while read -r line; do
        case "$line" in
        *"%: Checks: "*)
            c=$(sed -n 's/.*Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' <<<"$line")
            set -- $c
            passed=$((passed + $1 - $2 - $3)); failed=$((failed + $2 + $3)) ;;
        "run_fuzz.sh: no crash, no leak")
            passed=$((passed + 1)) ;;
        "run_fuzz.sh: FAILED"*)
            failed=$((failed + 1)) ;;
        "check_shstk: passed"*|"check_algorithm_tables: passed"*)
            passed=$((passed + 1)) ;;
        "check_shstk: FAILED"*|"check_algorithm_tables: FAILED"*)
            failed=$((failed + 1)) ;;
        "mpi tests: "*)
            p=$(sed -n 's/mpi tests: \([0-9]*\) passed, \([0-9]*\) failed/\1 \2/p' <<<"$line")
            set -- $p
            passed=$((passed + $1)); failed=$((failed + $2)) ;;
        esac
    done <"$log"
done
if [ $status -ne 0 ]; then
    echo "--- failing test logs ---"
    # (|| true: a grep that finds nothing, or head closing the pipe, must
    # not end the script before the summary line under set -e / pipefail)
    { grep -l -E "^FAIL|^not ok|Failures: [1-9]|Errors: [1-9]" $(find "${logdirs[@]}" -name '*.log' ! -path '*-logs/*' | sort -u) 2>/dev/null || true; } |
        head -5 | while read -r f; do
            # (Check's own lines, file:line:E|F:case:test:iteration: why,
            # name the test and say why it failed or timed out)
            echo "== $f"; grep -E "^FAIL|^not ok|Failures: [1-9]|Errors: [1-9]|:[EF]:[^:]*:[^:]*:[0-9]+: " "$f" | head -40 || true
        done || true
fi
passed=$((passed + fresh_passed + lint_passed + apps_passed)); failed=$((failed + fresh_failed + lint_failed + apps_failed))
# a stage that failed without a failing check in the logs counted above
# (a build, a set-up, a crash before any summary) is one failure itself:
# the line and the exit status agree
if [ $status -ne 0 ] && [ $failed -eq 0 ]; then
    echo "braid tests: a stage failed (exit $status) without a failing check in its logs: counted as one failure"
    failed=1
fi
stage "done"
echo "braid tests: $passed passed, $failed failed"
exit $status
