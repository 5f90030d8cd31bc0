# shellcheck shell=bash disable=SC2034
# braid_env.sh - sourced by every script that runs Open MPI (contrib/,
# tools/, tests/*/run_*.sh, tests/install): one way to find Open MPI's
# component directory, to let mpirun run as root, and to write mpirun
# command lines for Open MPI 4.1 (ORTE) and 5.0 (PRRTE); and, for
# contrib/compare.sh and contrib/run_app_compare.sh, to find built programs
# and braid's component. Not meant to be run on its own.
#
#   braid_pkglibdir         Open MPI's component directory (OMPI_PKGLIBDIR
#                           when set, else ompi_info's pkglibdir)
#   braid_run_as_root       exports OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1, which
#                           mpirun needs when run by root
#   braid_ompi_major        the Open MPI major version: BRAID_OMPI_MAJOR
#                           (make check passes it), else mpirun --version
#   braid_mpirun_map NAME   rewrites the array variable NAME, mpirun
#                           arguments as ORTE takes them, into what this
#                           mpirun takes (nothing changes under ORTE)
#   braid_mpirun_env        exports what PRRTE runs need in the environment
#   braid_component_dir SO [PKGLIBDIR]
#                           makes a temporary component directory holding
#                           Open MPI's own components and the braid SO (and
#                           no other braid, e.g. an installed one) and
#                           prints its path; the caller removes it
#   braid_tree_files, braid_copy_tree   the project's files (below)
#
# ORTE -> PRRTE (braid_mpirun_map):
#   --mca plm_rsh_X V                   --prtemca plm_ssh_X V
#   --mca oob_X V, --mca plm_X V        --prtemca oob_X V, --prtemca plm_X V
#   --mca rmaps_base_mapping_policy V   --map-by V (merged with --oversubscribe
#                                       into --map-by V:OVERSUBSCRIBE)
#   --mca btl ...vader...               --mca btl ...sm... (5.0's name)
# --oversubscribe, --bind-to, -x, --hostfile and --mca for Open MPI's own
# (OMPI_MCA_) parameters are the same under both.
#
# After braid_env_setup COMPDIR:
#   MPIRUN        array: mpirun --allow-run-as-root --oversubscribe
#   BRAID_FOUND   1 when ompi_info sees the braid component, else 0
#   BRAID_WHERE   one line saying where it came from (or that it is missing)
#   BRAID_INFO    ompi_info --parsable output for coll braid (algorithm names)

braid_env_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

braid_pkglibdir() {
    if [[ -n ${OMPI_PKGLIBDIR:-} ]]; then
        echo "$OMPI_PKGLIBDIR"
    else
        ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p'
    fi
}

braid_run_as_root() {
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

braid_ompi_major() {
    local v=${BRAID_OMPI_MAJOR:-}
    [ -n "$v" ] || v=$(mpirun --version 2>/dev/null |
        sed -n 's/.*Open MPI[^0-9]*\([0-9][0-9]*\)\..*/\1/p' | head -n1)
    echo "${v:-4}"
}

braid_mpirun_map() {
    local -n braid_args_=$1
    [ "$(braid_ompi_major)" -ge 5 ] || return 0
    local out=() i a n v map_by="" oversub=0
    for ((i = 0; i < ${#braid_args_[@]}; i++)); do
        a=${braid_args_[$i]}
        n=${braid_args_[$((i + 1))]:-}
        v=${braid_args_[$((i + 2))]:-}
        if [ "$a" = --oversubscribe ]; then
            oversub=1
        fi
        if [ "$a" = --mca ] || [ "$a" = -mca ]; then
            case $n in
            plm_rsh_*) out+=(--prtemca "plm_ssh_${n#plm_rsh_}" "$v"); i=$((i + 2)); continue ;;
            oob_*|plm_*) out+=(--prtemca "$n" "$v"); i=$((i + 2)); continue ;;
            rmaps_base_mapping_policy) map_by=$v; i=$((i + 2)); continue ;;
            btl) out+=(--mca btl "${v//vader/sm}"); i=$((i + 2)); continue ;;
            esac
        fi
        out+=("$a")
    done
    if [ -n "$map_by" ]; then
        # one --map-by: the policy with --oversubscribe as its modifier
        if [ $oversub -eq 1 ]; then
            map_by+=":OVERSUBSCRIBE"
            for i in "${!out[@]}"; do [ "${out[$i]}" = --oversubscribe ] && unset 'out[i]'; done
        fi
        out=(--map-by "$map_by" "${out[@]}")
    fi
    braid_args_=("${out[@]}")
}

braid_mpirun_env() {
    [ "$(braid_ompi_major)" -ge 5 ] || return 0
    # PRRTE hands mca_base_component_path to PMIx in every rank too
    # (PMIX_MCA_...), which then looks for its own plugins among Open MPI's
    # and reports each one it cannot use; point it back at its own
    local pmix_plugins
    pmix_plugins=$(pkg-config --variable=libdir pmix 2>/dev/null)/pmix
    if [ -d "$pmix_plugins" ]; then
        export PMIX_MCA_mca_base_component_path=$pmix_plugins
    else
        export PMIX_MCA_mca_base_component_show_load_errors=0
    fi
}

# braid_bench_launch ARRAY BUILD BIND: a benchmark's set-up - root
# allowed, BUILD's component first on the component path, and into ARRAY
# mpirun's options for ranks bound to BIND (oversubscribed if need be, in
# the running Open MPI's spelling)
braid_bench_launch() {
    local -n braid_launch_=$1
    local pkglib
    braid_run_as_root
    pkglib=$(braid_pkglibdir)
    export OMPI_MCA_mca_base_component_path="$2/.libs${pkglib:+:$pkglib}"
    braid_launch_=(--oversubscribe --bind-to "$3")
    braid_mpirun_map "$1"
    braid_mpirun_env
}

braid_component_dir() {
    local so=$1 pkglibdir=${2:-$(braid_pkglibdir)} dir f
    dir=$(mktemp -d "${TMPDIR:-/tmp}/braid-components.XXXXXX") || return 1
    for f in "$pkglibdir"/*; do
        case "$(basename "$f")" in mca_coll_braid.*) continue ;; esac
        ln -s "$f" "$dir/"
    done
    ln -s "$so" "$dir/mca_coll_braid.so"
    echo "$dir"
}

# braid_find_program RELPATH: the built program under BRAID_BUILDDIR, build/, or in tree
braid_find_program() {
    local cand
    for cand in "${BRAID_BUILDDIR:-/nonexistent}/$1" "$braid_env_top/build/$1" "$braid_env_top/$1"; do
        if [[ -x $cand && -f $cand ]]; then
            echo "$cand"
            return 0
        fi
    done
    return 1
}

braid_build_hint() {
    echo "cd $braid_env_top && ./autogen.sh && mkdir -p build && cd build && ../configure && make -j2"
}

# braid_env_setup [COMPDIR]: COMPDIR (optional) holds mca_coll_braid.so
braid_env_setup() {
    local compdir=${1:-} pkglibdir base
    braid_run_as_root
    MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
    pkglibdir=$(braid_pkglibdir)
    local how="installed or OMPI_MCA_mca_base_component_path"
    BRAID_INFO=$(ompi_info --param coll braid --level 9 --parsable 2>/dev/null)
    # not given and not found: use the build tree's component when there is one
    if [[ -z $compdir ]] && ! grep -q coll_braid_priority <<<"$BRAID_INFO"; then
        local lib
        for lib in "${BRAID_BUILDDIR:-/nonexistent}/.libs" "$braid_env_top/build/.libs" "$braid_env_top/.libs"; do
            if [[ -f $lib/mca_coll_braid.so ]]; then
                compdir=$lib
                how="build tree"
                break
            fi
        done
    elif [[ -n $compdir ]]; then
        how="-p"
    fi
    # Open MPI 5 with Debian's PMIx: ranks get PMIx's own plugin directory
    # as their component path unless it is in the environment (configure.ac
    # says why), so name Open MPI's explicitly
    if [[ -z $compdir && -z ${OMPI_MCA_mca_base_component_path:-} && -n $pkglibdir ]] &&
        [[ $(braid_ompi_major) -ge 5 ]]; then
        base=$pkglibdir
        [[ -d $HOME/.openmpi/components ]] && base="$base:$HOME/.openmpi/components"
        export OMPI_MCA_mca_base_component_path=$base
    fi
    if [[ -n $compdir ]]; then
        compdir=$(cd "$compdir" 2>/dev/null && pwd) || { echo "no directory ${1:-}" >&2; return 1; }
        # (a directory in this path that does not exist hides the ones after it)
        base=${OMPI_MCA_mca_base_component_path:-$pkglibdir}
        [[ -z ${OMPI_MCA_mca_base_component_path:-} && -d $HOME/.openmpi/components ]] &&
            base="$base:$HOME/.openmpi/components"
        export OMPI_MCA_mca_base_component_path="$base:$compdir"
        BRAID_INFO=$(ompi_info --param coll braid --level 9 --parsable 2>/dev/null)
    fi
    if grep -q coll_braid_priority <<<"$BRAID_INFO"; then
        BRAID_FOUND=1
        if [[ -n $compdir ]]; then
            BRAID_WHERE="loaded from $compdir ($how)"
        elif [[ -n ${OMPI_MCA_mca_base_component_path:-} ]]; then
            BRAID_WHERE="loaded via OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path"
        else
            BRAID_WHERE="loaded from Open MPI's component directory ($pkglibdir)"
        fi
    else
        BRAID_FOUND=0
        BRAID_WHERE="NOT FOUND - the braid runs used Open MPI's own collectives (tuned)"
    fi
    return 0
}

# braid_tree_files [TOP]: the project's files under TOP (default this
# tree), NUL-separated, relative: with .git the files git tracks plus
# untracked ones it does not ignore; without (a release archive) every file
# except build directories and build outputs, named here rather than read
# from .gitignore (whose negations need git to be read right)
braid_tree_files() {
    local top=${1:-$braid_env_top}
    if [[ -e $top/.git ]] && command -v git >/dev/null &&
        git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        (cd "$top" && git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done)
    else
        (cd "$top" && find . \( -path './build*' -o -path ./.git -o -path ./.device -o -path ./.whl \
                -o -path ./.gl -o -name autom4te.cache -o -name .libs -o -name .deps \) -prune \
            -o -type f ! \( -name '*.o' -o -name '*.lo' -o -name '*.la' -o -name '*.so' -o -name '*.a' \
                -o -name .dirstamp -o -name '*.log' -o -name '*.trs' -o -name config.status \
                -o -name '*~' \) -printf '%P\0')
    fi
}

# braid_copy_tree DEST [TOP]: copy the project's files (braid_tree_files)
# into DEST, modification times kept
braid_copy_tree() {
    local dest=$1 top=${2:-$braid_env_top}
    mkdir -p "$dest"
    braid_tree_files "$top" | (cd "$top" && tar --null --no-recursion -T - -cf -) | tar -C "$dest" -xf -
}
