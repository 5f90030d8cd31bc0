#!/bin/sh
# check_shstk.sh - the fiber engine switches stacks with a plain `ret`,
# which a CET shadow stack refuses, so braid must never be marked as safe
# for shadow stacks (the SHSTK bit of the GNU property note): a process
# that runs with them on would then load it and fault at the first
# nonblocking collective. The linker sets the bit only when every object
# has it; braid_fiber_switch.S has no note, so compiling everything with
# -fcf-protection=full (as Ubuntu's compilers do by default) still leaves
# it out. Checked on the fiber engine built that way (no start files:
# those of Debian carry no note), next to a control
# that the compiler and readelf do mark a plain object, and on the
# component as built. Exit 77 (skip) where nothing can be marked.
builddir=${BRAID_BUILDDIR:-$(pwd)}
srcdir=${BRAID_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cc=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-shstk.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_shstk: FAILED: $*"; exit 1; }
marked() { readelf -n "$1" 2>/dev/null | grep -q 'SHSTK'; }

printf 'int braid_shstk_control(void) { return 1; }\n' >"$tmp/control.c"
if ! "$cc" -fcf-protection=full -fPIC -shared -nostartfiles -o "$tmp/control.so" "$tmp/control.c" 2>/dev/null ||
   ! marked "$tmp/control.so"; then
    echo "check_shstk: SKIP: $cc or readelf marks no object for shadow stacks here"
    exit 77
fi
"$cc" -fcf-protection=full -fPIC -shared -nostartfiles -I"$srcdir/libbraid/engines" -o "$tmp/fiber.so" \
    "$srcdir/libbraid/engines/braid_fiber.c" "$srcdir/libbraid/engines/braid_fiber_switch.S" \
    "$tmp/control.c" -lpthread || fail "the fiber engine does not build with -fcf-protection=full"
marked "$tmp/fiber.so" && fail "the fiber engine built with -fcf-protection=full is marked SHSTK"
so=$builddir/.libs/mca_coll_braid.so
[ -f "$so" ] && marked "$so" && fail "$so is marked SHSTK"
echo "check_shstk: passed (the fiber engine and the component are not marked for shadow stacks)"
exit 0
