#!/usr/bin/env bash
# quickstart.sh - the main job on a fresh machine: install the dependencies,
# build and install braid into Open MPI's component directory, check that
# Open MPI sees it, and run an unmodified MPI application under braid and
# under Open MPI's tuned collectives, printing the comparison.
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
exec "$top/contrib/run_app_compare.sh" -n "$np"
