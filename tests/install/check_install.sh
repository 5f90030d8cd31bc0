#!/usr/bin/env bash
# check_install.sh - 'make install' alone makes mpirun load braid: installs
# the build into this machine's Open MPI, checks with no environment
# variable about component paths that ompi_info lists braid and that
# 'mpirun -np 2' runs its allreduce in braid (braid's per-call trace,
# coll_braid_verbose=20, and the benchmark's result row), with nothing reported about the component
# by PMIx; then 'make uninstall' and checks that everything it added is
# gone and that mpirun no longer loads braid.
#
# It changes the system's Open MPI (and, on Open MPI 5 under a PMIx
# parameter file that sets mca_base_component_path, PMIx's plugin directory
# and override parameter file) while it runs, and puts them back on exit,
# also on failure or interrupt: root, in a root made for it
# (tools/ompi5.sh test runs it in its Debian 13 root). Not in make check.
#
#   BRAID_BUILDDIR=BUILD BRAID_SRCDIR=SRC tests/install/check_install.sh
#
# Prints one line per check and "mpi tests: N passed, M failed" (counted by
# tools/test.sh). Exit status 0 = all passed, 77 = skipped (not root).
set -u
srcdir=${BRAID_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${BRAID_BUILDDIR:-$(pwd)}
builddir=$(cd "$builddir" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "check_install: SKIP: needs root (installs into Open MPI)"; exit 77; }
bench=$builddir/contrib/bench/braid_bench
[ -x "$bench" ] || { echo "check_install: $bench not built" >&2; exit 99; }
mk() { sed -n "s/^$1 = //p" "$builddir/Makefile" | head -n1; }
compdir=$(mk BRAID_COMPONENT_DIR)
rankdir=$(mk BRAID_RANK_COMPONENT_DIR)
override=$(mk BRAID_PMIX_OVERRIDE_FILE)
[ -n "$compdir" ] || { echo "check_install: no BRAID_COMPONENT_DIR in $builddir/Makefile" >&2; exit 99; }
# shellcheck source=contrib/braid_env.sh
source "$srcdir/contrib/braid_env.sh"

passed=0 failed=0
ok() { echo "PASS: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
installed=0
tmp=""
cleanup() {
    [ $installed -eq 1 ] && make -C "$builddir" -s uninstall >/dev/null 2>&1
    installed=0
    [ -n "$tmp" ] && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# what was there before, to compare after make uninstall
[ -e "$compdir/mca_coll_braid.so" ] && { echo "check_install: braid is installed in $compdir already; not touching it" >&2; exit 99; }
override_before=absent
[ -n "$override" ] && [ -e "$override" ] && override_before=$(md5sum <"$override")

# one run of mpirun in a clean environment: no OMPI_MCA_/PMIX_MCA_/PRTE_MCA_
# variable, only PATH and HOME (what a user's shell without any setup has)
args=(-np 2 --oversubscribe --allow-run-as-root --mca coll_braid_verbose 20)
braid_mpirun_map args
tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-install-check.XXXXXX")
run_clean() {   # stdout in $tmp/out, stderr (the ranks' traces) in $tmp/err
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" \
        timeout -k 5 120 mpirun "${args[@]}" "$bench" -c allreduce -b 1024 -e 1024 -t 0.001 \
        >"$tmp/out" 2>"$tmp/err"
}

echo "# make install (component dir $compdir${rankdir:+, linked into $rankdir})"
installed=1
if ! out=$(make -C "$builddir" -s install 2>&1); then
    echo "$out"; bad "make install"
else
    echo "$out" | sed 's/^/#   /'
    ok "make install"
fi

line=$(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" ompi_info --parsable 2>/dev/null | grep '^mca:coll:braid:version:' | head -n1)
[ -n "$line" ] && ok "ompi_info lists braid ($line)" || bad "ompi_info does not list braid"

if [ -n "$rankdir" ]; then
    [ "$(readlink "$rankdir/mca_coll_braid.so")" = "$compdir/mca_coll_braid.so" ] &&
        ok "$rankdir/mca_coll_braid.so links to $compdir/mca_coll_braid.so" ||
        bad "no link $rankdir/mca_coll_braid.so -> $compdir/mca_coll_braid.so"
fi

# the benchmark's result row for 1024 bytes (256 floats). PRRTE's output
# forwarding can put a fragment of a rank's stderr (the "[host:pid]" prefix
# of a trace line) in front of it on stdout (seen in CI), so the row is
# matched anywhere on its line.
has_row() { grep -q -E '(^|[] ])[[:space:]]*1024[[:space:]]+256[[:space:]]' "$tmp/out"; }

run_clean
# (braid traces its calls on rank 0 of the communicator; the other rank
# runs braid's side of them, or the job would not complete)
traces=$(grep -c 'braid: allreduce [a-z_]* np=2 ' "$tmp/err")
if [ "$traces" -ge 1 ] && has_row; then
    ok "mpirun -np 2 with no component path set runs allreduce in braid ($traces trace lines, e.g. '$(grep -m1 'braid: allreduce' "$tmp/err" | sed 's/^\[[^]]*\] //')')"
else
    tail -n 20 "$tmp/out" "$tmp/err" | sed 's/^/#   /'
    bad "mpirun -np 2 with no component path set: no braid allreduce trace (or no result row)"
fi
if grep -q -i -E 'bad prefix|mca_coll_braid' "$tmp/out" "$tmp/err"; then
    grep -h -i -E 'bad prefix|mca_coll_braid' "$tmp/out" "$tmp/err" | head -n 4 | sed 's/^/#   /'
    bad "that run reported the component (PMIx or Open MPI)"
else
    ok "that run reported nothing about the component"
fi

echo "# make uninstall"
if make -C "$builddir" -s uninstall >/dev/null 2>&1; then ok "make uninstall"; else bad "make uninstall"; fi
installed=0
left=""
[ -e "$compdir/mca_coll_braid.so" ] && left+=" $compdir/mca_coll_braid.so"
[ -n "$rankdir" ] && { [ -e "$rankdir/mca_coll_braid.so" ] || [ -L "$rankdir/mca_coll_braid.so" ]; } &&
    left+=" $rankdir/mca_coll_braid.so"
if [ -n "$override" ]; then
    override_after=absent
    [ -e "$override" ] && override_after=$(md5sum <"$override")
    [ "$override_after" = "$override_before" ] || left+=" $override (changed)"
fi
[ -z "$left" ] && ok "make uninstall left nothing behind" || bad "make uninstall left:$left"
run_clean
if grep -q 'braid: allreduce' "$tmp/err"; then
    bad "after make uninstall mpirun still loads braid"
elif has_row; then
    ok "after make uninstall mpirun runs without braid"
else
    tail -n 20 "$tmp/out" "$tmp/err" | sed 's/^/#   /'
    bad "after make uninstall the benchmark did not run"
fi

echo "mpi tests: $passed passed, $failed failed"
[ $failed -eq 0 ]
