#!/bin/sh
# rank_env.sh RANK VAR=VALUE PROGRAM [ARGS...] - run PROGRAM with VAR=VALUE
# in the environment of world rank RANK only (an MCA parameter that differs
# between ranks: the agreements that keep every rank on one path must
# still hold). Used by mpi_tests.list.
rank=$1 assignment=$2
shift 2
me=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-}}
[ -n "$me" ] || { echo "rank_env.sh: no OMPI_COMM_WORLD_RANK or PMIX_RANK" >&2; exit 2; }
[ "$me" = "$rank" ] && export "${assignment?}"
exec "$@"
