#!/usr/bin/env bash
# The liveness tree over 4 netns hosts (2 ranks each) with GPULAUNCH_LIVE_FANOUT=2, so that h3's
# leader (rank 6) hangs below h1's (rank 2), not below rank 0: (1) a bad fanout is a config error
# naming the variable; (2) a job that ends normally ends with 0 (goodbyes up and down the tree,
# no false loss); (3) h1's link goes down mid-job: rank 0 names h1's ranks, and only them (h3,
# cut off from rank 0 with h1, ends on its own without being named), every gpulaunch and program
# is gone in bounded time; (4) h1's leader's supervisor stopped (SIGSTOP): rank 0 names h1, the
# job ends with 68.
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
PROG=${1:?usage: test_livetree.sh GPL_TESTPROG}
source "$(dirname "$0")/../lib.sh"
netns_begin

NETNS_DECOYS=0 netns_setup 4
T=$NETNS_DIR
HOSTS=h0:2,h1:2,h2:2,h3:2
export GPULAUNCH_TIMEOUT=8
LIVE=4
FAN=(-x GPULAUNCH_LIVE_FANOUT=2)
printf '[job]\ncommand = %s sleep 120\nliveness_timeout = %ss\n' "$PROG" "$LIVE" >"$T/live.conf"
printf '[job]\ncommand = %s sleep 1\nliveness_timeout = %ss\n' "$PROG" "$LIVE" >"$T/short.conf"

start_job() {
  rm -f "$T/done"
  (netns_run 8 "$HOSTS" "${FAN[@]}" "$GPULAUNCH" "$T/live.conf"; echo "$RC $SECS" >"$T/done") &
  for _ in $(seq 1 100); do
    [ "$(running_progs)" -ge 8 ] && return 0
    sleep 0.2
  done
  bad "the job did not start"
  return 1
}
clean_slate() {
  pkill -KILL -f "mpirun.*$T/live.conf" 2>/dev/null || true
  for h in "${NETNS_HOSTS[@]}"; do
    for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  done
  wait 2>/dev/null || true
}

# 1. A fanout that is no number: the variable named, the config error's exit status.
netns_run 8 "$HOSTS" -x GPULAUNCH_LIVE_FANOUT=1x "$GPULAUNCH" "$T/short.conf"
[ "$RC" = 65 ] || bad "bad fanout: exit $RC, expected 65"
grep -q "GPULAUNCH_LIVE_FANOUT=1x: not a whole number from 2 to 1024" "$T/err" || bad "bad fanout: not named"
[ "$FAILED" = 0 ] && pass "GPULAUNCH_LIVE_FANOUT=1x: exit 65, the variable named"

# 2. A job that ends normally, through the tree.
netns_run 8 "$HOSTS" "${FAN[@]}" "$GPULAUNCH" "$T/short.conf"
[ "$RC" = 0 ] || bad "normal end: exit $RC"
if grep -q "no heartbeat\|gpulaunch died\|never reached" "$T/err"; then bad "normal end: a false loss"; fi
[ "$FAILED" = 0 ] && pass "a job over the tree (fanout 2, depth 2) ends normally with 0, no loss said"

# 3. h1's link goes down mid-job: h1 is named, h3 (below it) is not.
if start_job; then
  netns_link_down h1
  gone=$(wait_gone 40)
  [ "$(echo "$gone < $LIVE + 20" | bc)" = 1 ] || bad "link down: gpulaunch/programs still alive after ${gone}s"
  grep -Eq "^gpulaunch: rank 2 \(host h1\), rank 3 \(host h1\): no heartbeat from their supervisor for [0-9]+ s" "$T/err" ||
    bad "link down: h1's ranks not named"
  if grep -E "^gpulaunch: .*host h3.*(no heartbeat|died|never reached)" "$T/err"; then bad "link down: h3 named as lost"; fi
  n=$(grep -c "^gpulaunch: rank [0-9] (host h[0-9]).*ending the job" "$T/err" || true)
  [ "$n" = 1 ] || bad "link down: $n root causes said, expected 1"
  [ "$FAILED" = 0 ] && pass "h1's link down mid-job: h1's ranks named (h3 below it not), all gone ${gone}s later"
fi
clean_slate
ip -n "${NETNS_NS[h1]}" link set "${NETNS_IF[h1]}" up

# 4. h1's leader (rank 2, parent of h3's leader) stopped: a silent leader stands for its host.
if start_job; then
  victim=""
  for p in $(ip netns pids "${NETNS_NS[h1]}"); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$GPULAUNCH")" ] || continue
    tr '\0' '\n' <"/proc/$p/environ" | grep -qx OMPI_COMM_WORLD_RANK=2 && victim=$p
  done
  if [ -z "$victim" ]; then bad "hung: rank 2 not found"; else
    kill -STOP "$victim"
    if wait_done 40; then
      read -r rc secs <"$T/done"
      [ "$rc" = 68 ] || bad "hung leader: exit $rc, expected 68"
      grep -Eq "^gpulaunch: rank 2 \(host h1\), rank 3 \(host h1\): no heartbeat from their supervisor" "$T/err" ||
        bad "hung leader: h1 not named"
      [ "$FAILED" = 0 ] && pass "h1's leader stopped (SIGSTOP): h1 named, the job ended (68)"
    else
      bad "hung leader: the job did not end"
    fi
    kill -CONT "$victim" 2>/dev/null || true
  fi
fi
clean_slate
exit "$FAILED"
