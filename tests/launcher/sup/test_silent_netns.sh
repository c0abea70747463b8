#!/usr/bin/env bash
# Issue 29 across hosts: 3 network-namespace hosts x 2 ranks. 1. the C program (silent_prog.c):
# rank 3 (h1) sleeps in stuck_in_data_loader(), the others wait as in a collective, rank 0 gives
# up after 8 s: the root cause names rank 3 on h1 and that function (gdb's stack, taken on h1).
# 2. the PyTorch script (gloo, 15 s timeout): rank 4 (h2) sleeps in stuck_in_data_loader(), the
# others fail by gloo's timeout: rank 4 on h2 named (py-spy).
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
PROG=${1:?usage: test_silent_netns.sh SILENT_PROG}
source "$(dirname "$0")/../../lib.sh"
netns_begin
command -v gdb >/dev/null || { echo "SKIP: no gdb"; exit 77; }
HOSTS=h0:2,h1:2,h2:2
netns_setup 3
T=$NETNS_DIR

netns_run 6 "$HOSTS" "$GPULAUNCH" -- "$PROG" 3 0 3 8
if [ "$RC" != 1 ]; then bad "C: exit $RC, expected 1"; else
  grep -Eq "^gpulaunch: rank 0 \(host h0\) exited with status 1; rank 3 \(host h1\) was still running, silent for [0-9]+ s, in stuck_in_data_loader > nap: the likely cause\$" "$T/err" || bad "C: rank 3 on h1 not named"
  awk -v s="$SECS" 'BEGIN { exit !(s <= 30) }' || bad "C: the job took $SECS s"
  [ "$FAILED" = 0 ] && pass "C over 3 hosts: rank 3 (h1) named silent in stuck_in_data_loader beside rank 0's failure, job ${SECS}s"
fi

if ! torch_python || ! command -v py-spy >/dev/null; then
  echo "skip: torch over 3 hosts (no PyTorch or no py-spy)"
  exit "$FAILED"
fi
export OMP_NUM_THREADS=1
SCRIPT="$(cd "$(dirname "$0")/../hang" && pwd)/hang_train.py"
netns_run 6 "$HOSTS" "$GPULAUNCH" -- "$PY" "$SCRIPT" --hang-rank 4 --hang-step 2 --steps 1000 --timeout-seconds 15
if [ "$RC" != 1 ]; then bad "torch: exit $RC, expected 1"; else
  grep -Eq "^gpulaunch: rank [01235] \(host h[0-2]\) exited with status 1; rank 4 \(host h2\) was still running, silent for [0-9]+ s, in stuck_in_data_loader: the likely cause\$" "$T/err" || bad "torch: rank 4 on h2 not named"
  awk -v s="$SECS" 'BEGIN { exit !(s <= 75) }' || bad "torch: the job took $SECS s"
  [ "$FAILED" = 0 ] && pass "torch over 3 hosts: gloo timeout, rank 4 (h2) named silent in stuck_in_data_loader, job ${SECS}s"
fi
exit "$FAILED"
