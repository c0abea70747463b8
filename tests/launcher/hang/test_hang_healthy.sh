#!/usr/bin/env bash
# Issue 18, the negative: steps longer than hang_timeout are healthy when the program shows
# progress within it: an output line every second, or a touch of [job] heartbeat_file without any
# output. Never reported as a hang; the job succeeds and no straggler is named.
source "$(dirname "$0")/../../lib.sh"
need_torch_python
SCRIPT="$(cd "$(dirname "$0")" && pwd)/hang_train.py"
export OMP_NUM_THREADS=1

printf '[job]\ncommand = %s %s --steps 2 --step-seconds 6 --tick-seconds 1\nhang_timeout = 4s\nlog_dir = %s/l\n' "$PY" "$SCRIPT" "$T" >"$T/a.conf"
run_mpi 3 "$GPULAUNCH" "$T/a.conf"
assert_eq "$RC" 0 "exit status of long steps with output"
assert_nogrep "$T/err" "hang" "no hang said"
[[ ! -e $T/l/gpulaunch-hang.json ]] || fail "a hang report was written"
assert_nogrep "$T/err" "straggler" "no straggler named"
pass "6 s steps printing every second under hang_timeout = 4s: no hang"

printf '[job]\ncommand = %s %s --steps 2 --step-seconds 6 --tick-seconds 1 --heartbeat\nhang_timeout = 4s\nheartbeat_file = %s/hb-{rank}\n' "$PY" "$SCRIPT" "$T" >"$T/b.conf"
run_mpi 3 "$GPULAUNCH" "$T/b.conf"
assert_eq "$RC" 0 "exit status of long steps with a heartbeat file"
assert_nogrep "$T/err" "hang" "no hang said"
[[ -e $T/hb-2 ]] || fail "rank 2's heartbeat file ({rank} replaced) is not there"
pass "6 s silent steps touching heartbeat_file every second: no hang"

# The same silent steps without the heartbeat are a hang: the watchdog does look.
printf '[job]\ncommand = %s %s --steps 2 --step-seconds 30\nhang_timeout = 3s\n' "$PY" "$SCRIPT" >"$T/c.conf"
run_mpi 2 "$GPULAUNCH" "$T/c.conf"
assert_eq "$RC" 77 "exit status of silent steps"
# (the ranks' programs start a little apart: the first one past hang_timeout declares it)
assert_grep "$T/err" "^gpulaunch: hang: (no rank made progress for|1 of 2 ranks made no progress for) [0-9]+ s" "the silence found"
pass "the same steps without any progress: a hang (exit 77)"
