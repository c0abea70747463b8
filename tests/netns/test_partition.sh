#!/usr/bin/env bash
# Lost hosts across 3 netns hosts (2 ranks each): (1) a total partition between h1 and h2 (both
# still reach h0) before the job: start-up ends with 68 within the start-up timeout, naming a
# rank of each host; (2) h2's link goes down while the program runs: rank 0's supervisor names
# h2's ranks after the liveness timeout, every gpulaunch and program is gone in bounded time,
# and mpirun (with the OOB keepalive README recommends) ends with 68; (3) a supervisor stopped
# (SIGSTOP, a hung gpulaunch) on h1: named, the job ends.
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
PROG=${1:?usage: test_partition.sh GPL_TESTPROG}
source "$(dirname "$0")/../lib.sh"
netns_begin

NETNS_DECOYS=0 netns_setup 3
T=$NETNS_DIR
HOSTS=h0:2,h1:2,h2:2
export GPULAUNCH_TIMEOUT=8
LIVE=4
printf '[job]\ncommand = %s sleep 120\nliveness_timeout = %ss\n' "$PROG" "$LIVE" >"$T/live.conf"

# 1. Total partition h1 <-> h2 before the job.
for pair in "h1 h2" "h2 h1"; do
  read -r a b <<<"$pair"
  netns_exec "$a" iptables -A INPUT -s "${NETNS_ADDR[$b]}" -j DROP
  netns_exec "$a" iptables -A OUTPUT -d "${NETNS_ADDR[$b]}" -j DROP
done
netns_run 6 "$HOSTS" "$GPULAUNCH" -- "$PROG" sleep 5
[ "$RC" = 68 ] || bad "partition: exit $RC, expected 68"
grep -Eq "rank [0-9] \(host (h1|h2)\) and rank [0-9] \(host (h1|h2)\) cannot reach each other" "$T/err" &&
  grep -q "host h1" "$T/err" && grep -q "host h2" "$T/err" || { grep -i "error\|reach" "$T/err" | head; bad "partition: h1 and h2 not named"; }
[ "$(echo "$SECS < $GPULAUNCH_TIMEOUT + 20" | bc)" = 1 ] || bad "partition: took ${SECS}s"
if grep -q "ENV\|sleeping" "$T/out"; then bad "partition: the program ran"; fi
[ "$FAILED" = 0 ] && pass "total partition h1 <-> h2 at start-up: exit 68 in ${SECS}s, both hosts named"
for h in h1 h2; do netns_exec "$h" iptables -F; done

# Start the long job in the background; wait until every rank's program runs.
start_job() {
  rm -f "$T/done"
  (netns_run 6 "$HOSTS" "$GPULAUNCH" "$T/live.conf"; echo "$RC $SECS" >"$T/done") &
  for _ in $(seq 1 100); do
    [ "$(running_progs)" -ge 6 ] && return 0
    sleep 0.2
  done
  bad "the job did not start"
  return 1
}

# 2. h2's link goes down mid-job.
if start_job; then
  netns_link_down h2
  gone=$(wait_gone 40)
  [ "$(echo "$gone < $LIVE + 20" | bc)" = 1 ] || bad "link down: gpulaunch/programs still alive after ${gone}s"
  grep -Eq "rank 4 \(host h2\), rank 5 \(host h2\): no heartbeat from their supervisor for [0-9]+ s" "$T/err" ||
    bad "link down: h2's ranks not named"
  [ "$FAILED" = 0 ] && pass "h2's link down mid-job: h2's ranks named, every gpulaunch and program gone ${gone}s later"
  if wait_done 20; then
    read -r rc secs <"$T/done"
    echo "note: mpirun ended too (exit $rc)"
  else
    echo "note: mpirun still waits for h2's daemon 20 s after every rank left (Open MPI's OOB; README)"
  fi
fi
# The next job starts clean: mpirun gone, h2 back.
pkill -KILL -f "mpirun.*$T/live.conf" 2>/dev/null || true
for h in "${NETNS_HOSTS[@]}"; do
  for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
done
wait 2>/dev/null || true
ip -n "${NETNS_NS[h2]}" link set "${NETNS_IF[h2]}" up

# 3. A hung supervisor: rank 3's gpulaunch stopped.
if start_job; then
  victim=""
  for p in $(ip netns pids "${NETNS_NS[h1]}"); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$GPULAUNCH")" ] || continue
    tr '\0' '\n' <"/proc/$p/environ" | grep -qx OMPI_COMM_WORLD_RANK=3 && victim=$p
  done
  if [ -z "$victim" ]; then bad "hung: rank 3 not found"; else
    kill -STOP "$victim"
    if wait_done 40; then
      read -r rc secs <"$T/done"
      [ "$rc" = 68 ] || bad "hung: exit $rc, expected 68"
      grep -Eq "rank 3 \(host h1\): no heartbeat from its supervisor" "$T/err" || bad "hung: rank 3 not named"
      [ "$FAILED" = 0 ] && pass "rank 3's supervisor stopped (SIGSTOP): named, the job ended (68)"
    else
      bad "hung: the job did not end"
    fi
    kill -CONT "$victim" 2>/dev/null || true
  fi
fi
exit "$FAILED"
