#!/usr/bin/env bash
# A preemptible PyTorch job: tests/torch/ddp_train.py (gloo DDP, 4 ranks) saves a checkpoint on
# SIGTERM, 3 s per save. Under the README's recommended form, `gpulaunch-run -np 4 gpulaunch --
# python3 ddp_train.py`, a SIGTERM to the user's command gives every program its SIGTERM at once
# and the grace: 4/4 checkpoints, and the command exits 75 (preempted) once all are done.
source "$(dirname "$0")/../lib.sh"
SCRIPT="$(cd "$(dirname "$0")" && pwd)/ddp_train.py"
RUN="$(dirname "$GPULAUNCH")/gpulaunch-run"
need_torch_python
export OMP_NUM_THREADS=1
mkdir -p "$T/ckpt"
printf '[job]\ncommand = %s %s --backend gloo --steps 100000 --step-seconds 0.02 --checkpoint-dir %s --save-seconds 3\ngrace = 20s\n' \
  "$PY" "$SCRIPT" "$T/ckpt" >"$T/stop.conf"
set +e
"$RUN" -np 4 --oversubscribe --bind-to none "$GPULAUNCH" "$T/stop.conf" >"$T/out" 2>"$T/err" &
JOB=$!
set -e
# Training runs once every rank has printed nothing yet but the process group is up: wait for
# the programs, then a few steps.
for _ in $(seq 1 600); do
  [[ $(pgrep -fc "ddp_train.py --backend gloo --steps 100000") -ge 4 ]] && break
  sleep 0.1
done
sleep 8
kill -0 "$JOB" || fail "the job ended before the stop"
signal_job TERM
took=$(elapsed "$t0")
assert_eq "$RC" 75 "exit status of the preempted job"
assert_eq "$(find "$T/ckpt" -name 'ckpt-*.pt' | wc -l)" 4 "checkpoints written"
for r in 0 1 2 3; do assert_grep "$T/err" "rank $r: checkpoint at step [0-9]+ saved" "rank $r's checkpoint"; done
steps=$(grep -o 'checkpoint at step [0-9]*' "$T/err" | sort -u | wc -l)
assert_eq "$steps" 1 "every rank saved at the same step"
assert_grep "$T/err" "gpulaunch: job preempted" "preempted said"
assert_nogrep "$T/err" "gpulaunch died|no heartbeat" "a stop is not a lost rank"
assert_le 3 "$took" "the programs had their time to save"
assert_le "$took" 15 "ended soon after the saves"
pass "SIGTERM to gpulaunch-run: 4/4 DDP checkpoints (3 s saves), exit 75 after ${took}s"
