#!/usr/bin/env bash
#
# compare.sh - braid against Open MPI's own collectives (tuned), same machine,
# same run, interleaved.
#
# For each repetition it runs contrib/bench/braid_bench once per variant:
#   braid        braid's selection table (auto)
#   tuned        --mca coll ^braid (Open MPI without braid)
#   braid:NAME   --mca coll_braid_<coll>_algorithm NAME, for each algorithm
# in the order: references, braid, tuned, braid:NAME...; repetitions follow
# one another (rep 1 all variants, rep 2 all variants, ...), so slow drifts of
# a shared machine hit every variant alike. The physical references (memcpy
# and a[i] += b[i] on doubles, all ranks at once) run in the same loop.
#
# Per variant and size it takes the median over repetitions of the p50
# latency; busbw follows nccl-tests (see braid_bench.c). braid/tuned is the
# busbw ratio: > 1 means braid is faster.
#
# Outputs in the output directory: raw/*.csv (every run), results.csv
# (medians), memref.csv, results.md (machine, tables, summary) and
# busbw_<coll>.png (gnuplot; installed with apt-get when missing).
#
# braid's component is found the way Open MPI finds any component: installed
# in Open MPI's component directory, or through OMPI_MCA_mca_base_component_path
# set by the caller; -p DIR adds a directory, and when none of these has it the
# build tree's build/.libs is used if present (see braid_env.sh). Without it,
# braid variants run tuned - the script still works and says so.
#
set -u
set -o pipefail

usage() {
    cat <<EOF
usage: $0 [options]
  -n NP       ranks (default 2)
  -c COLLS    collectives, comma-separated, or 'all' (default allreduce):
              allreduce bcast barrier reduce reduce_scatter allgather alltoall
              scan exscan gather scatter allgatherv alltoallv gatherv scatterv
  -b MIN      smallest size (default 8)        sizes double; K/M/G suffixes
  -e MAX      largest size (default 32M)       S as in nccl-tests (braid_bench.c)
  -r REPS     repetitions (default 3)
  -t SECONDS  time budget per size and run (default 0.1)
  -a ALGS     braid variants: 'all' (auto + every algorithm, default), 'auto',
              or a comma-separated list of algorithm names
  -d TYPE     datatype (default float)
  -o DIR      output directory (default contrib/bench/results-np<NP>)
  -x ARGS     extra mpirun arguments, quoted (e.g. -x "--bind-to none")
  -p DIR      directory holding mca_coll_braid.so (e.g. build/.libs); added to
              OMPI_MCA_mca_base_component_path for these runs (default: braid
              as Open MPI finds it, else build/.libs when it exists)
  -B PATH     braid_bench binary (default: found in the build directory)
  -R          skip the memory references
  -P          skip the plots
  -h          this help
EOF
}

die() { echo "compare.sh: $*" >&2; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)

np=2; colls=allreduce; bmin=8; bmax=32M; reps=3; budget=0.1; algs=all; dtype=float
outdir=""; extra=""; compdir=""; bench=""; do_ref=1; do_plot=1
while getopts "n:c:b:e:r:t:a:d:o:x:p:B:RPh" opt; do
    case $opt in
        n) np=$OPTARG ;; c) colls=$OPTARG ;; b) bmin=$OPTARG ;; e) bmax=$OPTARG ;;
        r) reps=$OPTARG ;; t) budget=$OPTARG ;; a) algs=$OPTARG ;; d) dtype=$OPTARG ;;
        o) outdir=$OPTARG ;; x) extra=$OPTARG ;; p) compdir=$OPTARG ;; B) bench=$OPTARG ;;
        R) do_ref=0 ;; P) do_plot=0 ;; h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
    esac
done
[[ $np =~ ^[0-9]+$ && $np -ge 1 ]] || die "-n needs a positive number"
[[ $reps =~ ^[0-9]+$ && $reps -ge 1 ]] || die "-r needs a positive number"
[[ $colls == all ]] &&
    colls=allreduce,bcast,barrier,reduce,reduce_scatter,allgather,alltoall,scan,exscan,gather,scatter,allgatherv,alltoallv,gatherv,scatterv
IFS=, read -r -a coll_list <<<"$colls"
outdir=${outdir:-$top/contrib/bench/results-np$np}

# ---------------------------------------------------------------- tools
need_apt() { # package
    command -v apt-get >/dev/null || return 1
    echo "compare.sh: installing $1 (apt-get)..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "$1" >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$1" >/dev/null 2>&1; }
}
command -v mpirun >/dev/null || die "mpirun not found (Debian: apt-get install openmpi-bin)"
command -v python3 >/dev/null || need_apt python3-minimal || die "python3 is needed for the tables"
if [[ $do_plot == 1 ]] && ! command -v gnuplot >/dev/null; then
    need_apt gnuplot-nox || { echo "compare.sh: gnuplot unavailable, no plots" >&2; do_plot=0; }
fi

# shellcheck source=contrib/braid_env.sh
source "$here/braid_env.sh"
[[ -n $bench ]] || bench=$(braid_find_program contrib/bench/braid_bench) ||
    die "braid_bench not built: $(braid_build_hint) (or pass -B)"
[[ -x $bench ]] || die "$bench is not executable"

# ---------------------------------------------------------------- MPI setup
braid_env_setup "$compdir" || die "bad -p directory"
mpirun_cmd=("${MPIRUN[@]}" -np "$np")
# shellcheck disable=SC2206
extra_args=($extra)
braid_found=$BRAID_FOUND
braid_where=$BRAID_WHERE
braid_info=$BRAID_INFO

# algorithm names per collective: from ompi_info when braid is there, else the
# rows of the registry itself (libbraid/braid_registry.h), so the two never
# drift apart
registry=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/libbraid/braid_registry.h
default_algs() {
    sed -n "s/^ *X([A-Z_]*, $1, [A-Z_]*, \([a-z_]*\),.*/\1/p" "$registry" | tr '\n' ' '
}
algs_for() { # coll
    local names=""
    if [[ $braid_found == 1 ]]; then
        names=$(sed -n "s/^mca:coll:braid:param:coll_braid_$1_algorithm:help:.*Valid values: *//p" <<<"$braid_info" |
                tr -d '|' | tr -s ' ' | sed 's/\bauto\b//')
    fi
    [[ -z ${names// /} ]] && names=$(default_algs "$1")
    case $algs in
        all) echo "$names" ;;
        auto) echo "" ;;
        *) echo "${algs//,/ }" ;;
    esac
}

# ---------------------------------------------------------------- plan
mkdir -p "$outdir/raw" || die "cannot create $outdir"
rm -f "$outdir"/raw/*.csv
plan=() # entries: kind|coll|variant
for ((rep = 1; rep <= reps; rep++)); do
    if [[ $do_ref == 1 ]]; then
        plan+=("$rep|memcpy|ref" "$rep|reduce_local|ref")
    fi
    for coll in "${coll_list[@]}"; do
        plan+=("$rep|$coll|braid" "$rep|$coll|tuned")
        for a in $(algs_for "$coll"); do plan+=("$rep|$coll|braid:$a"); done
    done
done
total=${#plan[@]}

echo "compare.sh: np=$np  collectives=$colls  sizes $bmin..$bmax  reps=$reps  budget ${budget}s/size"
echo "  benchmark: $bench"
echo "  braid:     $braid_where"
echo "  output:    $outdir"
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# ---------------------------------------------------------------- run
fmt_time() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
progress() { # done label
    local now elapsed eta=""
    now=$(date +%s); elapsed=$((now - t_start))
    (($1 > 0)) && eta=" eta $(fmt_time $((elapsed * (total - $1) / $1)))"
    local line
    line=$(printf '[%3d/%d] %s  elapsed %s%s' "$1" "$total" "$2" "$(fmt_time $elapsed)" "$eta")
    if [[ -t 2 ]]; then printf '\r\033[K%s' "$line" >&2; else echo "$line" >&2; fi
}
failures=0
t_start=$(date +%s)
k=0
for entry in "${plan[@]}"; do
    IFS='|' read -r rep coll variant <<<"$entry"
    tag=${variant//:/-}
    progress "$k" "rep $rep/$reps  $coll  $variant"
    args=()
    case $variant in
        tuned | ref) args=(--mca coll ^braid) ;;
        braid:*) args=(--mca "coll_braid_${coll}_algorithm" "${variant#braid:}") ;;
    esac
    out="$outdir/raw/${coll}_${tag}_rep${rep}.csv"
    if ! "${mpirun_cmd[@]}" "${args[@]}" "${extra_args[@]}" "$bench" -c "$coll" -b "$bmin" -e "$bmax" \
            -t "$budget" -w 5 -d "$dtype" --csv >"$out" 2>"$out.err"; then
        failures=$((failures + 1))
        [[ -t 2 ]] && echo >&2
        echo "compare.sh: run failed: $coll $variant rep $rep (see $out.err)" >&2
        mv "$out" "$out.failed" 2>/dev/null
    fi
    [[ -s $out.err ]] || rm -f "$out.err"
    k=$((k + 1))
done
progress "$total" "done"
[[ -t 2 ]] && echo >&2
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# ---------------------------------------------------------------- machine
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
machine="${cpu:-unknown CPU}, $(nproc) cores, $(free -g 2>/dev/null | awk '/^Mem:/{print $2 " GiB"}') memory, \
Linux $(uname -r), $(mpirun --version 2>/dev/null | head -1)"

# ---------------------------------------------------------------- tables
python3 - "$outdir" "$np" "$reps" "$machine" "$braid_where" "$load_start" "$load_end" "$do_plot" \
    "$bench" "$budget" "$dtype" "$failures" <<'PYEOF'
import csv, glob, os, statistics, sys
from collections import defaultdict

outdir, np_, reps, machine, braid_where, load0, load1, do_plot, bench, budget, dtype, failures = sys.argv[1:]
P = int(np_)

def factor(coll):
    if coll == "allreduce": return 2.0 * (P - 1) / P
    if coll in ("reduce_scatter", "allgather", "alltoall", "gather", "scatter", "allgatherv",
                "alltoallv", "gatherv", "scatterv"): return (P - 1) / P
    if coll == "barrier": return 0.0
    return 1.0

# raw rows: (coll, variant) -> size -> [p50...]
lat = defaultdict(lambda: defaultdict(list))
for path in sorted(glob.glob(os.path.join(outdir, "raw", "*.csv"))):
    name = os.path.basename(path)[:-4]
    coll_variant = name.rsplit("_rep", 1)[0]
    with open(path) as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    for r in rows:
        coll = r["coll"]
        variant = coll_variant[len(coll) + 1:].replace("-", ":", 1) if coll_variant.startswith(coll + "_") else "?"
        lat[(coll, variant)][int(r["size_bytes"])].append(float(r["p50_us"]))

def med(v): return statistics.median(v)
def bw(coll, size, us):
    return (size / (us * 1e-6) / 1e9 * (factor(coll) if coll not in ("memcpy", "reduce_local") else 1.0)) if us > 0 else 0.0

def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0: return "%d %s" % (n // div, unit)
    return "%d B" % n

colls = []
for (c, v) in lat:
    if c not in ("memcpy", "reduce_local") and c not in colls: colls.append(c)
order = ["allreduce", "bcast", "barrier", "reduce", "reduce_scatter", "allgather", "alltoall",
         "scan", "exscan", "gather", "scatter", "allgatherv", "alltoallv", "gatherv", "scatterv"]
colls.sort(key=lambda c: order.index(c) if c in order else 99)

def variants(coll):
    vs = [v for (c, v) in lat if c == coll]
    forced = sorted(v for v in vs if v.startswith("braid:"))
    return [v for v in ("tuned", "braid") if v in vs] + forced

# memory references
memref = {}
with open(os.path.join(outdir, "memref.csv"), "w") as f:
    f.write("kind,size_bytes,reps,p50_us,GBps\n")
    for kind in ("memcpy", "reduce_local"):
        for size, v in sorted(lat.get((kind, "ref"), {}).items()):
            m = med(v); memref[(kind, size)] = bw(kind, size, m)
            f.write("%s,%d,%d,%.3f,%.4f\n" % (kind, size, len(v), m, memref[(kind, size)]))

md = []
md.append("# braid vs tuned, np=%d\n" % P)
md.append("- machine: %s" % machine)
md.append("- braid component: %s" % braid_where)
md.append("- %s repetitions, interleaved; per run %s s per size, type %s; medians over repetitions of the p50 latency" % (reps, budget, dtype))
md.append("- load average (1/5/15 min) at start: %s, at end: %s - a shared machine: expect noise of 10-30%% between runs" % (load0, load1))
md.append("- busbw (GB/s, nccl-tests): allreduce algbw*2(P-1)/P, reduce_scatter/allgather/alltoall/gather/scatter "
          "and their v forms algbw*(P-1)/P, bcast/reduce/scan/exscan algbw; "
          "braid/tuned = busbw ratio (> 1: braid faster)")
if int(failures): md.append("- **%s run(s) failed** (see raw/*.err)" % failures)
md.append("")

summary = []
with open(os.path.join(outdir, "results.csv"), "w") as f:
    f.write("coll,variant,size_bytes,reps,p50_us,busbw_GBps,ratio_vs_tuned\n")
    for coll in colls:
        vs = variants(coll)
        sizes = sorted(set(s for v in vs for s in lat[(coll, v)]))
        tuned = {s: med(lat[(coll, "tuned")][s]) for s in sizes if lat[(coll, "tuned")].get(s)}
        md.append("## %s\n" % coll)
        forced = [v for v in vs if v.startswith("braid:")]
        is_barrier = coll == "barrier"
        if is_barrier:
            head = ["size", "tuned p50 us", "braid p50 us", "braid/tuned"]
        else:
            head = ["size", "tuned p50 us", "tuned busbw", "braid p50 us", "braid busbw", "braid/tuned"]
        head += [v.split(":", 1)[1] for v in forced]
        md.append("| " + " | ".join(head) + " |")
        md.append("|" + "|".join("---:" for _ in head) + "|")
        wins = total = 0; worst = None
        for s in sizes:
            row = [human(s)]
            cell = {}
            for v in vs:
                samples = lat[(coll, v)].get(s)
                if not samples: continue
                m = med(samples)
                ratio = (tuned[s] / m) if (s in tuned and m > 0) else float("nan")
                cell[v] = (m, bw(coll, s, m), ratio)
                f.write("%s,%s,%d,%d,%.3f,%.4f,%.4f\n" % (coll, v, s, len(samples), m, cell[v][1], ratio))
            def lat_s(v): return "%.2f" % cell[v][0] if v in cell else "-"
            def bw_s(v): return "%.3f" % cell[v][1] if v in cell else "-"
            if is_barrier:
                row += [lat_s("tuned"), lat_s("braid")]
            else:
                row += [lat_s("tuned"), bw_s("tuned"), lat_s("braid"), bw_s("braid")]
            r = cell.get("braid", (0, 0, float("nan")))[2]
            row.append("%.2f" % r if r == r else "-")
            for v in forced:
                if v in cell:
                    row.append(("%.2f us (%.2fx)" if is_barrier else "%.3f (%.2fx)") % ((cell[v][0] if is_barrier else cell[v][1]), cell[v][2]))
                else:
                    row.append("-")
            md.append("| " + " | ".join(row) + " |")
            if r == r:
                total += 1; wins += r >= 1.0
                if worst is None or r < worst[0]: worst = (r, s)
        if forced:
            md.append("\nforced-algorithm columns: busbw (GB/s) and ratio to tuned" if not is_barrier else
                      "\nforced-algorithm columns: p50 latency and ratio to tuned")
        md.append("")
        if total:
            line = "%s: braid >= tuned at %d of %d sizes" % (coll, wins, total)
            if worst: line += "; lowest braid/tuned %.2f at %s" % (worst[0], human(worst[1]))
            big = max(sizes)
            if not is_barrier and "braid" in variants(coll) and lat[(coll, "braid")].get(big) and big in tuned:
                m = med(lat[(coll, "braid")][big])
                line += "; at %s braid/tuned %.2f" % (human(big), tuned[big] / m)
                ref = memref.get(("memcpy", big))
                if ref:
                    line += ", braid busbw %.2f GB/s = %.2f x memcpy (%.2f GB/s)" % (bw(coll, big, m), bw(coll, big, m) / ref, ref)
            summary.append(line)

if memref:
    md.append("## memory references (all %d ranks at once, same run)\n" % P)
    md.append("| size | memcpy GB/s | a[i]+=b[i] GB/s (bytes of a per s) |")
    md.append("|---:|---:|---:|")
    for s in sorted(set(sz for (_, sz) in memref)):
        md.append("| %s | %s | %s |" % (human(s), "%.2f" % memref[("memcpy", s)] if ("memcpy", s) in memref else "-",
                                        "%.2f" % memref[("reduce_local", s)] if ("reduce_local", s) in memref else "-"))
    md.append("")
md.append("## summary\n")
md += ["- " + s for s in summary]
md.append("")
with open(os.path.join(outdir, "results.md"), "w") as f:
    f.write("\n".join(md))

def short(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0: return "%d%s" % (n // div, unit)
    return "%d" % n

def xtics(sizes):
    step = 1 if len(sizes) <= 12 else 4  # every size, or every 4x
    tics, last = [], None
    for s in sizes:
        if s > 0 and (last is None or s >= last * step):
            tics.append('"%s" %d' % (short(s), s)); last = s
    return ", ".join(tics)

# gnuplot: one plot per collective (not barrier), busbw against size, one line per variant
if do_plot == "1":
    for coll in colls:
        if coll == "barrier": continue
        dats = []
        for v in variants(coll):
            dat = os.path.join(outdir, "raw", "plot_%s_%s.dat" % (coll, v.replace(":", "-")))
            with open(dat, "w") as f:
                for s in sorted(lat[(coll, v)]):
                    f.write("%d %.6f\n" % (s, bw(coll, s, med(lat[(coll, v)][s]))))
            dats.append((dat, v))
        memdat = None
        if any(k == "memcpy" for (k, _) in memref):
            memdat = os.path.join(outdir, "raw", "plot_memcpy.dat")
            with open(memdat, "w") as f:
                for (k, s) in sorted(memref):
                    if k == "memcpy": f.write("%d %.6f\n" % (s, memref[(k, s)]))
        gp = os.path.join(outdir, "raw", "plot_%s.gp" % coll)
        png = os.path.join(outdir, "busbw_%s.png" % coll)
        with open(gp, "w") as f:
            f.write('if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) { set terminal pngcairo size 1000,600 } else { set terminal png size 1000,600 }\n')
            f.write('set output "%s"\n' % png)
            f.write('set title "%s busbw, np=%d (median of %s reps)"\n' % (coll, P, reps))
            f.write('set termoption noenhanced\nset logscale x 2\nset logscale y 10\n')
            f.write('set xtics (%s)\n' % xtics(sorted(set(s for v in variants(coll) for s in lat[(coll, v)]))))
            f.write('set xlabel "message size S (bytes)"\nset ylabel "busbw (GB/s), log scale"\n')
            f.write('set key outside right top\nset grid\n')
            parts = []
            for dat, v in dats:
                style = "lw 3" if v in ("braid", "tuned") else "lw 1 dt 2"
                parts.append('"%s" using 1:2 with linespoints %s title "%s"' % (dat, style, v))
            if memdat:
                parts.append('"%s" using 1:2 with lines lw 1 lc rgb "gray" title "memcpy (reference)"' % memdat)
            f.write("plot " + ", \\\n     ".join(parts) + "\n")
        rc = os.system('gnuplot "%s" 2>"%s.err"' % (gp, gp))
        if rc != 0: print("compare.sh: gnuplot failed for %s (see %s.err)" % (coll, gp), file=sys.stderr)
        elif os.path.getsize(gp + ".err") == 0: os.remove(gp + ".err")

# terminal: the braid-vs-tuned part of each table
print()
for coll in colls:
    print("%s (np=%d): size, tuned p50 us, braid p50 us, braid/tuned busbw" % (coll, P))
    for (c, v) in [(coll, "tuned")]:
        for s in sorted(lat[(c, v)]):
            t = med(lat[(c, "tuned")][s]); b = lat[(c, "braid")].get(s)
            if b: print("  %10s %10.2f %10.2f %6.2f" % (human(s), t, med(b), t / med(b)))
for s in summary: print(s)
print("\nresults: %s/results.md, results.csv, memref.csv%s" % (outdir, ", busbw_*.png" if do_plot == "1" else ""))
PYEOF
rc=$?
[[ $rc == 0 ]] || die "table step failed"
[[ $failures == 0 ]] || { echo "compare.sh: $failures run(s) failed" >&2; exit 1; }
