#!/usr/bin/env bash
# overhead.sh - what preloading libbraidprof.so costs a call: braid_bench
# with and without the library, runs interleaved, the median over runs of
# each size's p50, and the difference per call.
#
#   contrib/profile/overhead.sh [-n NP] [-r RUNS] [-B BUILD] [-m "mpirun args"] [-- braid_bench args]
#   default: -n 2 -r 5, braid_bench -c allreduce -b 8 -e 1024, ranks bound to cores,
#   braid as Open MPI finds it, else BUILD/.libs (BUILD: $BRAID_BUILDDIR, else build/)
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=contrib/braid_env.sh
source "$top/contrib/braid_env.sh"
np=2 runs=5 build=${BRAID_BUILDDIR:-$top/build} margs=""
while getopts "n:r:B:m:h" o; do
    case $o in
    n) np=$OPTARG ;;
    r) runs=$OPTARG ;;
    B) build=$OPTARG ;;
    m) margs=$OPTARG ;;
    *) sed -n '2,9p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
bench_args=("$@")
[ ${#bench_args[@]} -gt 0 ] || bench_args=(-c allreduce -b 8 -e 1024)
build=$(cd "$build" && pwd) || exit 2
lib=$build/contrib/profile/libbraidprof.so bench=$build/contrib/bench/braid_bench
if [ ! -f "$lib" ] || [ ! -x "$bench" ]; then
    echo "overhead.sh: build first ($lib, $bench)" >&2
    exit 2
fi
compdir=""
ompi_info --param coll braid --parsable 2>/dev/null | grep -q coll_braid_priority || compdir=$build/.libs
braid_env_setup "$compdir" || exit 2
# shellcheck disable=SC2206
extra=($margs)
launch=(--bind-to core "${extra[@]}")
braid_mpirun_map launch
braid_mpirun_env
work=$(mktemp -d "${TMPDIR:-/tmp}/braidprof-overhead.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
echo "overhead.sh: np=$np, $runs interleaved runs of braid_bench ${bench_args[*]}; braid: $BRAID_WHERE; load $(cut -d' ' -f1 /proc/loadavg)"
for ((i = 1; i <= runs; i++)); do
    for v in plain prof; do
        env=()
        [ $v = prof ] && env=(-x "LD_PRELOAD=$lib" -x "BRAIDPROF_OUT=$work/prof.csv")
        timeout 300 "${MPIRUN[@]}" -np "$np" "${launch[@]}" "${env[@]}" "$bench" "${bench_args[@]}" \
            2>/dev/null | awk '/^ *[0-9]/ {print $1, $4}' >"$work/$v.$i" || {
            echo "overhead.sh: a $v run failed" >&2
            exit 1
        }
    done
done
echo "overhead.sh: load after $(cut -d' ' -f1 /proc/loadavg)"
printf '%10s %14s %14s %12s\n' "size(B)" "p50 plain us" "p50 prof us" "prof-plain ns"
cat "$work"/plain.* | awk '{print $1}' | sort -n -u | while read -r size; do
    p=$(awk -v s="$size" '$1 == s {print $2}' "$work"/plain.* | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    q=$(awk -v s="$size" '$1 == s {print $2}' "$work"/prof.* | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    awk -v s="$size" -v p="$p" -v q="$q" 'BEGIN {printf "%10d %14.3f %14.3f %12.0f\n", s, p, q, (q - p) * 1000}'
done
