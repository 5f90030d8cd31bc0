#!/usr/bin/env bash
#
# run_apps.sh - packaged MPI applications, the same binary under braid and
# under Open MPI's tuned (--mca coll ^braid), interleaved: their results
# compared, their wall time and the time they spent in collectives
# (contrib/profile/libbraidprof.so preloaded into every run) measured.
#
# Applications (Debian's packages, installed with contrib/install_deps.sh
# when missing; a "SKIP:" line where one cannot be had):
#   hpcc      HPC Challenge 1.5 (package hpcc): HPL, PTRANS, MPIFFT,
#             RandomAccess, STREAM, DGEMM, ring latency, on a generated
#             hpccinf.txt: N (-N, default 1000), NB=80, a 1 x np grid.
#             Compared: hpccoutf.txt's Success line, HPL's norms, PTRANS's
#             residual, MPIFFT's error and RandomAccess's errors, each
#             value within a relative 1e-6 (they come out equal: HPL
#             reduces nothing through collectives, the errors are maxima)
#   lammps    LAMMPS (packages lammps, lammps-examples): in.peptide with
#             "kspace_modify collective yes" added after its kspace_style,
#             so that PPPM's FFT remap runs MPI_Alltoallv, thermo output
#             every 10 steps, and -s steps (default 100). Compared: the
#             thermo output, line for line (the same binary and input must
#             give identical lines)
#   lammps8   the same with the peptide replicated 2 x 2 x 2 (16,032 atoms)
#   ptscotch  PT-Scotch's dgpart (packages ptscotch, scotch): a 3-D mesh
#             made by gmk_m3 (-g side, default 24) split into 16 parts,
#             deterministically (-Cd);
#             its distributed graph code runs MPI_Allgather(v), MPI_Scan,
#             MPI_Alltoall(v), MPI_Allreduce. Compared: the mapping file
#             dgpart writes, line for line
#
# Each of -r repetitions runs braid and tuned (braid first in odd ones,
# tuned first in even ones); the table gives every
# run's wall time (mpirun start to end, start-up included) and the median,
# the collective time (the profile's total: the slowest rank's time inside
# collective calls), its part after the last rank had entered each
# blocking call (what a component can shorten; the rest is waiting for a
# rank that came late) and the application's own time where it prints one,
# and tuned / braid ratios (> 1: braid faster). Then one untimed braid run
# with BRAIDPROF_ALGORITHMS=1 gives the profile with the algorithm braid
# chose per collective and size class and the calls it did not run.
#
# -c: the correctness pass (tests/apps/check_apps.sh; tools/test.sh): one
# pair per application at small sizes, no census; "ok: APP", "FAIL: APP
# why" or "SKIP: APP why" per application and a last line
# "apps: N passed, M failed"; exit status 0, 1 on a failure, 77 when every
# application was skipped.
#
# -o FILE: the medians as CSV rows (contrib/bench/results.sh columns; one
# row per application for the wall time, note "wall", one for the
# collective time, note "collective", and one for its part after the
# last arrival, note "after_arrival"; collective = the application) with
# the machine, the load before and after and the command; tools/render_tables.py
# renders docs/results/apps-np2.csv into docs/BENCHMARKS.md.
# (the functions of each application are called by name: hpcc_prepare ...)
# shellcheck disable=SC2034,SC2317
set -u
set -o pipefail

usage() {
    cat <<EOF
usage: $0 [options]
  -a APPS     comma list of hpcc, lammps, lammps8, ptscotch (default all)
  -n NP       ranks (default 2)
  -r REPS     braid/tuned pairs, interleaved (default 3)
  -N N        HPCC's matrix size (default 1000; -c: 500)
  -s STEPS    LAMMPS steps (default 100; -c: 50)
  -g SIDE     PT-Scotch's mesh side (default 24; -c: 12)
  -b BIND     mpirun --bind-to (default core when np <= cores, else none)
  -B DIR      build directory with contrib/profile/libbraidprof.so (default
              \$BRAID_BUILDDIR, else build/)
  -p DIR      directory holding mca_coll_braid.so (default: as Open MPI
              finds it, else the build directory's .libs)
  -o FILE     append the medians as CSV rows to FILE (contrib/bench/results.sh)
  -w DIR      keep every run's files in DIR (default: a temporary directory, removed)
  -x ARGS     extra mpirun arguments, quoted
  -c          the correctness pass: one pair, small sizes, exit 0/1/77
  -I          install nothing: an application whose package is missing is skipped
  -A          no census run (BRAIDPROF_ALGORITHMS=1)
EOF
}

die() { echo "run_apps.sh: $*" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=contrib/braid_env.sh
source "$top/contrib/braid_env.sh"
# shellcheck source=contrib/bench/results.sh
source "$top/contrib/bench/results.sh"

orig_args=("$@")
apps="hpcc,lammps,lammps8,ptscotch" np=2 reps=3 hpcc_n="" steps="" side="" bind="" build="" compdir=""
csv_out="" workdir="" extra="" check=0 install=1 census=1
while getopts "a:n:r:N:s:g:b:B:p:o:w:x:cIAh" opt; do
    case $opt in
    a) apps=$OPTARG ;;
    n) np=$OPTARG ;;
    r) reps=$OPTARG ;;
    N) hpcc_n=$OPTARG ;;
    s) steps=$OPTARG ;;
    g) side=$OPTARG ;;
    b) bind=$OPTARG ;;
    B) build=$OPTARG ;;
    p) compdir=$OPTARG ;;
    o) csv_out=$OPTARG ;;
    w) workdir=$OPTARG ;;
    x) extra=$OPTARG ;;
    c) check=1 ;;
    I) install=0 ;;
    A) census=0 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
[[ $np =~ ^[0-9]+$ && $np -ge 1 ]] || die "-n needs a positive number"
[[ $reps =~ ^[0-9]+$ && $reps -ge 1 ]] || die "-r needs a positive number"
if [ $check -eq 1 ]; then
    reps=1 census=0
    : "${hpcc_n:=500}" "${steps:=50}" "${side:=12}"
fi
: "${hpcc_n:=1000}" "${steps:=100}" "${side:=24}"
[ -n "$bind" ] || { [ "$np" -le "$(nproc)" ] && bind=core || bind=none; }

# the results file: results.sh writes to $BRAID_RESULTS (none without -o)
if [ -n "$csv_out" ]; then
    case $csv_out in /*) ;; *) csv_out=$PWD/$csv_out ;; esac
    export BRAID_RESULTS=$csv_out
else
    export BRAID_RESULTS=none
fi
results_open "$0" "${orig_args[@]}"

# the profile library and braid's component
[ -n "$build" ] || build=${BRAID_BUILDDIR:-$top/build}
prof=$(cd "$build" 2>/dev/null && pwd)/contrib/profile/libbraidprof.so
[ -f "$prof" ] || die "no $prof: build braid first ($(braid_build_hint))"
[ -n "$compdir" ] || [ ! -f "$build/.libs/mca_coll_braid.so" ] ||
    ompi_info --param coll braid --parsable 2>/dev/null | grep -q coll_braid_priority ||
    compdir=$build/.libs
braid_env_setup "$compdir" || die "bad -p directory"
[ "$BRAID_FOUND" = 1 ] || die "braid's component not found: $BRAID_WHERE"
# shellcheck disable=SC2206
extra_args=($extra)
launch=(--bind-to "$bind" "${extra_args[@]}")
braid_mpirun_map launch
braid_mpirun_env

if [ -n "$workdir" ]; then
    mkdir -p "$workdir" || die "cannot make $workdir"
    work=$(cd "$workdir" && pwd)
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/braid-apps.XXXXXX") || die "no temporary directory"
    trap 'rm -rf "$work"' EXIT
fi

say() { echo "$*"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {if (NR == 0) print ""; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }

# ------------------------------------------------------------------
# the applications: need (packages and programs), prepare (inputs in
# DIR), cmd (the command line), result (the text compared, from a run's
# directory), own (the application's own time, seconds, or empty)
# ------------------------------------------------------------------

hpcc_packages=(hpcc)
hpcc_programs=(hpcc)
hpcc_prepare() {
    # HPL.dat's format, then HPCC's PTRANS lines (no additional sizes)
    cat >"$1/hpccinf.txt" <<EOF
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
$hpcc_n      Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
$np          Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                               Number of additional problem sizes for PTRANS
1200 10000 30000                values of N
0                               number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64        values of NB
EOF
}
hpcc_cmd() { echo hpcc; }
hpcc_describe() { echo "hpcc, N=$hpcc_n NB=80, a 1x$np grid"; }
# the summary's Success line, HPL's norms, PTRANS's residual, MPIFFT's
# error, RandomAccess's errors, the DGEMM tests' failed nodes, and the
# counts of passed and failed residual checks (no time or rate; not
# StarDGEMM's scaled residual: its matrices are drawn from the clock)
hpcc_result() {
    local f=$1/hpccoutf.txt
    [ -s "$f" ] || return 1
    grep -q '^End of HPC Challenge tests' "$f" || return 1
    grep -E '^(Success|Failure|HPL_(N|RnormI|Anorm1|AnormI|Xnorm1|XnormI|BnormI)|PTRANS_(n|residual)|MPIFFT_(N|maxErr)|MPIRandomAccess(_LCG)?_(N|Errors|ErrorsFraction|ExeUpdates))=|^Node\(s\) with error|tests completed and (passed|failed) residual checks' "$f" |
        sed 's/^[[:space:]]*//; s/[[:space:]]*$//'
}
hpcc_own() { sed -n 's/^HPL_Tflops=//p' "$1/hpccoutf.txt" 2>/dev/null | head -n1; }
hpcc_own_label="HPL Tflop/s"

lammps_packages=(lammps lammps-examples)
lammps_programs=(lmp)
lammps_input() {
    local d
    for d in /usr/share/lammps/examples/peptide /usr/share/doc/lammps-examples/examples/peptide \
        /usr/share/doc/lammps/examples/peptide; do
        if [ -f "$d/in.peptide" ] || [ -f "$d/in.peptide.gz" ]; then echo "$d"; return 0; fi
    done
    d=$(dpkg -L lammps-examples 2>/dev/null | grep -E '/peptide/in\.peptide(\.gz)?$' | head -n1)
    [ -n "$d" ] && dirname "$d"
}
lammps_prepare() {
    local src f
    src=$(lammps_input) || return 1
    [ -n "$src" ] || return 1
    for f in "$src"/*; do
        case $f in
        *.gz) gzip -dc "$f" >"$1/$(basename "${f%.gz}")" ;;
        *) cp "$f" "$1/" ;;
        esac
    done
    [ -f "$1/in.peptide" ] || return 1
    # PPPM's remap through MPI_Alltoallv, the thermo output every 10 steps,
    # and the steps asked for
    sed -i -e '/^kspace_style/a kspace_modify collective yes' \
        -e 's/^thermo[[:space:]][[:space:]]*[0-9][0-9]*/thermo 10/' \
        -e "s/^run[[:space:]].*/run $steps/" "$1/in.peptide"
    grep -q '^kspace_modify collective yes' "$1/in.peptide"
}
lammps_cmd() { echo "lmp -in in.peptide -log log.lammps -screen none"; }
lammps_describe() { echo "lmp -in in.peptide + kspace_modify collective yes, $steps steps, thermo every 10"; }
# the thermo output: from its first Step line to the loop time, each
# step's CPU seconds (thermo_style multi) left out
lammps_result() {
    local f=$1/log.lammps
    [ -s "$f" ] || return 1
    grep -q '^Loop time' "$f" || return 1
    awk '/Step/ {on = 1} /^Loop time/ {on = 0} on' "$f" | sed 's/CPU = *[0-9.eE+-]* (sec)/CPU = -/'
}
lammps_own() { sed -n 's/^Loop time of \([0-9.e+-]*\) .*/\1/p' "$1/log.lammps" 2>/dev/null | tail -n1; }
lammps_own_label="loop s"

# the same input replicated 2 x 2 x 2 (16,032 atoms): 8 times the atoms
# and PPPM's remap blocks of 8-64 KiB
lammps8_packages=("${lammps_packages[@]}")
lammps8_programs=("${lammps_programs[@]}")
lammps8_prepare() {
    lammps_prepare "$1" || return 1
    sed -i '/^read_data/a replicate 2 2 2' "$1/in.peptide"
    grep -q '^replicate 2 2 2' "$1/in.peptide"
}
lammps8_cmd() { lammps_cmd; }
lammps8_describe() { echo "lmp -in in.peptide + replicate 2 2 2 + kspace_modify collective yes, $steps steps, thermo every 10"; }
lammps8_result() { lammps_result "$@"; }
lammps8_own() { lammps_own "$@"; }
lammps8_own_label=$lammps_own_label

ptscotch_packages=(ptscotch scotch)
ptscotch_programs=(dgpart gmk_m3)
ptscotch_prepare() {
    gmk_m3 "$side" "$side" "$side" "$1/mesh.grf" 2>/dev/null && [ -s "$1/mesh.grf" ]
}
# -Cd: deterministic (by default each run draws another random seed)
ptscotch_cmd() { echo "dgpart -Cd 16 mesh.grf mesh.map"; }
ptscotch_describe() { echo "dgpart 16 parts of a ${side}^3 mesh (gmk_m3)"; }
ptscotch_result() {
    [ -s "$1/mesh.map" ] && cat "$1/mesh.map"
}
ptscotch_own() { :; }
ptscotch_own_label=""

# ------------------------------------------------------------------
# running
# ------------------------------------------------------------------

# have APP: its programs are there, installing its packages if need be
have() {
    local app=$1 p missing=0
    local -n pkgs=${app}_packages progs=${app}_programs
    for p in "${progs[@]}"; do command -v "$p" >/dev/null 2>&1 || missing=1; done
    [ $missing -eq 0 ] && return 0
    [ $install -eq 1 ] || { why="package(s) ${pkgs[*]} not installed (-I)"; return 1; }
    if ! "$top/contrib/install_deps.sh" "${pkgs[@]}" >"$work/install-$app.log" 2>&1; then
        why="cannot install ${pkgs[*]}: $(tail -n1 "$work/install-$app.log")"
        return 1
    fi
    for p in "${progs[@]}"; do
        command -v "$p" >/dev/null 2>&1 || { why="no $p after installing ${pkgs[*]}"; return 1; }
    done
}

# run APP VARIANT DIR [census]: one run in DIR (inputs copied from
# $work/APP/input); prints the wall time in seconds; the profile in DIR/prof.csv
run() {
    local app=$1 variant=$2 dir=$3 mode=${4:-} vargs=() env=() t0 t1 rc
    rm -rf "$dir" && mkdir -p "$dir" && cp -r "$work/$app/input/." "$dir/"
    [ "$variant" = tuned ] && vargs=(--mca coll ^braid)
    env=(-x "LD_PRELOAD=$prof" -x "BRAIDPROF_OUT=$dir/prof.csv")
    [ "$mode" = census ] && env+=(-x BRAIDPROF_ALGORITHMS=1)
    local cmd
    read -ra cmd <<<"$("${app}_cmd")"
    t0=$(date +%s%N)
    (cd "$dir" && timeout -k 10 "${BRAID_APPS_TIMEOUT:-600}" "${MPIRUN[@]}" -np "$np" "${launch[@]}" \
        "${vargs[@]}" "${env[@]}" "${cmd[@]}" </dev/null >"$dir/stdout" 2>"$dir/stderr")
    rc=$?
    t1=$(date +%s%N)
    echo "$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')"
}

# the profile's total collective time (us), its part after the last rank
# of each call had come (us), and the component of a run
prof_total() { awk -F, '$1 == "total" {print $5}' "$1/prof.csv" 2>/dev/null; }
prof_after() { awk -F, '$1 == "total" {print $11}' "$1/prof.csv" 2>/dev/null; }
prof_component() { sed -n 's/^# braidprof: .*component=\([a-z]*\);.*/\1/p' "$1/prof.csv" 2>/dev/null; }
# the rows' calls and bytes, for comparing two runs' collectives
prof_calls() { awk -F, 'NR > 2 && $1 != "total" {print $1, $2, $3, $4}' "$1/prof.csv" 2>/dev/null; }

# HPCC's values compared within a relative tolerance, the rest exactly
same_result() {
    local app=$1 a=$2 b=$3
    if [ "$app" != hpcc ]; then
        cmp -s "$a" "$b"
        return
    fi
    python3 - "$a" "$b" <<'PY'
import re, sys
A, B = (open(p).read().split("\n") for p in sys.argv[1:3])
if len(A) != len(B):
    sys.exit(1)
num = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
for a, b in zip(A, B):
    if num.sub("#", a) != num.sub("#", b):
        sys.exit(1)
    for x, y in zip(num.findall(a), num.findall(b)):
        x, y = float(x), float(y)
        if abs(x - y) > 1e-6 * max(abs(x), abs(y)) and abs(x - y) > 1e-300:
            sys.exit(1)
PY
}

IFS=',' read -ra app_list <<<"$apps"
for app in "${app_list[@]}"; do
    case $app in hpcc | lammps | lammps8 | ptscotch) ;; *) die "unknown application $app (hpcc, lammps, lammps8, ptscotch)" ;; esac
done

load_now() { cut -d' ' -f1 /proc/loadavg; }
say "run_apps: np=$np, $reps braid/tuned pair(s), --bind-to $bind; braid: $BRAID_WHERE"
say "run_apps: profile $prof; load $(load_now); $(uname -n), $(nproc) cores"
passed=0 failed=0 skipped=0 status=0
for app in "${app_list[@]}"; do
    why=""
    if ! have "$app"; then
        say "SKIP: $app: $why"
        skipped=$((skipped + 1))
        continue
    fi
    mkdir -p "$work/$app/input"
    if ! "${app}_prepare" "$work/$app/input"; then
        say "FAIL: $app: its input could not be made"
        failed=$((failed + 1))
        continue
    fi
    say ""
    say "== $app: $("${app}_describe"), np=$np, load $(load_now)"
    declare -A wall=() coll=() after=() own=()
    bad="" ref="" refcalls="" calls_same=1
    for ((rep = 1; rep <= reps; rep++)); do
        # braid first in odd repetitions, tuned first in even ones
        order=(braid tuned)
        [ $((rep % 2)) -eq 0 ] && order=(tuned braid)
        for variant in "${order[@]}"; do
            dir=$work/$app/$variant-$rep
            read -r rc secs <<<"$(run "$app" "$variant" "$dir")"
            if [ "$rc" != 0 ]; then
                bad="$variant run $rep exited $rc (stderr: $(tail -n 3 "$dir/stderr" | tr '\n' ' '))"
                break 2
            fi
            if ! "${app}_result" "$dir" >"$dir/result"; then
                bad="$variant run $rep left no result (see $dir)"
                break 2
            fi
            comp=$(prof_component "$dir")
            if [ "$comp" != "$variant" ]; then
                bad="the $variant run's collectives were ${comp:-not profiled} (profile $dir/prof.csv)"
                break 2
            fi
            if [ -z "$ref" ]; then
                ref=$dir/result
                prof_calls "$dir" >"$work/$app/calls"
            elif ! same_result "$app" "$ref" "$dir/result"; then
                bad="results differ: $variant run $rep against the first run: $(diff "$ref" "$dir/result" | head -n 4 | tr '\n' ' ')"
                break 2
            fi
            prof_calls "$dir" | cmp -s - "$work/$app/calls" || calls_same=0
            wall[$variant]="${wall[$variant]:-} $secs"
            coll[$variant]="${coll[$variant]:-} $(prof_total "$dir")"
            after[$variant]="${after[$variant]:-} $(prof_after "$dir")"
            own[$variant]="${own[$variant]:-} $("${app}_own" "$dir")"
        done
    done
    if [ -n "$bad" ]; then
        say "FAIL: $app: $bad"
        failed=$((failed + 1))
        status=1
        unset wall coll after own
        continue
    fi
    passed=$((passed + 1))
    nres=$(wc -l <"$ref")
    say "ok: $app: results equal in $((2 * reps)) runs ($nres lines compared$([ "$app" = hpcc ] && echo ", values within 1e-6")); collective calls and bytes $([ $calls_same -eq 1 ] && echo "the same in every run" || echo "differ between runs")"
    own_label=${app}_own_label
    own_label=${!own_label}
    printf '  %-8s %-34s %-10s %-34s %-10s %-10s %s\n' "" "wall s (runs)" "median" "collective ms (runs)" \
        "median" "after ms" "${own_label:+$own_label, median}"
    for variant in braid tuned; do
        w=$(median <<<"${wall[$variant]}")
        c=$(median <<<"${coll[$variant]}")
        a=$(median <<<"${after[$variant]}")
        o=$(median <<<"${own[$variant]}")
        cm=$(for x in ${coll[$variant]}; do awk -v x="$x" 'BEGIN {printf "%.1f ", x / 1000}'; done)
        printf '  %-8s %-34s %-10s %-34s %-10s %-10s %s\n' "$variant" "${wall[$variant]# }" "$w" "$cm" \
            "$(awk -v x="$c" 'BEGIN {printf "%.1f", x / 1000}')" \
            "$(awk -v x="$a" 'BEGIN {printf "%.1f", x / 1000}')" "$o"
        eval "med_wall_$variant=$w med_coll_$variant=$c med_after_$variant=$a"
    done
    # shellcheck disable=SC2154
    say "  tuned / braid: wall $(ratio "$med_wall_tuned" "$med_wall_braid"), collective time $(ratio "$med_coll_tuned" "$med_coll_braid"), after the last arrival $(ratio "$med_after_tuned" "$med_after_braid")"
    # shellcheck disable=SC2154
    if [ -n "${BRAID_RESULTS_ROWS:-}" ]; then
        echo "$app,$np,0,$(awk -v x="$med_wall_braid" 'BEGIN {printf "%.0f", x * 1e6}'),tuned,$(awk -v x="$med_wall_tuned" 'BEGIN {printf "%.0f", x * 1e6}'),$reps,auto,wall" >>"$BRAID_RESULTS_ROWS"
        echo "$app,$np,0,$med_coll_braid,tuned,$med_coll_tuned,$reps,auto,collective" >>"$BRAID_RESULTS_ROWS"
        [ -n "$med_after_braid" ] && [ -n "$med_after_tuned" ] &&
            echo "$app,$np,0,$med_after_braid,tuned,$med_after_tuned,$reps,auto,after_arrival" >>"$BRAID_RESULTS_ROWS"
    fi
    # the profile of the last tuned run, and braid's census
    if [ $check -eq 0 ]; then
        say "  profile, tuned (run $reps):"
        grep '^braidprof: ' "$work/$app/tuned-$reps/stderr" | sed 's/^/    /'
        if [ $census -eq 1 ]; then
            read -r rc secs <<<"$(run "$app" braid "$work/$app/census" census)"
            if [ "$rc" = 0 ]; then
                say "  profile, braid, with its algorithms (BRAIDPROF_ALGORITHMS=1, untimed):"
                grep '^braidprof: ' "$work/$app/census/stderr" | sed 's/^/    /'
            else
                say "  (the census run exited $rc: $work/$app/census/stderr)"
            fi
        fi
    fi
    unset wall coll after own
done
results_close
say ""
say "apps: $passed passed, $failed failed"
[ $skipped -gt 0 ] && say "# apps skipped: $skipped"
[ $status -ne 0 ] && exit 1
[ $passed -eq 0 ] && [ $skipped -gt 0 ] && exit 77
exit 0
