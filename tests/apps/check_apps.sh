#!/usr/bin/env bash
# check_apps.sh - the correctness pass over packaged applications: LAMMPS
# (peptide, 50 steps, PPPM's remap through MPI_Alltoallv) and HPCC (N=500)
# from Debian's packages, each once under braid and once under tuned at
# np=2, with the profile library preloaded; the results must be equal
# (contrib/apps/run_apps.sh -c says how). Prints "apps: N passed, M
# failed"; exit status 0, 1 on a difference or a failed run, 77 when the
# packages cannot be installed (a "SKIP:" line says why).
#
#   BRAID_BUILDDIR=build tests/apps/check_apps.sh   (tools/test.sh runs it)
#   CHECK_APPS=hpcc,lammps,ptscotch                 the applications (default hpcc,lammps)
top=$(cd "$(dirname "$0")/../.." && pwd)
exec "$top/contrib/apps/run_apps.sh" -c -n "${CHECK_APPS_NP:-2}" -a "${CHECK_APPS:-hpcc,lammps}" \
    ${BRAID_BUILDDIR:+-B "$BRAID_BUILDDIR"}
