#!/usr/bin/env bash
# comm_cycle.sh - what a communicator and a first call cost under braid and
# under tuned: comm_cycle (comm_cycle.c says what it measures) run in
# interleaved repetitions whose order rotates (rep 1: braid, tuned; rep 2:
# tuned, braid; ...: on this machine the run that follows another one was
# measured up to 15% slower, whatever it ran), with
# malloc_count.so preloaded to count the process's allocations; per row the
# median over repetitions. Prints the load average before and after.
#
#   contrib/bench/comm_cycle.sh [-b BUILD_DIR] [-a OTHER_BUILD] [-n NP] [-r REPS]
#                               [-c CYCLES_PER_ROUND] [-f FRESH] [-A] [-o OUT.csv]
#                               [-- MCA ARGS FOR BRAID]
#
# BUILD_DIR (default build/) holds .libs/mca_coll_braid.so and
# contrib/bench/comm_cycle. -a: another build's braid too (e.g. before a
# change), interleaved as a third variant, same benchmark binary. -A: no
# allocation counting. Arguments after -- go to mpirun for the braid runs
# only (e.g. --mca coll_braid_preconnect 0).
# Table: section, kind, braid us, tuned us, braid/tuned (> 1: braid slower),
# and the allocations per call of each (rank 0's process; "-" where not
# counted); with -a also the other build's us and allocations. A second
# table gives the communicator cycles' best run (the minimum over
# repetitions): on this machine a whole mpirun lands in a fast or a slow
# mode (dup+free 7-9 us or 11-13 us, whatever the component), and the
# median then says more about the draw than about the component.
# BIND=core in the environment binds the ranks (mpirun --bind-to; default
# none, as braid_bench's scripts run). The medians also go, as CSV rows
# (note: the section, the kind and the allocations), to the results file
# (contrib/bench/results.sh: $BRAID_RESULTS, default
# build/results/comm_cycle.csv).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=contrib/bench/results.sh
source "$here/results.sh"
results_open "$0" "$@"
top=$(cd "$here/../.." && pwd)
build=$top/build other="" bind=${BIND:-none} np=2 reps=5 cycles=200 fresh=50 count_allocs=1 out=""
while getopts "b:a:n:r:c:f:Ao:" opt; do
    case $opt in
    b) build=$(cd "$OPTARG" && pwd) ;; a) other=$(cd "$OPTARG" && pwd) ;;
    n) np=$OPTARG ;; r) reps=$OPTARG ;; c) cycles=$OPTARG ;;
    f) fresh=$OPTARG ;; A) count_allocs=0 ;; o) out=$OPTARG ;;
    *) echo "usage: comm_cycle.sh [-b BUILD] [-a OTHER_BUILD] [-n NP] [-r REPS] [-c CYCLES] [-f FRESH] [-A] [-o CSV] [-- MCA...]" >&2
       exit 2 ;;
    esac
done
shift $((OPTIND - 1))
braid_args=("$@")
bench=$build/contrib/bench/comm_cycle
so=$build/.libs/mca_coll_braid.so
[ -x "$bench" ] && [ -f "$so" ] || { echo "comm_cycle.sh: build $build first (make)" >&2; exit 2; }
# shellcheck source=contrib/braid_env.sh
source "$top/contrib/braid_env.sh"
pkglib=$(braid_pkglibdir)
braid_run_as_root
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# only this build's braid (no installed one) next to Open MPI's components
compdir=$(braid_component_dir "$so" "$pkglib")
otherdir=""
if [ -n "$other" ]; then
    [ -f "$other/.libs/mca_coll_braid.so" ] || { echo "comm_cycle.sh: no $other/.libs/mca_coll_braid.so" >&2; exit 2; }
    otherdir=$(braid_component_dir "$other/.libs/mca_coll_braid.so" "$pkglib")
fi
trap 'rm -rf "$tmp" "$compdir" ${otherdir:+"$otherdir"} "$BRAID_RESULTS_ROWS"' EXIT
preload=()
if [ "$count_allocs" = 1 ]; then
    ${CC:-cc} -O2 -shared -fPIC -o "$tmp/malloc_count.so" "$here/malloc_count.c"
    preload=(-x "LD_PRELOAD=$tmp/malloc_count.so")
fi
raw=$tmp/raw.csv
run() { # variant component-dir extra-mpirun-args...
    local v=$1 dir=$2; shift 2
    timeout 600 mpirun -np "$np" --oversubscribe --bind-to "$bind" \
        --mca mca_base_component_path "$dir" ${preload[@]+"${preload[@]}"} "$@" \
        "$bench" -n "$cycles" -f "$fresh" --csv 2>/dev/null | sed "s/^/$v,/" >>"$raw"
}
echo "# np=$np, $reps repetitions, 20 rounds of $cycles cycles, $fresh fresh communicators, --bind-to $bind; $(uname -n), $(nproc) cores"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
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
echo "# load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$out" ] && cp "$raw" "$out"
# variant,section,kind,us,allocs
python3 - "$raw" "$np" <<'PY'
import csv, os, sys
res = csv.writer(open(os.environ["BRAID_RESULTS_ROWS"], "a"), lineterminator="\n")
def median(x):   # (python3-minimal has no statistics module)
    x = sorted(x)
    n = len(x)
    return x[n // 2] if n % 2 else 0.5 * (x[n // 2 - 1] + x[n // 2])
us, al, order = {}, {}, []
for row in csv.reader(open(sys.argv[1])):
    v, sec, kind, t, a = row[0], row[1], row[2], float(row[3]), float(row[4])
    k = (sec, kind)
    if k not in order: order.append(k)
    us.setdefault((k, v), []).append(t)
    al.setdefault((k, v), []).append(a)
def med(d, k, v):
    x = d.get((k, v))
    return median(x) if x else float("nan")
def fa(x):
    return "-" if x != x or x < 0 else f"{x:.2f}"
other = any(v == "other" for (_, v) in us)
print(f"{'section':14} {'kind':26} " + (f"{'other us':>10} " if other else "") +
      f"{'braid us':>10} {'tuned us':>10} {'b/t':>6} " + (f"{'other allocs':>13} " if other else "") +
      f"{'braid allocs':>13} {'tuned allocs':>13}")
for k in order:
    b, t = med(us, k, "braid"), med(us, k, "tuned")
    r = b / t if t > 0 else float("nan")
    print(f"{k[0]:14} {k[1]:26} " + (f"{med(us, k, 'other'):10.2f} " if other else "") +
          f"{b:10.2f} {t:10.2f} {r:6.2f} " + (f"{fa(med(al, k, 'other')):>13} " if other else "") +
          f"{fa(med(al, k, 'braid')):>13} {fa(med(al, k, 'tuned')):>13}")
    if b == b and t == t:
        word = k[1].split()[0]
        res.writerow([word if word.isalpha() else k[1], sys.argv[2], "", f"{b:.2f}", "tuned", f"{t:.2f}",
                      min(len(us[(k, 'braid')]), len(us[(k, 'tuned')])), "auto",
                      f"{k[0]}: {k[1]}; allocations per call braid {fa(med(al, k, 'braid'))}, "
                      f"tuned {fa(med(al, k, 'tuned'))}"])
def best(k, v):
    x = us.get((k, v))
    return min(x) if x else float("nan")
print()
print("best run (minimum over repetitions):")
print(f"{'section':14} {'kind':26} " + (f"{'other us':>10} " if other else "") +
      f"{'braid us':>10} {'tuned us':>10} {'b/t':>6}")
for k in order:
    if not k[0].startswith("cycle"): continue
    b, t = best(k, "braid"), best(k, "tuned")
    print(f"{k[0]:14} {k[1]:26} " + (f"{best(k, 'other'):10.2f} " if other else "") +
          f"{b:10.2f} {t:10.2f} {b / t if t > 0 else float('nan'):6.2f}")
PY
results_close
