#!/usr/bin/env bash
# gpulaunch itself over 4 netns hosts (2 ranks each), decoys in place: the wrapped program sees
# NCCL_SOCKET_IFNAME = its host's routable link and MASTER_ADDR = h0's address on it; a wrong
# NCCL_SOCKET_IFNAME (environment or [nccl]) and a blocked path end the job with 67 before the
# program starts; probe = off lets it start anyway.
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
PROG=${1:?usage: test_launch.sh GPL_TESTPROG}
source "$(dirname "$0")/../lib.sh"
netns_begin

NETNS_IFNAMES="eth0 ens5" netns_setup 4
T=$NETNS_DIR
HOSTS=h0:2,h1:2,h2:2,h3:2
export GPULAUNCH_TIMEOUT=15
launch() { netns_run 8 "$HOSTS" "$GPULAUNCH" "$@"; } # GPULAUNCH-ARGS -> $T/out, $T/err, $RC, $SECS
conf() { # conf FILE [nccl-lines] [topology-lines]
  printf '[job]\ncommand = %s env\n[nccl]\n%b\n[topology]\n%b\n' "$PROG" "${2:-}" "${3:-}" >"$1"
}

# 1. The program's environment on every rank: its host's interface, h0's address.
launch -- "$PROG" env
if [ "$RC" != 0 ]; then bad "auto: exit $RC"; else
  for r in 0 1 2 3 4 5 6 7; do
    h=h$((r / 2))
    grep -q "^\[$h:$r\] ENV NCCL_SOCKET_IFNAME==${NETNS_IF[$h]}\$" "$T/out" || bad "rank $r on $h: NCCL_SOCKET_IFNAME not =${NETNS_IF[$h]}"
    grep -q "^\[$h:$r\] ENV MASTER_ADDR=${NETNS_ADDR[h0]}\$" "$T/out" || bad "rank $r on $h: MASTER_ADDR not ${NETNS_ADDR[h0]}"
  done
  [ "$FAILED" = 0 ] && pass "8 ranks on 4 hosts: NCCL_SOCKET_IFNAME==eth0/=ens5 per host, MASTER_ADDR=${NETNS_ADDR[h0]} (mpirun ${SECS}s)"
fi

# 2. The user's value in the environment, wrong on h0 and h2: 67, one message, no program.
NCCL_SOCKET_IFNAME='=ens5' launch -- "$PROG" env
[ "$RC" = 67 ] || bad "=ens5: exit $RC, expected 67"
[ "$(grep -c 'network interface agreement failed' "$T/err")" = 1 ] || bad "=ens5: not one message"
grep -q 'NCCL_SOCKET_IFNAME==ens5 (.*environment) matches no running interface with an address on node 0 (h0); its interfaces: ' "$T/err" ||
  bad "=ens5: h0 not named"
grep -q 'on node 2 (h2); its interfaces: ' "$T/err" || bad "=ens5: h2 not named"
if grep -q ' ENV ' "$T/out"; then bad "=ens5: the program ran"; fi
[ "$FAILED" = 0 ] && pass "NCCL_SOCKET_IFNAME==ens5: exit 67 before the program, h0 and h2 named"

# 3. [nccl] SOCKET_IFNAME, valid on every node with different matches: honoured as written.
conf "$T/ok.conf" 'SOCKET_IFNAME = ens5,eth0'
launch "$T/ok.conf"
if [ "$RC" != 0 ]; then bad "[nccl] ens5,eth0: exit $RC"; else
  grep -q '^\[h1:3\] ENV NCCL_SOCKET_IFNAME=ens5,eth0$' "$T/out" || bad "[nccl] value not passed as written"
  grep -q "^\[h3:7\] ENV MASTER_ADDR=${NETNS_ADDR[h0]}\$" "$T/out" || bad "[nccl]: MASTER_ADDR"
  pass "[nccl] SOCKET_IFNAME = ens5,eth0: validated on every node, passed as written"
fi
conf "$T/bad.conf" 'SOCKET_IFNAME = ^=eth0,ens5,lo,docker0'
launch "$T/bad.conf"
[ "$RC" = 67 ] || bad "[nccl] ^=eth0,ens5,lo,docker0: exit $RC, expected 67"
grep -q 'NCCL_SOCKET_IFNAME=^=eth0,ens5,lo,docker0 (\[nccl\] SOCKET_IFNAME) on node 0 (h0): eth9p\? (10.200.0.[12]) shares no subnet' "$T/err" ||
  bad "[nccl] ^=eth0,ens5,lo,docker0: no warning about the decoy"
grep -q 'preflight (ring) failed: 4 of 4 connections' "$T/err" || bad "[nccl] ^=eth0,ens5,lo,docker0: the preflight did not fail the decoy paths"
if grep -q ' ENV ' "$T/out"; then bad "[nccl] ^=eth0,ens5,lo,docker0: the program ran"; fi
[ "$FAILED" = 0 ] && pass "[nccl] SOCKET_IFNAME = ^=eth0,ens5,lo,docker0 (only the decoy eth9 left): warned, the preflight fails all 4 paths, exit 67"
conf "$T/docker.conf" 'SOCKET_IFNAME = docker'
launch "$T/docker.conf"
[ "$RC" = 67 ] || bad "[nccl] docker: exit $RC, expected 67"
grep -q "NCCL's bootstrap would use docker0 (172.17.0.1), the same address as on h1, h2, h3" "$T/err" || bad "[nccl] docker: the copied address not named"
[ "$FAILED" = 0 ] && pass "[nccl] SOCKET_IFNAME = docker: the same 172.17.0.1 on every host is an error before anything starts"

# 4. A path blocked before the job (new TCP h1 -> h2 dropped, MPI's ports spared): 67 from
#    the preflight, naming h1 -> h2, the address and the interface; no program.
netns_block_new_tcp h1 h2
conf "$T/probe.conf" '' 'probe = ring\nprobe_timeout = 2s'
launch "$T/probe.conf"
[ "$RC" = 67 ] || bad "blocked: exit $RC, expected 67"
grep -q "h1 (node 1) -> h2 (node 2): ${NETNS_ADDR[h2]} port [0-9]* on h2's eth0, from ${NETNS_ADDR[h1]} (h1's ens5): timed out after 2.0 s connecting" "$T/err" ||
  bad "blocked: h1 -> h2 not named"
if grep -q ' ENV ' "$T/out"; then bad "blocked: the program ran"; fi
[ "$FAILED" = 0 ] && pass "h1 -> h2 blocked: the preflight names it, exit 67 in ${SECS}s, the program never started"

# 5. probe = off: the same job starts (nothing checks the path).
conf "$T/off.conf" '' 'probe = off'
launch "$T/off.conf"
[ "$RC" = 0 ] || bad "probe off: exit $RC"
[ "$(grep -c ' ENV NCCL_SOCKET_IFNAME=' "$T/out")" = 8 ] || bad "probe off: not 8 ranks ran"
[ "$FAILED" = 0 ] && pass "probe = off: starts despite the block"
exit "$FAILED"
