#!/usr/bin/env bash
# Issue 36's cloud notices on namespace hosts: 3 hosts x 2 ranks under mpirun, a mock metadata
# service (tests/launcher/preempt/mock_metadata.py) inside h2 on its own loopback (the other hosts'
# polls are refused: one warning each, nothing else). (a) [preempt] notice = alibaba: h2's ECS
# spot/termination-time appears at its second poll: every program on every host gets SIGTERM at
# one moment, writes its checkpoint, and the job ends 75 naming h2 and the notice. (b) notice =
# aws, rebalance = checkpoint: h2's rebalance recommendation appears: every program on every host
# gets SIGUSR1 once, at one moment, no SIGTERM, and the job runs to its own end (0).
#   test_notice_hosts.sh MOCK_METADATA_PY
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
MOCK=${1:?usage: test_notice_hosts.sh MOCK_METADATA_PY}
source "$(dirname "$0")/../lib.sh"
netns_begin

NETNS_DECOYS=0 netns_setup 3
T=$NETNS_DIR
export GPULAUNCH_TIMEOUT=20
netns_exec h2 python3 "$MOCK" "$T/mport" "$T/mreq" "$T/macks" 1 10 200 &
for _ in $(seq 200); do [ -s "$T/mport" ] && break; sleep 0.1; done
[ -s "$T/mport" ] || { bad "the mock did not start in h2"; exit 1; }
read -r mport _ <"$T/mport"
chmod 755 "$T"

# A program that records its signals: SIGTERM saves and ends, SIGUSR1 is a checkpoint and goes on.
cat >"$T/prog.sh" <<PROG
#!/bin/bash
trap 'date +%s.%N >>"$T/usr1.\$RANK"' USR1
trap 'date +%s.%N >"$T/term.\$RANK"; sleep 0.3; echo saved >"$T/ckpt.\$RANK"; exit 0' TERM
end=\$((SECONDS + \${RUN_S:-60}))
while [ \$SECONDS -lt \$end ]; do sleep 0.1; done
echo "done rank \$RANK on \$(hostname)"
PROG
chmod +x "$T/prog.sh"
spread() { cat "$@" | sort -n | awk 'NR == 1 { a = $1 } { b = $1 } END { printf "%.1f", (b - a) * 1000 }'; }

# (a) Alibaba's notice for h2.
printf '[job]\ncommand = %s\ngrace = 20s\n[preempt]\nnotice = alibaba\nnotice_endpoint = http://127.0.0.1:%s/alibaba\n' \
  "$T/prog.sh" "$mport" >"$T/ali.conf"
netns_run 6 h0:2,h1:2,h2:2 -x RUN_S=60 "$GPULAUNCH" "$T/ali.conf"
[ "$RC" = 75 ] || bad "alibaba: exit $RC, expected 75"
grep -q "job preempted: interruption notice for host h2 (Alibaba Cloud ECS spot instance released at 2026-12-06T08:22:00Z" "$T/err" ||
  bad "alibaba: the notice and h2 not named"
n=$(find "$T" -maxdepth 1 -name 'ckpt.*' | wc -l)
[ "$n" = 6 ] || bad "alibaba: $n of 6 checkpoints"
s=$(spread "$T"/term.*)
[ "$(echo "$s < 100" | bc)" = 1 ] || bad "alibaba: SIGTERM spread ${s} ms over 3 hosts"
grep -q '^alibaba PUT /alibaba/latest/api/token 200$' "$T/mreq" || bad "alibaba: no token asked in h2"
[ "$FAILED" = 0 ] && pass "alibaba notice in h2: exit 75 naming h2, 6/6 checkpoints, SIGTERM to 6 programs on 3 hosts within ${s} ms"

# (b) AWS's rebalance recommendation for h2: a checkpoint everywhere, the job goes on.
rm -f "$T"/term.* "$T"/ckpt.* "$T"/usr1.*
printf '[job]\ncommand = %s\ncheckpoint_signal = SIGUSR1\n[preempt]\nnotice = aws\nrebalance = checkpoint\nnotice_endpoint = http://127.0.0.1:%s/aws-rebalance\n' \
  "$T/prog.sh" "$mport" >"$T/reb.conf"
netns_run 6 h0:2,h1:2,h2:2 -x RUN_S=14 "$GPULAUNCH" "$T/reb.conf"
[ "$RC" = 0 ] || bad "rebalance: exit $RC, expected 0"
[ "$(grep -c 'done rank' "$T/out")" = 6 ] || bad "rebalance: $(grep -c 'done rank' "$T/out") of 6 programs ran to their end"
[ "$(cat "$T"/usr1.* 2>/dev/null | wc -l)" = 6 ] || bad "rebalance: $(cat "$T"/usr1.* 2>/dev/null | wc -l) SIGUSR1s, expected one per program"
[ -z "$(ls "$T"/term.* 2>/dev/null)" ] || bad "rebalance: a program got SIGTERM"
cat "$T/out" "$T/err" | grep -q "AWS rebalance recommendation posted at 2026-12-06T08:17:00Z (host h2): every program gets SIGUSR1 now" ||
  bad "rebalance: not said"
s=$(spread "$T"/usr1.*)
[ "$(echo "$s < 100" | bc)" = 1 ] || bad "rebalance: SIGUSR1 spread ${s} ms over 3 hosts"
[ "$FAILED" = 0 ] && pass "rebalance in h2: SIGUSR1 once to 6 programs on 3 hosts within ${s} ms, no SIGTERM, exit 0"
exit "$FAILED"
