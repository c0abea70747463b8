#!/usr/bin/env bash
# Issue 18 across hosts: 3 network-namespace hosts x 2 ranks (decoy interfaces on each). 1. the
# torchrun-style PyTorch script (gloo) where rank 3 (on h1) sleeps in stuck_in_data_loader while
# the others wait in all_reduce: rank 3 and h1 named with that function, the others in
# all_reduce, exit 77 within hang_timeout + 20 s; every host's stacks collected on that host.
# 2. the C program hung in a blocking read on rank 4 (h2), named from gdb's native stack.
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
PROG=${1:?usage: test_hang_netns.sh HANG_PROG}
source "$(dirname "$0")/../../lib.sh"
netns_begin
need_torch_python
command -v py-spy >/dev/null || { echo "SKIP: no py-spy (scripts/install-deps.sh installs it)"; exit 77; }
command -v gdb >/dev/null || { echo "SKIP: no gdb"; exit 77; }
SCRIPT="$(cd "$(dirname "$0")" && pwd)/hang_train.py"
export OMP_NUM_THREADS=1

# A failure keeps its evidence (the run's out and err, the hang report's .txt and .json) in a
# folder under /tmp that outlives the scratch folder, named on stderr: a CI failure is diagnosable.
# shellcheck disable=SC2317 # called by lib.sh's bad
fail_context() {
  local keep f
  keep="$(mktemp -d /tmp/gpl-hang-netns-fail.XXXXXX)"
  for f in "$T"/out "$T"/err "$T"/*.conf; do [[ -f "$f" ]] && cp "$f" "$keep/"; done
  for f in "$T"/l1 "$T"/l2; do [[ -d "$f" ]] && cp -r "$f" "$keep/"; done
  for f in "$T"/out "$T"/err; do [[ -f "$f" ]] && { echo "---- ${f##*/}:"; tail -n 40 "$f"; }; done
  echo "---- the evidence (out, err, the hang reports) kept in $keep"
  return 0
}

netns_setup 3
T=$NETNS_DIR
HOSTS=h0:2,h1:2,h2:2

# 1. PyTorch, rank 3 on h1 stuck in its data loader.
printf '[job]\ncommand = %s %s --hang-rank 3 --hang-step 2 --steps 1000\nhang_timeout = 5s\nlog_dir = %s/l1\n' "$PY" "$SCRIPT" "$T" >"$T/a.conf"
netns_run 6 "$HOSTS" "$GPULAUNCH" "$T/a.conf"
j="$T/l1/gpulaunch-hang.json"
if [ "$RC" != 77 ]; then bad "torch: exit $RC, expected 77"; else
  grep -Eq "^gpulaunch: hang: rank 3 \(host h1, pid [0-9]+\) is in stuck_in_data_loader" "$T/err" || bad "torch: rank 3 on h1 not named"
  grep -q "the other 5 ranks are in all_reduce" "$T/err" || bad "torch: the others not in all_reduce"
  [ "$(jq -c .odd_ranks "$j" 2>/dev/null)" = "[3]" ] || bad "torch: odd_ranks in $j"
  for r in 0 1 2 4 5; do
    jq -r ".ranks[$r].processes[0].stack" "$j" | grep -q "all_reduce" || bad "torch: rank $r's stack lacks all_reduce"
    [ "$(jq -r ".ranks[$r].host" "$j")" = "h$((r / 2))" ] || bad "torch: rank $r's host in the report"
  done
  jq -r '.ranks[3].processes[0].stack' "$j" | grep -q "stuck_in_data_loader (hang_train.py" || bad "torch: rank 3's stack"
  # the start-up (MPI + torch import on 2 cores) counts too; the hang itself may take 5 + 20 s
  awk -v s="$SECS" 'BEGIN { exit !(s <= 45) }' || bad "torch: the job took $SECS s"
  [ "$FAILED" = 0 ] && pass "torch over 3 hosts: rank 3 (h1) named in stuck_in_data_loader, the other 5 in all_reduce, exit 77, job ${SECS}s"
fi

# 2. The C program: rank 4 (h2) in a blocking read, the others in gpl_barrier.
printf '[job]\ncommand = %s barrier 4 3 100000\nhang_timeout = 4s\nlog_dir = %s/l2\n' "$PROG" "$T" >"$T/b.conf"
netns_run 6 "$HOSTS" "$GPULAUNCH" "$T/b.conf"
j="$T/l2/gpulaunch-hang.json"
if [ "$RC" != 77 ]; then bad "C: exit $RC, expected 77"; else
  grep -Eq "^gpulaunch: hang: rank 4 \(host h2, pid [0-9]+\) is in stuck_in_read .*the other 5 ranks are in gpl_barrier" "$T/err" || bad "C: rank 4 on h2 not named"
  [ "$(jq -c .odd_ranks "$j" 2>/dev/null)" = "[4]" ] || bad "C: odd_ranks"
  [ "$(jq -r '.ranks[4].processes[0].tool' "$j")" = gdb ] || bad "C: rank 4's stacks not from gdb"
  awk -v s="$SECS" 'BEGIN { exit !(s <= 35) }' || bad "C: the job took $SECS s"
  [ "$FAILED" = 0 ] && pass "C over 3 hosts: rank 4 (h2) named in stuck_in_read via gdb, exit 77, job ${SECS}s"
fi
exit "$FAILED"
