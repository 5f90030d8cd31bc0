# mpirun_compat.sh - sourced by the MPI test runners (run_mpi_tests.sh,
# run_multihost.sh): one way to write mpirun command lines for Open MPI 4.1
# (ORTE) and 5.0 (PRRTE).
#
#   braid_ompi_major        the Open MPI major version: BRAID_OMPI_MAJOR
#                           (make check passes it), else mpirun --version
#   braid_mpirun_map NAME   rewrites the array variable NAME, mpirun
#                           arguments as ORTE takes them, into what this
#                           mpirun takes (nothing changes under ORTE)
#   braid_mpirun_env        exports what PRRTE runs need in the environment
#
# ORTE -> PRRTE:
#   --mca plm_rsh_X V                   --prtemca plm_ssh_X V
#   --mca oob_X V, --mca plm_X V        --prtemca oob_X V, --prtemca plm_X V
#   --mca rmaps_base_mapping_policy V   --map-by V (merged with --oversubscribe
#                                       into --map-by V:OVERSUBSCRIBE)
#   --mca btl ...vader...               --mca btl ...sm... (5.0's name)
# --oversubscribe, --bind-to, -x, --hostfile and --mca for Open MPI's own
# (OMPI_MCA_) parameters are the same under both.

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
