#!/usr/bin/env bash
# Issue 33: Open MPI's own interfaces on hosts that run Docker. 4 netns hosts x 2 ranks shaped like
# a GPU cloud's (NETNS_DECOYS=docker: docker0 172.17.0.1/16 with a veth port on every host, usb0
# link-local on a shared segment, eno1 on management subnets that pairs of hosts share, all before
# the fabric ens5/eth1), no MPI interface option given by hand: plain mpirun, gpulaunch bench,
# gpulaunch-run and elastic gpulaunch-run start and finish; a user's own btl_tcp_if_include is kept
# (even a wrong one: the first exchange then ends within the bound and says so); a firewall that
# drops the TCP transport's ports on one host gives one line naming it, the interfaces and the fix.
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_mpinet.sh GPULAUNCH_RUN}
source "$(dirname "$0")/../lib.sh"
netns_begin

NETNS_DECOYS=docker netns_setup 4
T=$NETNS_DIR
HOSTS=h0:2,h1:2,h2:2,h3:2
export GPULAUNCH_TIMEOUT=10 GPULAUNCH_LOG=info
launch() { netns_run 8 "$HOSTS" -x GPULAUNCH_LOG "$GPULAUNCH" "$@"; }
for h in h0 h1 h2 h3; do # the shape the test is about
  netns_exec "$h" ip -br -4 addr | awk '{print $1}' | tr '\n' ' ' | grep -q '^lo docker0 usb0@[^ ]* eno1@[^ ]* \(ens5\|eth1\)@' ||
    bad "$h: interfaces not in the issue's order: $(netns_exec "$h" ip -br -4 addr | awk '{print $1}' | tr '\n' ' ')"
done

# 1. The headline: mpirun -np 8 --host ... gpulaunch, nothing else.
launch -- sh -c 'echo "IF $NCCL_SOCKET_IFNAME"'
if [ "$RC" != 0 ]; then bad "mpirun: exit $RC after ${SECS}s"; else
  line=$(grep "MPI's TCP interfaces:" "$T/err" || true)
  grep -q "btl_tcp_if_include=10.77.0.0/24 (ens5: the subnet every host has; left out: docker0 172.17.0.1 (bridge.*the same address on other hosts), eno1 10.78.0.1 (10.78.0.0/24 not on h2,h3), usb0 169.254.10.1 (only link-local" <<<"$line" ||
    bad "mpirun: the info line: $line"
  [ "$(grep -c "MPI's TCP interfaces:" "$T/err")" = 1 ] || bad "mpirun: not one info line"
  [ "$(grep -c '^\[h[02]:[0-9]\] IF =ens5$' "$T/out")" = 4 ] && [ "$(grep -c '^\[h[13]:[0-9]\] IF =eth1$' "$T/out")" = 4 ] ||
    bad "mpirun: NCCL_SOCKET_IFNAME not the fabric on every rank"
  [ "$FAILED" = 0 ] && pass "mpirun, no MCA option: 8 ranks ran in ${SECS}s, MPI on 10.77.0.0/24 (docker0, eno1, usb0 left out, said once), NCCL on ens5/eth1"
fi

# 1b. NCCL's interface and MPI's: the same, said by `gpulaunch env` and the summary.
launch env -- true
[ "$RC" = 0 ] || bad "env: exit $RC"
[ "$(grep -c "^# MPI's TCP transport (btl_tcp_if_include=10.77.0.0/24) and NCCL use the same interface, \(ens5\|eth1\)$" "$T/out")" = 8 ] ||
  bad "env: not 8 ranks saying MPI's and NCCL's interface are the same"
launch --summary "$T/summary.json" -- true
python3 - "$T/summary.json" <<'PY' || bad "summary: no network object saying MPI's and NCCL's are the same"
import json, sys
n = json.load(open(sys.argv[1]))["network"]
assert n["nccl_socket_ifname"] == "ens5" and n["mpi_btl_tcp_if_include"] == "10.77.0.0/24", n
assert n["mpi_chosen_by"] == "job" and n["mpi_same_as_nccl"] is True, n
PY
[ "$FAILED" = 0 ] && pass "gpulaunch env and the summary: MPI's TCP transport and NCCL on the same interface"

# 2. MPI's own traffic in volume: the CPU backend's allreduce over MPI.
launch bench --backend cpu -b 1K -e 64K -f 4 -n 2 -w 1
[ "$RC" = 0 ] || bad "bench --backend cpu: exit $RC after ${SECS}s"
[ "$FAILED" = 0 ] && pass "gpulaunch bench --backend cpu: exit 0 in ${SECS}s"

# 3. gpulaunch-run: mpirun's out-of-band channel on the fabric too.
MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun launch -- true
if [ "$RC" != 0 ]; then bad "gpulaunch-run: exit $RC after ${SECS}s"; else
  grep -q "mpirun's out-of-band channel: oob_tcp_if_include=10.77.0.0/24 (ens5: " "$T/err" || bad "gpulaunch-run: no OOB line"
  [ "$FAILED" = 0 ] && pass "gpulaunch-run, no MCA option: exit 0 in ${SECS}s, oob_tcp_if_include=10.77.0.0/24"
fi

# 4. Elastic gpulaunch-run --nodes over a hostfile.
for h in h0 h1 h2 h3; do echo "$h slots=2"; done >"$T/el.hosts"
t0=$(date +%s.%N)
RC=0
MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun netns_mpirun --nodes 4:4 --hostfile "$T/el.hosts" -x GPULAUNCH_TIMEOUT \
  "$GPULAUNCH" -- sh -c 'echo "EL $RANK $WORLD_SIZE"' >"$T/out" 2>"$T/err" || RC=$?
SECS=$(echo "$(date +%s.%N) - $t0" | bc)
[ "$RC" = 0 ] || bad "elastic: exit $RC after ${SECS}s"
[ "$(grep -c '^\[h[0-3]:[0-7]\] EL [0-7] 8$' "$T/out")" = 8 ] || bad "elastic: not 8 programs at world 8"
[ "$FAILED" = 0 ] && pass "elastic gpulaunch-run --nodes 4:4, no MCA option: 8 programs ran, exit 0 in ${SECS}s"

# 5. The user's own choice wins: kept as given, even one that cannot work (docker0: its own host's
#    address everywhere); the first exchange then ends within the bound, naming it.
netns_run 8 "$HOSTS" -x GPULAUNCH_LOG --mca btl_tcp_if_include 10.77.0.0/24 "$GPULAUNCH" -- true
[ "$RC" = 0 ] || bad "user 10.77.0.0/24: exit $RC"
grep -q "MPI's TCP interfaces: yours, kept (OMPI_MCA_btl_tcp_if_include=10.77.0.0/24)" "$T/err" || bad "user 10.77.0.0/24: not said kept"
netns_run 8 "$HOSTS" --mca btl_tcp_if_include docker0 "$GPULAUNCH" -- true
[ "$RC" != 0 ] || bad "user docker0: exit 0"
grep -q "MPI's TCP transport used as you set it (OMPI_MCA_btl_tcp_if_include=docker0); .*: no answer from rank [0-9]* (host h[0-3])" "$T/err" ||
  bad "user docker0: the first exchange did not name the user's value"
[ "$(echo "$SECS < $GPULAUNCH_TIMEOUT + 15" | bc)" = 1 ] || bad "user docker0: ${SECS}s"
[ "$FAILED" = 0 ] && pass "the user's btl_tcp_if_include kept (10.77.0.0/24 runs; docker0 ends in ${SECS}s naming it)"

# 6. A firewall on h2 drops the TCP transport's ports (41000-41999) both ways: one line naming h2,
#    the interfaces MPI used and the fix, within the bound.
netns_exec h2 iptables -A INPUT -p tcp --dport 41000:41999 -j DROP
netns_exec h2 iptables -A OUTPUT -p tcp --dport 41000:41999 -j DROP
launch -- true
[ "$RC" = 68 ] || bad "firewall: exit $RC, expected 68"
grep -q "timed out after 10.0 s in start-up (MPI's first exchange; MPI's TCP transport used ens5 (btl_tcp_if_include=10.77.0.0/24, chosen by gpulaunch); if the hosts reach each other on another network, give it: mpirun --mca btl_tcp_if_include <subnet>): no answer from .*(host h2)" "$T/err" ||
  bad "firewall: no line naming h2, the interfaces and the fix"
[ "$(echo "$SECS < $GPULAUNCH_TIMEOUT + 15" | bc)" = 1 ] || bad "firewall: ${SECS}s"
[ "$FAILED" = 0 ] && pass "firewall on h2's transport ports: exit 68 in ${SECS}s, h2 named with MPI's interfaces and the fix"
exit "$FAILED"
