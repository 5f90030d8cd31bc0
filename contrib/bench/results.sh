# shellcheck shell=bash
# results.sh - sourced by the benchmark scripts of contrib/bench: besides
# the tables it prints, a run writes its results as CSV rows (one per
# collective, form, size and comparison) with the machine, the load average
# before and after, the command line and the date. Not meant to be run on
# its own.
#
#   results_open "$0" "$@"   first thing, before the options are parsed:
#                            remembers the command line, the machine
#                            (uname -n, CPU model, cores), the 1-minute load
#                            average and the date, and exports
#                            BRAID_RESULTS_ROWS, the file the script's own
#                            aggregation appends its rows to (CSV, no header):
#                              coll,np,bytes,braid_us,peer,peer_us,reps,algorithm,note
#                            coll as braid_bench names it (allreduce,
#                            iallreduce, allreduce_init, async_iallreduce).
#   results_close            last thing: the load average after; appends the
#                            rows, with every column, to the results file and
#                            names it on stderr
#
# The results file: $BRAID_RESULTS when set (a directory: SCRIPT.csv in it;
# "none": no file), else build/results/SCRIPT.csv at the top of the tree.
# Rows are appended; the file starts with the column names, and each run's
# rows with a comment line (# run: date; machine; command). The columns
# (docs/results/README.md):
#   collective,form,algorithm,np,bytes,bytes_max,braid_us,peer,peer_us,ratio,
#   ratio_max,reps,machine,load_before,load_after,command,date,note
# form: blocking, nonblocking or persistent; ratio = peer_us / braid_us
# (> 1: braid faster); bytes_max and ratio_max stay empty (one size per row).

# results_quote ARGS...: the arguments as one shell command line
results_quote() {
    local a out=""
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./:=,+@%^-]+$ ]]; then
            out+="$a "
        else
            out+="'${a//\'/\'\\\'\'}' "
        fi
    done
    printf '%s' "${out% }"
}

results_open() {
    local script=$1 top cpu
    top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    _results_script=$(basename "$script" .sh)
    _results_command=$(results_quote "$@")
    cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
    _results_machine="$(uname -n); ${cpu:-unknown CPU}; $(nproc) cores"
    _results_load_before=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "")
    _results_date=$(date -u +%Y-%m-%dT%H:%MZ)
    case ${BRAID_RESULTS:-} in
    none) _results_file="" ;;
    "") _results_file=$top/build/results/$_results_script.csv ;;
    *) if [ -d "$BRAID_RESULTS" ] || [[ $BRAID_RESULTS == */ ]]; then
           _results_file=${BRAID_RESULTS%/}/$_results_script.csv
       else
           _results_file=$BRAID_RESULTS
       fi ;;
    esac
    BRAID_RESULTS_ROWS=${TMPDIR:-/tmp}/braid-results-$$.rows
    rm -f "$BRAID_RESULTS_ROWS"
    export BRAID_RESULTS_ROWS
}

results_close() {
    local load_after
    load_after=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "")
    if [ -z "$_results_file" ] || [ ! -s "$BRAID_RESULTS_ROWS" ]; then
        rm -f "$BRAID_RESULTS_ROWS"
        return 0
    fi
    mkdir -p "$(dirname "$_results_file")"
    python3 - "$BRAID_RESULTS_ROWS" "$_results_file" "$_results_machine" "$_results_load_before" \
        "$load_after" "$_results_command" "$_results_date" <<'PY'
import csv, os, sys
rows, path, machine, load_before, load_after, command, date = sys.argv[1:8]
COLUMNS = ["collective", "form", "algorithm", "np", "bytes", "bytes_max", "braid_us", "peer",
           "peer_us", "ratio", "ratio_max", "reps", "machine", "load_before", "load_after",
           "command", "date", "note"]
BASE = {"allreduce", "bcast", "barrier", "reduce", "reduce_scatter", "allgather", "alltoall",
        "scan", "exscan", "gather", "scatter", "allgatherv", "alltoallv", "gatherv", "scatterv"}

def split(coll):
    """braid_bench's name -> (collective, form)"""
    c = coll[len("async_"):] if coll.startswith("async_") else coll
    if c.endswith("_init") and c[:-5] in BASE:
        return c[:-5], "persistent"
    if c.startswith("i") and c[1:] in BASE:
        return c[1:], "nonblocking"
    return c, "blocking" if c in BASE else ""

def num(x):
    try:
        return float(x)
    except ValueError:
        return None

new = not os.path.exists(path) or os.path.getsize(path) == 0
with open(path, "a", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    if new:
        w.writerow(COLUMNS)
    f.write(f"# run: {date}; {machine}; {command}\n")
    for r in csv.reader(open(rows)):
        if len(r) < 9:
            continue
        coll, np_, size, braid_us, peer, peer_us, reps, alg, note = r[:9]
        collective, form = split(coll)
        if coll.startswith("async_"):
            note = ("async; " + note).rstrip("; ")
        b, p = num(braid_us), num(peer_us)
        ratio = f"{p / b:.2f}" if b and p is not None and b > 0 else ""
        w.writerow([collective, form, alg or "auto", np_, size, "", braid_us, peer, peer_us, ratio, "",
                    reps, machine, load_before, load_after, command, date, note])
PY
    rm -f "$BRAID_RESULTS_ROWS"
    echo "results: $_results_file" >&2
}
