#!/usr/bin/env bash
#
# run_app_compare.sh - the "main job" demo: one unmodified MPI program
# (contrib/apps/logreg, data-parallel logistic regression averaging its
# gradient with MPI_Allreduce every step), the same binary run under braid and
# under Open MPI's tuned (--mca coll ^braid). Prints both final losses, whether
# they agree within a relative tolerance (different summation orders give
# last-bit differences), and the median time per step of each.
#
# Two models by default: "small" (65 parameters, compute-bound) and "large"
# (1M+ parameters, 8 MiB allreduce per step, bandwidth-bound). Runs alternate
# braid / tuned for each repetition; times are medians over repetitions.
# Exit status 0 when every pair of losses agrees, every run's weights were
# identical on all ranks and, at np >= 2, braid took MPI_COMM_WORLD in its
# runs (its verbose output says so).
#
# --python runs contrib/apps/logreg.py instead: the same model and data with
# mpi4py and numpy, under MPI_THREAD_MULTIPLE (mpi4py's default thread
# level), with the python3 that has them (BRAID_PYTHON, default
# /usr/bin/python3: Debian's python3-mpi4py and python3-numpy); exit status
# 77 when it lacks them.
#
set -u
set -o pipefail

usage() {
    cat <<EOF
usage: $0 [options] [-- logreg options]
  -n NP       ranks (default 2)
  -m MODELS   small, large or both (default both)
  -r REPS     repetitions, braid and tuned alternating (default 3)
  -T TOL      relative tolerance for the final losses (default 1e-9)
  -x ARGS     extra mpirun arguments, quoted
  -p DIR      directory holding mca_coll_braid.so (default: as Open MPI finds
              it, else build/.libs)
  -B PATH     logreg binary (default: found in the build directory)
  --python    run contrib/apps/logreg.py (mpi4py, numpy) with \$BRAID_PYTHON
              (default /usr/bin/python3) instead of the C program
  --build     build first (autogen, configure, make -j2 in build/) when needed
EOF
}

die() { echo "run_app_compare.sh: $*" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=contrib/braid_env.sh
source "$here/braid_env.sh"

np=2; models=both; reps=3; tol=1e-9; extra=""; compdir=""; app=""; build=0; python=0
app_args=()
while (($#)); do
    case $1 in
        -n) np=$2; shift 2 ;;
        -m) models=$2; shift 2 ;;
        -r) reps=$2; shift 2 ;;
        -T) tol=$2; shift 2 ;;
        -x) extra=$2; shift 2 ;;
        -p) compdir=$2; shift 2 ;;
        -B) app=$2; shift 2 ;;
        --build) build=1; shift ;;
        --python) python=1; shift ;;
        -h | --help) usage; exit 0 ;;
        --) shift; app_args=("$@"); break ;;
        *) usage >&2; exit 2 ;;
    esac
done
[[ $np =~ ^[0-9]+$ && $np -ge 1 ]] || die "-n needs a positive number"
[[ $reps =~ ^[0-9]+$ && $reps -ge 1 ]] || die "-r needs a positive number"
case $models in both) models="small large" ;; small | large) ;; *) die "-m small|large|both" ;; esac

if [[ $build == 1 ]]; then
    top=$braid_env_top
    (cd "$top" && { [[ -x configure ]] || ./autogen.sh >/dev/null; } && mkdir -p build && cd build &&
        { [[ -f Makefile ]] || ../configure -q; } && make -j2 >/dev/null) || die "build failed"
fi
if [[ $python == 1 ]]; then
    py=${BRAID_PYTHON:-/usr/bin/python3}
    if ! "$py" -c 'import mpi4py, numpy' 2>/dev/null; then
        echo "SKIP: $py cannot import mpi4py and numpy (Debian: apt-get install python3-mpi4py python3-numpy)"
        exit 77
    fi
    app_cmd=("$py" "${app:-$here/apps/logreg.py}")
else
    [[ -n $app ]] || app=$(braid_find_program contrib/apps/logreg) ||
        die "logreg not built: $(braid_build_hint) (or use --build)"
    app_cmd=("$app")
fi
braid_env_setup "$compdir" || die "bad -p directory"
# shellcheck disable=SC2206
extra_args=($extra)

# run VARIANT MODEL: prints logreg's RESULT line, plus braid_on=1 when
# braid's verbose output says it took MPI_COMM_WORLD
run() {
    local variant=$1 model=$2 margs=() vargs=(--mca coll_braid_verbose 10) out line
    [[ $model == large ]] && margs=(--large)
    [[ $variant == tuned ]] && vargs=(--mca coll ^braid)
    out=$("${MPIRUN[@]}" -np "$np" "${vargs[@]}" "${extra_args[@]}" "${app_cmd[@]}" "${margs[@]}" \
        "${app_args[@]}" -q 2>&1)
    line=$(grep '^RESULT' <<<"$out") || line="RESULT failed=1"
    grep -q 'braid: enabled on MPI_COMM_WORLD' <<<"$out" && line="$line braid_on=1"
    echo "$line"
}
progress() { [[ -t 2 ]] && printf '\r\033[K%s' "$1" >&2; return 0; }
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" ${1#RESULT}"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
us() { awk -v t="$1" 'BEGIN { if (t >= 1000) printf "%.2f ms", t / 1000; else printf "%.1f us", t }'; }

echo "logreg, same program under braid and under tuned: np=$np, $reps rep(s), ${app_cmd[*]}"
echo "braid: $BRAID_WHERE"
status=0
for model in $models; do
    declare -A loss=() steps=() ars=() ident=() params=()
    braid_off=0 thread=""
    for ((rep = 1; rep <= reps; rep++)); do
        for variant in braid tuned; do
            progress "running $model model, rep $rep/$reps, $variant..."
            line=$(run "$variant" "$model")
            if [[ -n $(field "$line" failed) ]]; then
                progress ""
                echo "  $model/$variant: logreg failed" >&2
                status=1
                continue
            fi
            # the loss must not change between repetitions of one variant
            l=$(field "$line" loss)
            if [[ -n ${loss[$variant]:-} && ${loss[$variant]} != "$l" ]]; then
                progress ""
                echo "  $model/$variant: loss changed between repetitions (${loss[$variant]} vs $l)" >&2
                status=1
            fi
            loss[$variant]=$l
            steps[$variant]="${steps[$variant]:-} $(field "$line" step_us)"
            ars[$variant]="${ars[$variant]:-} $(field "$line" allreduce_us)"
            [[ $(field "$line" identical) == 1 ]] || ident[$variant]=no
            # (braid leaves one-rank communicators to the others)
            [[ $variant == braid && $np -ge 2 && $(field "$line" braid_on) != 1 ]] && braid_off=1
            thread=$(field "$line" thread)
            params[$variant]=$(field "$line" params)
        done
    done
    progress ""
    echo
    echo "$model model (${params[braid]:-${params[tuned]:-?}} parameters${thread:+, MPI thread level $thread}):"
    if [[ $braid_off == 1 ]]; then
        echo "  braid did NOT take MPI_COMM_WORLD in a braid run (coll_braid_verbose=10 did not say so)"
        status=1
    fi
    printf '  %-7s  %-16s  %-12s  %-14s  %s\n' variant "final loss" "time/step" "allreduce/step" "replicas"
    for variant in braid tuned; do
        [[ -n ${loss[$variant]:-} ]] || continue
        printf '  %-7s  %-16s  %-12s  %-14s  %s\n' "$variant" "${loss[$variant]}" \
            "$(us "$(median <<<"${steps[$variant]}")")" "$(us "$(median <<<"${ars[$variant]}")")" \
            "$([[ -z ${ident[$variant]:-} ]] && echo identical || echo DIFFERENT)"
        [[ -z ${ident[$variant]:-} ]] || status=1
    done
    if [[ -n ${loss[braid]:-} && -n ${loss[tuned]:-} ]]; then
        verdict=$(awk -v a="${loss[braid]}" -v b="${loss[tuned]}" -v tol="$tol" 'BEGIN {
            d = a - b; if (d < 0) d = -d; m = (a < 0 ? -a : a); if ((b < 0 ? -b : b) > m) m = (b < 0 ? -b : b)
            r = m > 0 ? d / m : 0; printf "%s %.2g", (r <= tol ? "yes" : "NO"), r }')
        sb=$(median <<<"${steps[braid]}"); st=$(median <<<"${steps[tuned]}")
        speed=$(awk -v b="$sb" -v t="$st" 'BEGIN { printf "%.2f", (b > 0 ? t / b : 0) }')
        echo "  losses agree: ${verdict%% *} (relative difference ${verdict#* }, tolerance $tol); braid speed vs tuned: ${speed}x per step"
        [[ ${verdict%% *} == yes ]] || status=1
    else
        status=1
    fi
    unset loss steps ars ident params
done
exit $status
