#!/usr/bin/env bash
# A fabric partition of rank 0's host (issue 34), with the defaults (liveness_timeout 10 s): 4
# worker hosts (h1-h4) x 2 ranks with a management network (NETNS_RICH=1: eno1 on a switch of its
# own) and gpulaunch-run on a head node (h0) outside the hostfile. h1, rank 0's host, loses its
# fabric link but keeps eno1, so both sides still reach gpulaunch-run: rank 0 names h2, h3, h4 lost
# and h2 names h1 lost, or mpirun (on h0, its daemons over the fabric) gives up on h1's daemon first
# and ends the launch itself before the ranks' claims come.
#   (a) gpulaunch-run --nodes 3:4 with its own Open MPI keepalive (20 s): the ranks' claims settle
#       it; the larger side (h2, h3, h4) goes on from the checkpoint within the bound of a lost
#       host, h1 is left out; the restart line and elastic_restarts say the partition and the
#       claims behind it.
#   (b) the same with the harness's short keepalive (8 s, under the liveness timeout): mpirun's own
#       word that it lost h1's daemon settles it, within the same bound.
#   (c) the same job not elastic (short keepalive): exit 68, h1 named as the host cut off, not
#       every host.
# LIVENESS (a [job] liveness_timeout, e.g. 5s) replaces the default.
#   test_elastic_partition.sh GPULAUNCH_RUN [LIVENESS]
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_elastic_partition.sh GPULAUNCH_RUN [LIVENESS]}
LIVENESS=${2:-}
source "$(dirname "$0")/../lib.sh"
netns_begin

K=2
NETNS_RICH=1 NETNS_DECOYS=0 NETNS_KEEPALIVE=0 netns_setup 5
T=$NETNS_DIR
SHORT_KA=(--mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3)
export GPULAUNCH_TIMEOUT=20 MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun
# The trainer: tests/step_trainer.sh (a step every 0.2 s, rank 0 checkpoints, SIGTERM saves).
printf '[job]\ncommand = %s\ngrace = 10s\n%s' "$GPULAUNCH_SOURCE_DIR/tests/step_trainer.sh $T 100" \
  "${LIVENESS:+liveness_timeout = $LIVENESS
}" >"$T/job.conf"
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

# elastic CASE WANT... -- MPIRUN_ARGS...: the elastic job, h1's fabric cut once it checkpointed;
# it must go on with h2, h3, h4 within the bound, and its restart line say each WANT (one of its
# "|"-separated texts).
elastic() {
  local c=$1 line took t0 t1 want a
  shift
  local -a wants=()
  while [ "$1" != -- ]; do wants+=("$1"); shift; done
  shift
  export STEPS=60
  job "$@" --hostfile "$T/elastic.hosts" --discovery-interval 1 --nodes 3:4
  if ! { wait_cmd 60 started 8 8 && wait_cmd 20 test -s "$T/ckpt"; }; then
    bad "$c: the job did not start on 8 ranks"
    return
  fi
  sleep 1
  t0=$(date +%s.%N)
  netns_link_down h1 # the fabric; eno1 still reaches h0
  if ! wait_cmd 90 test -f "$T/done"; then
    bad "$c: gpulaunch-run still runs 90 s after the cut"
    return
  fi
  rc=$(cat "$T/done")
  [ "$rc" = 0 ] || bad "$c: exit $rc, expected 0"
  line=$(grep -o "restart 1: .*" "$T/err" || true)
  echo "$c: $line"
  local alt said
  for want in "${wants[@]}" "going on with 3 hosts: h2:2,h3:2,h4:2"; do
    said=0
    IFS='|' read -ra alt <<<"$want"
    for a in "${alt[@]}"; do [[ $line == *"$a"* ]] && said=1; done
    [ "$said" = 1 ] || bad "$c: the restart line does not say '$want'"
  done
  [ "$(starts 6)" = 6 ] || bad "$c: $(starts 6) of 6 ranks started again at world 6"
  grep -q "start rank 0 world 6 .* host h2 " "$T/out" || bad "$c: rank 0 not on h2 after the restart"
  grep -q "done rank 5 step 60" "$T/out" || bad "$c: the job did not complete at world 6"
  t1=$(grep "start rank 0 world 6 " "$T/out" | grep -o 'at [0-9.]*' | head -1)
  took=$(echo "${t1#at } - $t0" | bc)
  # the bound of a lost host: netns_elastic's rank 0's host lost resumes in ~12 s (5 s liveness);
  # with the default 10 s, ~15 s
  [ "$(echo "$took < 30" | bc)" = 1 ] || bad "$c: resumed ${took}s after the cut (bound 30 s)"
  python3 - "$T/summary.json" <<'PY' || bad "$c: elastic_restarts does not record the decision and its claims"
import json, sys
r = json.load(open(sys.argv[1]))["elastic_restarts"]
assert len(r) == 1 and r[0]["hosts_after"] == "h2:2,h3:2,h4:2", r
claims = {(c["by"], c.get("launcher", False)): c["lost"] for c in r[0]["claims"]}
# h2's claim, mpirun's, or rank 0's alone (h2's cut short by the job's end: then probed)
assert claims.get(("h2", False)) == ["h1"] or claims.get(("h0", True)) == ["h1"] or \
  claims.get(("h1", False)) == ["h2", "h3", "h4"], claims
p = r[0].get("partition")
if p is not None:  # the ranks' claims of both sides, or rank 0's and mpirun's
  assert p["kept"] == ["h2", "h3", "h4"] and p["left_out"] == ["h1"], p
  assert p["rank0_side_kept"] is False, p
PY
  [ "$FAILED" = 1 ] || pass "$c: h1 (rank 0's) cut from the fabric, eno1 up: h2, h3, h4 resumed ${took}s after the cut, h1 left out, completed"
}

# (a) the ranks' claims of both sides: the larger side (when h2's claim is cut short by the job's
# end, rank 0's alone against every other host: the probe finds h1 cut off)
elastic "claims" "restart 1: " "host h1 named h2, h3, h4 lost" \
  "host h2 named h1 lost|nobody else named a host): probed; host h1 unreachable;" \
  "): kept h2, h3, h4 (the larger side), left out h1;|probed; host h1 unreachable;" --
heal

# (b) mpirun's keepalive first: its word that it lost h1's daemon
# (rank 0's claims may come too: then a partition, h1 left out; with a LIVENESS under 8 s the
# ranks' claims come first)
elastic "mpirun" "restart 1: " "${LIVENESS:+h1 unreachable|left out h1|}mpirun on h0 lost its daemon" -- "${SHORT_KA[@]}"
heal

# (c) the same partition under a job that is not elastic: 68, h1 named as the host cut off.
export STEPS=600
job "${SHORT_KA[@]}" -np 8 --host h1:2,h2:2,h3:2,h4:2
if wait_cmd 60 started 8 8; then
  netns_link_down h1
  if wait_cmd 60 test -f "$T/done"; then
    rc=$(cat "$T/done")
    [ "$rc" = 68 ] || bad "plain: exit $rc, expected 68"
    line=$(grep -E -o "gpulaunch-run: (a network partition|h1 lost or cut off).*" "$T/err" || true)
    [[ $line == *": h1 cannot reach h2, h3, h4 (exit status 68)" ]] ||
      [[ $line == *"h1 lost or cut off from the launcher (mpirun on h0 lost its daemon on h1"*"(exit status 68)" ]] ||
      bad "plain: no line names h1 as the host cut off ('$line')"
    [ "$FAILED" = 1 ] || pass "the same partition, not elastic: exit 68, $line"
  else
    bad "plain: gpulaunch-run still runs 60 s after the cut"
  fi
else
  bad "plain: the job did not start on 8 ranks"
fi
heal
exit "$FAILED"
