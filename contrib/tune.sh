#!/usr/bin/env bash
#
# tune.sh - measure every braid algorithm on this machine at one
# communicator size and write a selection rules file that braid accepts
# (coll_braid_rules_file).
#
#   contrib/tune.sh -n 4 -o braid-np4.rules          # measure and write
#   mpirun -np 4 --mca coll_braid_rules_file $PWD/braid-np4.rules ./app
#
# It runs contrib/compare.sh (every forced algorithm, interleaved
# repetitions, medians) for each collective, picks the fastest algorithm at
# every measured size, merges neighbouring sizes with the same winner into
# one range, and writes one rule per range for this P. A range runs from a
# measured size up to just below the next winner's first size; the first
# starts at 0, the last ends at inf. Message size is what the rules format
# defines per collective (libbraid/selection/RULES.md): count x type size per rank;
# for allgather the per-rank send size, for alltoall, gather and scatter one
# block and for allgatherv the mean block (each the benchmark's S / P); for
# reduce_scatter the whole input per rank (the benchmark's S). alltoallv,
# gatherv and scatterv always have message size 0 (a rank knows only its own
# counts), so they get one rule per P with msg_size '*', and barrier likewise.
# braid's own parser checks the file before the script reports success.
#
set -u
set -o pipefail

usage() {
    cat <<EOF
usage: $0 [options]
  -n NP      communicator size to tune for (default 2)
  -c COLLS   collectives, comma-separated
             (default allreduce,bcast,reduce,reduce_scatter,allgather,alltoall,scan,
             exscan,barrier,gather,scatter,allgatherv,alltoallv,gatherv,scatterv)
  -b MIN     smallest size (default 8)   -e MAX largest size (default 32M)
  -r REPS    repetitions per variant (default 3)
  -t SECS    time budget per size and run (default 0.05)
  -o FILE    rules file to write (default braid-np<NP>.rules)
  -d DIR     keep the measurements in DIR (default a temporary directory)
  -p DIR     directory holding mca_coll_braid.so (passed to compare.sh)
EOF
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
np=2; colls=allreduce,bcast,reduce,reduce_scatter,allgather,alltoall,scan,exscan,barrier
colls+=,gather,scatter,allgatherv,alltoallv,gatherv,scatterv
min=8; max=32M; reps=3; budget=0.05; out=""; dir=""; compdir=""
while getopts "n:c:b:e:r:t:o:d:p:h" opt; do
    case $opt in
    n) np=$OPTARG ;; c) colls=$OPTARG ;; b) min=$OPTARG ;; e) max=$OPTARG ;;
    r) reps=$OPTARG ;; t) budget=$OPTARG ;; o) out=$OPTARG ;; d) dir=$OPTARG ;;
    p) compdir=$OPTARG ;; h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || out=braid-np$np.rules
if [ -z "$dir" ]; then
    dir=$(mktemp -d "${TMPDIR:-/tmp}/braid-tune.XXXXXX")
    trap 'rm -rf "$dir"' EXIT
fi
command -v python3 >/dev/null || "$here/install_deps.sh" python3

args=(-n "$np" -c "$colls" -b "$min" -e "$max" -r "$reps" -t "$budget" -a all -o "$dir" -P -R)
[ -n "$compdir" ] && args+=(-p "$compdir")
"$here/compare.sh" "${args[@]}" || { echo "tune.sh: measurement failed" >&2; exit 1; }

python3 - "$dir/results.csv" "$np" "$out" <<'PY' || exit 1
import csv, sys, time
path, np_, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = {}  # coll -> {size: {alg: p50}}
for row in csv.DictReader(open(path)):
    v = row["variant"]
    if not v.startswith("braid:") or not row["p50_us"]:
        continue
    coll, size, t = row["coll"], int(row["size_bytes"]), float(row["p50_us"])
    times.setdefault(coll, {}).setdefault(size, {})[v.split(":", 1)[1]] = t
# the fastest per size; a shared machine is noisy, so the previous size's
# winner is kept while it is within 5% of the fastest (fewer, longer ranges)
best = {}   # coll -> {size: (p50, alg)}
for coll, by_size in times.items():
    prev = None
    for size in sorted(by_size):
        ts = by_size[size]
        alg = min(ts, key=ts.get)
        if prev in ts and ts[prev] <= 1.05 * ts[alg]:
            alg = prev
        best.setdefault(coll, {})[size] = (ts[alg], alg)
        prev = alg

def fmt(n):
    for suffix, f in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n and n % f == 0:
            return "%d%s" % (n // f, suffix)
    return str(n)

lines = ["# braid selection rules for P=%d, measured by contrib/tune.sh on %s"
         % (np_, time.strftime("%Y-%m-%d")),
         "# collective      comm_size  msg_size          algorithm"]
# the rules' message size from the benchmark's S (libbraid/selection/RULES.md): one
# block (S / P) for PER_BLOCK, S for the others, except SIZE_0, whose message
# size is always 0: one '*' rule per P
SIZE_0 = ("alltoallv", "gatherv", "scatterv")
PER_BLOCK = ("allgather", "alltoall", "gather", "scatter", "allgatherv")

def one_alg(by_size):
    """The algorithm of a collective whose message size is always 0: the one
    that was fastest at the most measured sizes, ties broken by the smaller
    summed p50 over the sizes (an algorithm missing a size counts as slowest)."""
    wins = {}
    for ts in by_size.values():
        a = min(ts, key=ts.get)
        wins[a] = wins.get(a, 0) + 1
    algs = {a for ts in by_size.values() for a in ts}
    summed = {a: sum(ts.get(a, float("inf")) for ts in by_size.values()) for a in algs}
    return min(algs, key=lambda a: (-wins.get(a, 0), summed[a], a))

for coll in ("barrier", "bcast", "allreduce", "reduce", "reduce_scatter", "allgather", "alltoall",
             "scan", "exscan", "gather", "scatter", "allgatherv", "alltoallv", "gatherv", "scatterv"):
    if coll not in best:
        continue
    pts = sorted(best[coll].items())
    if coll == "barrier":
        lines.append("%-17s %-10d %-17s %s" % (coll, np_, "*", pts[0][1][1]))
        continue
    if coll in SIZE_0:
        lines.append("%-17s %-10d %-17s %s" % (coll, np_, "*", one_alg(times[coll])))
        continue
    conv = (lambda s: s // np_) if coll in PER_BLOCK else (lambda s: s)
    runs = []   # [first size, algorithm]
    for size, (t, alg) in pts:
        if not runs or runs[-1][1] != alg:
            runs.append([conv(size), alg])
    runs[0][0] = 0
    for i, (start, alg) in enumerate(runs):
        end = "inf" if i + 1 == len(runs) else "%s-1" % fmt(runs[i + 1][0])
        lines.append("%-17s %-10d %-17s %s" % (coll, np_, "%s-%s" % (fmt(start), end), alg))
open(out, "w").write("\n".join(lines) + "\n")
print("tune.sh: wrote %s (%d rules)" % (out, len(lines) - 2))
PY

# braid's own parser must accept it. The program must be an MPI program:
# braid reads the file when MPI_Init opens it (a plain command such as true
# never loads braid, so it would pass any file); braid_bench, one barrier.
# shellcheck source=contrib/braid_env.sh
source "$here/braid_env.sh"
braid_env_setup "$compdir" >/dev/null 2>&1 || true
bench=$(braid_find_program contrib/bench/braid_bench) ||
    { echo "tune.sh: braid_bench not built, cannot check $out" >&2; exit 1; }
check=$(timeout -k 5 120 mpirun --allow-run-as-root -np 1 --mca coll_braid_rules_file "$(realpath "$out")" \
        --mca coll_braid_verbose 10 "$bench" -c barrier -i 1 -w 0 2>&1 || true)
if grep -q "ignoring rules file" <<<"$check"; then
    echo "tune.sh: braid rejected $out:" >&2
    grep "ignoring rules file" <<<"$check" >&2
    exit 1
fi
# and say it loaded it (verbose 10: "effective selection table (forced
# algorithms, then FILE, then built-in)")
if ! grep -q "effective selection table (forced algorithms, then " <<<"$check" ||
    grep -q "then no rules file, then" <<<"$check"; then
    echo "tune.sh: could not check $out: braid did not report loading it:" >&2
    tail -5 <<<"$check" >&2
    exit 1
fi
cat "$out"
