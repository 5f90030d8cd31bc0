# component_dir.sh - sourced by the MPI test runners: braid_component_dir SO
# PKGLIBDIR makes a temporary component directory holding Open MPI's own
# components and the braid SO just built (and no other braid, e.g. an
# installed one), points Open MPI at it and prints its path. The caller
# removes it.
braid_component_dir() {
    local so=$1 pkglibdir=$2 dir f
    dir=$(mktemp -d "${TMPDIR:-/tmp}/braid-components.XXXXXX") || return 1
    for f in "$pkglibdir"/*; do
        case "$(basename "$f")" in mca_coll_braid.*) continue ;; esac
        ln -s "$f" "$dir/"
    done
    ln -s "$so" "$dir/mca_coll_braid.so"
    echo "$dir"
}
