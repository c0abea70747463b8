#!/usr/bin/env bash
# `gpulaunch accept` on a 4-host job made of network namespaces (tests/netns/netns.sh), at the
# default pair_fraction (0.93): with one host's link slowed by tbf, the bad-node search must name
# that host and nobody else (ring or halving), put it in the exclude list, the JUnit file and the
# JSON; with the traffic of one host towards one peer slowed (htb + u32 filter), it must name
# that link and no host; with all links healthy it must name nobody; with new TCP connections
# from one host to another blocked, reachability (the start-up's preflight, which accept reports)
# must fail naming both; with healthy links and
# a job bandwidth threshold that cannot hold, the ring names nobody and the halving that follows
# blames no node (fallback); with one host's link delayed by netem (5 ms each way out of it), the
# latency rows name that host slow with every partner (its three round trips, no link between
# healthy hosts) in the table, JSON, JUnit and HTML, and [accept] max_latency_us fails the 8-byte
# allreduce (latency); in every other case no latency row fails.
#   accept_netns.sh GPULAUNCH slow|link|healthy|halving|blocked|fallback|latency
# Environment: FRACTION (pair_fraction; default: the default), PAIR_SIZE, ITERS, BUDGET,
# ACCEPT_KEEP_DIR (keep the reports there).
set -euo pipefail
GPULAUNCH=${1:?usage: accept_netns.sh GPULAUNCH slow|link|healthy|halving|blocked|fallback|latency}
CASE=${2:?case}
SRC=${GPULAUNCH_SOURCE_DIR:?}
HARNESS="$SRC/tests/netns/netns.sh"
if [ ! -r "$HARNESS" ]; then
  echo "SKIP: the netns harness $HARNESS is not in this tree"
  exit 77
fi
# shellcheck source=tests/lib.sh
. "$SRC/tests/lib.sh"
# shellcheck disable=SC1090,SC1091 # the harness, found at run time
. "$HARNESS"
netns_require
OUT=$T
netns_setup 4 # its trap runs first, then ours (both armed on EXIT)
SLOW=h2
if [ "$CASE" = blocked ]; then
  command -v iptables >/dev/null || { echo "SKIP: iptables is not installed"; exit 77; }
  # MPI's own ports stay open (the job runs); the start-up preflight's TCP probes do not.
  netns_block_new_tcp h1 h2 || { echo "SKIP: iptables does not work in a namespace here"; exit 77; }
elif [ "$CASE" = link ]; then
  # h1's traffic to h2 only (a ring link: h0-h1, h1-h2, h2-h3, h3-h0): an htb class at 50 Mbit/s
  # that a u32 filter sends h2's address to; everything else leaves unclassified, at full speed.
  IF1=${NETNS_IF[h1]}
  netns_exec h1 tc qdisc add dev "$IF1" root handle 1: htb
  netns_exec h1 tc class add dev "$IF1" parent 1: classid 1:2 htb rate 50mbit burst 32kbit quantum 1514
  netns_exec h1 tc filter add dev "$IF1" parent 1: protocol ip prio 1 u32 match ip dst "${NETNS_ADDR[h2]}/32" flowid 1:2 ||
    { echo "SKIP: tc u32 filters do not work here"; exit 77; }
elif [ "$CASE" = latency ]; then
  # Every packet out of h2's routable link waits 5 ms: each of its round trips takes 5 ms more.
  # (A token bucket is no stand-in: small packets pass at once while its bucket refills.)
  netns_exec "$SLOW" tc qdisc add dev "${NETNS_IF[$SLOW]}" root netem delay 5ms ||
    { echo "SKIP: tc netem does not work here (sch_netem)"; exit 77; }
elif [ "$CASE" != healthy ] && [ "$CASE" != fallback ]; then
  # Only this host's outgoing traffic on its routable link: 50 Mbit/s instead of ~Gbit/s.
  netns_exec "$SLOW" tc qdisc add dev "${NETNS_IF[$SLOW]}" root tbf rate 50mbit burst 32kbit latency 400ms
fi
SEARCH=ring
[ "$CASE" = halving ] && SEARCH=halving
[ "$CASE" = latency ] && SEARCH=off # the latency rows alone name the delayed host
# The "links" here are veths whose speed is whatever CPU time the kernel gets on a machine shared
# with everything else: a healthy pair's tries vary by 30-80% (more with other jobs running), and
# a node can stay ~3x slow for seconds. The search measures that noise and, when it is too large
# for pair_fraction to mean anything, flags only what stands out of it (the report says which rule
# it applied); the slowed host runs at ~1% of the others, so the default fraction must still name
# it and only it.
cat >"$OUT/accept.conf" <<CONF
[accept]
# The hosts share this machine, which has no GPU: a CPU-only run, said so (else gpu_count fails).
gpus = 0
# Small buffers: a 50 Mbit/s link moves 2 MiB in under half a second.
size = $([ "$CASE" = latency ] && echo 64K || echo 2M)
pair_size = ${PAIR_SIZE:-2M}
iters = ${ITERS:-4}
budget = ${BUDGET:-$([ "$CASE" = latency ] && echo 10s || echo 3s)}
min_busbw = $([ "$CASE" = fallback ] && echo 1000 || echo 0.001)
${FRACTION:+pair_fraction = $FRACTION}
search = $SEARCH
$([ "$CASE" = latency ] && echo "max_latency_us = 4000")
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
[ -s "$OUT/a.json" ] || fail "no JSON report"
# A sanitizer build reports on the ranks' stderr; that is a failure even when the verdict is right.
if grep -qE 'runtime error:|ERROR: (Address|Undefined|Leak)Sanitizer' "$OUT/err"; then
  grep -E -A5 'runtime error:|Sanitizer' "$OUT/err" | head -n 20
  fail "sanitizer report from a rank"
fi
bad=$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["bad_hosts"]))' "$OUT/a.json")
echo "exit $rc, bad hosts: '$bad'"
if [ "$CASE" != blocked ] && [ "$CASE" != latency ]; then
  # The search says which rule it applied (pair_fraction, or lower because of the noise) and why.
  python3 - "$OUT/a.json" "${FRACTION:-0.93}" <<'PY' || fail "the report does not say the search's rule"
import json, sys
j = json.load(open(sys.argv[1]))
se, asked = j["search"], float(sys.argv[2])
assert abs(j["settings"]["pair_fraction"] - asked) < 1e-9, j["settings"]["pair_fraction"]
assert se["rule"], "no rule"
assert se["pair_fraction"] <= asked + 1e-9
if se["pair_fraction"] < asked:
    assert "noise" in se["rule"] and "instead of %.2f" % asked in se["rule"] or "several times slower" in se["rule"], se["rule"]
print("rule: " + se["rule"])
PY
fi
# Latency: what failed, by name and subject ("latency h2", "rtt h1+h2", "allreduce_latency ...").
lat_fails=$(python3 -c 'import json,sys; print(",".join(sorted(c["name"] + " " + (c["host"] or c["subject"]) for c in json.load(open(sys.argv[1]))["checks"] if c["status"] == "fail" and c["name"] in ("latency", "rtt", "allreduce_latency"))))' "$OUT/a.json")
echo "latency rows failed: '$lat_fails'"
python3 - "$OUT/a.json" <<'PY' || fail "the JSON's latency numbers"
import json, sys
lat = json.load(open(sys.argv[1]))["latency"]
assert [a["bytes"] for a in lat["allreduce"]] == [8, 64, 512, 4096, 32768, 65536], lat["allreduce"]
assert all(a["p99_us"] >= a["p50_us"] > 0 for a in lat["allreduce"]), lat["allreduce"]
assert len(lat["pairs"]) == 6 and all(p["p99_us"] >= p["p50_us"] > 0 and p["round_trips"] >= 3 for p in lat["pairs"]), lat["pairs"]
print("latency: majority %.0f us, pairs %s" % (lat["majority_rtt_us"], ", ".join("%s+%s %.0f/%.0f" % (p["a"], p["b"], p["p50_us"], p["p99_us"]) for p in lat["pairs"])))
PY
if [ "$CASE" = latency ]; then
  [ "$rc" = 73 ] || fail "exit status $rc, expected 73"
  case "$bad" in *"$SLOW"*) ;; *) fail "$SLOW not among the bad hosts: '$bad'" ;; esac
  [ "$lat_fails" = "allreduce_latency allreduce 8 B,latency $SLOW,rtt h0+h2,rtt h1+h2,rtt h2+h3" ] ||
    fail "latency rows failed: '$lat_fails' (expected $SLOW's row, its three round trips and the 8-byte allreduce)"
  links=$(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["bad_links"]))' "$OUT/a.json")
  [ -z "$links" ] || fail "a slow host, yet links named: $links"
  python3 - "$OUT/a.json" <<'PY' || fail "the delayed host's round trips"
import json, sys
lat = json.load(open(sys.argv[1]))["latency"]
bound = 5000
for p in lat["pairs"]:
    slow = "h2" in (p["a"], p["b"])
    assert (p["p50_us"] > bound) == slow, (p, bound)
PY
  grep -q "h2's link is slow: its round trips take" "$OUT/out" || fail "the table does not name h2's slow link"
  grep -q '<< slow' "$OUT/out" || fail "the table's latency block marks nothing slow"
  [ "$(xmllint --xpath "count(//testsuite[@name=\"$SLOW\"]/testcase[starts-with(@name,\"latency\")]/failure)" "$OUT/a.xml")" = 1 ] ||
    fail "no latency failure in $SLOW's JUnit suite"
  xmllint --noout --schema "$SRC/tests/launcher/accept/junit.xsd" "$OUT/a.xml" || fail "JUnit file does not validate"
  grep -q '<h2>Latency</h2>' "$OUT/a.html" || fail "no latency section in the HTML page"
  [ "$(grep -o '<td class="fail" title="p50' "$OUT/a.html" | wc -l)" = 6 ] || fail "the HTML matrix: not 6 slow cells (3 pairs, both halves)"
  echo "ok - latency (netem 5 ms): $SLOW named (its 3 round trips slow, no link blamed), the 8-byte allreduce above max_latency_us; table, JSON, JUnit, HTML"
  exit 0
fi
[ -z "$lat_fails" ] || [ "$CASE" = blocked ] || fail "latency rows failed without a delayed host: $lat_fails"
if [ "$CASE" = blocked ]; then
  [ "$rc" = 73 ] || fail "exit status $rc, expected 73"
  # One answer: the start-up's (the interface is right, the path is blocked); accept reports it.
  st=$(python3 -c 'import json,sys; print(",".join(c["subject"] + ":" + c["status"] for c in json.load(open(sys.argv[1]))["checks"] if c["name"] == "reachability"))' "$OUT/a.json")
  [ "$st" = "interface agreement:pass,preflight:fail" ] ||
    fail "reachability rows: '$st' (expected the interface agreement to pass and the preflight to fail)"
  grep -Eq 'rank 1 \(host h1\) could not reach rank 2 \(host h2\)' "$OUT/a.json" || fail "the blocked path is not named"
  xmllint --noout --schema "$SRC/tests/launcher/accept/junit.xsd" "$OUT/a.xml" || fail "JUnit file does not validate"
  [ "$(xmllint --xpath 'count(//testsuite[@name="job"]/testcase[starts-with(@name,"reach")]/failure)' "$OUT/a.xml")" -ge 2 ] ||
    fail "no reachability failure in the JUnit file"
elif [ "$CASE" = fallback ]; then
  [ "$rc" = 73 ] || fail "exit status $rc, expected 73 (busbw below 1000 GB/s)"
  [ -z "$bad" ] || fail "healthy links, yet bad hosts named: $bad"
  mode=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["search"]["mode"])' "$OUT/a.json")
  [ "$mode" = ring+halving ] || fail "search mode '$mode', expected ring+halving"
  grep -Eq '"phase":[[:space:]]*"halving"' "$OUT/a.json" || fail "no halving measurement"
  grep -q 'no single node to blame' "$OUT/a.json" || fail "the halving's verdict is missing"
elif [ "$CASE" = link ]; then
  links=$(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["bad_links"]))' "$OUT/a.json")
  [ -z "$bad" ] || fail "a slow link, yet hosts named: $bad"
  [ "$links" = "h1 + h2" ] || fail "expected the link 'h1 + h2' to be named, got '$links'"
  [ "$rc" = 73 ] || fail "exit status $rc, expected 73"
  grep -q 'name="bad_link\[h1 + h2\]"' "$OUT/a.xml" || fail "no bad_link testcase in the JUnit file"
  xmllint --noout --schema "$SRC/tests/launcher/accept/junit.xsd" "$OUT/a.xml" || fail "JUnit file does not validate"
elif [ "$CASE" = healthy ]; then
  [ -z "$bad" ] || fail "healthy links, yet bad hosts named: $bad"
  [ "$rc" = 0 ] || fail "healthy job exited $rc"
  grep -q '^pass.*pair_search' "$OUT/out" || fail "pair_search did not pass"
else
  [ "$bad" = "$SLOW" ] || fail "expected exactly $SLOW to be named, got '$bad'"
  [ "$rc" = 73 ] || fail "exit status $rc, expected 73"
  grep -qx "$SLOW" "$OUT/bad.txt" || fail "$SLOW not in the exclude list"
  grep -q "name=\"bad_node\[$SLOW\]\"" "$OUT/a.xml" || fail "no bad_node testcase for $SLOW in the JUnit file"
  xmllint --noout --schema "$SRC/tests/launcher/accept/junit.xsd" "$OUT/a.xml" || fail "JUnit file does not validate"
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
