#!/bin/sh
# prof_preload.sh LIB PROGRAM [ARGS...] - run PROGRAM with the shared
# library LIB preloaded: the MPI cases of the profile library
# (contrib/profile/libbraidprof.so) start their ranks through it, so that
# mpirun itself runs without it.
lib=$1
shift
LD_PRELOAD=$lib${LD_PRELOAD:+:$LD_PRELOAD} exec "$@"
