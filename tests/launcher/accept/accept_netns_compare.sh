#!/usr/bin/env bash
# `gpulaunch accept` on network-namespace hosts (tests/netns/netns.sh) without expectations: the
# nodes are checked against each other.
#   odd:   h0, h1 with an AWS p5en topology (8 x H200), h2 with a p4d one (8 x A100; other NICs and
#          PCIe links), h3 with p5en's file less one GPU (its vendor id changed); one rank per
#          host, each given its host's file (mpirun's MPMD syntax: one --topology per host). h2
#          must fail GPU model, NICs and PCIe links, h3 the GPU count, each named with its value
#          and the majority's in the terminal table, the JSON, the JUnit file, the HTML page and
#          the exclude list; h0 and h1 must pass everything.
#   tie:   h0 p5en, h1 p4d: no majority, both fail, each row naming both hosts and values.
#   nogpu: h0, h1 on this machine's own hardware (no GPU here): exit 73 with the message naming
#          [accept] gpus = 0; with it, exit 0 and the live profiles agree (majority passes).
#   accept_netns_compare.sh GPULAUNCH odd|tie|nogpu
set -euo pipefail
GPULAUNCH=${1:?usage: accept_netns_compare.sh GPULAUNCH odd|tie|nogpu}
CASE=${2:?case}
SRC=${GPULAUNCH_SOURCE_DIR:?}
TOPO=${GPULAUNCH_TOPOLOGY_DIR:?}
HARNESS="$SRC/tests/netns/netns.sh"
# shellcheck source=tests/lib.sh
. "$SRC/tests/lib.sh"
# shellcheck disable=SC1090,SC1091 # the harness, found at run time
. "$HARNESS"
netns_require
OUT=$T
H200="$TOPO/hwloc-aws-p5en.48xlarge.xml"
A100="$TOPO/hwloc-aws-p4d.24xlarge.xml"
# Quick: no search, a tiny allreduce, a threshold any link meets.
printf '[accept]\nsize = 256K\niters = 2\nmin_busbw = 0.001\nsearch = off\n' >"$OUT/accept.conf"
chmod 755 "$OUT"
REPORTS=(--json "$OUT/a.json" --junit "$OUT/a.xml" --html "$OUT/a.html" --exclude-out "$OUT/bad.txt")
# One app context per host: "-np 1 --host hN gpulaunch accept CONF [--topology FILE] REPORTS".
run() { # run HOST[=XML]... [-- extra accept args]
  local -a hosts=() extra=() full=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do hosts+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  extra=("$@")
  local spec
  for spec in "${hosts[@]}"; do
    [ ${#full[@]} -gt 0 ] && full+=(:)
    full+=(-np 1 --host "${spec%%=*}" "$GPULAUNCH" accept "$OUT/accept.conf")
    [ "$spec" != "${spec#*=}" ] && full+=(--topology "${spec#*=}")
    full+=("${REPORTS[@]}" "${extra[@]}")
  done
  rm -f "$OUT"/a.* "$OUT/bad.txt"
  RC=0
  netns_mpirun "${full[@]}" >"$OUT/out" 2>"$OUT/err" || RC=$?
  cat "$OUT/out"
  [ -s "$OUT/a.json" ] || fail "no JSON report"
  if grep -qE 'runtime error:|ERROR: (Address|Undefined|Leak)Sanitizer' "$OUT/err"; then
    grep -E -A5 'runtime error:|Sanitizer' "$OUT/err" | head -n 20
    fail "sanitizer report from a rank"
  fi
}
# majority row: status of HOST's row about SUBJECT, and its detail.
mrow() { python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = [c for c in d["checks"] if c["name"] == "majority" and c["host"] == sys.argv[2] and c["subject"] == sys.argv[3]]
print(r[0][sys.argv[4]] if r else "none")' "$OUT/a.json" "$1" "$2" "$3"; }
junit_fail() { # junit_fail HOST SUBJECT: the <failure> message of that testcase in HOST's suite
  xmllint --xpath "string(//testsuite[@hostname=\"$1\" or @name=\"$1\"]/testcase[@name=\"majority[$2]\"]/failure/@message)" "$OUT/a.xml" 2>/dev/null
}

case "$CASE" in
  odd)
    netns_setup 4
    H200_7="$OUT/p5en-7gpus.xml" # GPU 0000:59:00.0 no longer an NVIDIA device
    sed 's/pci_busid="0000:59:00.0" pci_type="0302 \[10de:/pci_busid="0000:59:00.0" pci_type="0302 [1234:/' "$H200" >"$H200_7"
    cmp -s "$H200" "$H200_7" && fail "could not take a GPU out of $H200"
    run "h0=$H200" "h1=$H200" "h2=$A100" "h3=$H200_7"
    [ "$RC" = 73 ] || fail "exit status $RC, expected 73 (h2 and h3 differ)"
    expect() { # expect HOST SUBJECT STATUS
      [ "$(mrow "$1" "$2" status)" = "$3" ] || fail "$1: majority[$2] is $(mrow "$1" "$2" status), expected $3"
    }
    named() { # named HOST SUBJECT MAJORITY_HOSTS: the row names the host, both values, who has the majority's
      local d m
      d=$(mrow "$1" "$2" detail)
      case "$d" in "$1 differs from the majority in $2: $1 has "*"; the majority (3 of 4 nodes: $3) has "*) ;;
        *) fail "$1's $2 row does not name both values: $d" ;; esac
      m=$(junit_fail "$1" "$2")
      [ "$m" = "$d" ] || fail "JUnit: $1's majority[$2] failure is '$m'"
    }
    for s in "gpu count" "gpu model" nics "pcie links"; do
      expect h0 "$s" pass
      expect h1 "$s" pass
    done
    for s in "gpu model" nics "pcie links"; do
      expect h2 "$s" fail
      named h2 "$s" "h0, h1, h3"
      expect h3 "$s" pass
    done
    expect h2 "gpu count" pass
    expect h3 "gpu count" fail
    named h3 "gpu count" "h0, h1, h2"
    [ "$(mrow h3 "gpu count" detail)" = "h3 differs from the majority in gpu count: h3 has 7; the majority (3 of 4 nodes: h0, h1, h2) has 8" ] ||
      fail "h3's GPU count row: $(mrow h3 "gpu count" detail)"
    grep -q 'h2 has GA100 \[A100 SXM4 40GB\]; the majority (3 of 4 nodes: h0, h1, h3) has NVIDIA H200' "$OUT/out" ||
      fail "the terminal table does not name h2's GPU model against the majority's"
    grep -q 'h3 has 7; the majority (3 of 4 nodes: h0, h1, h2) has 8' "$OUT/out" ||
      fail "the terminal table does not name h3's GPU count against the majority's"
    grep -Eq '^FAIL +majority +gpu model' "$OUT/out" || fail "no FAIL row for the GPU model in the table"
    [ "$(grep -v '^#' "$OUT/bad.txt" | sort | paste -sd' ')" = "h2 h3" ] || fail "exclude list: $(cat "$OUT/bad.txt")"
    xmllint --noout --schema "$SRC/tests/launcher/accept/junit.xsd" "$OUT/a.xml" || fail "JUnit file does not validate"
    xmllint --noout "$OUT/a.html" || fail "HTML is not well-formed"
    grep -q 'h2 differs from the majority in gpu model: h2 has GA100 \[A100 SXM4 40GB\]; the majority (3 of 4 nodes: h0, h1, h3) has NVIDIA H200' "$OUT/a.html" ||
      fail "the HTML page does not name h2 against the majority"
    ;;
  tie)
    netns_setup 2
    run "h0=$H200" "h1=$A100"
    [ "$RC" = 73 ] || fail "exit status $RC, expected 73 (no majority)"
    for h in h0 h1; do
      [ "$(mrow $h "gpu model" status)" = fail ] || fail "$h: gpu model did not fail"
      d=$(mrow $h "gpu model" detail)
      case "$d" in "no majority in gpu model among the 2 nodes"*"h0 has NVIDIA H200; h1 has GA100 [A100 SXM4 40GB]") ;;
        *) fail "$h's row does not say there is no majority, naming both: $d" ;; esac
      [ -n "$(junit_fail $h "gpu model")" ] || fail "JUnit: no failure for $h"
      grep -qx $h "$OUT/bad.txt" || fail "$h not in the exclude list"
    done
    grep -q 'no majority in gpu model among the 2 nodes' "$OUT/out" || fail "the table does not say there is no majority"
    ;;
  nogpu)
    netns_setup 2
    run h0 h1
    [ "$RC" = 73 ] || fail "no GPU without [accept] gpus: exit status $RC, expected 73"
    for h in h0 h1; do
      st=$(python3 -c 'import json,sys; print([c["status"] for c in json.load(open(sys.argv[1]))["checks"] if c["name"] == "gpu_count" and c["host"] == sys.argv[2]][0])' "$OUT/a.json" $h)
      [ "$st" = fail ] || fail "$h: gpu_count $st, expected fail"
    done
    grep -q 'no GPU on this node (hwloc sees no NVIDIA GPU).*set \[accept\] gpus = 0 (or --gpus 0)' "$OUT/out" ||
      fail "the message does not say how to allow a run without GPUs"
    run h0 h1 -- --gpus 0
    [ "$RC" = 0 ] || fail "no GPU with --gpus 0: exit status $RC, expected 0"
    # The same machine under both hosts: every compared property agrees.
    for h in h0 h1; do
      for s in "gpu model" nics "pcie links"; do
        [ "$(mrow $h "$s" status)" = pass ] || fail "$h: majority[$s] $(mrow $h "$s" status) on identical hosts"
      done
      [ "$(mrow $h "gpu count" status)" = none ] || fail "gpus = 0 is an explicit count: no majority row expected"
    done
    ;;
  *) fail "unknown case $CASE" ;;
esac
echo "ok - accept netns compare $CASE"
