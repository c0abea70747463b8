#!/usr/bin/env bash
# Issue 18, the straggler view: a rank that sleeps 50 ms more per step is named in the --summary
# JSON and on stderr: 1. the PyTorch script's `step N` lines through [job] step_regex; 2. a C
# program's gpl_progress(comm, step).
source "$(dirname "$0")/../../lib.sh"
PROG=${1:?usage: test_straggler.sh HANG_PROG}
need_torch_python
SCRIPT="$(cd "$(dirname "$0")" && pwd)/hang_train.py"
export OMP_NUM_THREADS=1
host=$(hostname -s)

printf '[job]\ncommand = %s %s --slow-rank 1 --slow-ms 50 --steps 30 --step-seconds 0.05\nstep_regex = step (\\d+)\n' "$PY" "$SCRIPT" >"$T/a.conf"
run_mpi 4 "$GPULAUNCH" --summary "$T/a.json" "$T/a.conf"
assert_eq "$RC" 0 "exit status"
assert_eq "$(jq -r .straggler.rank "$T/a.json")" 1 "slowest rank in the summary"
assert_eq "$(jq -r .straggler.flagged "$T/a.json")" true "flagged"
lag=$(jq -r .straggler.lag_s "$T/a.json")
assert_le 0.035 "$lag" "its lag (s)"
assert_le "$lag" 0.08 "its lag (s)"
assert_eq "$(jq '.straggler.ranks | length' "$T/a.json")" 4 "every rank in the summary"
assert_grep "$T/err" "^gpulaunch: straggler: rank 1 \(host $host\) reports its steps [0-9]+ ms after the median rank" "stderr names it"
pass "PyTorch, step_regex: rank 1 named, lag $lag s"

printf '[job]\ncommand = %s slow 2 50 30\n' "$PROG" >"$T/b.conf"
run_mpi 3 "$GPULAUNCH" --summary "$T/b.json" "$T/b.conf"
assert_eq "$RC" 0 "exit status"
assert_eq "$(jq -r .straggler.rank "$T/b.json")" 2 "slowest rank (gpl_progress steps)"
assert_eq "$(jq -r .straggler.flagged "$T/b.json")" true "flagged"
assert_eq "$(jq -r '.straggler.ranks[0].steps' "$T/b.json")" 30 "steps seen on rank 0"
pass "C API gpl_progress(comm, step): rank 2 named, lag $(jq -r .straggler.lag_s "$T/b.json") s"
