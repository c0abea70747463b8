#!/usr/bin/env bash
# Interface agreement and preflight under a real mpirun on this one host: one node for real, and
# the same host split into "fake" nodes (rank % K) whose preflight runs on 127.0.0.x.
set -euo pipefail
DRIVER=${1:?usage: net_mpi.sh NET_DRIVER}
MPIEXEC=${MPIEXEC:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
unset NCCL_SOCKET_IFNAME
T=$(mktemp -d /tmp/gplnet.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
skipped="" # a case this machine cannot run: the test then ends as skipped (77), with the reason
bad() { echo "FAIL: $*"; for f in out err; do echo "---- $f"; tail -n 30 "$T/$f"; done; fail=1; }
ok() { echo "ok - $*"; }
run() { # run NP ARGS... -> $T/out, $T/err, $RC
  local np=$1
  shift
  set +e
  "$MPIEXEC" -np "$np" --oversubscribe --bind-to none "$DRIVER" "$@" >"$T/out" 2>"$T/err"
  RC=$?
  set -e
}
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p"; }

# 1. One node, 4 ranks: every rank agrees, MASTER_ADDR is the node's own address, no preflight.
run 4 --no-topo
if [ "$RC" != 0 ]; then bad "single node: exit $RC"; else
  n=$(grep -c '^net .*status=0' "$T/out" || true)
  [ "$n" = 4 ] || bad "single node: $n of 4 ranks status=0"
  vals=$(grep '^net ' "$T/out" | field value | sort -u | wc -l)
  [ "$vals" = 1 ] || bad "single node: ranks disagree on NCCL_SOCKET_IFNAME"
  addr=$(grep '^net rank=0 ' "$T/out" | field addr)
  master=$(grep '^net rank=0 ' "$T/out" | field master)
  [ "$addr" = "$master" ] || bad "single node: master $master is not rank 0's address $addr"
  grep -q '^preflight rank=0 rc=0 probes=0' "$T/out" || bad "single node: a preflight ran"
  ok "single node: $(grep '^net rank=0 ' "$T/out" | field value) $addr for all 4 ranks; $(grep '^timing' "$T/out")"
fi

# 2. The live topology gives the rank's plan its NCCL_SOCKET_IFNAME.
run 2
if [ "$RC" != 0 ]; then bad "with topology: exit $RC"; else
  v=$(grep '^net rank=1 ' "$T/out" | field value)
  e=$(grep '^net rank=1 ' "$T/out" | field plan_env)
  if [ "$v" = "$e" ] && [ "$v" != - ]; then ok "plan env NCCL_SOCKET_IFNAME=$e"; else bad "plan env '$e' != value '$v'"; fi
fi

# 3. Four fake nodes on this host: every "node" has the very same addresses, which can never
#    connect nodes: with the user's value (everything but lo) that is an error, said once.
if ip -br addr 2>/dev/null | awk '$1 != "lo" && $3 ~ /^[0-9]+\./ { f = 1 } END { exit !f }'; then
  run 4 --no-topo --fake-nodes 4 --user '^lo'
  [ "$RC" = 67 ] || bad "fake nodes, ^lo: exit $RC, expected 67"
  grep -q "the same address as on $(hostname), $(hostname), $(hostname): it cannot tell the nodes apart" "$T/err" ||
    bad "fake nodes, ^lo: the copied address not named"
  [ "$(grep -c 'network interface agreement failed' "$T/err")" = 1 ] || bad "fake nodes, ^lo: not one message"
  [ "$fail" = 0 ] && ok "fake nodes, NCCL_SOCKET_IFNAME=^lo: the same address on every node is an error, said once"
else
  skipped="case 3 needs an interface with an IPv4 address besides lo, and this machine has none"
fi

# 3b. The preflight alone between fake nodes on 127.0.0.x: ring and all, with the job's token.
for mode in ring all; do
  run 4 --no-topo --fake-nodes 4 --loopback --probe "$mode" --probe-timeout 3
  if [ "$RC" != 0 ]; then bad "fake nodes ($mode): exit $RC"; continue; fi
  probes=$(grep '^preflight' "$T/out" | field probes | paste -sd+ | bc)
  want=$([ "$mode" = ring ] && echo 4 || echo 12)
  [ "$probes" = "$want" ] || bad "fake nodes ($mode): $probes probes, expected $want"
  acc=$(grep '^preflight' "$T/out" | field accepted | paste -sd+ | bc)
  [ "$acc" = "$want" ] || bad "fake nodes ($mode): listeners accepted $acc, expected $want"
  ok "fake nodes, probe $mode: $probes connections proved; $(grep '^timing' "$T/out")"
done

# 4. A user value that matches nothing: exit 67, one message from rank 0 naming each node.
run 4 --no-topo --fake-nodes 2 --user '=nosuch0'
[ "$RC" = 67 ] || bad "wrong NCCL_SOCKET_IFNAME: exit $RC, expected 67"
[ "$(grep -c 'network interface agreement failed' "$T/err")" = 1 ] || bad "wrong NCCL_SOCKET_IFNAME: not exactly one message"
grep -q "NCCL_SOCKET_IFNAME==nosuch0 (--user) matches no running interface with an address on node 0 ($(hostname))" "$T/err" ||
  bad "wrong NCCL_SOCKET_IFNAME: node 0 not named"
grep -q "on node 1 ($(hostname)); its interfaces: .*lo (loopback" "$T/err" || bad "wrong NCCL_SOCKET_IFNAME: node 1 or its interfaces not listed"
[ "$fail" = 0 ] && ok "wrong NCCL_SOCKET_IFNAME: exit 67, one message naming both nodes"

# 5. Syntax NCCL would ignore, given in the environment: one line for the whole job.
set +e
NCCL_SOCKET_IFNAME=e "$MPIEXEC" -np 4 --oversubscribe --bind-to none -x NCCL_SOCKET_IFNAME "$DRIVER" --no-topo --fake-nodes 2 >"$T/out" 2>"$T/err"
RC=$?
set -e
[ "$RC" = 67 ] || bad "NCCL_SOCKET_IFNAME=e: exit $RC"
[ "$(grep -c "NCCL_SOCKET_IFNAME=e (environment): 'e' is shorter than 2 characters" "$T/err")" = 1 ] ||
  bad "NCCL_SOCKET_IFNAME=e: the message is not there exactly once"
[ "$fail" = 0 ] && ok "NCCL_SOCKET_IFNAME=e: exit 67, said once"
if [ "$fail" = 0 ] && [ -n "$skipped" ]; then
  echo "SKIP: $skipped (every other case passed)"
  exit 77
fi
exit "$fail"
