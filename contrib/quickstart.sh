#!/usr/bin/env bash
# quickstart.sh - the main job on a fresh machine: install the dependencies,
# build and install braid into Open MPI's component directory, check that
# Open MPI sees it, and run an unmodified MPI application under braid and
# under Open MPI's tuned collectives, printing the comparison: the C
# program (contrib/apps/logreg.c), then the same model from Python
# (contrib/apps/logreg.py: mpi4py, numpy, MPI_THREAD_MULTIPLE as mpi4py asks
# for it; skipped when /usr/bin/python3 lacks mpi4py or numpy).
#
#   contrib/quickstart.sh [np]        (default np=2)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
np=${1:-2}
build=${BUILD_DIR:-$top/build}
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo

"$top/contrib/build.sh" "$build"
cd "$build"
$SUDO make install >/dev/null
echo "== installed: $(ompi_info | grep 'MCA coll: braid' | sed 's/^ *//')"
export BRAID_BUILDDIR=$build
"$top/contrib/run_app_compare.sh" -n "$np"
echo "== the same model from Python (mpi4py)"
status=0
"$top/contrib/run_app_compare.sh" -n "$np" --python || status=$?
[ $status -eq 77 ] && status=0   # no mpi4py / numpy: the C comparison stands
exit $status
