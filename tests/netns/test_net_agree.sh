#!/usr/bin/env bash
# Interface agreement + preflight on 4 netns hosts with decoys (docker0 with one address on every
# host, a non-routable eth9 first in getifaddrs order), routable links named eth0/ens5 by host:
# the routable one is chosen, MASTER_ADDR is h0's, a wrong NCCL_SOCKET_IFNAME names the nodes,
# and a path blocked after MPI is up (or a value that picks the decoy) is named by the preflight.
set -euo pipefail
DRIVER=${1:?usage: test_net_agree.sh NET_DRIVER}
source "$(dirname "$0")/../lib.sh"
netns_begin
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p"; }
sum() { grep "^$1 " "$T/out" | field "$2" | paste -sd+ | bc; }

NETNS_IFNAMES="eth0 ens5" netns_setup 4
T=$NETNS_DIR
HOSTS=h0,h1,h2,h3
export GPULAUNCH_TIMEOUT=10
# Each run takes seconds; one that outlives this says what still runs where (netns.sh netns_run).
NETNS_RUN_LIMIT=60
# drive NP HOSTSPEC ARGS...: the driver over the hosts -> $T/out, $T/err, $RC, $SECS
drive() {
  local np=$1 hosts=$2
  shift 2
  netns_run "$np" "$hosts" "$DRIVER" "$@"
}

# 1. Auto choice, one rank per host, ring preflight: the routable link on every host, whatever
#    its name; MASTER_ADDR is h0's address on it; 4 probes, each accepted by its listener.
drive 4 "$HOSTS" --no-topo --probe ring --probe-timeout 3
if [ "$RC" != 0 ]; then bad "auto: exit $RC"; else
  for i in 0 1 2 3; do
    line=$(grep "^net .*host=h$i " "$T/out")
    want=${NETNS_IF[h$i]}
    [ "$(field value <<<"$line")" = "=$want" ] || bad "auto: h$i got $(field value <<<"$line"), expected =$want"
    [ "$(field addr <<<"$line")" = "${NETNS_ADDR[h$i]}" ] || bad "auto: h$i address $(field addr <<<"$line")"
    [ "$(field master <<<"$line")" = "${NETNS_ADDR[h0]}" ] || bad "auto: h$i MASTER_ADDR $(field master <<<"$line")"
  done
  [ "$(sum preflight probes)" = 4 ] || bad "auto: $(sum preflight probes) probes, expected 4 (ring)"
  [ "$(sum preflight accepted)" = 4 ] || bad "auto: $(sum preflight accepted) accepted, expected 4"
  [ "$(sum preflight refused)" = 0 ] || bad "auto: refused connections"
  pass "auto, 4 hosts: =eth0/=ens5 (not docker0, not eth9), MASTER_ADDR ${NETNS_ADDR[h0]}, ring proved; $(grep '^timing' "$T/out"), mpirun ${SECS}s"
fi

# 2. Two ranks per host (8 ranks), the live topology, all pairs: the plan's environment of
#    every rank carries the node's interface; 12 probes (4 x 3).
drive 8 "h0:2,h1:2,h2:2,h3:2" --probe all --probe-timeout 3
if [ "$RC" != 0 ]; then bad "8 ranks: exit $RC"; else
  n=$(grep -c '^net .*status=0' "$T/out" || true)
  [ "$n" = 8 ] || bad "8 ranks: $n of 8 agreed"
  while read -r line; do
    h=$(field host <<<"$line")
    [ "$(field plan_env <<<"$line")" = "=${NETNS_IF[$h]}" ] || bad "8 ranks: plan env on $h is $(field plan_env <<<"$line")"
  done < <(grep '^net ' "$T/out")
  [ "$(sum preflight probes)" = 12 ] || bad "8 ranks: $(sum preflight probes) probes, expected 12"
  [ "$(sum preflight accepted)" = 12 ] || bad "8 ranks: $(sum preflight accepted) accepted"
  pass "8 ranks on 4 hosts, probe all: plan env per host, 12 paths proved; $(grep '^timing' "$T/out"), mpirun ${SECS}s"
fi

# 3. A user value that exists on half the hosts: exit 67, one message from rank 0 naming h0 and
#    h2 with their interfaces, nothing about h1/h3.
NCCL_SOCKET_IFNAME='=ens5' drive 4 "$HOSTS" --no-topo
[ "$RC" = 67 ] || bad "=ens5: exit $RC, expected 67"
[ "$(grep -c 'network interface agreement failed' "$T/err")" = 1 ] || bad "=ens5: not exactly one message"
for h in h0 h2; do
  grep -q "NCCL_SOCKET_IFNAME==ens5 (environment) matches no running interface with an address on node ${h#h} ($h); its interfaces: docker0 (bridge, up, [^)]*172.17.0.1/16[^)]*), eth0 (veth, up, 10000 Mb/s, ${NETNS_ADDR[$h]}/24" "$T/err" ||
    bad "=ens5: $h or its interfaces not named"
done
if grep -q 'on node 1 (h1)\|on node 3 (h3)' "$T/err"; then bad "=ens5: h1/h3 named though they have ens5"; fi
grep -c 'network interface agreement failed' "$T/err" >/dev/null && [ "$RC" = 67 ] && pass "NCCL_SOCKET_IFNAME==ens5: exit 67, one message naming h0 and h2 and their interfaces"

# 4. A prefix that NCCL resolves to the decoy first ("eth": the eth9 pair comes before eth0 in
#    interface order, and is the only match on h1/h3): honoured with a warning, and the
#    preflight proves it cannot work.
NCCL_SOCKET_IFNAME=eth drive 4 "$HOSTS" --no-topo --probe ring --probe-timeout 2
[ "$RC" = 67 ] || bad "eth: exit $RC, expected 67"
grep -q 'on node 0 (h0): eth9p\? (10.200.0.[12]) shares no subnet (10.200.0.0/24) with h1, h2, h3' "$T/err" || bad "eth: no warning for the decoy"
grep -q 'preflight (ring) failed: 4 of 4 connections' "$T/err" || bad "eth: preflight did not fail 4 of 4"
grep -q 'h1 (node 1) -> h2 (node 2): 10.200.2.[12] port [0-9]* on h2.s eth9p\?, from 10.200.1.[12] (h1.s eth9p\?): network is unreachable' "$T/err" ||
  bad "eth: the h1 -> h2 path not named"
[ "$FAILED" = 0 ] && pass "NCCL_SOCKET_IFNAME=eth (the decoy first): warned, preflight names the 4 paths, exit 67 in ${SECS}s"

# 5. A path blocked after MPI is up (new TCP h1 -> h2 dropped, MPI's ports spared): the ring
#    preflight names h1 -> h2 with the interface and the address, within its timeout.
rm -f "$T/agreed" "$T/go"
drive_bg() {
  set +e
  netns_mpirun -np 4 --host "$HOSTS" -x GPULAUNCH_TIMEOUT "$DRIVER" --no-topo --probe ring --probe-timeout 2 --pause-dir "$T" >"$T/out" 2>"$T/err"
  echo $? >"$T/rc"
}
drive_bg &
bgpid=$!
for _ in $(seq 300); do [ -e "$T/agreed" ] && break; sleep 0.1; done
if [ ! -e "$T/agreed" ]; then bad "blocked: the job never reached the agreement"; fi
netns_block_new_tcp h1 h2
touch "$T/go"
t0=$(date +%s.%N)
wait "$bgpid" || true
SECS=$(echo "$(date +%s.%N) - $t0" | bc)
RC=$(cat "$T/rc")
[ "$RC" = 67 ] || bad "blocked: exit $RC, expected 67"
grep -q "preflight (ring) failed: 1 of 4 connections" "$T/err" || bad "blocked: not 1 of 4"
grep -q "h1 (node 1) -> h2 (node 2): ${NETNS_ADDR[h2]} port [0-9]* on h2's eth0, from ${NETNS_ADDR[h1]} (h1's ens5): timed out after 2.0 s connecting" "$T/err" ||
  bad "blocked: h1 -> h2 not named with its interfaces and addresses"
[ "$(grep -c 'preflight (ring) failed' "$T/err")" = 1 ] || bad "blocked: not exactly one message"
awk -v s="$SECS" 'BEGIN { exit !(s < 15) }' || bad "blocked: took ${SECS}s"
[ "$FAILED" = 0 ] && pass "path h1 -> h2 blocked after MPI was up: named by the preflight, exit 67, ${SECS}s after the block"

# 6. h3's routable link set down after the agreement: MPI to h3 breaks with it, so the
#    preflight's own exchange is what notices; rank 0 names h3 within the deadline (5 s) instead
#    of hanging. (mpirun itself then waits for h3's daemon, which it can no longer reach: the
#    test does not wait for it; the teardown ends it.)
rm -f "$T/agreed" "$T/go" "$T/rc"
GPULAUNCH_TIMEOUT=5 drive_bg &
for _ in $(seq 300); do [ -e "$T/agreed" ] && break; sleep 0.1; done
netns_link_down h3
touch "$T/go"
t0=$(date +%s.%N)
named=0
for _ in $(seq 300); do
  if grep -q 'no answer from rank 3 (host h3)' "$T/err" 2>/dev/null; then named=1; break; fi
  sleep 0.1
done
SECS=$(echo "$(date +%s.%N) - $t0" | bc)
if [ "$named" = 1 ] && awk -v s="$SECS" 'BEGIN { exit !(s < 15) }'; then
  pass "h3's link down after MPI was up: rank 0 names rank 3 (host h3) ${SECS}s later, no hang"
else
  bad "link down: h3 not named within 30 s (${SECS}s)"
fi
exit "$FAILED"
