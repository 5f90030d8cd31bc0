#!/usr/bin/env bash
# run_tsan.sh - ThreadSanitizer over the threaded in-process tests: every
# algorithm with all ranks as threads of one process (tests/unit), so a data
# race in the algorithms, the engines, the views or the test transport is
# reported. Not part of `make check` (about 6 minutes on 2 quiet cores, 15
# under load). Builds in $TSAN_BUILD_DIR (default build-tsan); exit 0 = no
# race and every check passed.
#
#   tests/tsan/run_tsan.sh            # from the repository root
#
# The MPI programs are not run under TSan: Open MPI 4.1's own runtime is
# not built for it (it crashes at start-up). The threaded MPI cases
# (mpi_stress threads) run under ASan + UBSan in tools/test.sh instead.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${TSAN_BUILD_DIR:-$top/build-tsan}
tests=(test_barrier test_bcast test_allreduce test_reduce test_reduce_scatter test_allgather
       test_topo test_cuda_pipeline)
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null)
mkdir -p "$build"
cd "$build"
# no per-ISA kernel clones: their ifunc resolvers run at load time, before
# TSan's runtime is up, and crash in its instrumentation
[ -f Makefile ] || "$top/configure" -q CFLAGS="-g -O1 -fsanitize=thread -DBRAID_KERNELS_NO_CLONES" \
    LDFLAGS="-fsanitize=thread"
make -j"${JOBS:-2}" libbraid_core.la tests/unit/libinproc.la >/dev/null
list=""
for t in "${tests[@]}"; do list+=" tests/unit/$t"; done
# halt_on_error: the first race fails its test program
status=0
TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}" make -j1 check TESTS="$list" >/dev/null || status=$?
races=$(grep -l "WARNING: ThreadSanitizer" tests/unit/*.log 2>/dev/null || true)
grep -h "Checks:" $(for t in "${tests[@]}"; do echo "tests/unit/$t.log"; done) 2>/dev/null || true
if [ -n "$races" ]; then
    echo "run_tsan.sh: data races reported in: $races"
    status=1
fi
[ $status -eq 0 ] && echo "run_tsan.sh: no data race, every check passed (${#tests[@]} programs)"
exit $status
