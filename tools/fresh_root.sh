#!/usr/bin/env bash
# fresh_root.sh - run a command from this tree, as root, in a pristine
# Debian root made for this run alone (debootstrap --variant=minbase, no
# cached packages), then remove the root. tools/test.sh runs the README's
# first command (contrib/quickstart.sh) this way on Debian 13, to show that
# it works on a fresh machine with nothing but the README's instructions.
#
#   tools/fresh_root.sh [CMD...]     (default CMD: contrib/quickstart.sh)
#
# The project's files (git ls-files, or every file but build outputs in a
# release archive: braid_tree_files in contrib/braid_env.sh) are copied to
# /root/braid in the root and CMD runs there under bash with a clean
# environment. /proc, /sys, /dev, /dev/pts and /dev/shm are bind-mounted
# while it runs and unmounted on exit (also on failure or interrupt), what
# CMD mounted below the root included; the root is then deleted unless
# BRAID_FRESH_KEEP=1.
#
# Environment:
#   BRAID_FRESH_SUITE   Debian suite (default trixie)
#   BRAID_FRESH_MIRROR  mirror (default http://deb.debian.org/debian)
#   BRAID_FRESH_DIR     where the root is made (default a new directory in /var/tmp)
#   BRAID_FRESH_KEEP    1: keep the root (its path is printed)
# Exit status: CMD's; 77 where this machine cannot debootstrap or
# bind-mount (not root, a sandbox).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../contrib/braid_env.sh
. "$top/contrib/braid_env.sh"
suite=${BRAID_FRESH_SUITE:-trixie}
mirror=${BRAID_FRESH_MIRROR:-http://deb.debian.org/debian}
say() { echo "fresh_root.sh: $*" >&2; }
[ $# -ge 1 ] || set -- contrib/quickstart.sh
[ "$(id -u)" -eq 0 ] || { say "SKIP: needs root (debootstrap, chroot, bind mounts)"; exit 77; }

root=""
mounted=()
cleanup() {
    local rc=$? i m
    [ -n "$root" ] || exit $rc
    # what CMD mounted below the root (ip netns: /run/netns), deepest first,
    # then this script's own mounts in reverse order
    awk -v r="$root/" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo |
        awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2- | while read -r m; do
        case " ${mounted[*]} " in *" $m "*) ;; *) umount -l "$m" 2>/dev/null || true ;; esac
    done
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
    done
    if awk -v r="$root" '$5 == r || index($5, r "/") == 1 { f = 1 } END { exit !f }' /proc/self/mountinfo; then
        say "something is still mounted under $root: not removing it"
    elif [ "${BRAID_FRESH_KEEP:-0}" = 1 ]; then
        say "root kept: $root"
    else
        rm -rf --one-file-system "$root"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
if [ -n "${BRAID_FRESH_DIR:-}" ]; then
    [ ! -e "$BRAID_FRESH_DIR" ] || { say "$BRAID_FRESH_DIR exists"; exit 1; }
    root=$BRAID_FRESH_DIR
    mkdir -p "$root"
else
    root=$(mktemp -d /var/tmp/braid-fresh.XXXXXX)
fi
# a machine's / is world-readable (mktemp made it 0700: apt's _apt user,
# for one, could not reach its download directories)
chmod 755 "$root"
t0=$SECONDS
say "debootstrap --variant=minbase $suite into $root ($mirror)"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
    { tail -n 20 "$root.debootstrap.log" >&2; rm -f "$root.debootstrap.log"; say "debootstrap failed"; exit 1; }
rm -f "$root.debootstrap.log"
say "debootstrap done in $((SECONDS - t0))s"
# no daemons started by package scripts inside the root
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

# the root a private mount point of its own: inside, / is one (ip netns
# exec remounts it) and nothing mounted below reaches this machine's /
mount --bind "$root" "$root" || { say "SKIP: cannot bind-mount $root"; exit 77; }
mounted+=("$root")
mount --make-private "$root"
for d in /proc /sys /dev /dev/pts /dev/shm; do
    [ -d "$d" ] || continue
    mkdir -p "$root$d"
    mount --bind "$d" "$root$d" || { say "SKIP: cannot bind-mount $d into $root"; exit 77; }
    mounted+=("$root$d")
done
# name resolution for apt, and for Open MPI's own host name look-ups
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
cp /etc/hosts "$root/etc/hosts" 2>/dev/null || true

braid_copy_tree "$root/root/braid" "$top"
say "running in the root (/root/braid): $*"
t0=$SECONDS
rc=0
chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    /bin/bash -c 'cd /root/braid && exec "$@"' bash "$@" || rc=$?
say "$* exited $rc in $((SECONDS - t0))s"
exit $rc
