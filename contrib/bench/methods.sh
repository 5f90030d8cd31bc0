#!/usr/bin/env bash
# methods.sh - small-message latency of braid against tuned by four methods,
# interleaved (rep 1: braid then tuned, rep 2: ...), medians over reps:
#   bench  contrib/bench/braid_bench: a barrier before every call, the
#          slowest rank's p50 (-t 0.05 per size)
#   loop   back-to-back calls, slowest rank's mean       (contrib/bench/probes)
#   osu    OSU style: each call timed, barrier after it, mean over ranks
#   imb    IMB style: root rotating every call, no barriers, mean over ranks
# A result is to be trusted when the methods agree (docs/BENCHMARKS.md).
#
#   contrib/bench/methods.sh [-n NP] [-r REPS] [-e MAXBYTES] [-b BUILD_DIR] [-c COLLS]
# Prints the load average before and after, then one markdown table:
#   | coll | size | method | braid us | tuned us | tuned/braid |
# and writes the medians as CSV rows (note "method=...") to the results
# file (contrib/bench/results.sh: $BRAID_RESULTS, default
# build/results/methods.csv).
set -euo pipefail
# shellcheck source=contrib/bench/results.sh
source "$(dirname "$0")/results.sh"
results_open "$0" "$@"
NP=2 REPS=5 MAXB=1024 COLLS=allreduce,bcast,reduce,barrier
BUILD=$(cd "$(dirname "$0")/../.." && pwd)/build
while getopts n:r:e:b:c: o; do
    case $o in
    n) NP=$OPTARG ;; r) REPS=$OPTARG ;; e) MAXB=$OPTARG ;; b) BUILD=$OPTARG ;; c) COLLS=$OPTARG ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
    esac
done
# shellcheck source=contrib/braid_env.sh
source "$(dirname "$0")/../braid_env.sh"
braid_run_as_root
ompi_dir=$(braid_pkglibdir)
export OMPI_MCA_mca_base_component_path="$BUILD/.libs${ompi_dir:+:$ompi_dir}"
out=$(mktemp -d)
trap 'rm -rf "$out" "$BRAID_RESULTS_ROWS"' EXIT
declare -A VAR=( [braid]="" [tuned]="--mca coll ^braid" )
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)  ($(nproc) cores, np=$NP, $REPS reps)"
for rep in $(seq "$REPS"); do
    for v in braid tuned; do
        # shellcheck disable=SC2086
        timeout 600 mpirun --oversubscribe -np "$NP" ${VAR[$v]} "$BUILD/contrib/bench/probes" \
            -e "$MAXB" -c "$COLLS" -n 20000 | sed "s/^/$v /" >> "$out/rows"
        for c in ${COLLS//,/ }; do
            e=$MAXB; [ "$c" = barrier ] && e=8     # barrier: one "size", reported as 0
            # shellcheck disable=SC2086
            timeout 600 mpirun --oversubscribe -np "$NP" ${VAR[$v]} "$BUILD/contrib/bench/braid_bench" \
                -c "$c" -b 8 -e "$e" -t 0.05 |
                awk -v v="$v" -v c="$c" '/^ *[0-9]/ { print v, "bench", c, (c == "barrier" ? 0 : $1), $4 }' >> "$out/rows"
        done
    done
done
echo "# load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out/rows" "$NP" <<'PY'
import csv, os, sys, statistics, collections
res = csv.writer(open(os.environ["BRAID_RESULTS_ROWS"], "a"), lineterminator="\n")
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    v, m, c, b, t = line.split()
    d[(c, int(b), m, v)].append(float(t))
keys = sorted({(c, b, m) for (c, b, m, v) in d}, key=lambda k: (k[0], k[1], ["bench", "loop", "osu", "imb"].index(k[2])))
print("| coll | size | method | braid us | tuned us | tuned/braid |")
print("| --- | ---: | --- | ---: | ---: | ---: |")
for c, b, m in keys:
    x, y = d.get((c, b, m, "braid")), d.get((c, b, m, "tuned"))
    if not x or not y: continue
    bx, ty = statistics.median(x), statistics.median(y)
    print(f"| {c} | {b} | {m} | {bx:.2f} | {ty:.2f} | {ty / bx:.2f} |")
    res.writerow([c, sys.argv[2], b, f"{bx:.2f}", "tuned", f"{ty:.2f}", min(len(x), len(y)), "auto",
                  f"method={m}"])
PY
results_close
