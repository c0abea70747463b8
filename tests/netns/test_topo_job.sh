#!/usr/bin/env bash
# `gpulaunch topo` under mpirun over 3 netns hosts (2 ranks each): rank 0 prints the whole job,
# with each node's agreed interface; the single-node document keeps its shape; a wrong
# NCCL_SOCKET_IFNAME still prints the plans (no interface) and exits 67.
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
source "$(dirname "$0")/../lib.sh"
netns_begin

NETNS_IFNAMES="eth0 ens5" netns_setup 3
T=$NETNS_DIR
export GPULAUNCH_TIMEOUT=10
topo() { # topo NP HOSTS ARGS... -> $T/out, $T/err, $RC
  local np=$1 hosts=$2
  shift 2
  netns_run "$np" "$hosts" "$GPULAUNCH" topo --no-gpus "$@"
}

# 1. JSON: rank 0's node at the top level as alone, plus nodes[] with every node's interface.
topo 6 h0:2,h1:2,h2:2 --json
if [ "$RC" != 0 ]; then bad "json: exit $RC"; else
  if python3 - "$T/out" "${NETNS_ADDR[h0]}" "${NETNS_ADDR[h1]}" "${NETNS_ADDR[h2]}" <<'EOF'; then pass "topo --json over 3 hosts: nodes[] with eth0/ens5/eth0 and their addresses, MASTER_ADDR h0's"; else bad "json content"; fi
import json, sys
d = json.load(open(sys.argv[1]))
addrs = sys.argv[2:]
assert d["host"] == "h0" and d["nnodes"] == 3 and d["master_addr"] == addrs[0], d.get("master_addr")
for k in ("gpus", "nics", "ranks"):
    assert k in d, k
assert [n["host"] for n in d["nodes"]] == ["h0", "h1", "h2"]
assert [n["ifname"] for n in d["nodes"]] == ["eth0", "ens5", "eth0"], [n["ifname"] for n in d["nodes"]]
assert [n["addr"] for n in d["nodes"]] == addrs
for n in d["nodes"]:
    assert len(n["ranks"]) == 2, n["ranks"]
    for r in n["ranks"]:
        assert r["env"]["NCCL_SOCKET_IFNAME"] == "=" + n["ifname"], r["env"]
    assert "gpus" in n and "nics" in n
assert d["ranks"] == d["nodes"][0]["ranks"]
EOF
  [ "$(grep -c '"nnodes"' "$T/out")" = 1 ] || bad "json: printed more than once"
fi

# 2. Text: every node's section once, from rank 0.
topo 6 h0:2,h1:2,h2:2
if [ "$RC" != 0 ]; then bad "text: exit $RC"; else
  for i in 0 1 2; do
    [ "$(grep -c "^== node $i of 3: h$i, interface ${NETNS_IF[h$i]} (${NETNS_ADDR[h$i]}) ==" "$T/out")" = 1 ] || bad "text: node $i header"
  done
  grep -q "^MASTER_ADDR=${NETNS_ADDR[h0]} (node 0's eth0)" "$T/out" || bad "text: MASTER_ADDR line"
  [ "$(grep -c '^Topology: live (host ' "$T/out")" = 3 ] || bad "text: not 3 node reports"
  pass "topo text over 3 hosts: one section per node with its interface, MASTER_ADDR"
fi

# 3. One host under mpirun: the single-node shape, no "nodes".
topo 2 h1:2 --json
if [ "$RC" != 0 ]; then bad "one host: exit $RC"; else
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "nodes" not in d and len(d["ranks"]) == 2' "$T/out"; then
    pass "one host: the single-node document, unchanged"
  else
    bad "one host: shape changed"
  fi
fi

# 4. A wrong NCCL_SOCKET_IFNAME: plans printed without an interface, one error, exit 67.
NCCL_SOCKET_IFNAME='=ib0' topo 3 h0,h1,h2 --json
[ "$RC" = 67 ] || bad "=ib0: exit $RC, expected 67"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["master_addr"] is None and all(n["ifname"] is None for n in d["nodes"])' "$T/out" ||
  bad "=ib0: interfaces not null"
[ "$(grep -c 'network interface agreement failed' "$T/err")" = 1 ] || bad "=ib0: not one message"
[ "$FAILED" = 0 ] && pass "NCCL_SOCKET_IFNAME==ib0: plans without interface, one message, exit 67"
exit "$FAILED"
