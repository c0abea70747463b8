#!/usr/bin/env bash
# Issue 29, the straggler by stack samples with real PyTorch (gloo) on 4 ranks, unchanged: rank 1
# spends 80 ms of each step in slow_augment() while the others wait in all_reduce. It is named on
# stderr within 60 s while the job still runs, then in --summary. The same script with no slow
# rank, with uneven phases (every rank evaluates, rank 0 saves checkpoints), is never flagged; the
# same with a DistributedDataParallel model (the others wait inside backward()).
source "$(dirname "$0")/../../lib.sh"
need_torch_python
SCRIPT="$(cd "$(dirname "$0")" && pwd)/straggle_train.py"
export OMP_NUM_THREADS=1
host=$(hostname -s)
LINE="^gpulaunch: rank 1 \(host $host\) is the straggler: [0-9]+ % of its samples in slow_augment; the other ranks spend [0-9]+ % waiting in all_reduce$"

printf '[job]\ncommand = %s %s --slow-rank 1 --steps 500\nstep_regex = step (\\d+)\n' "$PY" "$SCRIPT" >"$T/a.conf"
t0=$(date +%s)
"$MPIEXEC" -np 4 --oversubscribe --bind-to none "$GPULAUNCH" --summary "$T/a.json" "$T/a.conf" >"$T/out" 2>"$T/err" &
pid=$!
named=""
while kill -0 "$pid" 2>/dev/null && [ $(($(date +%s) - t0)) -lt 90 ]; do
  if grep -qE "$LINE" "$T/err"; then named=$(($(date +%s) - t0)); break; fi
  sleep 0.5
done
running=0
kill -0 "$pid" 2>/dev/null && running=1
set +e
wait "$pid"
RC=$?
set -e
assert_eq "$RC" 0 "exit status"
[ -n "$named" ] || fail "rank 1 not named while the job ran"
assert_eq "$running" 1 "named while the job still ran"
assert_le "$named" 60 "named within (s) of the start"
assert_eq "$(jq -r .straggler.rank "$T/a.json")" 1 "summary: rank"
assert_eq "$(jq -r .straggler.function "$T/a.json")" slow_augment "summary: function"
assert_eq "$(jq -r .straggler.others_waiting_in "$T/a.json")" all_reduce "summary: the others' wait"
pass "rank 1 named in slow_augment after $named s: $(grep -E "$LINE" "$T/err" | head -1)"

printf '[job]\ncommand = %s %s --steps 250 --eval-every 60\nstep_regex = step (\\d+)\n' "$PY" "$SCRIPT" >"$T/b.conf"
for i in 1 2; do
  run_mpi 4 "$GPULAUNCH" --summary "$T/b.json" "$T/b.conf"
  assert_eq "$RC" 0 "exit status (balanced $i)"
  assert_nogrep "$T/err" "is the straggler" "balanced run $i"
  assert_eq "$(jq -r .straggler.flagged "$T/b.json")" false "balanced run $i: summary"
done
pass "balanced with evaluation and rank 0's checkpoints: never flagged (2 runs)"

# DistributedDataParallel: the gradients are all-reduced inside backward(), where the others wait.
printf '[job]\ncommand = %s %s --ddp --slow-rank 2 --steps 250\n' "$PY" "$SCRIPT" >"$T/c.conf"
run_mpi 4 "$GPULAUNCH" --summary "$T/c.json" "$T/c.conf"
assert_eq "$RC" 0 "exit status (DDP)"
assert_grep "$T/err" "^gpulaunch: rank 2 \(host $host\) is the straggler: [0-9]+ % of its samples in slow_augment; the other ranks spend [0-9]+ % waiting in backward$" "DDP: rank 2 named"
assert_nogrep "$T/err" "rank [013] \(host [^)]*\) is the straggler" "DDP: no other rank named"
pass "DDP: rank 2 named in slow_augment, the others waiting in backward"
printf '[job]\ncommand = %s %s --ddp --steps 150 --eval-every 50\n' "$PY" "$SCRIPT" >"$T/d.conf"
run_mpi 4 "$GPULAUNCH" --summary "$T/d.json" "$T/d.conf"
assert_eq "$RC" 0 "exit status (DDP balanced)"
assert_nogrep "$T/err" "is the straggler" "DDP balanced"
pass "DDP balanced with evaluation and checkpoints: not flagged"
