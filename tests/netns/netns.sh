# shellcheck shell=bash
# Multi-host test harness: N "hosts" as network namespaces wired to one switch, for real mpirun jobs.
#
# Source it from a bash test script (it does not change shell options):
#
#   . "$GPULAUNCH_SOURCE_DIR/tests/netns/netns.sh"
#   netns_require                 # exits with NETNS_SKIP (77) unless root with working `ip netns`
#   netns_setup 4                 # hosts h0..h3; teardown is armed on EXIT/INT/TERM
#   netns_exec h1 ip -br addr     # run a command on a host (its namespace and its UTS name)
#   netns_mpirun -np 4 --host h0,h1,h2,h3 prog args...   # mpirun started on h0
#   netns_run 4 h0,h1,h2,h3 prog args...   # the same, output in $NETNS_DIR/out and err, $RC, $SECS
#   netns_teardown                # optional: also runs from the trap, even after a failure
#
# What each host hN gets (defaults; override with the variables below before netns_setup):
#   - lo, up.
#   - The routable link: a veth named $(netns_ifname N) (NETNS_IFNAMES cycles, default "eth0";
#     names may differ per host, e.g. NETNS_IFNAMES="eth0 ens5") with $NETNS_SUBNET.(N+1)/24;
#     its peer is a port of the bridge "sw" in the switch namespace, so every host reaches every
#     other one. MTU 1500, veth speed (10000 Mb/s).
#   - Decoys, unless NETNS_DECOYS=0: a running docker0 bridge with 172.17.0.1/16 on every host
#     (same address everywhere: reaches nobody), with one veth port (vethdk0); and a second,
#     non-routable link "eth9" (NETNS_DECOY_IF) with 10.200.N.1/24, a different subnet on each
#     host, whose veth peer (eth9p, 10.200.N.2/24) stays on the same host. It is created before
#     the routable link, so it comes first in getifaddrs order (what NCCL's auto-pick sees).
#   - NETNS_RICH=1 adds what a real GPU node has besides (on top of the decoys): a management NIC
#     "eno1" on a second switch ("mgmt" bridge) with 10.78.0.(N+1)/24, which reaches every host,
#     and a link-local "usb0" with 169.254.3.1/16 (a BMC's USB NIC: the same address on every
#     host, reaches nobody), both created before the fabric link; and a docker0 bridge with
#     172.17.0.1/16 and no ports (docker with no container running) when NETNS_DECOYS=0 leaves
#     it out.
#   - NETNS_DECOYS=docker: instead, a GPU cloud host that runs Docker, all created before the
#     fabric (ifindex order): docker0 172.17.0.1/16 with a veth port (vethdk0) on every host; usb0
#     169.254.10.(N+1)/16 on one shared link-local segment (switch bridge "usb"); eno1 on a
#     management subnet 10.78.(N/2).(N+1)/24 that pairs of hosts share (h0+h1, h2+h3, ...; switch
#     bridges "mgN"); the fabric then, named ens5/eth1 by host unless NETNS_IFNAMES says.
#   - Host names resolve inside the namespaces (/etc/netns/NS/hosts): each to its routable address.
#   - No MPI interface option is passed (no btl/oob_tcp_if_include): gpulaunch and gpulaunch-run
#     choose Open MPI's interfaces themselves, as they must on a user's hosts.
#   - NETNS_KEEPALIVE=0: netns_mpirun leaves out its short Open MPI OOB keepalive (what a user's
#     plain mpirun has: Open MPI's default of 300 s + 9 x 20 s).
#
# Names: namespaces are "<NETNS_ID>-hN" and "<NETNS_ID>-sw"; NETNS_ID is unique per run
# (gpl<pid><random>), so parallel ctest runs never collide. Host names (mpirun --host, the UTS
# name each host's processes see) are "${NETNS_HOST_PREFIX}N", default h0, h1, ...
#
# After netns_setup (the variables above are read by netns_setup only: use NETNS_IF afterwards):
#   NETNS_HOSTS      array of host names (h0 h1 ...)
#   NETNS_NS[h]      namespace of host h;  NETNS_ADDR[h] its routable address;
#   NETNS_IF[h]      its routable interface name
#   NETNS_DIR        a scratch folder of this run (removed by the teardown)
#   NETNS_AGENT      the rsh agent (tests/netns/rsh_agent.sh), NETNS_MAP its host->namespace map
#   NETNS_MPI_ARGS   the mpirun options netns_mpirun adds (array)
# Ranks per host: mpirun's own syntax, e.g. netns_mpirun -np 8 --host h0:2,h1:2,h2:2,h3:2 ...
# mpirun runs inside h0 and reaches the other hosts through the agent; the environment goes
# along (add -x VAR to be explicit). stdout/stderr of all ranks come back through mpirun.
#
# Helpers for failure injection and slow links (all act inside one host's namespace):
#   netns_exec HOST CMD...            e.g. netns_exec h1 tc qdisc add dev eth0 root tbf \
#                                        rate 100mbit burst 32kbit latency 50ms
#   netns_block_new_tcp SRC DST       drop new TCP connections from SRC's to DST's routable
#                                     address, except to the ports MPI itself uses, so MPI keeps
#                                     working whether the rule comes before the job or while it
#                                     runs. Needs iptables in the namespace.
#   netns_link_down HOST              set HOST's routable link down (MPI to that host breaks too,
#                                     and mpirun may then wait for HOST's daemon forever: do not
#                                     wait for mpirun, the teardown ends it)
#
# MPI traffic uses fixed port ranges (41000-41999 for the TCP BTL; for the OOB the daemons of
# host number N listen on 42000+20N..42019+20N, a range of their own: rsh_agent.sh) and every
# host's ephemeral range is 50000-60999, so a rule that spares the MPI ports never spares another
# connection. mpirun itself (on the first host) listens on an ephemeral port: block paths to
# other hosts only.
#
# Addresses exist only inside the namespaces created here; nothing is routed to the outside.

NETNS_SKIP=77
: "${NETNS_SUBNET:=10.77.0}"
: "${NETNS_DECOYS:=1}"
: "${NETNS_RICH:=0}"
: "${NETNS_KEEPALIVE:=1}"
: "${NETNS_DECOY_IF:=eth9}"
: "${NETNS_HOST_PREFIX:=h}"
NETNS_ID="gpl$$$((RANDOM % 1000))"
NETNS_DIR=""
NETNS_HOSTS=()
declare -gA NETNS_NS NETNS_ADDR NETNS_IF
NETNS_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NETNS_AGENT="$NETNS_HERE/rsh_agent.sh"
NETNS_MPI_ARGS=()

# Exit the test with the skip code unless network namespaces can be made here.
netns_require() {
  if [ "$(id -u)" != 0 ]; then
    echo "SKIP: network namespaces need root"
    exit "$NETNS_SKIP"
  fi
  if ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
    echo "SKIP: 'ip netns' is not available"
    exit "$NETNS_SKIP"
  fi
  local probe="${NETNS_ID}-probe"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "SKIP: cannot create a network namespace here"
    exit "$NETNS_SKIP"
  fi
  ip netns del "$probe"
  command -v unshare >/dev/null || { echo "SKIP: unshare(1) missing"; exit "$NETNS_SKIP"; }
}

# The routable interface name of host number N (NETNS_IFNAMES cycled).
netns_ifname() {
  local -a names
  read -r -a names <<<"$NETNS_IFNAMES"
  echo "${names[$(($1 % ${#names[@]}))]}"
}

netns_exec() {
  local host="$1"
  shift
  local ns="${NETNS_NS[$host]:?netns_exec: unknown host $host}"
  # shellcheck disable=SC2016 # expanded by the inner shell
  ip netns exec "$ns" unshare --uts sh -c 'hostname "$1"; shift; exec "$@"' sh "$host" "$@"
}

# Kill what still runs in our namespaces (only processes started inside them), then delete them.
netns_teardown() {
  # Never stop half-way (the caller may run with set -e; a process may exit while we look).
  local - ns pids
  set +e
  for ns in $(ip netns list 2>/dev/null | awk -v p="$NETNS_ID-" 'index($1, p) == 1 { print $1 }'); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    # shellcheck disable=SC2086 # a list of pids
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -rf "/etc/netns/$ns"
  done
  [ -n "$NETNS_DIR" ] && rm -rf "$NETNS_DIR"
  NETNS_DIR=""
  return 0
}

# netns_setup N: create N hosts and the switch; arms the teardown trap.
netns_setup() {
  local n="${1:?netns_setup N}" i host ns ifn sw="${NETNS_ID}-sw"
  if [ -z "${NETNS_IFNAMES:-}" ]; then
    if [ "$NETNS_DECOYS" = docker ]; then NETNS_IFNAMES="ens5 eth1"; else NETNS_IFNAMES=eth0; fi
  fi
  # The trap keeps any EXIT handler the test had, and runs ours first.
  local prev
  prev=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
  # shellcheck disable=SC2064 # expand prev now
  trap "netns_teardown; ${prev:-:}" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  NETNS_DIR="$(mktemp -d /tmp/gplnetns.XXXXXX)"
  NETNS_MAP="$NETNS_DIR/hosts"
  : >"$NETNS_MAP"
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add sw type bridge forward_delay 0
  ip -n "$sw" link set sw up
  if [ "$NETNS_RICH" = 1 ]; then
    ip -n "$sw" link add mgmt type bridge forward_delay 0
    ip -n "$sw" link set mgmt up
  fi
  if [ "$NETNS_DECOYS" = docker ]; then
    ip -n "$sw" link add usb type bridge forward_delay 0
    ip -n "$sw" link set usb up
    for ((i = 0; i < (n + 1) / 2; i++)); do
      ip -n "$sw" link add "mg$i" type bridge forward_delay 0
      ip -n "$sw" link set "mg$i" up
    done
  fi
  for ((i = 0; i < n; i++)); do
    host="${NETNS_HOST_PREFIX}$i"
    ns="${NETNS_ID}-h$i"
    ifn=$(netns_ifname "$i")
    NETNS_HOSTS+=("$host")
    NETNS_NS[$host]="$ns"
    NETNS_ADDR[$host]="$NETNS_SUBNET.$((i + 1))"
    NETNS_IF[$host]="$ifn"
    echo "$host $ns" >>"$NETNS_MAP"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="50000 60999"
    if [ "$NETNS_DECOYS" = 1 ]; then
      ip -n "$ns" link add docker0 type bridge forward_delay 0
      ip -n "$ns" addr add 172.17.0.1/16 dev docker0
      ip -n "$ns" link add vethdk0 type veth peer name vethdk0p
      ip -n "$ns" link set vethdk0 master docker0
      ip -n "$ns" link set vethdk0 up
      ip -n "$ns" link set vethdk0p up
      ip -n "$ns" link set docker0 up
      ip -n "$ns" link add "$NETNS_DECOY_IF" type veth peer name "${NETNS_DECOY_IF}p"
      ip -n "$ns" addr add "10.200.$i.1/24" dev "$NETNS_DECOY_IF"
      ip -n "$ns" addr add "10.200.$i.2/24" dev "${NETNS_DECOY_IF}p"
      ip -n "$ns" link set "$NETNS_DECOY_IF" up
      ip -n "$ns" link set "${NETNS_DECOY_IF}p" up
    fi
    if [ "$NETNS_DECOYS" = docker ]; then
      ip -n "$ns" link add docker0 type bridge forward_delay 0
      ip -n "$ns" addr add 172.17.0.1/16 dev docker0
      ip -n "$ns" link add vethdk0 type veth peer name vethdk0p
      ip -n "$ns" link set vethdk0 master docker0
      ip -n "$ns" link set vethdk0 up
      ip -n "$ns" link set vethdk0p up
      ip -n "$ns" link set docker0 up
      ip link add "${NETNS_ID}u$i" netns "$ns" type veth peer name "u$i" netns "$sw"
      ip -n "$ns" link set "${NETNS_ID}u$i" name usb0
      ip -n "$ns" addr add "169.254.10.$((i + 1))/16" dev usb0
      ip -n "$ns" link set usb0 up
      ip -n "$sw" link set "u$i" master usb
      ip -n "$sw" link set "u$i" up
      ip link add "${NETNS_ID}m$i" netns "$ns" type veth peer name "m$i" netns "$sw"
      ip -n "$ns" link set "${NETNS_ID}m$i" name eno1
      ip -n "$ns" addr add "10.78.$((i / 2)).$((i + 1))/24" dev eno1
      ip -n "$ns" link set eno1 up
      ip -n "$sw" link set "m$i" master "mg$((i / 2))"
      ip -n "$sw" link set "m$i" up
    fi
    if [ "$NETNS_RICH" = 1 ]; then
      if [ "$NETNS_DECOYS" = 0 ]; then
        ip -n "$ns" link add docker0 type bridge forward_delay 0
        ip -n "$ns" addr add 172.17.0.1/16 dev docker0
        ip -n "$ns" link set docker0 up
      fi
      ip link add "${NETNS_ID}m$i" netns "$ns" type veth peer name "m$i" netns "$sw"
      ip -n "$ns" link set "${NETNS_ID}m$i" name eno1
      ip -n "$ns" addr add "10.78.0.$((i + 1))/24" dev eno1
      ip -n "$ns" link set eno1 up
      ip -n "$sw" link set "m$i" master mgmt
      ip -n "$sw" link set "m$i" up
      ip -n "$ns" link add usb0 type veth peer name usb0p
      ip -n "$ns" addr add 169.254.3.1/16 dev usb0
      ip -n "$ns" link set usb0 up
      ip -n "$ns" link set usb0p up
    fi
    ip link add "${NETNS_ID}a$i" netns "$ns" type veth peer name "p$i" netns "$sw"
    ip -n "$ns" link set "${NETNS_ID}a$i" name "$ifn"
    ip -n "$ns" addr add "${NETNS_ADDR[$host]}/24" dev "$ifn"
    ip -n "$ns" link set "$ifn" up
    ip -n "$sw" link set "p$i" master sw
    ip -n "$sw" link set "p$i" up
  done
  NETNS_MPI_ARGS=(--mca plm_rsh_agent "$NETNS_AGENT" --mca plm_rsh_no_tree_spawn 1
    --mca btl "tcp,vader,self" --mca btl_tcp_port_min_v4 41000 --mca btl_tcp_port_range_v4 1000
    --bind-to none --oversubscribe)
  # Without it mpirun waits ~8 minutes (Open MPI's default OOB keepalive) for a lost host's daemon
  # after the ranks left, where gpulaunch cannot close mpirun's connection to it itself (README,
  # "When a host is lost"); NETNS_KEEPALIVE=0 leaves it out, as a user's plain mpirun would.
  [ "$NETNS_KEEPALIVE" = 0 ] || NETNS_MPI_ARGS+=(--mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 1
    --mca oob_tcp_keepalive_probes 3)
  # Host names resolve inside the namespaces, as on a cluster (ip netns exec bind-mounts
  # /etc/netns/NS/hosts over /etc/hosts): each name to its routable address.
  for host in "${NETNS_HOSTS[@]}"; do
    mkdir -p "/etc/netns/${NETNS_NS[$host]}"
    { echo "127.0.0.1 localhost"; for i in "${NETNS_HOSTS[@]}"; do echo "${NETNS_ADDR[$i]} $i"; done; } \
      >"/etc/netns/${NETNS_NS[$host]}/hosts"
  done
  export NETNS_MAP
  echo "netns: ${NETNS_HOSTS[*]} in namespaces $NETNS_ID-h*, switch $NETNS_ID-sw"
  # Wait until every routable link has carrier (veth: immediate, bridges: a moment).
  for host in "${NETNS_HOSTS[@]}"; do
    for ((i = 0; i < 50; i++)); do
      ip -n "${NETNS_NS[$host]}" -br link show "${NETNS_IF[$host]}" | grep -q ' UP ' && break
      sleep 0.05
    done
  done
}

# netns_mpirun ARGS...: mpirun started on the first host with the harness's options.
netns_mpirun() {
  netns_exec "${NETNS_HOSTS[0]}" env NETNS_MAP="$NETNS_MAP" \
    "${MPIEXEC:-mpirun}" "${NETNS_MPI_ARGS[@]}" "$@"
}

# netns_run NP HOSTS PROG ARGS...: netns_mpirun -np NP --host HOSTS PROG ARGS..., passing
# GPULAUNCH_TIMEOUT and NCCL_SOCKET_IFNAME to the ranks when they are set; stdout in
# $NETNS_DIR/out, stderr in $NETNS_DIR/err, the exit status in RC, the wall time (s) in SECS.
# With NETNS_RUN_LIMIT=S, an mpirun still running after S seconds is ended (RC 124) after every
# host's processes and where they wait are appended to err.
# A failing job does not end a `set -e` script.
# shellcheck disable=SC2034 # RC and SECS are for the caller
netns_run() {
  local np=$1 hosts=$2 t0
  shift 2
  local -a x=()
  [ -n "${GPULAUNCH_TIMEOUT:-}" ] && x+=(-x GPULAUNCH_TIMEOUT)
  [ -n "${NCCL_SOCKET_IFNAME:-}" ] && x+=(-x NCCL_SOCKET_IFNAME)
  t0=$(date +%s.%N)
  RC=0
  if [ -z "${NETNS_RUN_LIMIT:-}" ]; then
    netns_mpirun -np "$np" --host "$hosts" "${x[@]}" "$@" >"$NETNS_DIR/out" 2>"$NETNS_DIR/err" || RC=$?
  else
    # A bound on the whole mpirun: past it, what still runs in each host goes into err (where it
    # waits: the kernel's wchan) before mpirun is ended, and RC is 124 -- a hang says where.
    netns_mpirun -np "$np" --host "$hosts" "${x[@]}" "$@" >"$NETNS_DIR/out" 2>"$NETNS_DIR/err" &
    local pid=$! i h p
    for ((i = 0; i < NETNS_RUN_LIMIT * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      {
        echo "netns_run: mpirun still running after ${NETNS_RUN_LIMIT} s; in each host:"
        for h in "${NETNS_HOSTS[@]}"; do
          for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do
            echo "  $h: $(ps -o pid=,stat=,wchan:24=,args= -p "$p" 2>/dev/null | cut -c1-160)"
          done
        done
      } >>"$NETNS_DIR/err"
      kill -TERM "$pid" 2>/dev/null || true
      sleep 3
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      RC=124
    else
      wait "$pid" || RC=$?
    fi
  fi
  SECS=$(echo "$(date +%s.%N) - $t0" | bc)
}

netns_block_new_tcp() {
  local src="$1" dst="$2"
  netns_exec "$dst" iptables -A INPUT -p tcp --syn -s "${NETNS_ADDR[$src]}" -d "${NETNS_ADDR[$dst]}" \
    -m multiport ! --dports 41000:42999 -j DROP
}

netns_link_down() {
  ip -n "${NETNS_NS[$1]}" link set "${NETNS_IF[$1]}" down
}
