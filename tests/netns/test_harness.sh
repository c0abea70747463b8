#!/usr/bin/env bash
# The netns harness: 3 hosts with different interface names, decoys in place, mpirun across
# them with private host names, a blocked path that spares MPI, and a teardown that leaves nothing.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
netns_begin

NETNS_IFNAMES="eth0 ens5" netns_setup 3
[ "${#NETNS_HOSTS[@]}" = 3 ] || bad "hosts: ${NETNS_HOSTS[*]}"
for h in "${NETNS_HOSTS[@]}"; do
  out=$(netns_exec "$h" sh -c 'hostname; ip -br -4 addr')
  [ "$(head -1 <<<"$out")" = "$h" ] || bad "$h: UTS name $(head -1 <<<"$out")"
  grep -q "^${NETNS_IF[$h]}[@ ].*UP.* ${NETNS_ADDR[$h]}/24" <<<"$out" || bad "$h: no ${NETNS_IF[$h]} with ${NETNS_ADDR[$h]}"
  grep -q '^docker0 .* 172.17.0.1/16' <<<"$out" || bad "$h: no docker0 decoy"
  grep -q '^eth9[@ ].* 10.200.' <<<"$out" || bad "$h: no eth9 decoy"
done
if [ "${NETNS_IF[h1]}" != ens5 ] || [ "${NETNS_IF[h2]}" != eth0 ]; then bad "interface names: ${NETNS_IF[*]}"; fi
pass "3 hosts: ${NETNS_IF[h0]}/${NETNS_IF[h1]}/${NETNS_IF[h2]} on ${NETNS_SUBNET}.0/24, docker0 and eth9 decoys"

# A TCP listener on h2 (the kernel completes handshakes; nobody needs to accept).
listen_h2() {
  netns_exec h2 python3 -c 'import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 45000))
s.listen(16)
time.sleep(float(sys.argv[1]))' "$1" &
  lpid=$!
  local i # until it listens (Python's start takes seconds on a loaded machine)
  for ((i = 0; i < 100; i++)); do
    netns_exec h2 ss -Hltn 'sport = :45000' | grep -q . && return 0
    sleep 0.1
  done
}
tcp() { netns_exec "$1" timeout 2 bash -c "exec 3<>/dev/tcp/$2/45000" 2>/dev/null; }

# Hosts reach each other on the routable link only (eth9 goes nowhere).
listen_h2 12
tcp h0 "${NETNS_ADDR[h2]}" || bad "h0 cannot connect to h2"
if tcp h0 10.200.2.1; then bad "h0 reaches h2's eth9"; fi
pass "routable link connects the hosts, the decoy does not"

# mpirun across the hosts: each rank sees its host's name and only its host's interfaces.
# shellcheck disable=SC2016 # expanded on each host
out=$(netns_mpirun -np 3 --host h0,h1,h2 sh -c 'echo "$(hostname) $(ip -br -4 addr show dev eth0 2>/dev/null || ip -br -4 addr show dev ens5)"' 2>&1) ||
  bad "mpirun failed: $out"
for h in "${NETNS_HOSTS[@]}"; do
  grep -q "^$h .*${NETNS_ADDR[$h]}/24" <<<"$out" || bad "no rank on $h with ${NETNS_ADDR[$h]}: $out"
done
pass "mpirun -np 3 --host h0,h1,h2 runs one rank per host"

# A new TCP connection h1 -> h2 is dropped (outside MPI's ports), one h0 -> h2 is not.
tcp h1 "${NETNS_ADDR[h2]}" || bad "h1 cannot connect to h2 before the block"
netns_block_new_tcp h1 h2
if tcp h1 "${NETNS_ADDR[h2]}"; then bad "h1 -> h2 not blocked"; fi
tcp h0 "${NETNS_ADDR[h2]}" || bad "h0 -> h2 blocked too"
kill "$lpid" 2>/dev/null || true
wait "$lpid" 2>/dev/null || true
pass "netns_block_new_tcp h1 h2 drops that path only"

# Teardown (as the EXIT trap runs it) leaves no namespace of this run behind.
id=$NETNS_ID
netns_teardown
left=$(ip netns list | grep -c "^$id-" || true)
[ "$left" = 0 ] || bad "$left namespaces left after teardown"
pass "teardown removed every namespace of $id"
exit "$FAILED"
