#!/usr/bin/env bash
# Interface inventory inside a network namespace of its own: a docker0 bridge with a port, a
# routable veth, a link-local-only veth and a down one, each classified as the agreement needs.
set -euo pipefail
DUMP=${1:?usage: iface_netns.sh IFACE_DUMP}
if [ "$(id -u)" != 0 ]; then
  echo "iface_netns: needs root for ip netns; not run"
  exit 0
fi
NS=gpltopo$$
# shellcheck disable=SC2317 # called by the trap
cleanup() { ip netns del "$NS" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$NS"
n() { ip -n "$NS" "$@"; }
n link set lo up
n link add docker0 type bridge
n addr add 172.17.0.1/16 dev docker0
n link add vethdeco type veth peer name vdpeer
n link set vethdeco master docker0
n link set vethdeco up; n link set vdpeer up; n link set docker0 up
n link add eth1 type veth peer name peer1
n addr add 10.88.0.1/24 dev eth1; n addr add 10.88.0.2/24 dev peer1
n link set eth1 up; n link set peer1 up
n link add ll0 type veth peer name ll1
n addr add 169.254.10.1/16 dev ll0
n link set ll0 up; n link set ll1 up
n link add dn0 type veth peer name dn1
n addr add 10.99.0.1/24 dev dn0
sleep 0.5 # let the links come up (carrier)

out=$(ip netns exec "$NS" "$DUMP")
echo "$out"
fail=0
# expect NAME FIELD VALUE: columns 1 name, 2 kind, 3 up, 4 running, 5 virtual, 6 container,
# 7 tier, 8 why, 12 master, 13 addrs.
expect() {
  local got
  got=$(awk -F'\t' -v n="$1" -v c="$2" '$1 == n { print $c }' <<<"$out")
  if [ "$got" != "$3" ]; then
    echo "FAIL: $1 column $2: expected '$3', got '$got'"
    fail=1
  fi
}
# The IPv4 address comes first; whether the kernel has added an IPv6 link-local address yet
# (a bridge gets one only once a port is up) is timing, so the rest is taken as it is.
first_rest() {
  awk -F'\t' -v n="$1" '$1 == n { i = index($13, ","); if (i) print substr($13, i) }' <<<"$out"
}
expect lo 2 loopback;      expect lo 7 2
expect docker0 2 bridge;   expect docker0 5 1; expect docker0 6 1; expect docker0 7 2; expect docker0 8 "bridge (container/VM plumbing)"; expect docker0 13 "172.17.0.1/16$(first_rest docker0)"
expect vethdeco 2 veth;    expect vethdeco 12 docker0; expect vethdeco 7 2
expect eth1 2 veth;        expect eth1 3 1; expect eth1 4 1; expect eth1 5 1; expect eth1 6 0; expect eth1 7 1
expect eth1 13 "10.88.0.1/24$(first_rest eth1)"
expect ll0 7 2;            expect ll0 8 "only link-local addresses"
expect dn0 3 0;            expect dn0 7 2; expect dn0 8 down
# Nothing of the host leaks into the namespace.
if grep -q '^eth0' <<<"$out"; then echo "FAIL: the host's eth0 is visible in $NS"; fail=1; fi
[ "$fail" = 0 ] && echo "iface_netns: all classifications as expected"
exit "$fail"
