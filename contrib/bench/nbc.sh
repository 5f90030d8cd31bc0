#!/usr/bin/env bash
# nbc.sh - braid's nonblocking and persistent collectives against Open MPI's
# libnbc (--mca coll ^braid), interleaved: in every repetition each case runs
# once per variant, the variants' order alternating between repetitions;
# medians over repetitions of braid_bench's per-size p50.
#   braid         braid (progress from the application's MPI calls)
#   libnbc        --mca coll ^braid
#   braid+thread  --mca coll_braid_progress_thread 1 (overlap and async cases;
#                 left out, with a message, when the component lacks the parameter)
# Cases:
#   np=2 (--bind-to core): post+wait of iallreduce ibcast ireduce ibarrier
#     iallgather ireduce_scatter, 8 B .. MAX; braid's blocking calls; persistent
#     start+wait (allreduce_init bcast_init reduce_init); overlap of iallreduce
#     with 0 and with T MPI_Test calls
#   np 3 4 8 (oversubscribed, --bind-to none): post+wait of iallreduce ibcast
#     ireduce ibarrier, 8 B .. 1 MiB (tables: 8 B, 1 KiB, 64 KiB, 1 MiB)
#   async progress, np 2 and 3: rank 0 posts an iallreduce / ibcast of
#     64 KiB and 8 MiB, sleeps 200 ms, waits; the others' wait time
#
#   contrib/bench/nbc.sh [-r REPS] [-b BUILD_DIR] [-e MAXBYTES] [-t SECONDS] [-T TESTS] [-k KEEP_DIR] [-s]
# -s: the np=2 post+wait, blocking and persistent cases only (with -e 1K: the
# small-message goals in a few minutes).
# -t: braid_bench's time budget per size at np=2 (default 0.02); -T: MPI_Test calls
# in the second overlap case (default 8); -k: keep the raw CSV there.
# Prints the machine, the load average before and after, and Markdown tables
# (ratio = libnbc time / braid time: > 1 means braid is faster); the medians
# also go, as CSV rows (peer libnbc, or "braid blocking" for the engine's
# cost over the blocking call), to the results file
# (contrib/bench/results.sh: $BRAID_RESULTS, default build/results/nbc.csv).
set -euo pipefail
# shellcheck source=contrib/bench/results.sh
source "$(dirname "$0")/results.sh"
results_open "$0" "$@"
REPS=5 MAXB=4M BUDGET=0.02 TESTS=8 KEEP= SMALL=0
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$TOP/build
while getopts r:b:e:t:T:k:sh o; do
    case $o in
    r) REPS=$OPTARG ;; b) BUILD=$(cd "$OPTARG" && pwd) ;; e) MAXB=$OPTARG ;; t) BUDGET=$OPTARG ;;
    T) TESTS=$OPTARG ;; k) KEEP=$OPTARG ;; s) SMALL=1 ;;
    *) sed -n '2,26p' "$0"; exit 2 ;;
    esac
done
BENCH=$BUILD/contrib/bench/braid_bench
SO=$BUILD/.libs/mca_coll_braid.so
for f in "$BENCH" "$SO"; do
    [[ -e $f ]] || { echo "nbc.sh: $f not built (make -C $BUILD)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck source=../../tests/mpi/component_dir.sh
. "$TOP/tests/mpi/component_dir.sh"
pkglibdir=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
compdir=$(braid_component_dir "$SO" "$pkglibdir")
out=$(mktemp -d)
trap 'rm -rf "$out" "$compdir" "$BRAID_RESULTS_ROWS"' EXIT
export OMPI_MCA_mca_base_component_path=$compdir
info=$(ompi_info --param coll braid --level 9 --parsable 2>/dev/null)
grep -q coll_braid_priority <<<"$info" || { echo "nbc.sh: braid not loaded from $compdir" >&2; exit 2; }
declare -A VAR=([braid]="" [libnbc]="--mca coll ^braid" [braid+thread]="--mca coll_braid_progress_thread 1")
THREAD_VARIANT=braid+thread
if ! grep -q coll_braid_progress_thread <<<"$info"; then
    echo "# coll_braid_progress_thread: not in this build of braid; the braid+thread variant is left out"
    THREAD_VARIANT=
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "# machine: $(nproc) cores, ${cpu:-unknown CPU}, $(mpirun --version 2>/dev/null | head -1), $(uname -sr)"
echo "# braid: $SO"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $REPS repetitions, variants interleaved; braid_bench -t $BUDGET per size; p50 per run, median over runs"

# run GROUP NP VARIANT BENCH_ARGS...: one braid_bench run, its CSV rows tagged
run() {
    local group=$1 np=$2 v=$3 bind=none
    shift 3
    [[ $np -le $(nproc) ]] && bind=core
    # shellcheck disable=SC2086
    if ! timeout 300 mpirun --oversubscribe --bind-to $bind -np "$np" ${VAR[$v]} "$BENCH" --csv "$@" \
        >"$out/one" 2>"$out/err"; then
        echo "nbc.sh: failed: np=$np $v braid_bench $*" >&2
        cat "$out/err" >&2
        return 0
    fi
    awk -F, -v g="$group" -v v="$v" 'NR > 1 && NF >= 14 { print g "," v "," $0 }' "$out/one" >>"$out/rows"
}

# each case once per variant, in this repetition's order
cases_rep() {
    local rep=$1 v c np vs
    local -a two=(braid libnbc) three=(braid libnbc ${THREAD_VARIANT})
    order() { if ((rep % 2)); then printf '%s\n' "$@"; else printf '%s\n' "$@" | tac; fi; }
    for c in iallreduce ibcast ireduce ibarrier iallgather ireduce_scatter allreduce_init bcast_init reduce_init; do
        for v in $(order "${two[@]}"); do run nb 2 "$v" -c "$c" -b 8 -e "$MAXB" -t "$BUDGET"; done
    done
    for c in allreduce bcast reduce barrier allgather reduce_scatter; do
        run blocking 2 braid -c "$c" -b 8 -e "$MAXB" -t "$BUDGET"
    done
    ((SMALL)) && return 0
    for vs in 0 "$TESTS"; do
        for v in $(order "${three[@]}"); do
            run overlap$vs 2 "$v" -c iallreduce -b 8 -e "$MAXB" -t "$BUDGET" --overlap --tests "$vs"
        done
    done
    for np in 3 4 8; do
        for c in iallreduce ibcast ireduce ibarrier; do
            for v in $(order "${two[@]}"); do run nb "$np" "$v" -c "$c" -b 8 -e 1M -t 0.01 -w 3; done
        done
    done
    for np in 2 3; do
        for c in async_iallreduce async_ibcast; do
            for v in $(order "${three[@]}"); do
                for s in 64K 8M; do run async "$np" "$v" -c "$c" -b "$s" -e "$s" -i 3 -w 1; done
            done
        done
    done
}

for rep in $(seq "$REPS"); do
    cases_rep "$rep"
    echo "# repetition $rep done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
echo "# load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -n $KEEP ]] && mkdir -p "$KEEP" && cp "$out/rows" "$KEEP/nbc_rows.csv"

python3 - "$out/rows" "$THREAD_VARIANT" <<'PY'
import csv, os, sys, statistics as st, collections
res = csv.writer(open(os.environ["BRAID_RESULTS_ROWS"], "a"), lineterminator="\n")
rows = collections.defaultdict(list)
# group,variant,coll,np,dtype,op,inplace,size_bytes,count,iters,p50_us,min,max,algbw,busbw,valid[,total,compute,overlap,tests]
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    g, v, coll, np_, size = f[0], f[1], f[2], int(f[3]), int(f[7])
    vals = [float(f[10])] + ([float(f[16]), float(f[17]), float(f[18])] if len(f) >= 20 else [])
    rows[(g, coll, np_, size, v)].append(vals)
thread = sys.argv[2]
def med(g, c, n, s, v, k=0):
    x = rows.get((g, c, n, s, v))
    return st.median(r[k] for r in x) if x else None
def fmt(x, d=2): return "-" if x is None else f"{x:.{d}f}"
def cnt(g, c, n, s, *vs): return min(len(rows.get((g, c, n, s, v), ())) for v in vs)
def emit(c, n, s, b, peer, p, reps, alg="auto", note=""):
    if b is not None and p is not None:
        res.writerow([c, n, s, f"{b:.2f}", peer, f"{p:.2f}", reps, alg, note])
def ratio(a, b): return None if a is None or b is None or b <= 0 else a / b
def sizes(g, c, n): return sorted({k[3] for k in rows if k[0] == g and k[1] == c and k[2] == n})
def human(b):
    for u, m in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= m and b % m == 0: return f"{b // m} {u}"
    return f"{b} B"
BLOCK = {"iallreduce": "allreduce", "ibcast": "bcast", "ireduce": "reduce", "ibarrier": "barrier",
         "iallgather": "allgather", "ireduce_scatter": "reduce_scatter"}
goal = {"small_vs_nbc": [], "small_vs_block": [], "below_nbc": [], "pers": []}
print("\n### post + wait, np=2 (us, p50 per run, median over runs)\n")
print("| coll | size | braid | libnbc | libnbc/braid | braid blocking | braid nb/blocking |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for c in BLOCK:
    for s in sizes("nb", c, 2):
        b, l = med("nb", c, 2, s, "braid"), med("nb", c, 2, s, "libnbc")
        bl = med("blocking", BLOCK[c], 2, s, "braid")
        r, rb = ratio(l, b), ratio(b, bl)
        print(f"| {c} | {human(s)} | {fmt(b)} | {fmt(l)} | {fmt(r)} | {fmt(bl)} | {fmt(rb)} |")
        emit(c, 2, s, b, "libnbc", l, cnt("nb", c, 2, s, "braid", "libnbc"))
        emit(c, 2, s, b, "braid blocking", bl, cnt("nb", c, 2, s, "braid"))
        if r is not None and r < 1.0: goal["below_nbc"].append((c, 2, s, r))
        if c in ("iallreduce", "ibcast", "ireduce", "ibarrier") and s <= 1024:
            if r is not None: goal["small_vs_nbc"].append((r, c, s))
            if rb is not None: goal["small_vs_block"].append((rb, c, s))
print("\n### persistent start + wait, np=2 (us)\n")
print("| coll | size | braid start+wait | braid blocking | braid persistent/blocking | libnbc start+wait | libnbc/braid |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for c in ("allreduce_init", "bcast_init", "reduce_init"):
    for s in sizes("nb", c, 2):
        b, l = med("nb", c, 2, s, "braid"), med("nb", c, 2, s, "libnbc")
        bl = med("blocking", c[:-5], 2, s, "braid")
        rb = ratio(b, bl)
        print(f"| {c} | {human(s)} | {fmt(b)} | {fmt(bl)} | {fmt(rb)} | {fmt(l)} | {fmt(ratio(l, b))} |")
        emit(c, 2, s, b, "libnbc", l, cnt("nb", c, 2, s, "braid", "libnbc"))
        emit(c, 2, s, b, "braid blocking", bl, cnt("nb", c, 2, s, "braid"))
        if rb is not None: goal["pers"].append((rb, c, s))
variants = ["braid", "libnbc"] + ([thread] if thread else [])
for g in sorted({k[0] for k in rows if k[0].startswith("overlap")}):
    print(f"\n### overlap, iallreduce np=2, {g[7:]} MPI_Test calls during the compute\n")
    print("| size | " + " | ".join(f"{v} pure us | {v} total us | {v} overlap %" for v in variants) + " |")
    print("| ---: |" + " ---: | ---: | ---: |" * len(variants))
    for s in sizes(g, "iallreduce", 2):
        cells = []
        for v in variants:
            cells += [fmt(med(g, "iallreduce", 2, s, v, 0)), fmt(med(g, "iallreduce", 2, s, v, 1)),
                      fmt(med(g, "iallreduce", 2, s, v, 3), 0)]
        print(f"| {human(s)} | " + " | ".join(cells) + " |")
        pct = "; ".join(f"{v} overlap {fmt(med(g, 'iallreduce', 2, s, v, 3), 0)} %, pure "
                        f"{fmt(med(g, 'iallreduce', 2, s, v, 0))} us" for v in variants)
        emit("iallreduce", 2, s, med(g, "iallreduce", 2, s, "braid", 1), "libnbc",
             med(g, "iallreduce", 2, s, "libnbc", 1), cnt(g, "iallreduce", 2, s, "braid", "libnbc"),
             "auto", f"overlap, {g[7:]} MPI_Test calls, total time; {pct}")
print("\n### post + wait at np 3, 4, 8 (oversubscribed on the cores above; sanity check, us)\n")
print("| coll | np | size | braid | libnbc | libnbc/braid |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for c in ("iallreduce", "ibcast", "ireduce", "ibarrier"):
    for n in (3, 4, 8):
        for s in [x for x in sizes("nb", c, n) if x in (0, 8, 1024, 65536, 1 << 20)]:
            b, l = med("nb", c, n, s, "braid"), med("nb", c, n, s, "libnbc")
            r = ratio(l, b)
            print(f"| {c} | {n} | {human(s)} | {fmt(b)} | {fmt(l)} | {fmt(r)} |")
            emit(c, n, s, b, "libnbc", l, cnt("nb", c, n, s, "braid", "libnbc"), "auto",
                 "oversubscribed" if n > 2 else "")
            if r is not None and r < 1.0: goal["below_nbc"].append((c, n, s, r))
print("\n### asynchronous progress: rank 0 sleeps 200 ms between post and wait; the others' wait (ms, median over runs of each run's p50 of 3)\n")
print("| coll | np | size | " + " | ".join(variants) + " |")
print("| --- | ---: | ---: |" + " ---: |" * len(variants))
async_thread = []
for c in ("async_iallreduce", "async_ibcast"):
    for n in (2, 3):
        for s in sizes("async", c, n):
            vals = [med("async", c, n, s, v) for v in variants]
            print(f"| {c[6:]} | {n} | {human(s)} | " + " | ".join(fmt(None if x is None else x / 1e3, 1) for x in vals) + " |")
            if thread and vals[-1] is not None: async_thread.append((vals[-1] / 1e3, c[6:], n, s))
            for v, x in zip(variants, vals):
                if v != "libnbc":
                    emit(c, n, s, x, "libnbc", vals[1], cnt("async", c, n, s, v, "libnbc"),
                         "progress_thread" if v == thread else "auto",
                         "rank 0 sleeps 200 ms between post and wait; the others' wait")
print("\n### goals\n")
if goal["small_vs_nbc"]:
    r, c, s = min(goal["small_vs_nbc"])
    print(f"* post+wait 8 B - 1 KiB, libnbc/braid >= 1.5: worst {r:.2f} ({c} {human(s)}); "
          f"{sum(1 for x in goal['small_vs_nbc'] if x[0] >= 1.5)} of {len(goal['small_vs_nbc'])} cases meet it")
if goal["small_vs_block"]:
    r, c, s = max(goal["small_vs_block"])
    print(f"* post+wait 8 B - 1 KiB within 1.15x of braid's blocking call: worst {r:.2f} ({c} {human(s)}); "
          f"{sum(1 for x in goal['small_vs_block'] if x[0] <= 1.15)} of {len(goal['small_vs_block'])} cases meet it")
print(f"* every size at least 1.0x libnbc: {len(goal['below_nbc'])} cases below: " +
      ", ".join(f"{c} np={n} {human(s)} {r:.2f}" for c, n, s, r in sorted(goal["below_nbc"], key=lambda x: x[3])[:20]))
if goal["pers"]:
    r, c, s = max(goal["pers"])
    print(f"* persistent start+wait no slower than blocking: worst {r:.2f} ({c} {human(s)}); "
          f"{sum(1 for x in goal['pers'] if x[0] <= 1.0)} of {len(goal['pers'])} cases at or below 1.0")
if async_thread:
    w, c, n, s = max(async_thread)
    print(f"* async progress with the thread within 50 ms: worst {w:.1f} ms ({c} np={n} {human(s)}); "
          f"{sum(1 for x in async_thread if x[0] <= 50)} of {len(async_thread)} cases meet it")
elif any(k[0] == "async" for k in rows):
    print("* async progress with the thread: not measured (no coll_braid_progress_thread)")
else:
    print("* async progress: not run (-s)")
PY
results_close
