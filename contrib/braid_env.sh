# shellcheck shell=bash disable=SC2034
# braid_env.sh - sourced by contrib/compare.sh and contrib/run_app_compare.sh:
# finds built programs, sets up mpirun for root / oversubscribed runs, and
# finds braid's component. Not meant to be run on its own.
#
# After braid_env_setup COMPDIR:
#   MPIRUN        array: mpirun --allow-run-as-root --oversubscribe
#   BRAID_FOUND   1 when ompi_info sees the braid component, else 0
#   BRAID_WHERE   one line saying where it came from (or that it is missing)
#   BRAID_INFO    ompi_info --parsable output for coll braid (algorithm names)

braid_env_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

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
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
    pkglibdir=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
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
        mpirun --version 2>/dev/null | grep -q 'Open MPI[^0-9]*[5-9]\.'; then
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
