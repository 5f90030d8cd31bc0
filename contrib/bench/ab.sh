#!/usr/bin/env bash
# ab.sh - two builds of braid against each other and against tuned, in one
# run, interleaved (rep 1: A, B, tuned; rep 2: ...), with braid_bench; per
# collective and size the median over repetitions of each run's p50 latency.
# For "does this change make braid slower?".
#
#   contrib/bench/ab.sh -a OLD_BUILD -b NEW_BUILD [-n NP] [-r REPS] [-c COLLS]
#                       [-e MAX] [-t SECONDS] [-o OUT.csv] [-L NS]
#
# OLD_BUILD and NEW_BUILD are build directories (their .libs hold
# mca_coll_braid.so); the benchmark binary is NEW_BUILD's. Prints a table:
# collective, size, A us, B us, tuned us, B/A (> 1: B slower). -L NS: one
# table for the runs whose line_ns (braid_bench's last column, a cache
# line's round trip between ranks 0 and 1, measured at the run's first
# size) is at most NS and one for the others, each median's run count in
# parentheses: a virtual machine's near and far states apart. The medians
# also go, as CSV rows (B against A, B against tuned), to the results file
# (contrib/bench/results.sh: $BRAID_RESULTS, default build/results/ab.csv).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=contrib/bench/results.sh
source "$here/results.sh"
results_open "$0" "$@"
np=2 reps=5 colls=allreduce max=32M budget=0.05 out="" A="" B="" split=0
while getopts "a:b:n:r:c:e:t:o:L:" opt; do
    case $opt in
    a) A=$OPTARG ;; b) B=$OPTARG ;; n) np=$OPTARG ;; r) reps=$OPTARG ;; c) colls=$OPTARG ;;
    e) max=$OPTARG ;; t) budget=$OPTARG ;; o) out=$OPTARG ;; L) split=$OPTARG ;;
    *) echo "usage: ab.sh -a OLD_BUILD -b NEW_BUILD [-n NP] [-r REPS] [-c COLLS] [-e MAX] [-t S] [-o CSV] [-L NS]" >&2
       exit 2 ;;
    esac
done
[ -n "$A" ] && [ -n "$B" ] || { echo "ab.sh: -a and -b are required" >&2; exit 2; }
bench=$B/contrib/bench/braid_bench
# shellcheck source=contrib/braid_env.sh
source "$here/../braid_env.sh"
pkglib=$(braid_pkglibdir)
braid_run_as_root
raw=$(mktemp)
trap 'rm -f "$raw" "$BRAID_RESULTS_ROWS"' EXIT
run() { # variant component-dir extra-mca...
    local v=$1 dir=$2; shift 2
    for c in ${colls//,/ }; do
        timeout 600 mpirun -np "$np" --oversubscribe --bind-to none \
            --mca mca_base_component_path "$dir:$pkglib" "$@" \
            "$bench" -c "$c" -b 8 -e "$max" -t "$budget" --csv 2>/dev/null |
            grep -v '^coll,' | sed "s/^/$v,/" >>"$raw"
    done
}
for ((rep = 1; rep <= reps; rep++)); do
    run A "$A/.libs"
    run B "$B/.libs"
    run tuned "$B/.libs" --mca coll '^braid'
done
[ -n "$out" ] && cp "$raw" "$out"
# variant,coll,np,dtype,op,inplace,size_bytes,count,iters,p50_us,...,line_ns
python3 - "$raw" "$split" "$np" "$A" "$B" <<'PY'
import csv, os, statistics, sys
from collections import defaultdict
split = float(sys.argv[2])
np_, build_a, build_b = sys.argv[3:6]
out = csv.writer(open(os.environ["BRAID_RESULTS_ROWS"], "a"), lineterminator="\n")
runs, state = defaultdict(list), {}
n = defaultdict(int)
for row in csv.reader(open(sys.argv[1])):
    v, c = row[0], row[1]
    if int(row[6]) <= int(n.get((v, c, "last"), -1)):
        n[(v, c)] += 1          # the sizes start again: the next run of this variant
    n[(v, c, "last")] = int(row[6])
    run = (v, c, n[(v, c)])
    if run not in state:        # a run's state: its first size's line_ns
        state[run] = "all" if split <= 0 else ("near" if float(row[-1]) <= split else "far")
    runs[(state[run], c, int(row[6]), v)].append(float(row[9]))
for st in ("all", "near", "far"):
    keys = sorted({(c, s) for (t, c, s, _) in runs if t == st})
    if not keys:
        continue
    if st != "all":
        print(f"# {st}: line_ns {'<=' if st == 'near' else '>'} {split:g} ns (runs per median in parentheses)")
    print(f"{'coll':15} {'size':>9} {'A us':>11} {'B us':>11} {'tuned us':>11} {'B/A':>6}")
    for c, s in keys:
        d = {v: runs[(st, c, s, v)] for v in ("A", "B", "tuned")}
        m = {v: statistics.median(x) for v, x in d.items() if x}
        cell = lambda v: (f"{m[v]:.2f}" + (f"({len(d[v])})" if st != "all" else "")) if v in m else "-"
        ratio = m["B"] / m["A"] if "A" in m and "B" in m and m["A"] > 0 else float("nan")
        print(f"{c:15} {s:>9} {cell('A'):>11} {cell('B'):>11} {cell('tuned'):>11} {ratio:6.2f}")
        note = f"B: {build_b}; A: {build_a}" + ("" if st == "all" else f"; {st}: line_ns {'<=' if st == 'near' else '>'} {split:g}")
        for peer, name in (("A", "braid build A"), ("tuned", "tuned")):
            if "B" in m and peer in m:
                out.writerow([c, np_, s, f"{m['B']:.2f}", name, f"{m[peer]:.2f}",
                              min(len(d["B"]), len(d[peer])), "auto", note])
PY
results_close
