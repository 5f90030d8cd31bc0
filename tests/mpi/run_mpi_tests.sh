#!/usr/bin/env bash
# run_mpi_tests.sh - run braid's MPI integration tests (tests/mpi/mpi_tests.list)
# against the component in the build tree, each mpirun under a timeout.
#
# Environment (set by 'make check'): BRAID_BUILDDIR, BRAID_SRCDIR, OMPI_PKGLIBDIR.
# Open MPI 5 (PRRTE): the same cases, written for ORTE and mapped by
# braid_mpirun_map, contrib/braid_env.sh (MCA fields and MPI_TEST_MPIRUN_ARGS alike).
# Optional: MPI_TEST_TIMEOUT (seconds per mpirun, default 240),
#           MPI_TEST_FILTER (regex on the case description),
#           MPI_TEST_EXCLUDE (regex: cases whose description matches are left out),
#           MPI_TEST_LIST (another list file),
#           MPI_TEST_LOGDIR (each case's output, caseN.log; default
#           $BRAID_BUILDDIR/tests/mpi-logs; the last run's are removed),
#           MPI_TEST_MPIRUN_ARGS (extra mpirun arguments, split on spaces;
#           tests/multihost/run_multihost.sh passes its hostfile and launcher).
set -u
builddir=${BRAID_BUILDDIR:-$(pwd)}
srcdir=${BRAID_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=contrib/braid_env.sh
source "$srcdir/contrib/braid_env.sh"
pkglibdir=$(braid_pkglibdir)
list=${MPI_TEST_LIST:-$srcdir/tests/mpi/mpi_tests.list}
timeout_s=${MPI_TEST_TIMEOUT:-240}
filter=${MPI_TEST_FILTER:-}
exclude=${MPI_TEST_EXCLUDE:-}
read -ra extra_mpirun_args <<<"${MPI_TEST_MPIRUN_ARGS:-}"

if [ ! -r "$list" ]; then
    echo "run_mpi_tests: test list $list not found" >&2
    exit 99
fi
so=$builddir/.libs/mca_coll_braid.so
if [ ! -f "$so" ]; then
    echo "run_mpi_tests: $so not built" >&2
    exit 99
fi

# A sanitizer build's component needs the ASan runtime first in the process:
# the test programs are linked with it, an interpreter (python3 for the
# mpi4py cases) is not, so those cases are skipped there.
san_component=0
if ldd "$so" 2>/dev/null | grep -q libasan; then san_component=1; fi

# A component directory holding Open MPI's own components and the braid just
# built (and no other braid, e.g. an installed one).
compdir=$(braid_component_dir "$so" "$pkglibdir") || exit 99
# one directory per build whose case logs the next run replaces, so that
# repeated runs (every case traced: ~150 MB) do not pile up
logdir=${MPI_TEST_LOGDIR:-$builddir/tests/mpi-logs}
mkdir -p "$logdir" || exit 99
rm -f "$logdir"/case*.log
trap 'rm -rf "$compdir"' EXIT
export OMPI_MCA_mca_base_component_path=$compdir
braid_run_as_root
# keep runs quiet and independent of the host's network
export OMPI_MCA_btl_base_warn_component_unused=0
export OMPI_MCA_rmaps_base_oversubscribe=1

# Open MPI 5 launches with PRRTE (PMIx) instead of ORTE: every mpirun
# command line below is written for ORTE and mapped (braid_mpirun_map)
BRAID_OMPI_MAJOR=$(braid_ompi_major)
export BRAID_OMPI_MAJOR
braid_mpirun_env
# Open MPI 5.0's TCP BTL warns about every pair of peers when some interface
# has no usable address; one host needs only loopback
[ "$BRAID_OMPI_MAJOR" -ge 5 ] && [ ${#extra_mpirun_args[@]} -eq 0 ] &&
    export OMPI_MCA_btl_tcp_if_include=lo
# sanitizer builds (--enable-sanitizers): Open MPI and UCX leak at exit,
# so no leak check for MPI jobs (valgrind covers braid's allocations); any
# other ASan/UBSan report kills the rank and fails the case
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

expand_np() {   # "1-8" -> 1 2 ... 8 ; "2,5" -> 2 5
    local spec=$1 part
    IFS=',' read -ra parts <<<"$spec"
    for part in "${parts[@]}"; do
        part=${part// /}
        if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
    done
}

trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; s=${s%"${s##*[![:space:]]}"}; printf '%s' "$s"; }

passed=0 failed=0 skipped=0 n=0
failed_names=()
while IFS= read -r line || [ -n "$line" ]; do
    line=$(trim "${line%%#*}")
    [ -z "$line" ] && continue
    IFS='|' read -r f_np f_prog f_mca f_expect <<<"$line"
    f_np=$(trim "$f_np"); f_prog=$(trim "$f_prog"); f_mca=$(trim "$f_mca"); f_expect=$(trim "$f_expect")
    f_prog=${f_prog//@BUILDDIR@/$builddir}
    mca_args=(--mca coll_braid_verbose 20)
    if [ "$f_mca" != "-" ]; then
        f_mca=${f_mca//@SRCDIR@/$srcdir}
        for kv in $f_mca; do mca_args+=(--mca "${kv%%=*}" "${kv#*=}"); done
    fi
    env_prefix=()
    prog_words=($f_prog)
    # ENV=VALUE words before the program name go into the environment, except
    # TIMEOUT=s (this case's limit), MAXSECS=s (the job must end within s)
    # and ULFM=1 (mpirun --with-ft ulfm; skipped before Open MPI 5)
    case_timeout=$timeout_s max_secs=0 ulfm=0 ulfm_word=""
    while [[ ${prog_words[0]} == *=* ]]; do
        case ${prog_words[0]} in
        TIMEOUT=*) case_timeout=${prog_words[0]#TIMEOUT=} ;;
        MAXSECS=*) max_secs=${prog_words[0]#MAXSECS=} ;;
        ULFM=1) ulfm=1 ulfm_word="ULFM=1 " ;;
        *) env_prefix+=("${prog_words[0]}") ;;
        esac
        prog_words=("${prog_words[@]:1}")
    done
    prog=$builddir/tests/mpi/${prog_words[0]}
    # scripts (mpi4py programs) are not built: they run from the source tree
    script=0
    if [ ! -e "$prog" ]; then prog=$srcdir/tests/mpi/${prog_words[0]}; script=1; fi
    for np in $(expand_np "$f_np"); do
        n=$((n + 1))
        desc="np=$np ${env_prefix[*]} ${ulfm_word}${prog_words[*]} [$f_mca]"
        if [ -n "$filter" ] && ! [[ $desc =~ $filter ]]; then continue; fi
        if [ -n "$exclude" ] && [[ $desc =~ $exclude ]]; then continue; fi
        if [ $san_component -eq 1 ] && [ $script -eq 1 ]; then
            skipped=$((skipped + 1))
            echo "ok $n - $desc # SKIP an interpreter without the ASan runtime cannot load a sanitizer build"
            continue
        fi
        if [ $ulfm -eq 1 ] && [ "$BRAID_OMPI_MAJOR" -lt 5 ]; then
            skipped=$((skipped + 1))
            echo "ok $n - $desc # SKIP needs Open MPI 5's fault tolerance (mpirun --with-ft ulfm)"
            continue
        fi
        log=$logdir/case$n.log
        start=$(date +%s%N)
        run_args=(--oversubscribe --bind-to none "${extra_mpirun_args[@]}" "${mca_args[@]}")
        braid_mpirun_map run_args
        [ $ulfm -eq 1 ] && run_args+=(--with-ft ulfm)
        env "${env_prefix[@]}" timeout -k 10 "$case_timeout" \
            mpirun -np "$np" "${run_args[@]}" \
            "$prog" "${prog_words[@]:1}" </dev/null >"$log" 2>&1
        rc=$?
        ms=$(( ($(date +%s%N) - start) / 1000000 ))
        secs=$((ms / 1000)).$(( (ms % 1000) / 100 ))
        why=""
        expect_fail=0 any_np=0
        patterns=$f_expect
        if [[ $patterns == FAIL* ]]; then expect_fail=1; patterns=$(trim "${patterns#FAIL}"); fi
        if [[ $patterns == ANYNP* ]]; then any_np=1; patterns=$(trim "${patterns#ANYNP}"); fi
        # a program that cannot run here (no GPU) prints "SKIP: why" and exits 0
        if [ $rc -eq 0 ] && grep -q '^SKIP: ' "$log"; then
            skipped=$((skipped + 1))
            echo "ok $n - $desc # SKIP $(grep -m1 '^SKIP: ' "$log" | cut -c7-)"
            continue
        fi
        # 137 is also mpirun's own status when a rank was killed by SIGKILL
        if { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && [ $ms -ge $((case_timeout * 1000)) ]; then
            why="timed out after ${case_timeout}s (hang)"
        elif [ "$max_secs" -gt 0 ] && [ $ms -gt $((max_secs * 1000)) ]; then
            why="took ${secs}s, more than ${max_secs}s"
        elif [ $expect_fail -eq 0 ] && [ $rc -ne 0 ]; then why="exit status $rc"
        elif [ $expect_fail -eq 1 ] && [ $rc -eq 0 ]; then why="expected the job to fail, it exited 0"
        elif [ "$np" -ge 2 ] || [ $expect_fail -eq 1 ] || [ $any_np -eq 1 ]; then
            IFS=';' read -ra pats <<<"$patterns"
            for pat in "${pats[@]}"; do
                pat=$(trim "$pat")
                [ -z "$pat" ] || [ "$pat" = "-" ] && continue
                # !regex: the output must not contain it
                if [[ $pat == '!'* ]]; then
                    if grep -Eq -- "$(trim "${pat#!}")" "$log"; then
                        why="output has /$(trim "${pat#!}")/"
                        break
                    fi
                    continue
                fi
                if ! grep -Eq -- "$pat" "$log"; then
                    why="output lacks /$pat/"
                    break
                fi
            done
        fi
        if [ -z "$why" ]; then
            passed=$((passed + 1))
            echo "ok $n - $desc (${secs}s)"
        else
            failed=$((failed + 1))
            failed_names+=("$desc")
            echo "not ok $n - $desc: $why (${secs}s)"
            grep -v '^\[.*braid: ' "$log" | tail -n 25 | sed 's/^/#   /'
        fi
    done
done <"$list"

echo "# logs in $logdir"
for f in "${failed_names[@]}"; do echo "# FAILED: $f"; done
echo "mpi tests: $passed passed, $failed failed"
[ "$skipped" -gt 0 ] && echo "# mpi tests skipped (SKIP printed): $skipped"
if [ $((passed + failed)) -eq 0 ]; then
    [ "$skipped" -gt 0 ] && exit 77
    echo "run_mpi_tests: no test ran" >&2
    exit 99
fi
[ "$failed" -eq 0 ]
