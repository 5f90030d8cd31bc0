#!/usr/bin/env bash
# ab.sh - two builds of braid against each other and against tuned, in one
# run, interleaved (rep 1: A, B, tuned; rep 2: ...), with braid_bench; per
# collective and size the median over repetitions of each run's p50 latency.
# For "does this change make braid slower?".
#
#   contrib/bench/ab.sh -a OLD_BUILD -b NEW_BUILD [-n NP] [-r REPS] [-c COLLS]
#                       [-e MAX] [-t SECONDS] [-o OUT.csv]
#
# OLD_BUILD and NEW_BUILD are build directories (their .libs hold
# mca_coll_braid.so); the benchmark binary is NEW_BUILD's. Prints a table:
# collective, size, A us, B us, tuned us, B/A (> 1: B slower).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
np=2 reps=5 colls=allreduce max=32M budget=0.05 out="" A="" B=""
while getopts "a:b:n:r:c:e:t:o:" opt; do
    case $opt in
    a) A=$OPTARG ;; b) B=$OPTARG ;; n) np=$OPTARG ;; r) reps=$OPTARG ;; c) colls=$OPTARG ;;
    e) max=$OPTARG ;; t) budget=$OPTARG ;; o) out=$OPTARG ;;
    *) echo "usage: ab.sh -a OLD_BUILD -b NEW_BUILD [-n NP] [-r REPS] [-c COLLS] [-e MAX] [-t S] [-o CSV]" >&2
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
trap 'rm -f "$raw"' EXIT
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
# variant,coll,np,dtype,op,inplace,size_bytes,count,iters,p50_us,...
python3 - "$raw" <<'PY'
import csv, statistics, sys
from collections import defaultdict
d = defaultdict(list)
for row in csv.reader(open(sys.argv[1])):
    d[(row[1], int(row[6]), row[0])].append(float(row[9]))
keys = sorted({(c, s) for (c, s, _) in d})
print(f"{'coll':15} {'size':>9} {'A us':>9} {'B us':>9} {'tuned us':>9} {'B/A':>6}")
for c, s in keys:
    m = {v: statistics.median(d[(c, s, v)]) for v in ("A", "B", "tuned") if d[(c, s, v)]}
    ratio = m["B"] / m["A"] if "A" in m and "B" in m and m["A"] > 0 else float("nan")
    print(f"{c:15} {s:>9} {m.get('A', float('nan')):9.2f} {m.get('B', float('nan')):9.2f} "
          f"{m.get('tuned', float('nan')):9.2f} {ratio:6.2f}")
PY
