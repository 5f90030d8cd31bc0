#!/bin/sh
# check_algorithm_tables.sh - every place outside the code that lists
# braid's algorithms agrees with the registry (libbraid/braid_registry.h,
# the rows X(COLL, coll, ID, name, options, noncomm)):
#   - README.md's table of coll_braid_<collective>_algorithm values and
#     libbraid/selection/RULES.md's list of algorithms: each collective's names, all
#     of them, in registry order;
#   - docs/DESIGN.md's "Algorithm contracts": a row naming every algorithm
#     but the shm ones (the shared-memory tier has its own section).
# contrib/compare.sh reads the registry itself. Fails naming the file, the
# collective and both lists.
srcdir=${BRAID_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
reg=$srcdir/libbraid/braid_registry.h
status=0
fail() { echo "check_algorithm_tables: FAILED: $*"; status=1; }
colls=$(sed -n 's/^ *X(\([A-Z_]*\), \([a-z_]*\), [A-Z_]*, [a-z_]*,.*/\2/p' "$reg" | uniq)
[ -n "$colls" ] || { echo "check_algorithm_tables: FAILED: no rows read from $reg"; exit 1; }
n=0
for c in $colls; do
    want=$(sed -n "s/^ *X([A-Z_]*, $c, [A-Z_]*, \([a-z_]*\),.*/\1/p" "$reg" | tr '\n' ' ' | sed 's/ $//')
    # README: | `coll` ... | `a`, `b` |   RULES.md: | coll | `a`, `b` |
    for f in README.md libbraid/selection/RULES.md; do
        row=$(grep -E "^ *\| \`?$c\`?( \(also [^)]*\))? \| \`" "$srcdir/$f" | head -n 1)
        got=$(printf '%s\n' "$row" | awk -F'|' '{print $3}' | tr -d '`,' | tr -s ' ' | sed 's/^ //;s/ $//')
        [ "$got" = "$want" ] || fail "$f lists $c as '$got', the registry as '$want'"
        n=$((n + 1))
    done
    for a in $want; do
        [ "$a" = shm ] && continue
        grep -Eq "^\| $c ([a-z_]+ / )*$a( / [a-z_]+)* \|" "$srcdir/docs/DESIGN.md" ||
            fail "docs/DESIGN.md's Algorithm contracts has no row for $c $a"
        n=$((n + 1))
    done
done
[ $status -eq 0 ] && echo "check_algorithm_tables: passed ($n checks against $(echo "$colls" | wc -w) collectives' registry rows)"
exit $status
