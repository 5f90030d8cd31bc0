#!/usr/bin/env bash
# startup.sh - what braid adds to a job's start and end: startup.c (MPI_Init,
# one allreduce, MPI_Finalize, timed on rank 0) under braid and under tuned
# in interleaved repetitions whose order rotates, and the whole mpirun's
# wall time; per column the median over repetitions.
#
#   contrib/bench/startup.sh [-b BUILD_DIR] [-a OTHER_BUILD] [-n NP] [-r REPS] [-T]
#                            [-- MCA ARGS FOR BRAID]
#
# BUILD_DIR (default build/) holds .libs/mca_coll_braid.so and
# contrib/bench/startup; -a: another build's braid as a third variant (e.g.
# before a change), same program; -T: the program asks for
# MPI_THREAD_MULTIPLE. Table: per variant the medians of MPI_Init
# (ms), the first allreduce (us), MPI_Finalize (ms) and the job (mpirun's
# wall, ms), and the load average before and after. The medians also go, as
# CSV rows against tuned (collective: init, first_allreduce, finalize, job;
# times in us), to the results file (contrib/bench/results.sh: $BRAID_RESULTS,
# default build/results/startup.csv).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=contrib/bench/results.sh
source "$here/results.sh"
results_open "$0" "$@"
top=$(cd "$here/../.." && pwd)
build=$top/build other="" np=2 reps=10 level=""
while getopts "b:a:n:r:T" opt; do
    case $opt in
    b) build=$(cd "$OPTARG" && pwd) ;; a) other=$(cd "$OPTARG" && pwd) ;;
    n) np=$OPTARG ;; r) reps=$OPTARG ;; T) level=multiple ;;
    *) echo "usage: startup.sh [-b BUILD] [-a OTHER_BUILD] [-n NP] [-r REPS] [-T] [-- MCA...]" >&2
       exit 2 ;;
    esac
done
shift $((OPTIND - 1))
braid_args=("$@")
prog=$build/contrib/bench/startup
so=$build/.libs/mca_coll_braid.so
[ -x "$prog" ] && [ -f "$so" ] || { echo "startup.sh: build $build first (make)" >&2; exit 2; }
# shellcheck source=contrib/braid_env.sh
source "$top/contrib/braid_env.sh"
pkglib=$(braid_pkglibdir)
braid_run_as_root
tmp=$(mktemp -d)
compdir=$(braid_component_dir "$so" "$pkglib")
otherdir=""
if [ -n "$other" ]; then
    [ -f "$other/.libs/mca_coll_braid.so" ] || { echo "startup.sh: no $other/.libs/mca_coll_braid.so" >&2; exit 2; }
    otherdir=$(braid_component_dir "$other/.libs/mca_coll_braid.so" "$pkglib")
fi
trap 'rm -rf "$tmp" "$compdir" ${otherdir:+"$otherdir"} "$BRAID_RESULTS_ROWS"' EXIT
raw=$tmp/raw.csv
run() { # variant component-dir extra-mpirun-args...
    local v=$1 dir=$2 t0 t1 line; shift 2
    t0=$(date +%s%N)
    line=$(timeout 120 mpirun -np "$np" --oversubscribe --mca mca_base_component_path "$dir" "$@" \
        "$prog" $level 2>/dev/null | tail -n 1) || { echo "startup.sh: a $v run failed" >&2; exit 1; }
    t1=$(date +%s%N)
    echo "$v,$line,$(((t1 - t0) / 1000))" >>"$raw"
}
echo "# np=$np, $reps repetitions${level:+, MPI_THREAD_MULTIPLE}; $(uname -n), $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
variants=(braid tuned)
[ -n "$otherdir" ] && variants=(other braid tuned)
for ((rep = 0; rep < reps; rep++)); do
    for ((i = 0; i < ${#variants[@]}; i++)); do
        case ${variants[(rep + i) % ${#variants[@]}]} in
        other) run other "$otherdir" ${braid_args[@]+"${braid_args[@]}"} ;;
        braid) run braid "$compdir" ${braid_args[@]+"${braid_args[@]}"} ;;
        tuned) run tuned "$compdir" --mca coll '^braid' ;;
        esac
    done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# variant,init_ms,first_us,finalize_ms,job_us
python3 - "$raw" "$np" "$level" <<'PY'
import csv, os, sys
def median(x):
    x = sorted(x)
    n = len(x)
    return x[n // 2] if n % 2 else 0.5 * (x[n // 2 - 1] + x[n // 2])
cols = ["init", "first_allreduce", "finalize", "job"]
scale = [1000.0, 1.0, 1000.0, 1.0]          # to us
vals = {}
for row in csv.reader(open(sys.argv[1])):
    for c, s, x in zip(cols, scale, row[1:5]):
        vals.setdefault((row[0], c), []).append(float(x) * s)
variants = [v for v in ("other", "braid", "tuned") if (v, "job") in vals]
print(f"{'variant':8} {'MPI_Init ms':>12} {'1st call us':>12} {'Finalize ms':>12} {'job ms':>10}")
for v in variants:
    m = [median(vals[(v, c)]) for c in cols]
    print(f"{v:8} {m[0] / 1e3:12.1f} {m[1]:12.1f} {m[2] / 1e3:12.1f} {m[3] / 1e3:10.1f}")
res = csv.writer(open(os.environ["BRAID_RESULTS_ROWS"], "a"), lineterminator="\n")
for v in variants:
    if v == "tuned": continue
    for c in cols:
        b, t = median(vals[(v, c)]), median(vals[("tuned", c)])
        res.writerow([c, sys.argv[2], "", f"{b:.1f}", "tuned", f"{t:.1f}", len(vals[(v, c)]), "auto",
                      "; ".join(x for x in ("the other build (-a)" if v == "other" else "",
                                            "MPI_THREAD_MULTIPLE" if sys.argv[3] else "") if x)])
PY
results_close
