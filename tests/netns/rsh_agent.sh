#!/bin/sh
# mpirun's remote shell for the netns harness: "rsh_agent.sh HOST CMD..." runs CMD on HOST, i.e.
# in HOST's network namespace with HOST as its private UTS name, as ssh would run it remotely.
# The host -> namespace map is the file named by NETNS_MAP ("host namespace" lines).
host="$1"
shift
if [ -z "$NETNS_MAP" ] || [ ! -r "$NETNS_MAP" ]; then
  echo "rsh_agent: NETNS_MAP not set or unreadable" >&2
  exit 255
fi
ns=$(awk -v h="$host" '$1 == h { print $2; exit }' "$NETNS_MAP")
# Each host's Open MPI listens on ports of its own (42000 + 20 x its line in the map): the same
# port on every host would let a daemon that dials docker0's 172.17.0.1 (on every host) reach
# its own host's daemon, which real hosts' kernel-chosen ports do not.
idx=$(awk -v h="$host" '$1 == h { print NR - 1; exit }' "$NETNS_MAP")
OMPI_MCA_oob_tcp_dynamic_ipv4_ports="$((42000 + 20 * idx))-$((42019 + 20 * idx))"
export OMPI_MCA_oob_tcp_dynamic_ipv4_ports
[ -n "$ns" ] || { echo "rsh_agent: unknown host '$host' (not in $NETNS_MAP)" >&2; exit 255; }
# Like ssh: the words after the host form one command line for a shell on the other side.
# shellcheck disable=SC2016 # expanded by the inner shell
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$1"; shift; eval "$*"' sh "$host" "$@"
