#!/usr/bin/env bash
# run_multihost.sh - run braid's MPI tests across 2-4 simulated hosts on one
# machine (root only; not part of 'make check': tools/test.sh runs it when
# BRAID_MULTIHOST=1).
#
# Every host is a network namespace with its own veth link "eth0" on a
# private bridge (10.199.0.0/24: hosts .1-.4, the bridge .254 in the root
# namespace, where mpirun runs; no route, NAT or forwarding to anything
# else, so traffic stays on those links) and its own hostname (a UTS
# namespace made for the orted that Open MPI starts there) and its own boot
# id (see below). mpirun starts one orted per host with the rsh launcher and
# an agent script that enters the host's namespaces; the ranks inherit them,
# so UCX carries braid's traffic over TCP between hosts and shared memory
# inside a host; UCX_NET_DEVICES=eth0 keeps its TCP off each namespace's
# loopback.
#
# The boot id: UCX's shared-memory transports (sysv, posix, cma) take a peer
# for one on the same machine when its system id matches, and UCX 1.13
# derives that id from /proc/sys/kernel/random/boot_id, not from the
# hostname - identical in every namespace of one kernel. Left alone, UCX
# would send between "hosts" through shared memory; the data lands, but the
# wake-up that mm sends to the receiver's abstract UNIX socket fails with
# ECONNREFUSED (abstract sockets belong to a network namespace), and with
# UCX's adaptive progress a receiver that has no endpoint on its mm
# interface yet does not poll it: a receive posted before the rank's first
# send (e.g. braid's ring_chunked allreduce) never completes. So the agent
# also gives each host a private mount namespace with its own boot_id bind-
# mounted over the kernel's, and the sanity run checks both.
#
# The cases (tests/multihost/multihost_tests.list) go through
# tests/mpi/run_mpi_tests.sh with the hostfile and launcher arguments in
# MPI_TEST_MPIRUN_ARGS. Namespaces, links and temporary files are removed on
# exit, also on failure or interrupt.
#
# Usage (from the build directory, after make check's programs are built):
#   sudo BRAID_BUILDDIR=$PWD BRAID_SRCDIR=.. ../tests/multihost/run_multihost.sh
# Environment: BRAID_MH_HOSTS (2-4, default 3), BRAID_MH_SLOTS (ranks per
# host, default 2), BRAID_MH_MPIRUN_ARGS (more mpirun arguments, e.g.
# "-x UCX_TLS=tcp,self"), BRAID_MH_LIST (another case list, same format),
# MPI_TEST_FILTER, MPI_TEST_TIMEOUT as for run_mpi_tests.sh; BRAID_MH_EXEC
# (a shell command run across the hosts instead of the cases, with the
# mpirun arguments that reach them in BRAID_MH_MPIRUN_LAUNCH and the slot
# count in BRAID_MH_NP; contrib/bench/variants.sh -H uses it).
set -u
srcdir=${BRAID_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
srcdir=$(cd "$srcdir" && pwd)
builddir=${BRAID_BUILDDIR:-$(pwd)}
builddir=$(cd "$builddir" && pwd)
nhosts=${BRAID_MH_HOSTS:-3}
slots=${BRAID_MH_SLOTS:-2}
tag=bmh$$                       # unique per run: interface names <= 15 chars
subnet=10.199.0
bridge=${tag}br

die() { echo "run_multihost: $*" >&2; exit 1; }
skip() { echo "run_multihost: SKIP: $*" >&2; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
case $nhosts in 2|3|4) ;; *) die "BRAID_MH_HOSTS must be 2-4" ;; esac
command -v ip >/dev/null || skip "iproute2 'ip' not found"
command -v unshare >/dev/null || skip "util-linux 'unshare' not found"
command -v mpirun >/dev/null || skip "mpirun not found"
if [ -z "${BRAID_MH_EXEC:-}" ]; then
    for p in mpi_reductions mpi_barrier_bcast mpi_topo; do
        [ -x "$builddir/tests/mpi/$p" ] || die "$builddir/tests/mpi/$p not built (make check TESTS=)"
    done
fi
if ip -4 route show | grep -q "^$subnet\."; then
    die "$subnet.0/24 is already routed on this machine; not touching it"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-multihost.XXXXXX")
hosts=()
cleanup() {
    local h
    local i=0 pid
    for h in "${hosts[@]}"; do
        i=$((i + 1))
        # processes this script started inside the host (a killed job's orted)
        for pid in $(ip netns pids "$tag-$h" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
        ip link del "${tag}v$i" 2>/dev/null    # destroys both ends of the pair now
        ip netns del "$tag-$h" 2>/dev/null
    done
    ip link del "$bridge" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# probe: can this sandbox make network namespaces at all?
if ! err=$(ip netns add "$tag-probe" 2>&1); then
    skip "'ip netns add' fails: $err"
fi
ip netns del "$tag-probe"

# --- the hosts ------------------------------------------------------------
ip link add "$bridge" type bridge || skip "cannot create bridge $bridge"
ip addr add "$subnet.254/24" dev "$bridge"
ip link set "$bridge" up
for i in $(seq 1 "$nhosts"); do
    h=bh$i
    ns=$tag-$h
    ip netns add "$ns" || die "ip netns add $ns failed"
    hosts+=("$h")
    ip link add "${tag}v$i" type veth peer name eth0 netns "$ns" || skip "cannot create a veth pair for $h"
    ip link set "${tag}v$i" master "$bridge" up
    ip -n "$ns" addr add "$subnet.$i/24" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    echo "$h slots=$slots" >>"$tmp/hostfile"
    cat /proc/sys/kernel/random/uuid >"$tmp/boot_id.$h"   # see the header
done
# wait until every link is up (the bridge has no STP: ports forward at once;
# the mpirun below is the connectivity check)
for i in $(seq 1 "$nhosts"); do
    ok=0
    for _ in $(seq 1 50); do
        if ip -n "$tag-bh$i" link show eth0 | grep -q LOWER_UP; then ok=1; break; fi
        sleep 0.1
    done
    [ $ok -eq 1 ] || die "link of host bh$i does not come up"
done

# the rsh agent: "agent [options] host command..." runs the command like
# ssh would (one shell command line) inside the host's namespaces, with the
# host's own hostname and boot id (a private mount namespace: the bind
# mount is gone when the host's processes end and never reaches the root
# namespace)
cat >"$tmp/agent" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
exec ip netns exec "$tag-\$host" unshare --uts --mount --propagation private sh -c \\
    'hostname "\$0" && mount --bind "\$2" /proc/sys/kernel/random/boot_id && exec sh -c "\$1"' \\
    "\$host" "\$*" "$tmp/boot_id.\$host"
EOF
chmod +x "$tmp/agent"

np=$((nhosts * slots))
launch=(--hostfile "$tmp/hostfile" --mca plm_rsh_agent "$tmp/agent" --mca plm_rsh_no_tree_spawn 1
        --mca oob_tcp_if_include "$subnet.0/24" --mca btl_tcp_if_include "$subnet.0/24"
        --mca btl self,vader,tcp -x UCX_NET_DEVICES=eth0 -x UCX_WARN_UNUSED_ENV_VARS=n
        ${BRAID_MH_MPIRUN_ARGS:-})

# --- sanity: one rank per slot, each host its own hostname and boot id ----
# shellcheck source=contrib/braid_env.sh
source "$srcdir/contrib/braid_env.sh"
braid_run_as_root
# launch is written for ORTE (Open MPI 4.1); under PRRTE (5.0) the agent is
# plm_ssh_agent and so on (the cases below are mapped by run_mpi_tests.sh)
braid_mpirun_env
sanity_launch=("${launch[@]}")
braid_mpirun_map sanity_launch
# a script, not "sh -c '...'": PRRTE from 5.1 on strips quotes inside a
# rank's arguments
printf '#!/bin/sh\necho "$(hostname) $(cat /proc/sys/kernel/random/boot_id)"\n' >"$tmp/whoami"
chmod +x "$tmp/whoami"
names=$(timeout -k 5 60 mpirun -np "$np" "${sanity_launch[@]}" "$tmp/whoami" \
            2>"$tmp/hostname.err" | sort | uniq -c)
echo "# ranks per host (and its boot id):"; echo "$names" | sed 's/^/#   /'
distinct=$(echo "$names" | grep -c .)
boot_ids=$(echo "$names" | awk 'NF == 3 { print $3 }' | sort -u | grep -c .)
if [ "$distinct" -ne "$nhosts" ] || [ "$boot_ids" -ne "$nhosts" ]; then
    cat "$tmp/hostname.err" >&2
    # the sandbox cannot make the hosts (no UTS/mount namespaces for the
    # agent, ...): nothing about braid was tested
    skip "expected $nhosts distinct hostnames and boot ids, got $distinct and $boot_ids"
fi

rx_before=()
for i in $(seq 1 "$nhosts"); do rx_before+=("$(cat /sys/class/net/${tag}v$i/statistics/rx_bytes)"); done

if [ -n "${BRAID_MH_EXEC:-}" ]; then
    # --- a command instead of the cases (contrib/bench/variants.sh -H): it
    # gets the launcher arguments, written for ORTE as MPI_TEST_MPIRUN_ARGS
    # (braid_mpirun_map in contrib/braid_env.sh maps them), and the slot count
    BRAID_MH_MPIRUN_LAUNCH="${launch[*]}" BRAID_MH_NP=$np bash -c "$BRAID_MH_EXEC"
    rc=$?
else
# --- the cases ------------------------------------------------------------
# @NP@ in the list is the number of slots, @NP1@ one less (an odd split)
sed -e "s/@NP@/$np/g" -e "s/@NP1@/$((np - 1))/g" "${BRAID_MH_LIST:-$srcdir/tests/multihost/multihost_tests.list}" \
    >"$tmp/cases.list"
MPI_TEST_LIST=$tmp/cases.list MPI_TEST_MPIRUN_ARGS="${launch[*]}" \
    MPI_TEST_LOGDIR=${MPI_TEST_LOGDIR:-$builddir/tests/multihost-logs} BRAID_BUILDDIR=$builddir BRAID_SRCDIR=$srcdir \
    bash "$srcdir/tests/mpi/run_mpi_tests.sh"
rc=$?
fi

echo "# bytes sent by each host over its link during the tests:"
for i in $(seq 1 "$nhosts"); do
    now=$(cat /sys/class/net/${tag}v$i/statistics/rx_bytes)
    echo "#   bh$i: $((now - rx_before[i - 1]))"
done
exit $rc
