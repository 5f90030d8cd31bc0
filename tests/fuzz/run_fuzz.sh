#!/bin/sh
# run_fuzz.sh SECONDS - build braid's rules-parser fuzz target with clang's
# libFuzzer + ASan + UBSan straight from the sources (no Autotools needed) and
# run it for SECONDS (default 60). Exits non-zero on a crash, a sanitizer
# report or a leak. Needs clang with libclang_rt.fuzzer (Debian:
# clang + libclang-rt-14-dev for clang 14).
#
#   env: CC (default clang), FUZZ_DIR (build, corpus and reproducer
#        directory, default ${TMPDIR:-/tmp}/braid-fuzz)
set -eu

SECONDS_TO_RUN=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
CC=${CC:-clang}
dir=${FUZZ_DIR:-${TMPDIR:-/tmp}/braid-fuzz}
corpus=$dir/corpus
mkdir -p "$dir" "$corpus"

bin=$dir/fuzz_rules
$CC -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$top/libbraid" -I"$top/libbraid/patterns" -I"$top/libbraid/engines" -I"$top/libbraid/blocks" -I"$top/libbraid/devpipe" -I"$top/libbraid/kernels" -I"$top/libbraid/shm" \
    -I"$top/ucx_transport" -I"$top/libbraid/selection" \
    "$here/fuzz_rules.c" "$top"/libbraid/selection/*.c \
    "$top"/libbraid/*.c "$top"/libbraid/algo/*.c "$top"/libbraid/engines/*.c "$top"/libbraid/engines/*.S "$top"/libbraid/blocks/*.c "$top"/libbraid/devpipe/*.c \
    "$top"/libbraid/patterns/*.c "$top"/libbraid/shm/braid_shm.c "$top"/libbraid/shm/braid_shm_reduce.c "$top"/libbraid/shm/algo/*.c \
    "$top"/libbraid/kernels/*.c -lm \
    -o "$bin"

# Seed corpus: the inputs that once failed (tests/fuzz/corpus/, replayed
# first on every run), every rules line from libbraid/selection/RULES.md's examples
# and the unit tests' valid and invalid texts, one seed per file, plus the
# whole files.
cp "$here"/corpus/* "$corpus"/
i=0
seed() { i=$((i + 1)); printf '%s\n' "$1" > "$corpus/seed_$i"; }
awk '/^```/ { inblock = !inblock; next } inblock' "$top/libbraid/selection/RULES.md" > "$corpus/rules_md" || true
while IFS= read -r line; do seed "$line"; done < "$corpus/rules_md"
# strings in the unit tests that look like rules
grep -o '"[a-z_]* [^"]*"' "$top/tests/unit/test_selection.c" | sed 's/^"//; s/"$//; s/\\n/\n/g; s/\\t/\t/g' \
    > "$corpus/unit_strings" || true
while IFS= read -r line; do seed "$line"; done < "$corpus/unit_strings"

dict=$dir/rules.dict
cat > "$dict" <<'DICT'
"barrier"
"bcast"
"allreduce"
"reduce"
"reduce_scatter"
"allgather"
"auto"
"ring"
"ring_chunked"
"halving_doubling"
"bcube"
"dbtree"
"binomial"
"scatter_allgather"
"one_to_all"
"all_to_all"
"all_to_one"
"dissemination"
"recursive_doubling"
"hierarchical"
"shm"
"inf"
"2147483647"
"18446744073709551615"
"chunk="
"base="
"*"
"-"
"#"
"K"
"M"
"G"
DICT

rm -f "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* "$dir"/slow-unit-*
log=$dir/fuzz.log
echo "run_fuzz.sh: fuzzing the rules parser for ${SECONDS_TO_RUN}s (corpus $corpus, log $log)"
# leaks are reported by LeakSanitizer (-detect_leaks=1, the default under ASan)
status=0
"$bin" -max_total_time="$SECONDS_TO_RUN" -detect_leaks=1 -dict="$dict" -max_len=4096 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/" \
    "$corpus" > "$log" 2>&1 || status=$?
tail -n 25 "$log"
if [ "$status" -ne 0 ] || ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* >/dev/null 2>&1; then
    echo "run_fuzz.sh: FAILED (exit $status); reproducers:"
    ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* 2>/dev/null || true
    exit 1
fi
echo "run_fuzz.sh: no crash, no leak"
