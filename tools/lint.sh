#!/usr/bin/env bash
# lint.sh - checks of the tree: git tracks no file .gitignore ignores; every
# unit test case sets its timeout; the documents' size limits (all tracked
# Markdown, README.md and its Performance section, docs/BENCHMARKS.md,
# docs/DESIGN.md); no dates, build hashes or run history in the README,
# DESIGN.md and the benchmark documents; every rendered table equals what
# tools/render_tables.py renders from docs/results; DESIGN.md's layer
# diagram names every source file; and static analysis of braid's C code:
# cppcheck and gcc -fanalyzer over coll/ (with Open MPI's include paths),
# libbraid/ and the transports.
# Exit status 0 = no finding beyond the justified ones listed below.
#
#   tools/lint.sh          # from anywhere; needs cppcheck, gcc >= 10, mpicc
#   tools/lint.sh --tracked   # only the cheap checks (bash, git, python3),
#                             # everything above but the static analysis
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
status=0

# ---- nothing generated or ignored is tracked ----
# (a file .gitignore matches but git tracks: a build output committed by
# mistake, or an ignore rule that hides a source; skipped without .git)
if [ -e .git ] && command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    tracked_ignored=$(git ls-files -ci --exclude-standard)
    if [ -n "$tracked_ignored" ]; then
        echo "$tracked_ignored"
        echo "lint: git tracks the files above although .gitignore ignores them (git rm --cached, or fix .gitignore)"
        status=1
    else
        echo "lint: no tracked file is ignored"
    fi
fi

# ---- every Check test case sets its timeout ----
# (Check's default is 4 s: a case that takes 2 s alone passes on a quiet
# machine and is killed as an error when two sanitized tests share the
# cores)
no_timeout=$(for f in tests/unit/*.c; do
    awk -v f="$f" '/tcase_create\(/ { n++ } /tcase_set_timeout\(/ { t++ }
        END { if (n > t) print f ": " n " tcase_create, " t + 0 " tcase_set_timeout" }' "$f"
done)
if [ -n "$no_timeout" ]; then
    echo "$no_timeout"
    echo "lint: test cases above keep Check's 4 s default timeout (use unit_tcase or tcase_set_timeout)"
    status=1
else
    echo "lint: every unit test case sets its timeout"
fi

# ---- the documents stay references of bounded size ----
# (the Markdown the repository tracks, the README and its Performance
# section, the benchmark reference and DESIGN.md have size limits, so that
# a change cannot regrow them unnoticed; without git: every *.md but build
# directories)
if [ -e .git ] && command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    md_files=$(git ls-files '*.md')
else
    md_files=$(find . -name '*.md' -not -path './build*' -not -path './.*' | sed 's|^\./||')
fi
md_bytes=0
for f in $md_files; do [ -f "$f" ] && md_bytes=$((md_bytes + $(wc -c <"$f"))); done
if [ "$md_bytes" -gt 153600 ]; then
    echo "lint: the tracked Markdown is $md_bytes bytes, more than 150 KB (153600): shorten a document"
    status=1
else
    echo "lint: the tracked Markdown is $md_bytes bytes (at most 153600)"
fi
readme_bytes=$(wc -c <README.md)
perf_lines=$(awk '/^## /{f = ($0 == "## Performance")} f' README.md | wc -l)
if [ "$readme_bytes" -gt 16384 ] || [ "$perf_lines" -gt 40 ] || [ "$perf_lines" -eq 0 ]; then
    echo "lint: README.md is $readme_bytes bytes (at most 16384) and its Performance section $perf_lines lines (1-40)"
    status=1
else
    echo "lint: README.md is $readme_bytes bytes (at most 16384), its Performance section $perf_lines lines (at most 40)"
fi
bench_lines=$(wc -l <docs/BENCHMARKS.md)
design_lines=$(wc -l <docs/DESIGN.md)
if [ "$bench_lines" -gt 400 ] || [ "$design_lines" -gt 450 ]; then
    echo "lint: docs/BENCHMARKS.md has $bench_lines lines (at most 400), docs/DESIGN.md $design_lines (at most 450)"
    status=1
else
    echo "lint: docs/BENCHMARKS.md has $bench_lines lines (at most 400), docs/DESIGN.md $design_lines (at most 450)"
fi

# ---- the documents answer; their history is git's ----
# (no dates, build hashes or narration of how a number moved in the README,
# DESIGN.md and the benchmark documents: dates belong to the rows of
# docs/results/*.csv)
history=$(grep -nHiE '\b[0-9]{4}-[0-9]{2}-[0-9]{2}\b|this session|this build|the build before|the previous build|the last change|a later run|an earlier run|\bissue [0-9]+' \
    README.md docs/DESIGN.md docs/BENCHMARKS.md docs/bench-np2/results.md
    grep -nHoE '\b[0-9a-f]{7,40}\b' README.md docs/DESIGN.md docs/BENCHMARKS.md docs/bench-np2/results.md |
        grep -E ':[0-9a-f]*[0-9][0-9a-f]*$' | grep -E ':[0-9a-f]*[a-f][0-9a-f]*$')
if [ -n "$history" ]; then
    echo "$history"
    echo "lint: the lines above carry a date, a build hash or a run's history (README, DESIGN, benchmark documents)"
    status=1
else
    echo "lint: no dates, build hashes or run history in the README, DESIGN.md and the benchmark documents"
fi

# ---- every rendered table equals what its data renders ----
if command -v python3 >/dev/null; then
    if tables=$(python3 tools/render_tables.py --check 2>&1); then
        echo "lint: every table between <!-- table:NAME --> markers equals its rendering from docs/results"
    else
        echo "$tables"
        echo "lint: the tables above differ from docs/results (run tools/render_tables.py)"
        status=1
    fi
else
    echo "lint: python3 missing: tables not checked"
    status=1
fi

# ---- DESIGN.md's layer diagram names every source file ----
# (every file of coll/, libbraid/ - its algo/ and shm/algo/ folders being
# one file per algorithm, named by the registry - ucx_transport/ and cuda/,
# by its name, inside the diagram's fenced block under "## Layers")
if [ -n "${md_files:-}" ]; then
    if [ -e .git ] && command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        layer_files=$(git ls-files coll libbraid ucx_transport cuda)
    else
        layer_files=$(find coll libbraid ucx_transport cuda -type f)
    fi
    diagram=$(awk '/^## Layers/ { l = 1 } l && /^```/ { n++; next } l && n == 1' docs/DESIGN.md)
    unnamed=$(for f in $layer_files; do
        case $f in libbraid/algo/* | libbraid/shm/algo/*) continue ;; esac
        [ -f "$f" ] || continue
        grep -qF -- "$(basename "$f")" <<<"$diagram" || echo "$f"
    done)
    if [ -n "$unnamed" ]; then
        echo "$unnamed"
        echo "lint: docs/DESIGN.md's layer diagram does not name the files above"
        status=1
    else
        echo "lint: docs/DESIGN.md's layer diagram names every file of coll/, libbraid/, the transports and cuda/"
    fi
fi
# ---- coll/ stays thin ----
# (one collective family per file and each concern of the glue in its
# own: a file past 450 lines is two)
long=$(for f in $(git ls-files 'coll/*.c' 'coll/*.h' 2>/dev/null); do
    [ -f "$f" ] && [ "$(wc -l <"$f")" -gt 450 ] && echo "$f: $(wc -l <"$f") lines"
done)
if [ -n "$long" ]; then
    echo "$long"
    echo "lint: the coll/ files above are over 450 lines: split them by concern"
    status=1
else
    echo "lint: no coll/ file is over 450 lines"
fi

# ---- a header's guard is its file's name ----
# (braid_x.h guards with ..._BRAID_X_H: a guard copied from another file
# hides the one it came from when both are included)
guards=$(for f in $(git ls-files 'coll/*.h' 'libbraid/*.h' 'libbraid/**/*.h' 'ucx_transport/*.h' 'cuda/*.h' 2>/dev/null); do
    [ -f "$f" ] || continue
    g=$(grep -m1 -E '^#ifndef [A-Z0-9_]+_H$' "$f" | awk '{print $2}')
    b=$(basename "$f" .h | tr 'a-z' 'A-Z')
    case "$g" in *"$b"_H) ;; *) echo "$f: guard ${g:-none}" ;; esac
done)
if [ -n "$guards" ]; then
    echo "$guards"
    echo "lint: the headers above do not guard with their own name"
    status=1
else
    echo "lint: every header of coll/, libbraid/, the transports and cuda/ guards with its own name"
fi

# ---- coll/'s headers form no chain ----
# (a .c includes the header of each thing it uses; a header includes no
# coll/ header but the base ones - coll_braid_compat.h, the component's
# and the module's structs - and a base header none but coll_braid_compat.h)
base="coll_braid_compat.h coll_braid_component.h coll_braid_module.h"
chain=$(for f in $(git ls-files 'coll/*.h' 2>/dev/null); do
    [ -f "$f" ] || continue
    case " $base " in *" $(basename "$f") "*) allowed=coll_braid_compat.h ;; *) allowed=$base ;; esac
    grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"coll_' "$f" |
        awk -F'"' -v ok="$allowed" '{ if (index(" " ok " ", " " $2 " ") == 0) print }'
done)
if [ -n "$chain" ]; then
    echo "$chain"
    echo "lint: a coll/ header includes only the base headers ($base), and those only coll_braid_compat.h: include the header in the .c that uses it"
    status=1
else
    echo "lint: coll/'s headers include only the base headers ($base), which include only coll_braid_compat.h"
fi

# ---- calls go down ----
# (a file includes no header of a folder above it or beside it; the
# headers are included by bare name, so a header is known by its basename
# among the folder's tracked files)
headers_of() { git ls-files -- "$@" 2>/dev/null | grep -E '\.h$' | sed 's|.*/||' | sort -u; }
includes_in() {
    local names=$1; shift
    [ -n "$names" ] || return 0
    git ls-files -- "$@" 2>/dev/null | while read -r f; do
        [ -f "$f" ] || continue
        grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
            awk -F'"' -v names="$names" 'BEGIN { n = split(names, a, " "); for (i = 1; i <= n; i++) h[a[i]] = 1 }
                { b = $2; sub(/.*\//, "", b); if (b in h) print }'
    done
}
if [ -e .git ] && command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    up=$(includes_in "$(headers_of libbraid/engines | tr '\n' ' ')" ucx_transport 'tests/unit/inproc_transport.*')
    if [ -n "$up" ]; then
        echo "$up"
        echo "lint: a transport includes the request runtime (libbraid/engines/): the call hands it its seq and yield"
        status=1
    else
        echo "lint: ucx_transport/ and the in-process test transport include nothing from libbraid/engines/"
    fi
    up=$(includes_in "$(headers_of coll | tr '\n' ' ')" libbraid ucx_transport)
    if [ -n "$up" ]; then
        echo "$up"
        echo "lint: the lines above include a coll/ header from below coll/"
        status=1
    else
        echo "lint: libbraid/ and the transports include no coll/ header"
    fi
fi
# ---- the selection's files call in one direction ----
# (the writer, the parser, the table: a file calls no function that a
# file after it in this order defines; a function is known by its
# definition, a line at column 0 with its name before "(", then "{")
defs_in() {
    awk '/^[A-Za-z_]/ { cand = ""
             if (/\(/ && !/^(static|typedef|#)/) { s = $0; sub(/\(.*/, "", s); n = split(s, w, /[ *]+/); cand = w[n] }
             next }
         /^\{/ { if (cand ~ /^[a-z][a-z0-9_]*$/) print cand; cand = ""; next }' "$@"
}
# calls_up FILE LATER...: FILE's lines calling a function a LATER file defines
calls_up() {
    local f=$1; shift
    local names
    names=$(defs_in "$@" | sort -u | paste -sd'|')
    [ -n "$names" ] || return 0
    grep -HnE "(^|[^A-Za-z0-9_])($names)[[:space:]]*\(" "$f"
}
sel=libbraid/selection
up=$(calls_up $sel/braid_format.c $sel/braid_rules.c $sel/braid_table.c
     calls_up $sel/braid_rules.c $sel/braid_table.c)
if [ -n "$up" ]; then
    echo "$up"
    echo "lint: the lines above call up the selection's order (braid_format.c, braid_rules.c, braid_table.c)"
    status=1
else
    echo "lint: the selection's files call in one direction (braid_format.c, braid_rules.c, braid_table.c)"
fi
# ---- a collective family calls no other family ----
# (coll/coll_braid_<family>.c: what two families share lives below them,
# as the reduction path in coll_braid_reduction.c)
families="barrier bcast allreduce scan reduce_scatter allgather allgatherv alltoall alltoallv gather gatherv"
sideways=$(for a in $families; do
    for b in $families; do
        [ "$a" = "$b" ] || calls_up "coll/coll_braid_$a.c" "coll/coll_braid_$b.c"
    done
done)
if [ -n "$sideways" ]; then
    echo "$sideways"
    echo "lint: the lines above call a function another family file defines (move it below the families)"
    status=1
else
    echo "lint: no family file of coll/ calls a function another family file defines"
fi
[ "${1:-}" = --tracked ] && exit $status

command -v cppcheck >/dev/null || "$top/contrib/install_deps.sh" cppcheck
srcs=(coll/*.c libbraid/*.c libbraid/algo/*.c libbraid/engines/*.c libbraid/blocks/*.c libbraid/devpipe/*.c libbraid/patterns/*.c libbraid/kernels/*.c libbraid/shm/*.c libbraid/shm/algo/*.c ucx_transport/*.c libbraid/selection/*.c)
inc=(-I libbraid -I libbraid/patterns -I libbraid/engines -I libbraid/blocks -I libbraid/devpipe -I libbraid/kernels -I libbraid/shm -I ucx_transport -I libbraid/selection)
ompi_inc=()
for d in $(mpicc --showme:incdirs 2>/dev/null); do ompi_inc+=(-I "$d"); done
ucx_inc=($(pkg-config --cflags ucx 2>/dev/null))

# ---- cppcheck ----
# Justified suppressions:
#  - unusedStructMember in ring_pipeline.c: ring_state_t carries the
#    communicator and arguments for readability of its initialiser; unused
#    members are harmless.
out=$(cppcheck -q --enable=warning,style,performance,portability --std=c11 --inline-suppr \
    --error-exitcode=0 "${inc[@]}" --suppress=missingIncludeSystem --suppress=missingInclude \
    --suppress=unusedStructMember:libbraid/blocks/ring_pipeline.c \
    "${srcs[@]}" 2>&1)
if [ -n "$out" ]; then
    echo "$out"
    echo "lint: cppcheck reported the findings above"
    status=1
else
    echo "lint: cppcheck clean (${#srcs[@]} files)"
fi

# ---- gcc -fanalyzer ----
# Justified (false positives of GCC 12's analyzer), matched as file:warning:
#  - coll_braid_module.c -Wanalyzer-malloc-leak: comm_query returns
#    &m->super, the first member of the object OBJ_NEW allocated, which Open
#    MPI owns and releases; the analyzer does not see that the pointer is the
#    allocation itself.
#  - reduce_scatter_halving_doubling.c -Wanalyzer-null-argument: the reported
#    path needs holder != r at the end after holder == r earlier (r != r).
#  - Open MPI's request.h -Wanalyzer-use-of-uninitialized-value
#    (req_f_to_c_index in OMPI_REQUEST_FINI, from coll_braid_request.c's
#    request_put of a request just made): the request class's constructor,
#    which OBJ_NEW runs through the class table, sets it; the analyzer does
#    not follow that call.
allowed='coll/coll_braid_module.c:.*-Wanalyzer-malloc-leak|libbraid/algo/reduce_scatter_halving_doubling.c:.*-Wanalyzer-null-argument|ompi/request/request.h:.*req_f_to_c_index.*-Wanalyzer-use-of-uninitialized-value'
fails=0
for f in "${srcs[@]}"; do
    extra=()
    case $f in coll/coll_braid_*.c) extra=("${ompi_inc[@]}" "${ucx_inc[@]}") ;; ucx_transport/*) extra=("${ucx_inc[@]}") ;; esac
    msgs=$(gcc -std=gnu11 -O1 -fanalyzer -Wall -Wextra -Wno-unused-parameter \
        -Wno-missing-field-initializers "${inc[@]}" "${extra[@]}" -c "$f" -o /dev/null 2>&1 |
        grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error)')
    [ -z "$msgs" ] && continue
    bad=$(grep -Ev -- "$allowed" <<<"$msgs")
    if [ -n "$bad" ]; then echo "$bad"; fails=$((fails + 1)); fi
done
if [ $fails -ne 0 ]; then
    echo "lint: gcc -fanalyzer reported the findings above"
    status=1
else
    echo "lint: gcc -fanalyzer clean apart from the justified false positives (${#srcs[@]} files)"
fi
exit $status
