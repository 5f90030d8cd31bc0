#!/usr/bin/env bash
# ompi5.sh - build and test braid against Open MPI 5 in a Debian 13 (trixie)
# root made with debootstrap (root only: debootstrap, chroot, mounts).
#
#   tools/ompi5.sh setup          # make the root, or bring an existing one up to date
#   tools/ompi5.sh build          # setup, copy the tree in, autogen + configure + make
#   tools/ompi5.sh test           # build, unit tests, MPI test list, multihost cases,
#                                   # the main job (logreg, braid vs tuned),
#                                   # make install + mpirun with no env (install check)
#   tools/ompi5.sh run CMD...     # setup, copy the tree in, run CMD in the copy
#   tools/ompi5.sh shell          # the same with an interactive shell
#   tools/ompi5.sh builddir       # print where the build directory is (from here)
#
# The root is made once (debootstrap --variant=minbase, then apt-get install
# of what braid needs; debootstrap itself is installed on this machine when
# missing; about a minute here) and reused: a root that has every package is
# used as it is, one that lacks some gets them. (Debian's libopenmpi-dev 5.0
# lacks headers its opal_config.h names: configure fetches them from the
# source package of the installed version, tools/fetch_ompi_source.sh.)
# While a command runs, /proc, /sys, /dev, /dev/pts and /dev/shm are bind-mounted
# into the root; they are unmounted on exit, also on failure or interrupt,
# and a lock keeps two runs from sharing (and unmounting) one root's mounts.
#
# The source tree is copied into the root (ROOT/braid/trees/<this tree's
# path>/src: the files git tracks plus untracked ones it does not ignore,
# or without .git every file but build outputs; mtimes kept, so make
# rebuilds only what changed; files deleted here stay there) rather than
# bind-mounted: the root's own
# autoconf/automake generate its configure and Makefile.in there, and
# nothing the host's Autotools made (configure, Makefile.in, build/) is
# shared with it. The build directory is .../build next to it, visible from
# here too ('ompi5.sh builddir' prints it; test logs under its tests/).
#
# Exit status: the command's; 77 where bind mounts are not permitted.
#
# Environment:
#   BRAID_OMPI5_ROOT    the root (default /var/tmp/braid-trixie)
#   BRAID_OMPI5_SUITE   Debian suite (default trixie: Open MPI 5.0.x, UCX 1.18)
#   BRAID_OMPI5_MIRROR  Debian mirror (default http://deb.debian.org/debian)
#   BRAID_OMPI5_PKGS    more packages to install in the root
#   BRAID_OMPI5_TESTS   what 'test' runs (default: '$(UNIT_TESTS) tests/mpi/run_mpi_tests.sh')
#   BRAID_OMPI5_MPI_FILTER  an MPI_TEST_FILTER for the MPI list of 'test' alone
#                       (not the multihost cases); default: MPI_TEST_FILTER
#   BRAID_OMPI5_MH_FILTER   the same for its multihost cases
#   BRAID_OMPI5_INSTALL_CHECK  0: 'test' skips tests/install/check_install.sh
#                       (make install into the root's Open MPI, mpirun with no
#                       component path in the environment loads braid, make
#                       uninstall)
# Passed into the root: JOBS, CONFIGURE_ARGS, MPI_TEST_*, BRAID_*, OMPI_MCA_*,
# PRTE_MCA_*, PMIX_MCA_*, UCX_*.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../contrib/braid_env.sh
. "$top/contrib/braid_env.sh"
root=${BRAID_OMPI5_ROOT:-/var/tmp/braid-trixie}
suite=${BRAID_OMPI5_SUITE:-trixie}
mirror=${BRAID_OMPI5_MIRROR:-http://deb.debian.org/debian}
pkgs=(openmpi-bin libopenmpi-dev libucx-dev check autoconf automake libtool pkg-config make gcc
      libpmix-dev python3-minimal procps xz-utils iproute2)
# shellcheck disable=SC2206
pkgs+=(${BRAID_OMPI5_PKGS:-})
stamp=$root/.braid-root
# inside the root, per source tree (checkouts sharing a root keep apart)
tree=/braid/trees/$(printf '%s' "$top" | tr -c 'A-Za-z0-9._-' '_')
src=$tree/src
build=$tree/build

die() { echo "ompi5.sh: $*" >&2; exit 1; }
say() { echo "ompi5.sh: $*" >&2; }

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
[ $# -ge 1 ] || usage 2
cmd=$1; shift
case $cmd in setup|build|test|run|shell) ;; builddir) echo "$root$build"; exit 0 ;;
-h|--help) usage 0 ;; *) usage 2 ;; esac
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and bind mounts)"

mounted=()
cleanup() {
    local i m
    # what the command mounted below the root and left (ip netns: /run/netns),
    # deepest first, then this script's own mounts in reverse order
    if [ ${#mounted[@]} -gt 0 ]; then
        awk -v r="$root/" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo |
            awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2- | while read -r m; do
            case " ${mounted[*]} " in *" $m "*) ;; *) umount -l "$m" 2>/dev/null || true ;; esac
        done
    fi
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
    done
    mounted=()
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bind() {    # bind SRC: mount SRC on ROOT/SRC unless something is mounted there already
    local dst=$root$1
    mkdir -p "$dst"
    mountpoint -q "$dst" && return 0
    # a sandbox that cannot bind-mount cannot run this: skipped (77)
    mount --bind "$1" "$dst" || { say "SKIP: cannot bind-mount $1 into $root"; exit 77; }
    mounted+=("$dst")
}

mount_all() {
    # the root a mount point of its own, private: inside, / is one (ip netns
    # exec remounts it) and nothing mounted below reaches this machine's /
    if ! mountpoint -q "$root"; then
        mount --bind "$root" "$root" || { say "SKIP: cannot bind-mount $root"; exit 77; }
        mounted+=("$root")
        mount --make-private "$root"
    fi
    bind /proc
    bind /sys
    bind /dev
    bind /dev/shm
    [ -d /dev/pts ] && bind /dev/pts
    # name resolution for apt, and for Open MPI's own host name look-ups
    cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    cp /etc/hosts "$root/etc/hosts" 2>/dev/null || true
}

# in_root CMD...: run CMD in the root with a clean environment
in_root() {
    local envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
                LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive TERM="${TERM:-dumb}")
    local v
    while IFS='=' read -r v _; do
        case $v in
        JOBS|CONFIGURE_ARGS|MPI_TEST_*|BRAID_*|OMPI_MCA_*|PRTE_MCA_*|PMIX_MCA_*|UCX_*)
            envs+=("$v=${!v}") ;;
        esac
    done < <(env)
    chroot "$root" /usr/bin/env -i "${envs[@]}" "$@"
}

missing_pkgs() {    # packages of pkgs not installed in the root
    local p
    for p in "${pkgs[@]}"; do
        in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            echo "$p"
    done
}

setup() {
    exec 9>"$root.lock"
    flock 9
    if [ ! -f "$root/.braid-debootstrapped" ]; then
        local t0=$SECONDS
        if ! command -v debootstrap >/dev/null; then
            say "installing debootstrap"
            DEBIAN_FRONTEND=noninteractive apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                debootstrap >/dev/null
        fi
        # what an interrupted run left is made again
        for d in "$root" "$root.new"; do
            [ -e "$d" ] || continue
            mountpoint -q "$d/proc" && die "$d/proc is mounted (another run?); not removing $d"
            say "removing the unfinished root $d"
            rm -rf --one-file-system "$d"
        done
        say "debootstrap $suite into $root ($mirror)"
        mkdir -p "$(dirname "$root")"
        debootstrap --variant=minbase "$suite" "$root.new" "$mirror" >"$root.debootstrap.log" 2>&1 ||
            { tail -n 20 "$root.debootstrap.log" >&2; die "debootstrap failed (log: $root.debootstrap.log)"; }
        # no daemons started by package scripts inside the root
        printf '#!/bin/sh\nexit 101\n' >"$root.new/usr/sbin/policy-rc.d"
        chmod 755 "$root.new/usr/sbin/policy-rc.d"
        touch "$root.new/.braid-debootstrapped"
        mv "$root.new" "$root"
        say "debootstrap done in $((SECONDS - t0))s"
    fi
    mount_all
    local missing
    missing=$(missing_pkgs | tr '\n' ' ')
    if [ -n "${missing// /}" ]; then
        local t0=$SECONDS
        say "installing in the root: $missing"
        in_root apt-get update -qq
        # shellcheck disable=SC2086
        in_root apt-get install -y -qq --no-install-recommends $missing >/dev/null
        in_root apt-get clean
        say "packages installed in $((SECONDS - t0))s"
    fi
    printf '%s\n' "${pkgs[@]}" >"$stamp"
    say "root $root: $(in_root sh -c 'mpirun --version 2>/dev/null | head -n1')"
}

# copy_tree: the project's files (braid_copy_tree, contrib/braid_env.sh)
# into ROOT$src
copy_tree() {
    mkdir -p "$root$build"
    braid_copy_tree "$root$src" "$top"
}

setup
case $cmd in
setup) exit 0 ;;
shell)
    copy_tree
    in_root /bin/bash -c "cd $src && exec bash -i" ;;
run)
    [ $# -ge 1 ] || die "run: no command"
    copy_tree
    in_root /bin/bash -c 'cd "$1" && shift && exec "$@"' bash "$src" "$@" ;;
build|test)
    copy_tree
    script='set -e
        cd '"$src"'
        if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
            ./autogen.sh >/dev/null 2>&1
        fi
        cd '"$build"'
        t0=$SECONDS
        [ -f Makefile ] || '"$src"'/configure -q ${CONFIGURE_ARGS:-}
        make -j"${JOBS:-2}" >/dev/null
        echo "ompi5.sh: built against Open MPI $(sed -n "s/^OMPI_VERSION = //p" Makefile) in $((SECONDS - t0))s" >&2'
    if [ "$cmd" = test ]; then
        # only this run's logs (tools/test.sh counts them)
        script+='
        find tests -name "*.log" -delete -o -name "*.trs" -delete
        rm -f test-suite.log
        make -j"${JOBS:-2}" check TESTS= >/dev/null
        t0=$SECONDS; rc=0
        MPI_TEST_FILTER=${BRAID_OMPI5_MPI_FILTER:-${MPI_TEST_FILTER:-}} \
            make -j1 check TESTS="${BRAID_OMPI5_TESTS:-\$(UNIT_TESTS) tests/mpi/run_mpi_tests.sh}" || rc=$?
        echo "ompi5.sh: make check ran in $((SECONDS - t0))s (logs under '"$root$build"'/tests)" >&2
        # across simulated hosts, as tools/test.sh does on this machine
        # (BRAID_MULTIHOST=0 skips it; exit 77 where namespaces cannot be made)
        if [ "${BRAID_MULTIHOST:-auto}" != 0 ]; then
            t0=$SECONDS; mh=0
            MPI_TEST_FILTER=${BRAID_OMPI5_MH_FILTER:-${MPI_TEST_FILTER:-}} \
                BRAID_BUILDDIR=$PWD BRAID_SRCDIR='"$src"' BRAID_MH_HOSTS=${BRAID_MH_HOSTS:-2} \
                BRAID_MH_SLOTS=${BRAID_MH_SLOTS:-2} bash '"$src"'/tests/multihost/run_multihost.sh \
                >tests/multihost.log 2>&1 || mh=$?
            tail -n 20 tests/multihost.log
            echo "ompi5.sh: multihost tests: exit $mh in $((SECONDS - t0))s" >&2
            [ $mh -eq 0 ] || [ $mh -eq 77 ] || rc=$mh
        fi
        # the main job (contrib/apps/logreg under braid and under tuned,
        # the losses compared; contrib/quickstart.sh on 4.1) against Open MPI 5
        t0=$SECONDS; mj=0
        BRAID_BUILDDIR=$PWD bash '"$src"'/contrib/run_app_compare.sh -n 2 -r 1 \
            >tests/main_job.log 2>&1 || mj=$?
        grep -E "losses agree|variant|braid  |tuned  " tests/main_job.log || tail -n 20 tests/main_job.log
        echo "ompi5.sh: main job (logreg, braid vs tuned): exit $mj in $((SECONDS - t0))s" >&2
        [ $mj -eq 0 ] || rc=$mj
        # make install alone makes mpirun load braid: installs into the
        # root'"'"'s Open MPI, checks with no component path in the environment,
        # uninstalls (BRAID_OMPI5_INSTALL_CHECK=0 skips it)
        if [ "${BRAID_OMPI5_INSTALL_CHECK:-1}" != 0 ]; then
            t0=$SECONDS; ic=0
            BRAID_BUILDDIR=$PWD BRAID_SRCDIR='"$src"' bash '"$src"'/tests/install/check_install.sh \
                >tests/install_check.log 2>&1 || ic=$?
            grep -E "^(PASS|FAIL|SKIP)" tests/install_check.log || tail -n 20 tests/install_check.log
            echo "ompi5.sh: install check: exit $ic in $((SECONDS - t0))s" >&2
            [ $ic -eq 0 ] || [ $ic -eq 77 ] || rc=$ic
        fi
        exit $rc'
    fi
    in_root /bin/bash -c "$script" ;;
esac
