#!/usr/bin/env bash
# ompi_main.sh - build braid against Open MPI's main branch (coll framework
# 3.0.0: size_t counts, ompi_count_array_t / ompi_disp_array_t) from git
# directories already on this machine. Not a CI stage: a full build of
# Open MPI main takes most of an hour on 2 cores.
#
#   tools/ompi_main.sh prepare   # check out main and its submodules, autogen.pl, configure
#   tools/ompi_main.sh compile   # prepare, then compile braid's coll/*.c against
#                                # main's headers (no Open MPI build, no link): the cheap check
#   tools/ompi_main.sh build     # prepare, make install of Open MPI main into PREFIX (once)
#   tools/ompi_main.sh test      # build, then configure braid --with-ompi=PREFIX, make,
#                                # unit tests, a share of the MPI cases and (root) of
#                                # the multihost cases
#
# Sources: git directories (bare or not) of open-mpi/ompi and of the
# submodules it needs: openpmix/openpmix, open-mpi/prrte (the fork .gitmodules
# names, not openpmix/prrte), open-mpi/oac,
# mpi-forum/pympistandard. A machine without the network gets them from a
# mirror (on the project machines: the fetch tool, 'fetch github:open-mpi/ompi'
# etc., which puts them under /work/.mirror/OWNER+NAME/repo, the defaults
# below). Each submodule is checked out at the commit main pins, or, where
# the mirror lacks that commit, at the mirror's newest (said on stderr).
#
# Environment:
#   BRAID_OMPI_MAIN_GIT     open-mpi/ompi   (default /work/.mirror/open-mpi+ompi/repo)
#   BRAID_PMIX_GIT          openpmix/openpmix (.../openpmix+openpmix/repo)
#   BRAID_PRRTE_GIT         open-mpi/prrte  (.../open-mpi+prrte/repo)
#   BRAID_OAC_GIT           open-mpi/oac    (.../open-mpi+oac/repo)
#   BRAID_PYMPISTD_GIT      mpi-forum/pympistandard (.../mpi-forum+pympistandard/repo)
#   BRAID_OMPI_MAIN_REV     what to check out of ompi (default HEAD; a mirror whose
#                           pympistandard lacks the commit main pins needs a main
#                           from before its bindings used it, e.g. ab0eda34ef)
#   BRAID_OMPI_MAIN_DIR     work directory: src/, build/, prefix/, braid-build/
#                           (default /var/tmp/braid-ompi-main)
#   JOBS                    make -j (default 2)
#   MPI_TEST_FILTER         the MPI cases 'test' runs (default '^np=(1|3) ')
#   MPI_TEST_EXCLUDE        the ones it leaves out (default 'mpi4py|mpi_faults kill')
#   BRAID_MAIN_MH_FILTER    its multihost cases (default 'mpi_topo|mpi_barrier_bcast')
# Needs: git, autoconf, automake, libtoolize, flex, perl, python3 >= 3.6, gcc.
# Exit status 0 when every step passed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mirror=/work/.mirror
ompi_git=${BRAID_OMPI_MAIN_GIT:-$mirror/open-mpi+ompi/repo}
dir=${BRAID_OMPI_MAIN_DIR:-/var/tmp/braid-ompi-main}
src=$dir/src build=$dir/build prefix=$dir/prefix bbuild=$dir/braid-build
jobs=${JOBS:-2}
say() { echo "ompi_main.sh: $*" >&2; }
die() { say "$*"; exit 1; }
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
[ $# -eq 1 ] || usage 2
cmd=$1
case $cmd in prepare|compile|build|test) ;; -h|--help) usage 0 ;; *) usage 2 ;; esac

# checkout GITDIR DEST [REV]: DEST a work tree of GITDIR at REV (default
# HEAD); where GITDIR lacks REV, its newest commit no later than ompi's
# (ompi_date, set once ompi is out): a submodule's newer commits may need
# newer siblings (PRRTE's newest needs PMIx 7)
ompi_date=""
checkout() {
    local g=$1 d=$2 rev=${3:-HEAD}
    [ -d "$g" ] || die "no git directory $g (fetch it first; see the top of this script)"
    if ! git --git-dir="$g" cat-file -e "$rev^{commit}" 2>/dev/null; then
        local near=""
        [ -n "$ompi_date" ] && near=$(git --git-dir="$g" rev-list -1 --before="$ompi_date" HEAD)
        say "$g lacks $rev: using ${near:+its newest commit before $ompi_date, }${near:-its newest commit}"
        rev=${near:-HEAD}
    fi
    rm -rf "$d"
    mkdir -p "$d"
    # a mirror may list its largest files without holding them (ompi's
    # bundled hwloc and libevent tarballs): those are left out, and
    # autogen.pl and configure take the system's hwloc and libevent instead
    local ex=() p
    while read -r p; do ex+=(":(exclude)$p"); say "$p: not in $g, left out"; done < <(
        git --git-dir="$g" ls-tree -r "$rev" --format='%(objecttype) %(objectname) %(path)' |
            awk '$1 == "blob" { print $2, $3 }' |
            git --git-dir="$g" cat-file --batch-check='%(objectname) %(rest)' 2>/dev/null |
            awk '$2 == "missing" { print $1 }' | sort -u |
            while read -r o; do git --git-dir="$g" ls-tree -r "$rev" --format='%(objectname) %(path)' | awk -v o="$o" '$1 == o { print $2 }'; done)
    git --git-dir="$g" archive --format=tar "$rev" -- . "${ex[@]}" | tar -C "$d" -xf -
    git --git-dir="$g" rev-parse "$rev" >"$d/.braid-rev"
    say "$(basename "$(dirname "$g")") at $(git --git-dir="$g" rev-parse --short "$rev") in $d"
}

# pinned GITDIR REV PATH: the commit REV of GITDIR pins the submodule PATH at
pinned() { git --git-dir="$1" ls-tree "$2" "$3" | awk '$2 == "commit" { print $3 }'; }

prepare() {
    mkdir -p "$dir"
    if [ ! -f "$src/.braid-prepared" ]; then
        local rev=${BRAID_OMPI_MAIN_REV:-HEAD} p sub g
        checkout "$ompi_git" "$src" "$rev"
        ompi_date=$(git --git-dir="$ompi_git" log -1 --format=%cI "$rev")
        # each submodule at the commit main pins (git ls-tree: mode 160000),
        # and PMIx's and PRRTE's own config/oac at the commit they pin
        local oac=${BRAID_OAC_GIT:-$mirror/open-mpi+oac/repo}
        for p in 3rd-party/openpmix:${BRAID_PMIX_GIT:-$mirror/openpmix+openpmix/repo} \
                 3rd-party/prrte:${BRAID_PRRTE_GIT:-$mirror/open-mpi+prrte/repo} \
                 config/oac:$oac \
                 3rd-party/pympistandard:${BRAID_PYMPISTD_GIT:-$mirror/mpi-forum+pympistandard/repo}; do
            sub=${p%%:*} g=${p#*:}
            checkout "$g" "$src/$sub" "$(pinned "$ompi_git" "$rev" "$sub")"
            case $sub in 3rd-party/openpmix|3rd-party/prrte)
                checkout "$oac" "$src/$sub/config/oac" "$(pinned "$g" "$(cat "$src/$sub/.braid-rev")" config/oac)" ;;
            esac
        done
        # pympistandard before the commit main pins leaves a database path
        # given as a string unset (_resolve_path): main's c_header.py gives
        # one, so a mirror without the pinned commit gets that line fixed
        local py=$src/3rd-party/pympistandard/src/pympistandard/__init__.py
        if grep -q '^        given_path = Path(given_path)$' "$py" 2>/dev/null; then
            sed -i 's/^        given_path = Path(given_path)$/        path = Path(given_path)/' "$py"
            say "pympistandard: a path given as a string is used as it is (fixed in $py)"
        fi
        # PMIx and PRRTE read their version from git when there is no
        # tarball: a work tree without .git says so in VERSION already
        (cd "$src" && ./autogen.pl --no-3rdparty hwloc,libevent >"$dir/autogen.log" 2>&1) ||
            { tail -n 20 "$dir/autogen.log" >&2; die "autogen.pl failed (log: $dir/autogen.log)"; }
        touch "$src/.braid-prepared"
        rm -rf "$build"
    fi
    if [ ! -f "$build/config.status" ]; then
        mkdir -p "$build"
        say "configuring Open MPI main (log: $dir/configure.log)"
        (cd "$build" && "$src/configure" --prefix="$prefix" --with-devel-headers --disable-mpi-fortran \
            --disable-oshmem --with-hwloc=external --with-libevent=external --with-pmix=internal \
            --with-prrte=internal --disable-sphinx >"$dir/configure.log" 2>&1) ||
            { tail -n 20 "$dir/configure.log" >&2; die "configure failed (log: $dir/configure.log)"; }
    fi
}

# compile: braid's coll/*.c against the configured tree's headers, with
# the include directories an installation with --with-devel-headers has
compile_check() {
    local inc=() d f rc=0 n=0 failed=()
    for d in "$build" "$src" "$build/opal/include" "$src/opal/include" "$build/ompi/include" \
             "$src/ompi/include" "$build/3rd-party/openpmix/include" "$src/3rd-party/openpmix/include" \
             "$build/3rd-party/openpmix" "$src/3rd-party/openpmix" \
             "$build/3rd-party/prrte/include" "$src/3rd-party/prrte/include"; do
        [ -d "$d" ] && inc+=(-I"$d")
    done
    for d in "$build"/3rd-party/hwloc-*/include "$src"/3rd-party/hwloc-*/include \
             "$build"/3rd-party/libevent-*/include "$build"/3rd-party/libevent-* "$src"/3rd-party/libevent-*/include; do
        [ -d "$d" ] && inc+=(-I"$d")
    done
    # headers main generates at make time (mpi_portable_platform.h ...)
    for d in opal/include ompi/include; do
        make -C "$build/$d" >>"$dir/compile.log" 2>&1 || true
    done
    # braid's own include directories, as Makefile.am's AM_CPPFLAGS has them
    local braid_inc=()
    # shellcheck disable=SC2013
    for d in $(sed -n '/^AM_CPPFLAGS *=/,/[^\\]$/p' "$top/Makefile.am" | grep -o '(top_srcdir)/[A-Za-z_/]*' | sed 's|(top_srcdir)/||'); do
        braid_inc+=(-I"$top/$d")
    done
    local ucx_cflags
    ucx_cflags=$(pkg-config --cflags ucx 2>/dev/null || true)
    mkdir -p "$dir/compile"
    for f in "$top"/coll/*.c; do
        n=$((n + 1))
        # shellcheck disable=SC2086
        if ! gcc -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
                -Werror=incompatible-pointer-types -Werror=int-conversion -Werror=implicit-function-declaration \
                -Werror=return-type -fPIC -c -o "$dir/compile/$(basename "$f" .c).o" \
                "${inc[@]}" "${braid_inc[@]}" -I"$top/coll" $ucx_cflags "$f" \
                >"$dir/compile/$(basename "$f" .c).log" 2>&1; then
            failed+=("$(basename "$f")"); rc=1
        fi
        grep -E 'error|warning' "$dir/compile/$(basename "$f" .c).log" | head -n 5 >&2 || true
    done
    local v
    v=$(sed -n 's/^major=//p;s/^minor=//p;s/^release=//p' "$src/VERSION" | tr '\n' . | sed 's/\.$//')
    if [ $rc -eq 0 ]; then
        say "compile check: $n coll/*.c compiled against Open MPI $v (main) headers"
    else
        say "compile check: ${#failed[@]} of $n failed against Open MPI $v: ${failed[*]} (logs: $dir/compile/)"
    fi
    return $rc
}

build_ompi() {
    if [ ! -x "$prefix/bin/mpicc" ]; then
        say "building Open MPI main into $prefix (log: $dir/make.log; long)"
        (cd "$build" && make -j"$jobs" >"$dir/make.log" 2>&1 && make install >>"$dir/make.log" 2>&1) ||
            { tail -n 30 "$dir/make.log" >&2; die "Open MPI main did not build (log: $dir/make.log)"; }
    fi
    say "$("$prefix/bin/ompi_info" --version 2>/dev/null | head -n 1)"
}

test_braid() {
    (cd "$top" && { [ -x configure ] || ./autogen.sh >/dev/null 2>&1; })
    mkdir -p "$bbuild"
    cd "$bbuild"
    # the component headers opal_config.h names that make install leaves
    # out (threads/pthreads, timer/linux) come from the source tree
    [ -f Makefile ] || "$top/configure" -q --with-ompi="$prefix" --with-ompi-source="$src" \
        --with-component-dir="$bbuild/component"
    make -j"$jobs" >/dev/null
    local rc=0
    # shellcheck disable=SC2016
    make -j"$jobs" check TESTS='$(UNIT_TESTS)' >/dev/null || rc=1
    # left out by default: the mpi4py cases (Debian's mpi4py is built for
    # its own Open MPI) and mpi_faults kill (it reads mpirun's message, which
    # a PRRTE built without Sphinx leaves empty)
    PATH=$prefix/bin:$PATH MPI_TEST_FILTER=${MPI_TEST_FILTER:-'^np=(1|3) '} \
        MPI_TEST_EXCLUDE=${MPI_TEST_EXCLUDE-'mpi4py|mpi_faults kill'} \
        make -j1 check TESTS=tests/mpi/run_mpi_tests.sh >/dev/null || rc=1
    grep -h '^mpi tests: \|Checks: ' tests/mpi/*.log tests/unit/*.log 2>/dev/null | tail -n 20 >&2 || true
    # across simulated hosts (root: network namespaces; exit 77 where they
    # cannot be made), as tools/test.sh and tools/ompi5.sh run them
    if [ "${BRAID_MULTIHOST:-auto}" != 0 ] && [ "$(id -u)" -eq 0 ]; then
        local mh=0
        PATH=$prefix/bin:$PATH MPI_TEST_FILTER=${BRAID_MAIN_MH_FILTER:-'mpi_topo|mpi_barrier_bcast'} \
            BRAID_BUILDDIR=$bbuild BRAID_SRCDIR=$top BRAID_MH_HOSTS=${BRAID_MH_HOSTS:-2} \
            BRAID_MH_SLOTS=${BRAID_MH_SLOTS:-2} bash "$top/tests/multihost/run_multihost.sh" \
            >tests/multihost.log 2>&1 || mh=$?
        tail -n 5 tests/multihost.log >&2
        say "multihost tests: exit $mh"
        [ $mh -eq 0 ] || [ $mh -eq 77 ] || rc=$mh
    fi
    return $rc
}

prepare
case $cmd in
prepare) say "configured in $build" ;;
compile) compile_check ;;
build) build_ompi ;;
test) build_ompi; test_braid ;;
esac
