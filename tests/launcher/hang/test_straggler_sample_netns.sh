#!/usr/bin/env bash
# Issue 29 across hosts: 3 network-namespace hosts x 2 ranks. The C program on the C API where rank
# 3 (on h1) also computes 40 ms per step in slow_transform() while the others wait in
# gpl_allreduce: rank 3, h1 and slow_transform named by the stack samples each host takes of its
# own ranks, while the job runs and in --summary. 600 steps (about 37 s): the first live verdict
# comes about 16 s in (two judgments on newer counts), with room for a slower machine.
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
PROG=${1:?usage: test_straggler_sample_netns.sh HANG_PROG}
source "$(dirname "$0")/../../lib.sh"
netns_begin
command -v eu-stack >/dev/null || { echo "SKIP: no eu-stack (elfutils)"; exit 77; }

netns_setup 3
T=$NETNS_DIR
printf '[job]\ncommand = %s straggle 3 40 600\n' "$PROG" >"$T/a.conf"
netns_run 6 h0:2,h1:2,h2:2 "$GPULAUNCH" --summary "$T/a.json" "$T/a.conf"
LINE="^gpulaunch: rank 3 \(host h1\) is the straggler: [0-9]+ % of its samples in slow_transform; the other ranks spend [0-9]+ % waiting in gpl_allreduce$"
if [ "$RC" != 0 ]; then bad "exit $RC, expected 0"; else
  [ "$(grep -cE "$LINE" "$T/err")" -ge 2 ] || bad "rank 3 on h1 not named while it ran and at the end"
  [ "$(jq -r .straggler.rank "$T/a.json")" = 3 ] || bad "summary: rank"
  [ "$(jq -r .straggler.host "$T/a.json")" = h1 ] || bad "summary: host"
  [ "$(jq -r .straggler.ranks_sampled "$T/a.json")" = 6 ] || bad "summary: every rank sampled"
  [ "$FAILED" = 0 ] && pass "3 hosts: rank 3 (h1) named in slow_transform, job ${SECS}s: $(grep -E "$LINE" "$T/err" | tail -1)"
fi
exit "$FAILED"
