#!/usr/bin/env bash
# make-kit.sh - pack what a bare GPU machine (no Open MPI, no UCX, no package registry) needs to
# run braid's GPU tests and benchmarks: Debian's Open MPI 4.1 + UCX runtime unpacked into a
# relocatable prefix, the project tree with its build directory, and the runner (device-run.sh).
#
#   tools/devkit/make-kit.sh [BUILD_DIR]       # from the project root; BUILD_DIR default: build
#   BRAID_KIT_OSU=.../osu-micro-benchmarks/c/mpi/collective tools/devkit/make-kit.sh   # also carry OSU binaries
#   BRAID_KIT_ALT=/other/checkout/build tools/devkit/make-kit.sh   # also carry a second build's component
#
# Then copy .devkit to the GPU machine and run "bash .devkit/device-run.sh [WHAT]" there (docs/CUDA.md).
# The build must be configured with CUDA (nvcc present) and have its check programs built:
# this script runs `make -j2 check TESTS=` in BUILD_DIR for that.
set -euo pipefail
top=$(git rev-parse --show-toplevel); here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}; [ -d "$top/$build" ] || { echo "make-kit: no build directory $top/$build (run contrib/build.sh first)" >&2; exit 1; }
kit=$top/.devkit; mkdir -p "$kit/debs"
grep -qx '/.devkit/' "$top/.git/info/exclude" 2>/dev/null || { mkdir -p "$top/.git/info"; echo '/.devkit/' >>"$top/.git/info/exclude"; }
(cd "$top/$build" && make -j2 >/dev/null && make -j2 check TESTS= >/dev/null)
grep -q 'CUDA: *yes' "$top/$build/config.log" 2>/dev/null || grep -q 'BRAID_CUDA_ARCHS=.[0-9]' "$top/$build/config.log" || echo "make-kit: warning: this build has no CUDA" >&2
pkgs="openmpi-bin openmpi-common libopenmpi3 libucx0 libpmix2 libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7
      libhwloc15 libnuma1 libsubunit0 libfabric1 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200
      libpsm-infinipath1 libpsm2-2 libmunge2 libxnvctrl0 libltdl7"
(cd "$kit/debs" && apt-get download $pkgs >/dev/null 2>&1) || { echo "make-kit: apt-get download failed (run apt-get update once)" >&2; exit 1; }
rm -rf "$kit/root" && mkdir -p "$kit/root" && for d in "$kit"/debs/*.deb; do dpkg -x "$d" "$kit/root"; done
tar -C "$kit" -czf "$kit/ompi-root.tgz" root && rm -rf "$kit/root" "$kit/debs"
# the project and its build tree, without object files
tar -C "$top" --exclude=.git --exclude=.devkit --exclude='*.o' --exclude='*.lo' --exclude='build-san' -czf "$kit/tree.tgz" .
echo "$build" >"$kit/build-dir"
# a second build's component (BRAID_KIT_ALT=DIR, a build directory of another checkout), to compare
# the two in one device call (device-run.sh overlap): packed as build-alt/.libs in the tree
if [ -n "${BRAID_KIT_ALT:-}" ]; then d=$(mktemp -d); mkdir -p "$d/build-alt/.libs"
    cp "$BRAID_KIT_ALT/.libs/mca_coll_braid.so" "$d/build-alt/.libs/"
    tar -C "$d" -xzf "$kit/tree.tgz" && tar -C "$d" -czf "$kit/tree.tgz" . && rm -rf "$d"; fi
cp "$here/device-run.sh" "$kit/"
# OSU binaries built against the same Open MPI, when BRAID_KIT_OSU names OSU's c/mpi/collective directory
rm -rf "$kit/osu"; if [ -n "${BRAID_KIT_OSU:-}" ]; then mkdir -p "$kit/osu"
    for b in osu_allreduce osu_reduce osu_bcast osu_allgather osu_reduce_scatter osu_barrier osu_iallreduce osu_latency; do
        f=$(find "$BRAID_KIT_OSU" "$BRAID_KIT_OSU/../pt2pt" -name "$b" -type f -perm -u+x | head -1); [ -n "$f" ] && cp "$f" "$kit/osu/"
    done; fi
du -sh "$kit" | awk '{print "make-kit: " $1 " in .devkit (limit for a device call: 64 MiB with the checkout)"}'
