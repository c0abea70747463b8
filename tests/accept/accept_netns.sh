#!/usr/bin/env bash
# `gpulaunch accept` on a 4-host job made of network namespaces (tests/netns/netns.sh): with one
# host's link slowed by tbf, the bad-node search must name that host (ring or halving), put it in
# the exclude list, the JUnit file and the JSON; with all links healthy it must name nobody; with
# new TCP connections from one host to another blocked, reachability must fail naming both; with
# healthy links and a job bandwidth threshold that cannot hold, the ring names nobody and the
# halving that follows blames no node (fallback).
#   accept_netns.sh GPULAUNCH slow|healthy|halving|blocked|fallback
set -euo pipefail
GPULAUNCH=${1:?usage: accept_netns.sh GPULAUNCH slow|healthy|halving}
CASE=${2:?case}
SRC=${GPULAUNCH_SOURCE_DIR:?}
HARNESS="$SRC/tests/netns/netns.sh"
if [ ! -r "$HARNESS" ]; then
  echo "SKIP: the netns harness $HARNESS is not in this tree"
  exit 77
fi
# shellcheck disable=SC1090,SC1091 # the harness, found at run time
. "$HARNESS"
netns_require
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d /tmp/gplaccept.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
netns_setup 4 # its trap runs first, then ours (both armed on EXIT)
SLOW=h2
if [ "$CASE" = blocked ]; then
  command -v iptables >/dev/null || { echo "SKIP: iptables is not installed"; exit 77; }
  # MPI's own ports stay open (the job runs); the preflight's and accept's TCP probes do not.
  netns_block_new_tcp h1 h2 || { echo "SKIP: iptables does not work in a namespace here"; exit 77; }
elif [ "$CASE" != healthy ] && [ "$CASE" != fallback ]; then
  # Only this host's outgoing traffic on its routable link: 50 Mbit/s instead of ~Gbit/s.
  netns_exec "$SLOW" tc qdisc add dev "${NETNS_IF[$SLOW]}" root tbf rate 50mbit burst 32kbit latency 400ms
fi
SEARCH=ring
[ "$CASE" = halving ] && SEARCH=halving
# The "links" here are veths whose speed is whatever CPU time the kernel gets on a machine shared
# with everything else: healthy pairs vary by 30-50% from one measurement to the next (the run
# reports this noise). The slowed host runs at 1-2% of the others, so any pair_fraction between
# about 0.05 and 0.5 separates them; 0.3 leaves room on both sides. On a real cluster the default
# (0.93, ClusterKit's) is right.
cat >"$OUT/accept.conf" <<CONF
[accept]
# Small buffers: a 50 Mbit/s link moves 4 MiB in under a second.
size = 4M
pair_size = ${PAIR_SIZE:-2M}
iters = ${ITERS:-4}
budget = ${BUDGET:-3s}
min_busbw = $([ "$CASE" = fallback ] && echo 1000 || echo 0.001)
pair_fraction = ${FRACTION:-0.3}
search = $SEARCH
CONF
chmod 755 "$OUT"
set +e
netns_mpirun -np 4 --host h0,h1,h2,h3 "$GPULAUNCH" accept "$OUT/accept.conf" --json "$OUT/a.json" \
  --junit "$OUT/a.xml" --exclude-out "$OUT/bad.txt" --html "$OUT/a.html" >"$OUT/out" 2>"$OUT/err"
rc=$?
set -e
cat "$OUT/out"
# ACCEPT_KEEP_DIR=DIR keeps the reports (JSON, JUnit, HTML, exclude list, terminal output).
if [ -n "${ACCEPT_KEEP_DIR:-}" ]; then cp "$OUT"/a.* "$OUT"/bad.txt "$OUT"/out "$ACCEPT_KEEP_DIR"/ 2>/dev/null || true; fi
fail() {
  echo "FAIL: $*"
  tail -n 30 "$OUT/err"
  exit 1
}
[ -s "$OUT/a.json" ] || fail "no JSON report"
bad=$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["bad_hosts"]))' "$OUT/a.json")
echo "exit $rc, bad hosts: '$bad'"
if [ "$CASE" = blocked ]; then
  [ "$rc" = 73 ] || fail "exit status $rc, expected 73"
  st=$(python3 -c 'import json,sys; print(",".join(c["status"] for c in json.load(open(sys.argv[1]))["checks"] if c["name"] == "reachability"))' "$OUT/a.json")
  [ "$st" = fail,fail ] || fail "reachability rows: '$st' (expected the preflight's and accept's own to fail)"
  grep -Eq 'rank 1 \(host h1\) could not reach rank 2 \(host h2\)' "$OUT/a.json" || fail "the blocked path is not named"
  xmllint --noout --schema "$SRC/tests/accept/junit.xsd" "$OUT/a.xml" || fail "JUnit file does not validate"
  [ "$(xmllint --xpath 'count(//testsuite[@name="job"]/testcase[starts-with(@name,"reach")]/failure)' "$OUT/a.xml")" -ge 2 ] ||
    fail "no reachability failure in the JUnit file"
elif [ "$CASE" = fallback ]; then
  [ "$rc" = 73 ] || fail "exit status $rc, expected 73 (busbw below 1000 GB/s)"
  [ -z "$bad" ] || fail "healthy links, yet bad hosts named: $bad"
  mode=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["search"]["mode"])' "$OUT/a.json")
  [ "$mode" = ring+halving ] || fail "search mode '$mode', expected ring+halving"
  grep -Eq '"phase":[[:space:]]*"halving"' "$OUT/a.json" || fail "no halving measurement"
  grep -q 'no single node to blame' "$OUT/a.json" || fail "the halving's verdict is missing"
elif [ "$CASE" = healthy ]; then
  [ -z "$bad" ] || fail "healthy links, yet bad hosts named: $bad"
  [ "$rc" = 0 ] || fail "healthy job exited $rc"
  grep -q '^pass.*pair_search' "$OUT/out" || fail "pair_search did not pass"
else
  [ "$bad" = "$SLOW" ] || fail "expected exactly $SLOW to be named, got '$bad'"
  [ "$rc" = 73 ] || fail "exit status $rc, expected 73"
  grep -qx "$SLOW" "$OUT/bad.txt" || fail "$SLOW not in the exclude list"
  grep -q "name=\"bad_node\[$SLOW\]\"" "$OUT/a.xml" || fail "no bad_node testcase for $SLOW in the JUnit file"
  xmllint --noout --schema "$SRC/tests/accept/junit.xsd" "$OUT/a.xml" || fail "JUnit file does not validate"
  # The page's chart: one bar per measured group, the slow host's in red.
  nm=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["search"]["measurements"]))' "$OUT/a.json")
  nb=$(xmllint --xpath 'count(//*[local-name()="rect" and contains(@class,"pair")])' "$OUT/a.html")
  if [ "$nm" -lt 3 ] || [ "$nb" != "$nm" ]; then fail "chart: $nb bars for $nm measurements"; fi
  nf=$(xmllint --xpath "count(//*[local-name()=\"rect\" and contains(@class,\"flagged\") and contains(@data-pair,\"$SLOW\")])" "$OUT/a.html")
  [ "$nf" -ge 2 ] || fail "chart: the slow host's pairs are not flagged"
  if [ "$CASE" = halving ]; then
    grep -q '"phase":\s*"halving"' "$OUT/a.json" || fail "no halving measurement in the JSON"
  fi
fi
echo "ok - accept netns $CASE"
