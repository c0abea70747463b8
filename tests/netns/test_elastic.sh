#!/usr/bin/env bash
# Elastic membership (issue 28) across netns hosts, gpulaunch-run --nodes MIN:MAX started on h0
# (the host that must survive) with a hostfile: (a) a host's link cut mid-run: the job goes on
# with the hosts that remain from its checkpoint and completes, TORCHELASTIC_RESTART_COUNT one
# higher, the same run id; (b) a host added to the hostfile: the job grows back; (c) below MIN:
# the bounded wait and exit 78 naming what is usable; (d) a program failing on a healthy host:
# its status, no host dropped, no restart; (e) rank 0's own host lost (the head, h0, not in the
# list); (f) two hosts' processes killed at once (network up); (g) two hosts' links cut at once.
#   test_elastic.sh GPULAUNCH_RUN
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
RUN=${1:?usage: test_elastic.sh GPULAUNCH_RUN}
# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$(dirname "$0")/testlib.sh"

NH=4 K=2
NETNS_DECOYS=0 netns_setup "$NH"
T=$NETNS_DIR
export GPULAUNCH_TIMEOUT=20 MPIEXEC=$RUN GPULAUNCH_MPIRUN=mpirun
# A trainer: a step every 0.2 s; rank 0 keeps the last step in $T/ckpt and resumes from it; on
# SIGTERM every rank saves and leaves. FAIL_RANK exits 5 at step 3.
cat >"$T/train.sh" <<PROG
#!/bin/bash
step=\$(cat "$T/ckpt" 2>/dev/null || echo 0)
echo "start rank \$RANK world \$WORLD_SIZE restart \$TORCHELASTIC_RESTART_COUNT run \$TORCHELASTIC_RUN_ID step \$step at \$(date +%s.%N)"
trap 'echo "\$step" >"$T/saved.\$RANK"; exit 0' TERM
while [ "\$step" -lt "\${STEPS:-100}" ]; do
  sleep 0.2 & wait \$!
  step=\$((step + 1))
  [ "\$RANK" = 0 ] && echo "\$step" >"$T/ckpt"
  [ "\$RANK" = "\${FAIL_RANK:--1}" ] && [ "\$step" = 3 ] && { echo "rank \$RANK fails" >&2; exit 5; }
done
echo "done rank \$RANK step \$step"
PROG
chmod +x "$T/train.sh"
printf '[job]\ncommand = %s\ngrace = 10s\nliveness_timeout = 5s\n' "$T/train.sh" >"$T/job.conf"

hostfile() { : >"$T/elastic.hosts"; for h in "$@"; do echo "$h slots=$K" >>"$T/elastic.hosts"; done; }
# elastic ARGS...: gpulaunch-run with the hostfile on h0 in the background; "$T/done" gets its
# status. The output is in $T/out and $T/err.
elastic() {
  rm -f "$T/done" "$T/ckpt" "$T"/saved.* "$T/summary.json"
  (RC=0
   netns_mpirun --hostfile "$T/elastic.hosts" -x STEPS -x FAIL_RANK --discovery-interval 1 "$@" "$GPULAUNCH" --summary "$T/summary.json" "$T/job.conf" \
     >"$T/out" 2>"$T/err" || RC=$?
   echo "$RC" >"$T/done") &
}
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds
  local s=$1 i
  shift
  for ((i = 0; i < s * 10; i++)); do "$@" && return 0; sleep 0.1; done
  return 1
}
starts() { grep -c "start rank .* world $1 " "$T/out" 2>/dev/null || true; }
# shellcheck disable=SC2317 # called through wait_for
started() { [ "$(starts "$1")" -ge "$2" ]; } # started WORLD N: N ranks said they started at WORLD
done_rc() { [ -f "$T/done" ] && cat "$T/done"; }

# (a) h2's link cut mid-run: the job goes on with 3 hosts (6 ranks) from rank 0's checkpoint.
hostfile h0 h1 h2 h3
export STEPS=60 FAIL_RANK=-1
elastic --nodes 2:4
if wait_for 60 started 8 8 && wait_for 20 test -s "$T/ckpt"; then
  sleep 1
  t0=$(date +%s.%N)
  netns_link_down h2
  if wait_for 90 test -f "$T/done"; then
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
    [ "$fail" = 0 ] && ok "link cut on h2: resumed on 3 hosts ${took}s after the cut, from $resumed (first start at $first), completed"
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
if wait_for 60 started 6 6 && wait_for 20 test -s "$T/ckpt"; then
  t0=$(date +%s.%N)
  hostfile h0 h1 h3 h2
  if wait_for 90 test -f "$T/done"; then
    rc=$(done_rc)
    [ "$rc" = 0 ] || bad "grow: exit $rc, expected 0"
    [ "$(starts 8)" = 8 ] || bad "grow: $(starts 8) of 8 ranks started at world 8"
    grep -q "restart 1: scale-up: h2 joined" "$T/err" || bad "grow: the restart's cause not said"
    [ "$(find "$T" -name 'saved.*' | wc -l)" = 6 ] || bad "grow: $(find "$T" -name 'saved.*' | wc -l) of 6 ranks saved on the scale-up stop"
    t1=$(grep "start rank 0 world 8 " "$T/out" | grep -o 'at [0-9.]*' | head -1)
    took=$(echo "${t1#at } - $t0" | bc)
    [ "$fail" = 0 ] && ok "h2 listed again: grew back to 4 hosts ${took}s after, every rank saved at the stop, completed"
  else
    bad "grow: gpulaunch-run still runs 90 s after h2 was listed"
  fi
else
  bad "grow: the job did not start on 6 ranks"
fi
wait

# (e) rank 0's own host lost: gpulaunch-run on h0 runs the job on h1..h3 only, rank 0 on h1; h1's
# link cut: the surviving rank that names the loss tells gpulaunch-run, the job goes on with h2, h3.
hostfile h1 h2 h3
export STEPS=70
elastic --nodes 2:3
if wait_for 60 started 6 6 && wait_for 20 test -s "$T/ckpt"; then
  t0=$(date +%s.%N)
  netns_link_down h1
  if wait_for 90 test -f "$T/done"; then
    rc=$(done_rc)
    [ "$rc" = 0 ] || bad "rank 0's host: exit $rc, expected 0"
    grep -q "restart 1: host h1 lost" "$T/err" || bad "rank 0's host: the restart's cause not said"
    [ "$(starts 4)" = 4 ] || bad "rank 0's host: $(starts 4) of 4 ranks started again at world 4"
    t1=$(grep "start rank 0 world 4 " "$T/out" | grep -o 'at [0-9.]*' | head -1)
    [ "$fail" = 0 ] && ok "rank 0's host h1 lost: resumed on h2, h3 $(echo "${t1#at } - $t0" | bc)s after the cut, completed"
  else
    bad "rank 0's host: gpulaunch-run still runs 90 s after the cut"
  fi
else
  bad "rank 0's host: the job did not start on 6 ranks"
fi
wait
ip -n "${NETNS_NS[h1]}" link set "${NETNS_IF[h1]}" up

# (f) two hosts die at once with their network up (every process of h2 and h3 killed): the job
# goes on; a host whose processes died but whose network is up may serve again at once.
hostfile h0 h1 h2 h3
export STEPS=70
elastic --nodes 2:4
if wait_for 60 started 8 8 && wait_for 20 test -s "$T/ckpt"; then
  for h in h2 h3; do
    # shellcheck disable=SC2046 # a list of pids
    kill -KILL $(ip netns pids "${NETNS_NS[$h]}") 2>/dev/null || true
  done
  if wait_for 90 test -f "$T/done"; then
    rc=$(done_rc)
    [ "$rc" = 0 ] || bad "processes killed: exit $rc, expected 0"
    grep -Eq "restart 1: host h[23] lost" "$T/err" || bad "processes killed: the lost host not named"
    grep -q "done rank 0 step 70" "$T/out" || bad "processes killed: the job did not complete"
    [ "$fail" = 0 ] && ok "h2 and h3's processes killed: $(grep -o 'restart 1: [^;]*' "$T/err"), completed"
  else
    bad "processes killed: gpulaunch-run still runs 90 s after the kill"
  fi
else
  bad "processes killed: the job did not start on 8 ranks"
fi
wait

# (g) two hosts' links cut at once: rank 0 names both in one loss (it holds the first while the
# other is silent but not yet past the deadline), one restart leaves both out, and the job goes on
# with h0, h1 and completes.
hostfile h0 h1 h2 h3
export STEPS=80
elastic --nodes 2:4 --start-timeout 40
if wait_for 60 started 8 8 && wait_for 20 test -s "$T/ckpt"; then
  t0=$(date +%s.%N)
  netns_link_down h2
  netns_link_down h3
  if wait_for 200 test -f "$T/done"; then
    t1=$(grep "start rank 0 world 4 " "$T/out" | grep -o 'at [0-9.]*' | head -1)
    rc=$(done_rc)
    [ "$rc" = 0 ] || bad "two links cut: exit $rc, expected 0"
    [ "$(starts 4)" = 4 ] || bad "two links cut: $(starts 4) of 4 ranks started at world 4"
    grep -q "done rank 0 step 80" "$T/out" || bad "two links cut: the job did not complete"
    # rank 0 holds the first loss while the other host is suspect: one restart names both
    grep -Eq "restart 1: host h[23] lost, host h[23] lost" "$T/err" ||
      bad "two links cut: restart 1 did not name both hosts: $(grep -o 'restart [0-9]: [^;]*' "$T/err" | paste -sd';' -)"
    ! grep -q "restart 2:" "$T/err" || bad "two links cut: a second restart (the hosts were not named together)"
    [ "$fail" = 0 ] && ok "h2 and h3 cut at once: $(grep -o 'restart [0-9]: [^;]*' "$T/err" | paste -sd';' -), resumed at world 4 $(echo "${t1#at } - $t0" | bc)s after the cut, completed"
  else
    bad "two links cut: gpulaunch-run still runs 200 s after the cut"
  fi
else
  bad "two links cut: the job did not start on 8 ranks"
fi
wait
for h in h2 h3; do ip -n "${NETNS_NS[$h]}" link set "${NETNS_IF[$h]}" up; done

# (c) below MIN: a bounded wait, then 78 naming what is usable.
hostfile h0 h1
elastic --nodes 3:4 --min-wait 3
if wait_for 30 test -f "$T/done"; then
  rc=$(done_rc)
  [ "$rc" = 78 ] || bad "below MIN: exit $rc, expected 78"
  grep -q "fewer than 3 usable hosts for 3 s: 2 usable (h0:2,h1:2)" "$T/err" || bad "below MIN: not said"
  [ "$(starts 4)" = 0 ] || bad "below MIN: the job started"
  [ "$fail" = 0 ] && ok "below MIN: exit 78 after the 3 s wait, the usable hosts named"
else
  bad "below MIN: gpulaunch-run did not end within 30 s"
fi
wait

# (d) a program failing on a healthy host is no membership change.
hostfile h0 h1 h2
export STEPS=40 FAIL_RANK=3
elastic --nodes 2:3
if wait_for 60 test -f "$T/done"; then
  rc=$(done_rc)
  [ "$rc" = 5 ] || bad "failure: exit $rc, expected 5"
  grep -q "rank 3 (host h1) exited with status 5" "$T/err" || bad "failure: the cause not named"
  if grep -q "restart 1" "$T/err"; then bad "failure: restarted as a membership change"; fi
  [ "$fail" = 0 ] && ok "a program failing on a healthy host: exit 5, rank 3 named, no host dropped"
else
  bad "failure: gpulaunch-run did not end within 60 s"
fi
wait
exit "$fail"
