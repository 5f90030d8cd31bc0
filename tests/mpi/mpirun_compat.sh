# mpirun_compat.sh - braid_ompi_major, braid_mpirun_map, braid_mpirun_env;
# the functions are in contrib/braid_env.sh (the one helper the scripts
# source): this file only sources that, for scripts that still source it
# by this name.
# shellcheck source=contrib/braid_env.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/contrib/braid_env.sh"
