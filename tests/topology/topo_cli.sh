#!/usr/bin/env bash
# "A && ok || bad" below: ok always succeeds, so it is if-then-else here.
# shellcheck disable=SC2015
# `gpulaunch topo` through its test driver: JSON contract on every shared file and on variants
# (renamed NICs, GPU OS devices removed), --json FILE, exit codes for bad files and bad arguments.
set -uo pipefail
CLI=${1:?usage: topo_cli.sh TOPO_CLI}
DIR=${GPULAUNCH_TOPOLOGY_DIR:?}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# expect_rc RC WHAT CMD...: the command exits with RC; stderr kept in $TMP/err.
expect_rc() {
  local want=$1 what=$2
  shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ "$rc" = "$want" ]; then ok "$what (exit $rc)"; else bad "$what: exit $rc, expected $want"; cat "$TMP/err"; fi
}

# 1. Every hwloc file: --json on stdout parses and has the contract's fields.
# The issue-10 contract, read from the JSON alone (ranks[].env, ranks[].gpu, ranks[].local_rank,
# gpus[].nics): with as many ranks as GPUs and half as many, every rank of the node gets the same
# CUDA_VISIBLE_DEVICES and NCCL_IB_HCA; device LOCAL_RANK of what the program sees is the planned
# GPU; NCCL_IB_HCA holds a nearest RDMA NIC of every GPU (best class, then NUMA distance, then
# fewest bridges, from gpus[].nics) and no NIC nearest to no GPU.
for f in "$DIR"/hwloc-*.xml; do
  ngpu=$("$CLI" --topology "$f" --json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["gpus"]))')
  for rpn in "$ngpu" $((ngpu / 2)); do
  [[ $rpn -ge 1 ]] || continue
  if ! "$CLI" --topology "$f" --ranks-per-node "$rpn" --json >"$TMP/j.json" 2>"$TMP/err"; then bad "$(basename "$f"): exit $?"; continue; fi
  python3 - "$TMP/j.json" "$(basename "$f") ($rpn ranks)" "$rpn" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1])); name = sys.argv[2]; rpn = int(sys.argv[3])
assert d["gpus"], name + ": no gpus"
order = ["PIX", "PXB", "PHB", "NODE", "SYS"]
for i, g in enumerate(d["gpus"]):
    assert g["index"] == i and isinstance(g["pci"], str) and len(g["pci"]) == 12, (name, g)
    assert isinstance(g["numa"], list) and g["numa"] and all(isinstance(x, int) for x in g["numa"]), (name, g)
    assert isinstance(g["cpus"], str) and g["cpus"], (name, g)
    for n in g["nics"]:
        assert set(("name", "netdev", "pci", "path")) <= set(n) and n["path"] in order, (name, n)
    paths = [order.index(n["path"]) for n in g["nics"]]
    assert paths == sorted(paths), (name, "gpus[].nics not best first", paths)
assert isinstance(d["nics"], list)
assert len(d["ranks"]) == rpn, name
gpus = set()
for key in ("CUDA_VISIBLE_DEVICES", "NCCL_IB_HCA", "CUDA_DEVICE_ORDER"):
    vals = set(r["env"].get(key) for r in d["ranks"])
    assert len(vals) == 1, (name, key, "differs between the node's ranks", vals)
for r in d["ranks"]:
    assert r["gpu"] not in gpus; gpus.add(r["gpu"])
    cvd = r["env"].get("CUDA_VISIBLE_DEVICES")
    seen = [int(x) for x in cvd.split(",")] if cvd is not None else list(range(len(d["gpus"])))
    assert r["env"].get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID", (name, r["env"])
    assert seen[r["local_rank"]] == r["gpu"], (name, "device LOCAL_RANK is not the rank's GPU", r)
hca = d["ranks"][0]["env"].get("NCCL_IB_HCA")
def nearest(g):
    rd = [n for n in g["nics"] if n.get("rdma")]
    if not rd: return set()
    key = lambda n: (order.index(n["path"]), n.get("numa_distance") or 0, n.get("hops") or 0)
    best = min(key(n) for n in rd)
    return set(n["rdma"] for n in rd if key(n) == best)
near = [nearest(g) for g in d["gpus"]]
if any(near):
    assert hca and hca.startswith("="), (name, "no NCCL_IB_HCA", hca)
    held = []
    for e in hca[1:].split(","):
        dev, _, port = e.partition(":")
        assert port.isdigit(), (name, "NCCL_IB_HCA entry without port", e)
        held.append(dev)
    for i, s in enumerate(near):
        assert not s or s & set(held), (name, "GPU%d: none of its nearest %s in %s" % (i, sorted(s), hca))
    anyn = set().union(*near)
    for dev in held:
        assert dev in anyn, (name, dev, "in NCCL_IB_HCA but nearest to no GPU")
else:
    assert hca is None, (name, "NCCL_IB_HCA without RDMA NICs", hca)
print("ok:", name)
PY
  done
done

# 2. Variants: (a) the EFA names of p5en reversed, (b) XE8640 with every GPU OS device removed
#    (GPUs as bare PCI devices): the plan follows PCI locality, not names or OS devices.
python3 - "$DIR" "$TMP" <<'PY' || fail=1
import re, sys
d, tmp = sys.argv[1], sys.argv[2]
s = open(d + "/hwloc-aws-p5en.48xlarge.xml").read()
names = sorted(set(re.findall(r'name="(rdmap\d+s0)"', s)))
ren = dict(zip(names, ["efa%02d" % (len(names) - 1 - i) for i in range(len(names))]))
open(tmp + "/p5en-renamed.xml", "w").write(re.sub(r'name="(rdmap\d+s0)"', lambda m: 'name="%s"' % ren[m.group(1)], s))
open(tmp + "/rename.map", "w").write("\n".join("%s %s" % kv for kv in ren.items()))
s = open(d + "/hwloc-dell-xe8640-4xh100-llnl-ipa20.xml").read()
s2 = re.sub(r'<object type="OSDev"[^>]*name="(cuda|nvml|opencl)[^"]*"[^>]*?(/>|>.*?</object>)', "", s, flags=re.S)
assert s2 != s and "cuda0" not in s2
open(tmp + "/xe8640-no-osdev.xml", "w").write(s2)
PY
"$CLI" --topology "$DIR/hwloc-aws-p5en.48xlarge.xml" --json >"$TMP/a.json" 2>/dev/null
"$CLI" --topology "$TMP/p5en-renamed.xml" --json >"$TMP/b.json" 2>/dev/null
"$CLI" --topology "$DIR/hwloc-dell-xe8640-4xh100-llnl-ipa20.xml" --json >"$TMP/c.json" 2>/dev/null
"$CLI" --topology "$TMP/xe8640-no-osdev.xml" --json >"$TMP/d.json" 2>/dev/null
python3 - "$TMP" <<'PY' || fail=1
import json, sys
t = sys.argv[1]
ren = dict(l.split() for l in open(t + "/rename.map"))
a, b = json.load(open(t + "/a.json")), json.load(open(t + "/b.json"))
for ra, rb in zip(a["ranks"], b["ranks"]):
    assert ra["nic_pci"] == rb["nic_pci"], (ra["nic"], rb["nic"])
    # The same NICs by PCI place, under their new names.
    want = sorted(ren[e.split(":")[0]] + ":1" for e in ra["env"]["NCCL_IB_HCA"][1:].split(","))
    assert sorted(rb["env"]["NCCL_IB_HCA"][1:].split(",")) == want, (ra, rb)
print("ok: p5en with renamed EFAs picks by PCI locality")
c, d = json.load(open(t + "/c.json")), json.load(open(t + "/d.json"))
assert [g["osdevs"] for g in d["gpus"]] == [[], [], [], []], d["gpus"]
for k in ("pci", "numa", "cpus"):
    assert [g[k] for g in c["gpus"]] == [g[k] for g in d["gpus"]], k
assert [(r["gpu"], r["cpus"], r["nic"], r["env"]) for r in c["ranks"]] == [(r["gpu"], r["cpus"], r["nic"], r["env"]) for r in d["ranks"]]
print("ok: XE8640 without cuda/nvml/opencl OS devices gives the same plan")
PY

# 3. --json FILE writes the file and the text report on stdout; --json=- is stdout.
expect_rc 0 "--json FILE" "$CLI" --topology "$DIR/hwloc-juwels-booster-jwb0001.xml" --json "$TMP/out.json"
grep -q "^GPU0 " "$TMP/out" && ok "text report on stdout with --json FILE" || bad "no matrix on stdout"
grep -q "NCCL_IB_HCA==mlx5_1:1,mlx5_0:1,mlx5_3:1,mlx5_2:1" "$TMP/out" && ok "plan printed with env" || bad "no NCCL_IB_HCA in the text"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['ranks'][0]['nic']=='mlx5_1'" "$TMP/out.json" \
  && ok "--json FILE content" || bad "--json FILE content"
expect_rc 0 "--json=-" "$CLI" --topology "$DIR/hwloc-juwels-booster-jwb0001.xml" --json=- --ranks-per-node 2
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['ranks'])==2" "$TMP/out" && ok "--json=- is JSON" || bad "--json=-"
expect_rc 0 "--topology before the mode word" "$CLI" --pre-topology "$DIR/hwloc-llnl-pascal-2xp100-1ib.xml" --json
grep -q '"0000:07:00.0"' "$TMP/out" && ok "pre-mode --topology used" || bad "pre-mode --topology ignored"
expect_rc 0 "bind numa" "$CLI" --topology "$DIR/hwloc-llnl-pascal-2xp100-1ib.xml" --bind numa --json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert [r['cpus'] for r in d['ranks']]==['0-17,36-53']*2" "$TMP/out" \
  && ok "bind numa gives the whole local set" || bad "bind numa"

# 4. Errors: exit codes and messages.
expect_rc 66 "more ranks than GPUs" "$CLI" --topology "$DIR/hwloc-llnl-pascal-2xp100-1ib.xml" --ranks-per-node 3
grep -q "3 ranks per node but this node has 2 usable GPUs" "$TMP/err" && ok "message names the counts" || bad "message: $(cat "$TMP/err")"
expect_rc 0 "more ranks than GPUs with --no-gpus" "$CLI" --topology "$DIR/hwloc-llnl-pascal-2xp100-1ib.xml" --ranks-per-node 3 --no-gpus
expect_rc 66 "NCCL topology file" "$CLI" --topology "$DIR/nccl-topo-azure-ndv4.xml"
grep -q "NCCL topology file" "$TMP/err" && ok "says it is an NCCL topology file" || bad "message: $(cat "$TMP/err")"
expect_rc 66 "missing file" "$CLI" --topology "$TMP/nope.xml"
# An os_index hwloc would read as another number (issue 29): the file, the value and its line.
sed 's/type="PU" os_index="1"/type="PU" os_index="-7"/' "$DIR/hwloc-llnl-pascal-2xp100-1ib.xml" >"$TMP/badidx.xml"
expect_rc 66 "os_index=\"-7\" on a PU" "$CLI" --topology "$TMP/badidx.xml"
grep -q 'topology file .*badidx.xml: 1 of [0-9]* objects have an os_index .*os_index="-7" at line 61, on an object of type PU' "$TMP/err" \
  && ok "names the file, the value and its line" || bad "message: $(cat "$TMP/err")"
sed 's/type="NUMANode" os_index="1"/type="NUMANode" os_index="4294967296"/' "$DIR/hwloc-llnl-pascal-2xp100-1ib.xml" >"$TMP/badidx.xml"
expect_rc 66 "os_index past 32 bits on a NUMA node" "$CLI" --topology "$TMP/badidx.xml"
expect_rc 64 "bad --ranks-per-node" "$CLI" --ranks-per-node zero
expect_rc 64 "bad --bind" "$CLI" --bind socket
expect_rc 64 "unknown option" "$CLI" --frobnicate
expect_rc 64 "--topology without value" "$CLI" --topology
expect_rc 0 "--help" "$CLI" --help
grep -q "json FILE" "$TMP/out" && ok "usage documents --json FILE" || bad "usage"

# 5. This machine.
expect_rc 0 "live machine" "$CLI" --json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['live'] is True and d['ranks']" "$TMP/out" && ok "live JSON" || bad "live JSON"

[ "$fail" = 0 ] && echo "topo_cli: all passed"
exit "$fail"
