#!/usr/bin/env bash
# build.sh [BUILD_DIR] - install missing dependencies (extra Debian packages
# may be named in BRAID_EXTRA_DEPS), then autogen, configure (with
# $CONFIGURE_ARGS) and make braid out of tree in BUILD_DIR (default build/).
# Used by quickstart.sh and test.sh; safe to run again (reuses the build).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${BUILD_DIR:-$top/build}}
# shellcheck disable=SC2086
"$top/contrib/install_deps.sh" ${BRAID_EXTRA_DEPS:-}
cd "$top"
# (again when configure.ac or Makefile.am changed since)
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
    ./autogen.sh >/dev/null 2>&1
fi
mkdir -p "$build"
cd "$build"
# shellcheck disable=SC2086
[ -f Makefile ] || "$top/configure" -q ${CONFIGURE_ARGS:-}
make -j"${JOBS:-2}" >/dev/null
