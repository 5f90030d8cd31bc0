#!/usr/bin/env bash
# osu_nb_blocking.sh - an OSU nonblocking benchmark's pure communication
# time (osu_i*, column 4: post and wait with no compute between) against
# its blocking benchmark (column 2), braid in both, interleaved (rep 1:
# blocking then nonblocking, rep 2: ...); per size the median over
# repetitions of each, and nonblocking / blocking (1.00: the engine costs
# nothing over the blocking call).
#
#   contrib/bench/osu_nb_blocking.sh [-n NP] [-r REPS] [-B BIND] [-b BUILD_DIR] [-L NS] \
#       OSU_BLOCKING OSU_NONBLOCKING [OSU ARGS]
# e.g. contrib/bench/osu_nb_blocking.sh -r 6 -L 400 OSU/.../blocking/osu_allreduce \
#          OSU/.../non_blocking/osu_iallreduce -m 8:1024
#
# NP defaults to 2, REPS to 5, BIND to core, BUILD_DIR to build/. -L NS:
# braid_bench measures line_ns before each repetition (a cache line's
# round trip between ranks 0 and 1) and the repetitions form two tables,
# line_ns at most NS and above: a virtual machine's near and far states.
# The medians also go, as CSV rows (peer "braid blocking", so ratio =
# blocking / nonblocking), to the results file (contrib/bench/results.sh:
# $BRAID_RESULTS, default build/results/osu_nb_blocking.csv).
set -euo pipefail
# shellcheck source=contrib/bench/results.sh
source "$(dirname "$0")/results.sh"
results_open "$0" "$@"
np=2 reps=5 bind=core build=$(cd "$(dirname "$0")/../.." && pwd)/build split=0
while getopts n:r:B:b:L: o; do
    case $o in
    n) np=$OPTARG ;; r) reps=$OPTARG ;; B) bind=$OPTARG ;; b) build=$OPTARG ;; L) split=$OPTARG ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { sed -n '2,17p' "$0"; exit 2; }
blocking=$1 nonblocking=$2
shift 2
# shellcheck source=contrib/braid_env.sh
source "$(dirname "$0")/../braid_env.sh"
launch=()
braid_bench_launch launch "$build" "$bind"
rows=$(mktemp)
trap 'rm -f "$rows" "$BRAID_RESULTS_ROWS"' EXIT
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)  ($(nproc) cores, np=$np, $reps reps, $(basename "$nonblocking") / $(basename "$blocking"))"
for _ in $(seq "$reps"); do
    ns=-1
    if [ "$split" != 0 ]; then
        ns=$(timeout 120 mpirun -np "$np" "${launch[@]}" "$build/contrib/bench/braid_bench" \
            -c barrier -i 1 --csv | awk -F, 'NR > 1 { print $NF }')
    fi
    timeout 600 mpirun -np "$np" "${launch[@]}" "$blocking" "$@" |
        awk -v ns="${ns:--1}" '/^[0-9]+[ \t]/ { print "b", $1, $2, ns }' >>"$rows"
    timeout 600 mpirun -np "$np" "${launch[@]}" "$nonblocking" "$@" |
        awk -v ns="${ns:--1}" '/^[0-9]+[ \t]/ { print "nb", $1, $4, ns }' >>"$rows"
done
echo "# load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$rows" "$split" "$np" "$(basename "$nonblocking")" <<'PY'
import csv, os, sys
from collections import defaultdict
np_, bench = sys.argv[3], sys.argv[4]
coll = bench[4:] if bench.startswith("osu_") else bench
out = csv.writer(open(os.environ["BRAID_RESULTS_ROWS"], "a"), lineterminator="\n")
def median(v):
    v = sorted(v)
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2
split = float(sys.argv[2])
d = defaultdict(list)
for line in open(sys.argv[1]):
    v, s, t, ns = line.split()
    d[(1 if split > 0 and float(ns) > split else 0, int(s), v)].append(float(t))
for g in (0, 1) if split > 0 else (0,):
    if split > 0:
        print(f"\nruns with line_ns {'<=' if g == 0 else '>'} {split:.0f} (samples in parentheses):\n")
    print("| size | blocking us | nonblocking pure us | nonblocking/blocking |")
    print("| ---: | ---: | ---: | ---: |")
    for s in sorted({s for gg, s, _ in d if gg == g}):
        b, nb = d[(g, s, "b")], d[(g, s, "nb")]
        cell = lambda x: (f"{median(x):.2f}" + (f" ({len(x)})" if split > 0 else "")) if x else "-"
        ratio = f"{median(nb) / median(b):.2f}" if b and nb and median(b) > 0 else "-"
        print(f"| {s} | {cell(b)} | {cell(nb)} | {ratio} |")
        if b and nb:
            note = f"{bench} pure communication (column 4) against the blocking benchmark"
            if split > 0:
                note += f"; line_ns {'<=' if g == 0 else '>'} {split:.0f}"
            out.writerow([coll, np_, s, f"{median(nb):.2f}", "braid blocking", f"{median(b):.2f}",
                          min(len(b), len(nb)), "auto", note])
PY
results_close
