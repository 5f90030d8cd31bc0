#!/usr/bin/env bash
# thread_levels.sh - MPI_Allreduce at 8 B and 1 MiB (float sum) under braid
# and under tuned, three ways, interleaved (rep 1: every variant, rep 2: ...):
#   C              braid_bench, MPI_Init (MPI_THREAD_SINGLE)
#   C multiple     braid_bench, MPI_Init_thread(MPI_THREAD_MULTIPLE), one
#                  thread calling (BRAID_BENCH_THREAD_MULTIPLE=1)
#   mpi4py         contrib/bench/mpi4py_allreduce.py (mpi4py asks for
#                  MPI_THREAD_MULTIPLE), numpy float32 buffers
# Prints the median over repetitions of each run's p50 (us) and busbw.
#
#   contrib/bench/thread_levels.sh [-n NP] [-r REPS] [-b BUILD_DIR]
# The medians also go, as CSV rows (algorithm: C, C_multiple, mpi4py), to
# the results file (contrib/bench/results.sh: $BRAID_RESULTS, default
# build/results/thread_levels.csv).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=contrib/bench/results.sh
source "$here/results.sh"
results_open "$0" "$@"
top=$(cd "$here/../.." && pwd)
np=2 reps=5 build=$top/build
while getopts "n:r:b:" opt; do
    case $opt in
    n) np=$OPTARG ;; r) reps=$OPTARG ;; b) build=$OPTARG ;;
    *) echo "usage: thread_levels.sh [-n NP] [-r REPS] [-b BUILD_DIR]" >&2; exit 2 ;;
    esac
done
py=${BRAID_PYTHON:-/usr/bin/python3}
# shellcheck source=contrib/braid_env.sh
source "$top/contrib/braid_env.sh"
pkglib=$(braid_pkglibdir)
braid_run_as_root
raw=$(mktemp)
trap 'rm -f "$raw" "$BRAID_RESULTS_ROWS"' EXIT
mpi() { # variant mode command...
    local v=$1 mode=$2; shift 2
    local sel=()
    [ "$v" = tuned ] && sel=(--mca coll '^braid')
    timeout 300 mpirun -np "$np" --oversubscribe --bind-to none \
        --mca mca_base_component_path "$build/.libs:$pkglib" "${sel[@]}" "$@" 2>/dev/null |
        sed "s/^/$v,$mode,/" >>"$raw"
}
bench=$build/contrib/bench/braid_bench
for ((rep = 1; rep <= reps; rep++)); do
    for v in braid tuned; do
        mpi "$v" C "$bench" -c allreduce -b 8 -e 1M -t 0.1 --csv
        mpi "$v" C_multiple -x BRAID_BENCH_THREAD_MULTIPLE=1 "$bench" -c allreduce -b 8 -e 1M -t 0.1 --csv
        "$py" -c 'import mpi4py, numpy' 2>/dev/null &&
            mpi "$v" mpi4py "$py" "$here/mpi4py_allreduce.py" 8 1M
    done
done
python3 - "$raw" "$np" <<'PY'
import csv, os, re, statistics, sys
res = csv.writer(open(os.environ["BRAID_RESULTS_ROWS"], "a"), lineterminator="\n")
from collections import defaultdict
P = int(sys.argv[2])
d = defaultdict(list)
for line in open(sys.argv[1]):
    v, mode, rest = line.rstrip("\n").split(",", 2)
    if mode == "mpi4py":
        m = re.search(r"bytes=(\d+) p50_us=([\d.]+)", rest)
        if m: d[(mode, int(m.group(1)), v)].append(float(m.group(2)))
    elif not rest.startswith("coll"):
        f = rest.split(",")   # coll,np,dtype,op,inplace,size_bytes,count,iters,p50_us,...
        if f[0] == "allreduce" and int(f[5]) in (8, 1 << 20):
            d[(mode, int(f[5]), v)].append(float(f[8]))
print("| program | size | tuned p50 us | braid p50 us | tuned busbw GB/s | braid busbw GB/s | braid/tuned |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for mode in ("C", "C_multiple", "mpi4py"):
    for s in (8, 1 << 20):
        t, b = d.get((mode, s, "tuned")), d.get((mode, s, "braid"))
        if not t or not b: continue
        reps = min(len(t), len(b))
        t, b = statistics.median(t), statistics.median(b)
        res.writerow(["allreduce", P, s, f"{b:.2f}", "tuned", f"{t:.2f}", reps, mode,
                      "MPI_THREAD_MULTIPLE, one thread calling" if mode != "C" else "MPI_Init"])
        bw = lambda us: s / (us * 1e-6) / 1e9 * 2 * (P - 1) / P
        name = {"C": "C, MPI_Init", "C_multiple": "C, MPI_THREAD_MULTIPLE", "mpi4py": "mpi4py"}[mode]
        size = "8 B" if s == 8 else "1 MiB"
        print(f"| {name} | {size} | {t:.2f} | {b:.2f} | {bw(t):.3f} | {bw(b):.3f} | {t / b:.2f} |")
PY
results_close
