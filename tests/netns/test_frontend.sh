#!/usr/bin/env bash
# gpulaunch-run across 3 netns hosts (2 ranks each), started on h0 as a user types it:
# (1) SIGTERM to gpulaunch-run mid-job: every program on every host gets its SIGTERM within 1 s,
#     keeps its grace (each writes a checkpoint 2 s after the signal), and gpulaunch-run exits 75
#     once all are done; (2) h2's link goes down mid-job: gpulaunch names h2's ranks, and the
#     user's command returns 68 within 30 s of the loss (plain mpirun waits minutes for h2's
#     daemon, issue 17).
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_frontend.sh GPULAUNCH_RUN}
source "$(dirname "$0")/../lib.sh"
netns_begin

NETNS_DECOYS=0 netns_setup 3
T=$NETNS_DIR
HOSTS=h0:2,h1:2,h2:2
export GPULAUNCH_TIMEOUT=20
# The user's command is gpulaunch-run; it starts the harness's mpirun (netns_mpirun: MPIEXEC).
export MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun
cat >"$T/prog.sh" <<PROG
#!/bin/bash
trap 'date +%s.%N >"$T/sig.\$RANK"; sleep 2; echo saved >"$T/ckpt.\$RANK"; exit 0' TERM
touch "$T/up.\$RANK"
while :; do sleep 0.1; done
PROG
chmod +x "$T/prog.sh"
printf '[job]\ncommand = %s\ngrace = 20s\nliveness_timeout = 5s\n' "$T/prog.sh" >"$T/job.conf"

count() { find "$T" -maxdepth 1 -name "$1" | wc -l; }
start_job() {
  rm -f "$T"/up.* "$T"/sig.* "$T"/ckpt.* "$T/done"
  (netns_run 6 "$HOSTS" "$GPULAUNCH" "$T/job.conf"; echo "$RC $(date +%s.%N)" >"$T/done") &
  for _ in $(seq 1 300); do
    [ "$(count 'up.*')" -ge 6 ] && return 0
    sleep 0.1
  done
  bad "the job did not start"
  return 1
}
front_pid() { pgrep -f "^$RUN .*$T/job.conf" | head -1; }

# 1. SIGTERM to the user's command.
if start_job; then
  t0=$(date +%s.%N)
  kill -TERM "$(front_pid)"
  if wait_done 40; then
    read -r rc t1 <"$T/done"
    [ "$rc" = 75 ] || bad "stop: exit $rc, expected 75"
    [ "$(count 'ckpt.*')" = 6 ] || bad "stop: $(count 'ckpt.*') of 6 checkpoints"
    late=$(for f in "$T"/sig.*; do echo "$(cat "$f") - $t0" | bc; done | sort -n | tail -1)
    [ "$(echo "$late < 1" | bc)" = 1 ] || bad "stop: the last program got SIGTERM ${late}s after the command"
    took=$(echo "$t1 - $t0" | bc)
    grep -q "job preempted" "$T/err" || bad "stop: 'preempted' not said"
    if grep -q "gpulaunch died\|no heartbeat" "$T/err"; then bad "stop: also reported as a lost rank"; fi
    [ "$FAILED" = 0 ] && pass "SIGTERM to gpulaunch-run: 6 programs on 3 hosts signalled within ${late}s, 6/6 checkpoints, exit 75 after ${took}s"
  else
    bad "stop: gpulaunch-run did not return within 40 s"
  fi
fi
pkill -KILL -f "^$RUN .*$T/job.conf" 2>/dev/null || true
for h in "${NETNS_HOSTS[@]}"; do
  for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
done
wait 2>/dev/null || true

# 2. h2's link down mid-job.
if start_job; then
  t0=$(date +%s.%N)
  netns_link_down h2
  if wait_done 60; then
    read -r rc t1 <"$T/done"
    took=$(echo "$t1 - $t0" | bc)
    [ "$rc" = 68 ] || bad "link down: exit $rc, expected 68"
    [ "$(echo "$took < 30" | bc)" = 1 ] || bad "link down: the command returned ${took}s after the loss"
    grep -Eq "rank 4 \(host h2\), rank 5 \(host h2\): no heartbeat" "$T/err" || bad "link down: h2's ranks not named"
    [ "$(grep -c "no heartbeat" "$T/err")" = 1 ] || bad "link down: the root cause said more than once"
    [ "$FAILED" = 0 ] && pass "h2's link down mid-job: h2's ranks named once, gpulaunch-run returned 68 ${took}s after the loss"
  else
    bad "link down: gpulaunch-run did not return within 60 s of the loss"
  fi
fi
pkill -KILL -f "^$RUN .*$T/job.conf" 2>/dev/null || true
for h in "${NETNS_HOSTS[@]}"; do
  for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
done
wait 2>/dev/null || true
exit "$FAILED"
