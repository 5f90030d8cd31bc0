#!/usr/bin/env bash
# variants.sh - braid_bench under several MCA settings of one Open MPI,
# interleaved (rep 1: every variant, rep 2: ...); per collective and size
# the median over repetitions of each run's p50 latency, and each variant's
# ratio to the first (> 1: the first is faster). Works with Open MPI 4.1 and
# 5.0 (in the Debian 13 root: contrib/ompi5.sh run contrib/bench/variants.sh ...).
#
#   contrib/bench/variants.sh [-n NP] [-r REPS] [-c COLLS] [-e MAX] [-t S] [-b BUILD_DIR] \
#       'NAME=MCA ARGS' ...
# e.g. 'braid=' 'tuned=--mca coll ^braid,han' 'default=--mca coll ^braid'
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
np=2 reps=5 colls=allreduce max=1M budget=0.05 build=$top/build
while getopts "n:r:c:e:t:b:" opt; do
    case $opt in
    n) np=$OPTARG ;; r) reps=$OPTARG ;; c) colls=$OPTARG ;; e) max=$OPTARG ;;
    t) budget=$OPTARG ;; b) build=$OPTARG ;;
    *) echo "usage: variants.sh [-n NP] [-r REPS] [-c COLLS] [-e MAX] [-t S] [-b BUILD] NAME=ARGS..." >&2
       exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "variants.sh: name at least one variant, e.g. 'braid='" >&2; exit 2; }
pkglib=$(ompi_info --path pkglibdir --parsable | cut -d: -f3)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path=$build/.libs:$pkglib
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
names=()
for ((rep = 1; rep <= reps; rep++)); do
    for spec in "$@"; do
        name=${spec%%=*} args=${spec#*=}
        [ $rep -eq 1 ] && names+=("$name")
        for c in ${colls//,/ }; do
            # shellcheck disable=SC2086
            timeout 600 mpirun -np "$np" --oversubscribe --bind-to none $args \
                "$build/contrib/bench/braid_bench" -c "$c" -b 8 -e "$max" -t "$budget" --csv \
                2>/dev/null | grep -v '^coll,' | sed "s/^/$name,/" >>"$raw"
        done
    done
done
python3 - "$raw" "${names[@]}" <<'PY'
import csv, sys
from collections import defaultdict

def median(v):   # python3-minimal (the Debian 13 root) has no statistics module
    v = sorted(v)
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2
names = sys.argv[2:]
d = defaultdict(list)
for row in csv.reader(open(sys.argv[1])):
    d[(row[1], int(row[6]), row[0])].append(float(row[9]))
keys = sorted({(c, s) for (c, s, _) in d})
print("| coll | size | " + " | ".join(f"{n} p50 us" for n in names) + " | "
      + " | ".join(f"{n}/{names[0]}" for n in names[1:]) + " |")
print("| --- | ---: |" + " ---: |" * (2 * len(names) - 1))
for c, s in keys:
    m = [median(d[(c, s, n)]) if d[(c, s, n)] else float("nan") for n in names]
    print(f"| {c} | {s} | " + " | ".join(f"{x:.2f}" for x in m) + " | "
          + " | ".join(f"{x / m[0]:.2f}" for x in m[1:]) + " |")
PY
