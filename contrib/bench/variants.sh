#!/usr/bin/env bash
# variants.sh - braid_bench under several MCA settings of one Open MPI,
# interleaved (rep 1: every variant, rep 2: ...); per collective and size
# the median over repetitions of each run's p50 latency, and each variant's
# ratio to the first (> 1: the first is faster); after the table, the median
# and largest line_ns of each variant's rows (the machine's state, see
# braid_bench.c). Works with Open MPI 4.1 and 5.0 (in the Debian 13 root,
# after tools/ompi5.sh build: tools/ompi5.sh run contrib/bench/variants.sh
# ..., which finds the build there).
#
#   contrib/bench/variants.sh [-n NP] [-r REPS] [-c COLLS] [-e MAX] [-t S] [-b BUILD_DIR] \
#       [-B BIND] [-a BENCH_ARGS] [-H HOSTS] [-L NS] [-k] [-C] 'NAME=MCA ARGS' ...
# e.g. 'braid=' 'tuned=--mca coll ^braid,han' 'han=--mca coll ^braid --mca coll_han_priority 100'
# -B BIND: mpirun --bind-to BIND (default none; core where NP fits the
# cores); -a BENCH_ARGS: more braid_bench options, e.g. -a --rank-mean (the
# OSU aggregation: an iteration's time is the mean over ranks). -L NS: two
# tables, one of the rows whose line_ns was at most NS and one of those
# above (a median's sample count in parentheses): on a machine that switches
# between a near and a far state (a virtual machine's vCPUs), each state's
# comparison apart.
#
# Before timing anything it checks, per variant and collective, which coll
# component runs that collective on MPI_COMM_WORLD (a short run with
# coll_base_verbose=10: the highest-priority component that took the
# communicator and has the collective) and prints it, with the reasons of
# the components that declined. A variant named after a coll component
# (braid, tuned, han, ...) must run in it: otherwise variants.sh stops (-k:
# goes on, the column then measures another component). -C: only the check.
#
# han takes no communicator whose ranks are all on one node (Open MPI 4.1
# and 5.0: "comm has only local processes; disqualifying myself", whatever
# its priority), so a han column needs ranks on different hosts: -H HOSTS
# runs every variant across HOSTS simulated hosts (network namespaces on
# this machine, root; tests/multihost/run_multihost.sh; NP/HOSTS ranks per
# host, TCP between hosts for braid's UCX and ob1 alike).
#
# The medians also go, as CSV rows (the first variant against each other),
# to the results file (contrib/bench/results.sh: $BRAID_RESULTS, default
# build/results/variants.csv).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=contrib/bench/results.sh
source "$here/results.sh"
results_open "$0" "$@"
top=$(cd "$here/../.." && pwd)
np=2 reps=5 colls=allreduce max=1M budget=0.05 build=$top/build hosts=0 keep=0 check_only=0
bind=none bench_args="" line_split=0
orig_args=("$@")
while getopts "n:r:c:e:t:b:B:a:H:L:kC" opt; do
    case $opt in
    n) np=$OPTARG ;; r) reps=$OPTARG ;; c) colls=$OPTARG ;; e) max=$OPTARG ;;
    t) budget=$OPTARG ;; b) build=$OPTARG ;; H) hosts=$OPTARG ;; k) keep=1 ;; C) check_only=1 ;;
    B) bind=$OPTARG ;; a) bench_args=$OPTARG ;; L) line_split=$OPTARG ;;
    *) echo "usage: variants.sh [-n NP] [-r REPS] [-c COLLS] [-e MAX] [-t S] [-b BUILD] [-B BIND] [-a BENCH_ARGS] [-H HOSTS] [-L NS] [-k] [-C] NAME=ARGS..." >&2
       exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "variants.sh: name at least one variant, e.g. 'braid='" >&2; exit 2; }
# tools/ompi5.sh run: the copy's build directory is next to it (../build)
[ -x "$build/contrib/bench/braid_bench" ] || [ "$build" != "$top/build" ] ||
    [ ! -x "$top/../build/contrib/bench/braid_bench" ] || build=$top/../build
build=$(cd "$build" && pwd)
bench=$build/contrib/bench/braid_bench
[ -x "$bench" ] || { echo "variants.sh: $bench not built" >&2; exit 2; }

# -H: run this script again inside simulated hosts; run_multihost.sh hands
# the mpirun arguments that reach them in BRAID_MH_MPIRUN_LAUNCH
if [ "$hosts" -gt 0 ] && [ -z "${BRAID_MH_MPIRUN_LAUNCH+x}" ]; then
    [ $((np % hosts)) -eq 0 ] || { echo "variants.sh: -n $np is not a multiple of -H $hosts" >&2; exit 2; }
    args=("${orig_args[@]}")
    for i in "${!args[@]}"; do [ "${args[$i]}" = -b ] && args[$((i + 1))]=$build; done
    BRAID_MH_HOSTS=$hosts BRAID_MH_SLOTS=$((np / hosts)) BRAID_BUILDDIR=$build BRAID_SRCDIR=$top \
        BRAID_MH_EXEC="$(printf '%q ' bash "$0" -b "$build" "${args[@]}")" \
        exec bash "$top/tests/multihost/run_multihost.sh"
fi
# shellcheck source=contrib/braid_env.sh
source "$top/contrib/braid_env.sh"
launch=()
if [ -n "${BRAID_MH_MPIRUN_LAUNCH:-}" ]; then
    read -r -a launch <<<"$BRAID_MH_MPIRUN_LAUNCH"
    echo "variants.sh: across $hosts simulated hosts, $((np / hosts)) rank(s) each"
fi
launch+=(--oversubscribe --bind-to "$bind")
braid_mpirun_map launch

pkglib=$(braid_pkglibdir)
braid_run_as_root
export OMPI_MCA_mca_base_component_path=$build/.libs:$pkglib
# under PRRTE the path reaches PMIx too, which would report every Open MPI
# file in it; PMIx gets its own plugin directory back
braid_mpirun_env
raw=$(mktemp)
trap 'rm -f "$raw" "$raw.err" "$BRAID_RESULTS_ROWS"' EXIT

# check VARIANT ARGS...: which component runs each collective on MPI_COMM_WORLD
check() {
    local name=$1 args=$2 c status=0
    for c in ${colls//,/ }; do
        # shellcheck disable=SC2086
        timeout 120 mpirun -np "$np" "${launch[@]}" $args --mca coll_base_verbose 10 \
            --mca coll_braid_verbose 10 "$bench" -c "$c" -b 8 -e 8 -i 3 >/dev/null 2>"$raw.err" || true
        python3 - "$raw.err" "$name" "$c" <<'PY' || status=1
import re, sys
err, name, coll = sys.argv[1], sys.argv[2], sys.argv[3]
# the blocking collectives each component's module has on an
# intra-communicator (Open MPI 4.1/5.0 sources); others: all of them. han:
# those of 4.1 (it leaves allgatherv to the next component on MPI_COMM_WORLD;
# newer releases add gatherv, scatterv, alltoall(v), not listed here)
ALL = {"allreduce", "bcast", "barrier", "reduce", "reduce_scatter", "allgather", "alltoall",
       "scan", "exscan", "gather", "scatter", "allgatherv", "alltoallv", "gatherv", "scatterv"}
HAS = {"libnbc": set(), "inter": set(), "self": set(), "sync": set(), "monitoring": set(),
       "ftagree": set(), "accelerator": set(), "cuda": set(),
       "adapt": {"bcast", "reduce"},
       "sm": {"allreduce", "barrier", "bcast", "reduce"},
       "han": {"allreduce", "allgather", "barrier", "bcast", "reduce", "gather", "scatter"},
       "braid": ALL}
# nonblocking (iallreduce, async_iallreduce) and persistent (allreduce_init)
# forms: libnbc and braid have them all, adapt ibcast and ireduce, the others none
form = coll[len("async_"):] if coll.startswith("async_") else coll
if form.endswith("_init") and form[:-5] in ALL:
    coll_base, HAS = form[:-5], {"libnbc": ALL, "braid": ALL}
elif form.startswith("i") and form[1:] in ALL:
    coll_base, HAS = form[1:], {"libnbc": ALL, "braid": ALL, "adapt": {"bcast", "reduce"}}
else:
    coll_base = coll
nonblocking = coll_base != coll
pid, avail, enabled, declined, known = None, {}, {}, {}, set()
for line in open(err, errors="replace"):
    m = re.match(r"\[([^\]]*)\] (.*)", line.rstrip("\n"))
    if not m:
        continue
    who, msg = m.groups()
    if "coll:base:comm_select: new communicator:" in msg:
        if pid is None and "MPI_COMM_WORLD" in msg:
            pid, inside = who, True
        elif who == pid:
            inside = False
        continue
    if who != pid or not inside:
        continue
    m = re.search(r"comm_select: component (not available|available): (\w+)(?:, priority: (-?\d+))?", msg)
    if m:
        known.add(m.group(2))
        if m.group(1) == "available":
            avail[m.group(2)] = int(m.group(3))
        continue
    m = re.search(r"comm_select: selecting\s+(\w+), priority\s+(-?\d+), (Enabled|Disabled)", msg)
    if m:
        enabled[m.group(1)] = m.group(3) == "Enabled"
        continue
    m = re.search(r"coll:(\w+):comm_query \([^)]*MPI_COMM_WORLD\): (.*disqualifying.*)", msg)
    if m:
        declined[m.group(1)] = m.group(2)
    m = re.search(r"braid: declining communicator MPI_COMM_WORLD[^:]*: (.*)", msg)
    if m:
        declined["braid"] = m.group(1)
if pid is None:
    print(f"variants.sh: {name}: {coll}: no coll selection output (the run failed?)")
    sys.exit(1)
cands = [(p, c) for c, p in avail.items()
         if enabled.get(c, True) and coll_base in HAS.get(c, set() if nonblocking else ALL)]
runs = max(cands)[1] if cands else "?"
line = f"variants.sh: {name}: {coll} on MPI_COMM_WORLD runs in {runs} (took it: " + \
    ", ".join(f"{c} {p}" for p, c in sorted(((p, c) for c, p in avail.items()), reverse=True)) + ")"
print(line)
for c, why in sorted(declined.items()):
    print(f"variants.sh:   {c} declined: {why}")
if name in known | {"braid"} and runs != name:
    print(f"variants.sh: {name}: the variant is named after a component that does not run {coll} here")
    sys.exit(1)
PY
    done
    return $status
}

failed=0
for spec in "$@"; do
    check "${spec%%=*}" "${spec#*=}" || failed=1
done
if [ $failed -eq 1 ] && [ $keep -eq 0 ]; then
    echo "variants.sh: stopping (-k measures anyway)" >&2
    exit 3
fi
[ $check_only -eq 1 ] && exit $failed

names=()
for ((rep = 1; rep <= reps; rep++)); do
    for spec in "$@"; do
        name=${spec%%=*} args=${spec#*=}
        [ $rep -eq 1 ] && names+=("$name")
        for c in ${colls//,/ }; do
            # shellcheck disable=SC2086
            timeout 600 mpirun -np "$np" "${launch[@]}" $args \
                "$bench" -c "$c" -b 8 -e "$max" -t "$budget" $bench_args --csv \
                2>/dev/null | grep -v '^coll,' | sed "s/^/$name,/" >>"$raw"
        done
    done
done
python3 - "$raw" "$line_split" "$np" "$@" <<'PY'
import csv, os, sys
from collections import defaultdict

def median(v):   # python3-minimal (the Debian 13 root) has no statistics module
    v = sorted(v)
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2
split, np_ = float(sys.argv[2]), sys.argv[3]
specs = [a.split("=", 1) for a in sys.argv[4:]]
names = [n for n, _ in specs]
out = csv.writer(open(os.environ["BRAID_RESULTS_ROWS"], "a"), lineterminator="\n")
d = defaultdict(list)
line = defaultdict(list)
for row in csv.reader(open(sys.argv[1])):
    ns = float(row[-1]) if row[-1].lstrip("-").isdigit() else -1   # line_ns
    group = 1 if split > 0 and ns > split else 0
    d[(group, row[1], int(row[6]), row[0])].append(float(row[9]))
    if ns >= 0:
        line[row[0]].append(ns)
for group in (0, 1) if split > 0 else (0,):
    keys = sorted({(c, s) for (g, c, s, _) in d if g == group})
    if split > 0:
        print(f"\nrows with line_ns {'<=' if group == 0 else '>'} {split:.0f} (samples in parentheses):\n")
    print("| coll | size | " + " | ".join(f"{n} p50 us" for n in names) + " | "
          + " | ".join(f"{n}/{names[0]}" for n in names[1:]) + " |")
    print("| --- | ---: |" + " ---: |" * (2 * len(names) - 1))
    for c, s in keys:
        v = [d[(group, c, s, n)] for n in names]
        m = [median(x) if x else float("nan") for x in v]
        print(f"| {c} | {s} | " + " | ".join(f"{x:.2f}" + (f" ({len(n)})" if split > 0 else "")
                                            for x, n in zip(m, v)) + " | "
              + " | ".join(f"{x / m[0]:.2f}" for x in m[1:]) + " |")
        state = "" if split <= 0 else f"line_ns {'<=' if group == 0 else '>'} {split:.0f}; "
        for (n, args), x, samples in list(zip(specs, m, v))[1:]:
            if v[0] and samples:
                out.writerow([c, np_, s, f"{m[0]:.2f}", n, f"{x:.2f}", min(len(v[0]), len(samples)),
                              names[0], f"{state}{specs[0][0]}: {specs[0][1] or '-'}; {n}: {args or '-'}"])
if line:
    print("\nline_ns (a cache line's round trip between ranks 0 and 1, before each size), "
          "median / max over the rows: "
          + ", ".join(f"{n} {median(line[n]):.0f} / {max(line[n]):.0f}" for n in names if line[n]))
PY
results_close
