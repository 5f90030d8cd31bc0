#!/usr/bin/env bash
# run_valgrind.sh - valgrind memcheck on braid's np=2 MPI tests, the
# nonblocking engine's among them (fiber stacks registered with valgrind).
#
# Each case runs `mpirun -np 2 valgrind ... program` against the component in
# the build tree (every mpirun under a timeout). Open MPI, PMIx, hwloc and UCX
# report errors of their own (uninitialised padding, leaks at exit); they are
# ignored, partly through tests/valgrind/braid.supp. The script FAILS when any
# reported error - invalid read/write, use of uninitialised values, invalid
# free, or memory lost at exit (definitely, indirectly or possibly lost) - has
# a braid frame (mca_coll_braid.so, braid_*, mca_coll_braid_*) in its stack.
# --keep-debuginfo=yes keeps the symbols of components Open MPI unloads, so
# that leaks are reported with braid's symbols.
#
#   BRAID_BUILDDIR=build tests/valgrind/run_valgrind.sh     # from the repository root
# Optional: VG_TIMEOUT (seconds per case, default 900), VG_FILTER (regex on the case).
set -u
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
builddir=${BRAID_BUILDDIR:-$srcdir/build}
builddir=$(cd "$builddir" && pwd)
timeout_s=${VG_TIMEOUT:-900}
filter=${VG_FILTER:-}
supp=$srcdir/tests/valgrind/braid.supp

if ! command -v valgrind >/dev/null 2>&1; then
    "$srcdir/contrib/install_deps.sh" valgrind || { echo "run_valgrind: valgrind missing" >&2; exit 99; }
fi
so=$builddir/.libs/mca_coll_braid.so
[ -f "$so" ] || { echo "run_valgrind: $so not built" >&2; exit 99; }
for p in mpi_barrier_bcast mpi_reductions mpi_faults mpi_stress mpi_nonblocking mpi_nbc_edges; do
    [ -x "$builddir/tests/mpi/$p" ] || make -C "$builddir" "tests/mpi/$p" >/dev/null || exit 99
done

# shellcheck source=contrib/braid_env.sh
source "$srcdir/contrib/braid_env.sh"
pkglibdir=$(braid_pkglibdir)
compdir=$(braid_component_dir "$so" "$pkglibdir") || exit 99
logdir=$(mktemp -d "${TMPDIR:-/tmp}/braid-valgrind.XXXXXX")
trap 'rm -rf "$compdir"' EXIT
export OMPI_MCA_mca_base_component_path=$compdir
braid_run_as_root
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_rmaps_base_oversubscribe=1
# keep UCX's own malloc/mmap hooks out of valgrind's way
export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none

# np=2 cases: program and arguments | MCA settings ('-' for none)
cases=(
    "mpi_barrier_bcast 3 | coll_braid_barrier_algorithm=all_to_one coll_braid_bcast_algorithm=binomial"
    "mpi_barrier_bcast 3 | coll_braid_barrier_algorithm=dissemination coll_braid_bcast_algorithm=dbtree"
    "mpi_reductions quick | coll_braid_allreduce_algorithm=ring_chunked coll_braid_reduce_algorithm=dbtree coll_braid_reduce_scatter_algorithm=halving_doubling coll_braid_allgather_algorithm=recursive_doubling"
    "mpi_reductions quick | coll_braid_allreduce_algorithm=halving_doubling coll_braid_reduce_algorithm=binomial coll_braid_reduce_scatter_algorithm=ring coll_braid_allgather_algorithm=ring"
    "mpi_reductions quick | coll_braid_allreduce_algorithm=dbtree coll_braid_dbtree_chunk_size=4096"
    "mpi_reductions quick | coll_braid_allreduce_algorithm=bcube"
    "mpi_faults nomem 1 | coll_braid_inject_alloc_failure=1 coll_braid_allreduce_algorithm=ring coll_braid_bcast_algorithm=binomial"
    "mpi_stress live 1 | -"
    "mpi_nonblocking mixed overlap persistent | -"
    "mpi_nbc_edges comm_free | -"
    "mpi_nbc_edges done_at_post | -"
    "mpi_nbc_edges pseq | coll_braid_shm_persistent=0"
)

status=0 n=0
for c in "${cases[@]}"; do
    prog=$(sed 's/ *|.*//' <<<"$c"); mca=$(sed 's/.*| *//' <<<"$c")
    n=$((n + 1))
    if [ -n "$filter" ] && ! [[ "$prog $mca" =~ $filter ]]; then continue; fi
    mca_args=()
    [ "$mca" != "-" ] && for kv in $mca; do mca_args+=(--mca "${kv%%=*}" "${kv#*=}"); done
    xml=$logdir/case$n.%q{OMPI_COMM_WORLD_RANK}.xml
    start=$(date +%s)
    timeout -k 10 "$timeout_s" mpirun -np 2 --oversubscribe --bind-to none "${mca_args[@]}" \
        valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible \
        --errors-for-leak-kinds=definite,indirect,possible --track-origins=yes \
        --num-callers=30 --keep-debuginfo=yes --suppressions="$supp" --xml=yes --xml-file="$xml" \
        "$builddir/tests/mpi/"$prog </dev/null >"$logdir/case$n.log" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    report=$(python3 "$srcdir/tests/valgrind/braid_errors.py" "$logdir"/case$n.*.xml)
    prc=$?
    if [ $rc -ne 0 ]; then
        echo "not ok $n - $prog [$mca]: mpirun exit status $rc (${secs}s)"; tail -20 "$logdir/case$n.log" | sed 's/^/#   /'
        status=1
    elif [ $prc -ne 0 ]; then
        echo "not ok $n - $prog [$mca]: errors in braid code (${secs}s)"; sed 's/^/#   /' <<<"$report"
        status=1
    else
        echo "ok $n - $prog [$mca]: $report (${secs}s)"
    fi
done
echo "# valgrind logs in $logdir"
[ $status -eq 0 ] && echo "run_valgrind: no braid error" || echo "run_valgrind: FAILED"
exit $status
