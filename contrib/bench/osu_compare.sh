#!/usr/bin/env bash
# osu_compare.sh - an OSU micro-benchmark (or any program that prints
# "size latency" rows, or osu_barrier's one "latency" row and osu_ibarrier's
# one row without a size, read as size 0)
# under braid and under tuned (--mca coll ^braid), interleaved (rep 1:
# braid then tuned, rep 2: ...); per size the median
# over repetitions of each variant's figure, and tuned / braid (> 1: braid
# is faster). OSU's method: each call timed alone, a barrier between calls,
# the time averaged over iterations and ranks.
#
#   contrib/bench/osu_compare.sh [-n NP] [-r REPS] [-B BIND] [-b BUILD_DIR] [-L NS] [-k COL] OSU_BINARY [OSU ARGS]
# e.g. contrib/bench/osu_compare.sh -r 5 -B core .../osu_reduce -m 8:4194304 -T mpi_float
#      contrib/bench/osu_compare.sh -k 4 .../osu_igather -m 1:1024   (pure communication time)
#
# NP defaults to 2, REPS to 5, BIND (mpirun --bind-to) to core, BUILD_DIR
# to build/ (braid's component there is the one measured). Prints the load
# average before and after, then one markdown table. -L NS: before each run
# braid_bench measures line_ns (a cache line's round trip between ranks 0
# and 1, braid_bench.c) under the same mpirun options, and the runs form two
# tables: line_ns at most NS, and above (a median's sample count in
# parentheses) - a virtual machine's near and far states apart. -k COL:
# the column of a row to compare (default 2, the latency; the nonblocking
# benchmarks osu_i* print overall time in 2, compute in 3, pure
# communication time in 4 and overlap % in 5, where a larger figure is
# better: the ratio column then reads braid / tuned). The peer column is
# named libnbc for a benchmark named osu_i* (Open MPI runs the nonblocking
# collectives there), tuned otherwise. The medians also go, as CSV rows,
# to the results file (contrib/bench/results.sh: $BRAID_RESULTS, default
# build/results/osu_compare.csv).
set -euo pipefail
# shellcheck source=contrib/bench/results.sh
source "$(dirname "$0")/results.sh"
results_open "$0" "$@"
np=2 reps=5 bind=core build=$(cd "$(dirname "$0")/../.." && pwd)/build split=0 col=2
while getopts n:r:B:b:L:k: o; do
    case $o in
    n) np=$OPTARG ;; r) reps=$OPTARG ;; B) bind=$OPTARG ;; b) build=$OPTARG ;; L) split=$OPTARG ;;
    k) col=$OPTARG ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
[[ $col =~ ^[2-9]$ ]] || { echo "osu_compare.sh: -k takes a column 2-9, not '$col'" >&2; exit 2; }
# shellcheck source=contrib/braid_env.sh
source "$(dirname "$0")/../braid_env.sh"
launch=()
braid_bench_launch launch "$build" "$bind"
rows=$(mktemp)
trap 'rm -f "$rows" "$BRAID_RESULTS_ROWS"' EXIT
declare -A var=([braid]="" [tuned]="--mca coll ^braid")
# the peer's name in the table: Open MPI runs the nonblocking benchmarks
# (osu_i*) in libnbc, the blocking ones in tuned
peer=tuned
case $(basename "$1") in osu_i*) peer=libnbc ;; esac
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)  ($(nproc) cores, np=$np, $reps reps, $(basename "$1"))"
for _ in $(seq "$reps"); do
    for v in braid tuned; do
        ns=-1
        if [ "$split" != 0 ]; then
            # shellcheck disable=SC2086
            ns=$(timeout 120 mpirun -np "$np" "${launch[@]}" ${var[$v]} "$build/contrib/bench/braid_bench" \
                -c barrier -i 1 --csv | awk -F, 'NR > 1 { print $NF }')
        fi
        # shellcheck disable=SC2086
        timeout 600 mpirun -np "$np" "${launch[@]}" ${var[$v]} "$@" |
            awk -v v="$v" -v ns="${ns:--1}" -v k="$col" '/^[0-9]+[ \t]/ { print v, $1, $k, ns }
                /^[ \t]*[0-9.]+[ \t]*$/ { print v, 0, $1, ns }
                /^[ \t]+[0-9.]+([ \t]+[0-9.]+)+[ \t]*$/ { print v, 0, $(k - 1), ns }' >>"$rows"
    done
done
echo "# load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$rows" "$split" "$col" "$peer" "$np" "$(basename "$1")" <<'PY'
import csv, os, sys
from collections import defaultdict
def median(v):
    v = sorted(v)
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2
split = float(sys.argv[2])
better_high = sys.argv[3] == "5"   # osu_i* overlap %: higher is better
peer = sys.argv[4]
np_, bench = sys.argv[5], sys.argv[6]
coll = bench[4:] if bench.startswith("osu_") else bench
out = csv.writer(open(os.environ["BRAID_RESULTS_ROWS"], "a"), lineterminator="\n")
d = defaultdict(list)
for line in open(sys.argv[1]):
    v, s, t, ns = line.split()
    g = 1 if split > 0 and float(ns) > split else 0
    d[(g, int(s), v)].append(float(t))
for g in (0, 1) if split > 0 else (0,):
    if split > 0:
        print(f"\nruns with line_ns {'<=' if g == 0 else '>'} {split:.0f} (samples in parentheses):\n")
    unit = "%" if better_high else "us"
    print(f"| size | braid {unit} | {peer} {unit} | {f'braid/{peer}' if better_high else f'{peer}/braid'} |")
    print("| ---: | ---: | ---: | ---: |")
    for s in sorted({s for gg, s, _ in d if gg == g}):
        b, t = d[(g, s, "braid")], d[(g, s, "tuned")]
        # a variant with no run in this state shows "-": its runs are in the other table
        cell = lambda x: (f"{median(x):.2f}" + (f" ({len(x)})" if split > 0 else "")) if x else "-"
        ratio = "-"
        if b and t:
            mb, mt = median(b), median(t)
            num, den = (mb, mt) if better_high else (mt, mb)
            ratio = f"{num / den:.2f}" if den > 0 else "-"
        print(f"| {s} | {cell(b)} | {cell(t)} | {ratio} |")
        if b and t:
            note = f"{bench}" + (f", column {sys.argv[3]}" if sys.argv[3] != "2" else "")
            if split > 0:
                note += f"; line_ns {'<=' if g == 0 else '>'} {split:.0f}"
            if better_high:   # overlap %, not a time: in the note only
                out.writerow([coll, np_, s, "", peer, "", min(len(b), len(t)), "auto",
                              f"{note}; overlap % braid {median(b):.2f}, {peer} {median(t):.2f}"])
            else:
                out.writerow([coll, np_, s, f"{median(b):.2f}", peer, f"{median(t):.2f}",
                              min(len(b), len(t)), "auto", note])
PY
results_close
