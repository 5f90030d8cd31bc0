#!/usr/bin/env bash
# install_deps.sh - install what building and testing braid needs on a fresh
# Debian/Ubuntu machine (Open MPI with devel headers, UCX, Check, Autotools;
# mpi4py and numpy for /usr/bin/python3, which the mpi4py test case and
# contrib/run_app_compare.sh --python use).
# Does nothing for packages already present. Uses sudo when not root.
set -euo pipefail
pkgs=(openmpi-bin libopenmpi-dev libucx-dev check autoconf automake libtool pkg-config make gcc
      python3-mpi4py python3-numpy xz-utils)
pkgs+=("$@")
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
