#!/usr/bin/env bash
# A fabric partition of rank 0's host (issue 34): 4 worker hosts (h1-h4) x 2 ranks with a
# management network (NETNS_RICH=1: eno1 on a switch of its own) and gpulaunch-run on a head node
# (h0) outside the hostfile. h1, rank 0's host, loses its fabric link but keeps eno1, so both sides
# still reach gpulaunch-run: rank 0 names h2, h3, h4 lost and h2 names h1 lost.
#   (a) gpulaunch-run --nodes 3:4: the larger side (h2, h3, h4) goes on from the checkpoint within
#       the bound of a lost host, h1 is left out; the restart line and elastic_restarts say the
#       partition and the claims behind it.
#   (b) the same job not elastic: exit 68, the partition named as one cut (h1 against the others).
#   test_elastic_partition.sh GPULAUNCH_RUN
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_elastic_partition.sh GPULAUNCH_RUN}
source "$(dirname "$0")/../lib.sh"
netns_begin

K=2
NETNS_RICH=1 NETNS_DECOYS=0 netns_setup 5
T=$NETNS_DIR
export GPULAUNCH_TIMEOUT=20 MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun
# The trainer: tests/step_trainer.sh (a step every 0.2 s, rank 0 checkpoints, SIGTERM saves).
printf '[job]\ncommand = %s\ngrace = 10s\nliveness_timeout = 5s\n' "$GPULAUNCH_SOURCE_DIR/tests/step_trainer.sh $T 100" >"$T/job.conf"
for h in h1 h2 h3 h4; do echo "$h slots=$K"; done >"$T/elastic.hosts"

starts() { grep -c "start rank .* world $1 " "$T/out" 2>/dev/null || true; }
# shellcheck disable=SC2317 # called through wait_cmd
started() { [ "$(starts "$1")" -ge "$2" ]; }
# job ARGS...: gpulaunch-run on h0 in the background ("$T/done" gets its status).
job() {
  rm -f "$T/done" "$T/ckpt" "$T/summary.json"
  (RC=0
   netns_mpirun -x STEPS "$@" "$GPULAUNCH" --summary "$T/summary.json" "$T/job.conf" >"$T/out" 2>"$T/err" || RC=$?
   echo "$RC" >"$T/done") &
}
heal() {
  pkill -KILL -f "mpirun.*$T/job.conf" 2>/dev/null || true
  wait 2>/dev/null || true
  ip -n "${NETNS_NS[h1]}" link set "${NETNS_IF[h1]}" up
}

# (a) elastic: the larger side goes on.
export STEPS=60
job --hostfile "$T/elastic.hosts" --discovery-interval 1 --nodes 3:4
if wait_cmd 60 started 8 8 && wait_cmd 20 test -s "$T/ckpt"; then
  sleep 1
  t0=$(date +%s.%N)
  netns_link_down h1 # the fabric; eno1 still reaches h0
  if wait_cmd 90 test -f "$T/done"; then
    rc=$(cat "$T/done")
    [ "$rc" = 0 ] || bad "elastic: exit $rc, expected 0"
    line=$(grep -o "restart 1: .*" "$T/err" || true)
    echo "$line"
    # the claims in the order they came, then the decision
    for want in "restart 1: network partition (" "host h1 named h2, h3, h4 lost" "host h2 named h1 lost" \
      "): kept h2, h3, h4 (the larger side), left out h1; going on with 3 hosts: h2:2,h3:2,h4:2"; do
      [[ $line == *"$want"* ]] || bad "elastic: the restart line does not say '$want'"
    done
    [ "$(starts 6)" = 6 ] || bad "elastic: $(starts 6) of 6 ranks started again at world 6"
    grep -q "start rank 0 world 6 .* host h2 " "$T/out" || bad "elastic: rank 0 not on h2 after the restart"
    grep -q "done rank 5 step 60" "$T/out" || bad "elastic: the job did not complete at world 6"
    t1=$(grep "start rank 0 world 6 " "$T/out" | grep -o 'at [0-9.]*' | head -1)
    took=$(echo "${t1#at } - $t0" | bc)
    # the bound of a lost host: netns_elastic's rank 0's host lost resumes in ~12 s (5 s liveness)
    [ "$(echo "$took < 30" | bc)" = 1 ] || bad "elastic: resumed ${took}s after the cut (bound 30 s)"
    python3 - "$T/summary.json" <<'PY' || bad "elastic: elastic_restarts does not record the partition"
import json, sys
r = json.load(open(sys.argv[1]))["elastic_restarts"]
p = r[0]["partition"]
assert len(r) == 1 and r[0]["hosts_after"] == "h2:2,h3:2,h4:2", r
assert p["kept"] == ["h2", "h3", "h4"] and p["left_out"] == ["h1"], p
claims = {c["by"]: c["lost"] for c in p["claims"]}
assert claims["h1"] == ["h2", "h3", "h4"] and claims["h2"] == ["h1"], claims
assert p["rule"] == "larger side" and p["rank0_side_kept"] is False, p
PY
    [ "$FAILED" = 0 ] && pass "h1 (rank 0's) cut from the fabric, eno1 up: h2, h3, h4 resumed ${took}s after the cut, h1 left out, completed"
  else
    bad "elastic: gpulaunch-run still runs 90 s after the cut"
  fi
else
  bad "elastic: the job did not start on 8 ranks"
fi
heal

# (b) the same partition under a job that is not elastic: 68, the partition named once.
export STEPS=600
job -np 8 --host h1:2,h2:2,h3:2,h4:2
if wait_cmd 60 started 8 8; then
  netns_link_down h1
  if wait_cmd 60 test -f "$T/done"; then
    rc=$(cat "$T/done")
    [ "$rc" = 68 ] || bad "plain: exit $rc, expected 68"
    line=$(grep -o "gpulaunch-run: a network partition.*" "$T/err" || true)
    for want in "host h1 named h2, h3, h4 lost" "host h2 named h1 lost" "): h1 cannot reach h2, h3, h4 (exit status 68)"; do
      [[ $line == *"$want"* ]] || bad "plain: the partition line does not say '$want'"
    done
    [ "$FAILED" = 0 ] && pass "the same partition, not elastic: exit 68, $(grep -o 'a network partition.*' "$T/err")"
  else
    bad "plain: gpulaunch-run still runs 60 s after the cut"
  fi
else
  bad "plain: the job did not start on 8 ranks"
fi
heal
exit "$FAILED"
