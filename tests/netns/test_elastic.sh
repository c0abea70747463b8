#!/usr/bin/env bash
# Elastic membership (issue 28) across netns hosts, gpulaunch-run --nodes MIN:MAX started on h0
# (the host that must survive) with a hostfile, for what needs a real network: (a) a host's link
# cut mid-run: the job goes on with the hosts that remain from its checkpoint and completes,
# TORCHELASTIC_RESTART_COUNT one higher, the same run id; (b) a host added to the hostfile: the
# job grows back; (c) rank 0's own host lost (the head, h0, not in the list). Every decision
# (below MIN and 78, a program's failure, unnamed losses and the probe, hosts lost together, a
# notice during a scale-up, partitions) is checked in simulated seconds by launcher_elastic_core
# (tests/launcher/front/test_elastic_core.c); a notice end to end by test_elastic_torch.sh, a
# partition by test_elastic_partition.sh.
#   test_elastic.sh GPULAUNCH_RUN
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_elastic.sh GPULAUNCH_RUN}
source "$(dirname "$0")/../lib.sh"
netns_begin

NH=4 K=2
NETNS_DECOYS=0 netns_setup "$NH"
T=$NETNS_DIR
export GPULAUNCH_TIMEOUT=20 MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun
# The trainer: tests/step_trainer.sh (a step every 0.2 s, rank 0 checkpoints, SIGTERM saves).
printf '[job]\ncommand = %s\ngrace = 10s\nliveness_timeout = 5s\n' "$GPULAUNCH_SOURCE_DIR/tests/step_trainer.sh $T 100" >"$T/job.conf"

hostfile() { : >"$T/elastic.hosts"; for h in "$@"; do echo "$h slots=$K" >>"$T/elastic.hosts"; done; }
# elastic ARGS...: gpulaunch-run with the hostfile on h0 in the background; "$T/done" gets its
# status. The output is in $T/out and $T/err.
elastic() {
  rm -f "$T/done" "$T/ckpt" "$T"/saved.* "$T/summary.json"
  (RC=0
   netns_mpirun --hostfile "$T/elastic.hosts" -x STEPS --discovery-interval 1 "$@" "$GPULAUNCH" --summary "$T/summary.json" "$T/job.conf" \
     >"$T/out" 2>"$T/err" || RC=$?
   echo "$RC" >"$T/done") &
}
starts() { grep -c "start rank .* world $1 " "$T/out" 2>/dev/null || true; }
# shellcheck disable=SC2317 # called through wait_cmd
started() { [ "$(starts "$1")" -ge "$2" ]; } # started WORLD N: N ranks said they started at WORLD
done_rc() { [ -f "$T/done" ] && cat "$T/done"; }

# (a) h2's link cut mid-run: the job goes on with 3 hosts (6 ranks) from rank 0's checkpoint.
hostfile h0 h1 h2 h3
export STEPS=60
elastic --nodes 2:4
if wait_cmd 60 started 8 8 && wait_cmd 20 test -s "$T/ckpt"; then
  sleep 1
  t0=$(date +%s.%N)
  netns_link_down h2
  if wait_cmd 90 test -f "$T/done"; then
    rc=$(done_rc)
    [ "$rc" = 0 ] || bad "link cut: exit $rc, expected 0"
    [ "$(starts 6)" = 6 ] || bad "link cut: $(starts 6) of 6 ranks started again at world 6"
    grep -q "restart 1: host h2 lost" "$T/err" || bad "link cut: the restart's cause not said"
    grep -q "start rank 0 world 6 restart 1 " "$T/out" || bad "link cut: TORCHELASTIC_RESTART_COUNT not 1"
    runs=$(grep -o "run gpl-[^ ]*" "$T/out" | sort -u | wc -l)
    [ "$runs" = 1 ] || bad "link cut: $runs run ids, expected one"
    first=$(grep "start rank 0 world 8 " "$T/out" | grep -o 'step [0-9]*' | head -1)
    resumed=$(grep "start rank 0 world 6 " "$T/out" | grep -o 'step [0-9]*' | head -1)
    [ "${resumed#step }" -gt 0 ] || bad "link cut: did not resume from the checkpoint ($resumed)"
    t1=$(grep "start rank 0 world 6 " "$T/out" | grep -o 'at [0-9.]*' | head -1)
    took=$(echo "${t1#at } - $t0" | bc)
    grep -q "done rank 5 step 60" "$T/out" || bad "link cut: the job did not complete at world 6"
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["elastic_restarts"]; sys.exit(0 if len(r) == 1 and r[0]["cause"] == "host h2 lost" and r[0]["hosts_after"] == "h0:2,h1:2,h3:2" else 1)' \
      "$T/summary.json" || bad "link cut: --summary does not record the restart"
    [ "$FAILED" = 0 ] && pass "link cut on h2: resumed on 3 hosts ${took}s after the cut, from $resumed (first start at $first), completed"
  else
    bad "link cut: gpulaunch-run still runs 90 s after the cut"
  fi
else
  bad "link cut: the job did not start on 8 ranks"
fi
wait

# (b) h2 comes back and is listed again: the job grows back to 4 hosts at a scale-up.
ip -n "${NETNS_NS[h2]}" link set "${NETNS_IF[h2]}" up
hostfile h0 h1 h3
export STEPS=80
elastic --nodes 2:4 --scale-up-interval 2
if wait_cmd 60 started 6 6 && wait_cmd 20 test -s "$T/ckpt"; then
  t0=$(date +%s.%N)
  hostfile h0 h1 h3 h2
  if wait_cmd 90 test -f "$T/done"; then
    rc=$(done_rc)
    [ "$rc" = 0 ] || bad "grow: exit $rc, expected 0"
    [ "$(starts 8)" = 8 ] || bad "grow: $(starts 8) of 8 ranks started at world 8"
    grep -q "restart 1: scale-up: h2 joined" "$T/err" || bad "grow: the restart's cause not said"
    [ "$(find "$T" -name 'saved.*' | wc -l)" = 6 ] || bad "grow: $(find "$T" -name 'saved.*' | wc -l) of 6 ranks saved on the scale-up stop"
    t1=$(grep "start rank 0 world 8 " "$T/out" | grep -o 'at [0-9.]*' | head -1)
    took=$(echo "${t1#at } - $t0" | bc)
    [ "$FAILED" = 0 ] && pass "h2 listed again: grew back to 4 hosts ${took}s after, every rank saved at the stop, completed"
  else
    bad "grow: gpulaunch-run still runs 90 s after h2 was listed"
  fi
else
  bad "grow: the job did not start on 6 ranks"
fi
wait

# (c) rank 0's own host lost: gpulaunch-run on h0 runs the job on h1..h3 only, rank 0 on h1; h1's
# link cut: the surviving rank that names the loss tells gpulaunch-run, the job goes on with h2, h3.
hostfile h1 h2 h3
export STEPS=70
elastic --nodes 2:3
if wait_cmd 60 started 6 6 && wait_cmd 20 test -s "$T/ckpt"; then
  t0=$(date +%s.%N)
  netns_link_down h1
  if wait_cmd 90 test -f "$T/done"; then
    rc=$(done_rc)
    [ "$rc" = 0 ] || bad "rank 0's host: exit $rc, expected 0"
    grep -q "restart 1: host h1 lost" "$T/err" || bad "rank 0's host: the restart's cause not said"
    [ "$(starts 4)" = 4 ] || bad "rank 0's host: $(starts 4) of 4 ranks started again at world 4"
    t1=$(grep "start rank 0 world 4 " "$T/out" | grep -o 'at [0-9.]*' | head -1)
    [ "$FAILED" = 0 ] && pass "rank 0's host h1 lost: resumed on h2, h3 $(echo "${t1#at } - $t0" | bc)s after the cut, completed"
  else
    bad "rank 0's host: gpulaunch-run still runs 90 s after the cut"
  fi
else
  bad "rank 0's host: the job did not start on 6 ranks"
fi
wait
ip -n "${NETNS_NS[h1]}" link set "${NETNS_IF[h1]}" up

exit "$FAILED"
