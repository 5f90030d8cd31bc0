#!/bin/sh
# fuzz_check.sh - 'make check' step: fuzz the rules-file parser for a bounded
# time (FUZZ_SECONDS, default 60). Skipped (exit 77) when clang's libFuzzer
# runtime is not installed (Debian: clang libclang-rt-14-dev).
here=$(cd "$(dirname "$0")" && pwd)
probe=$(mktemp -d "${TMPDIR:-/tmp}/braid-fuzzprobe.XXXXXX")
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n){(void)d;(void)n;return 0;}\n' >"$probe/p.c"
if ! ${CC_FUZZ:-clang} -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
    echo "fuzz: skipped, clang with -fsanitize=fuzzer not available"
    exit 77
fi
# (exec replaces this shell, so its EXIT trap would not remove the probe)
rm -rf "$probe"
trap - EXIT
CC=${CC_FUZZ:-clang} exec "$here/run_fuzz.sh" "${FUZZ_SECONDS:-60}"
