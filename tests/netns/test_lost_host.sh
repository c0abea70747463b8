#!/usr/bin/env bash
# A host lost mid-job under the user's plain mpirun (issue 17): no keepalive options, 4
# interface-rich hosts x 2 ranks. gpulaunch names the lost host and every rank leaves with 68; a
# helper then closes mpirun's connection to the lost host's daemon (launcher/live/lostpeer.c), so
# the user's mpirun returns 68 within 30 s of the loss instead of waiting minutes for Open MPI's
# keepalive. Cases: a host in the middle (default liveness_timeout, 10 s), and rank 0's own host
# (the one mpirun runs on) cut off from all the others.
#   test_lost_host.sh TESTPROG
set -euo pipefail
: "${GPULAUNCH:?GPULAUNCH must point to the gpulaunch binary}"
PROG=${1:?usage: test_lost_host.sh TESTPROG}
source "$(dirname "$0")/../lib.sh"
netns_begin

NH=4 K=2
NETNS_RICH=1 NETNS_KEEPALIVE=0 netns_setup "$NH"
T=$NETNS_DIR
hosts=""
for ((i = 0; i < NH; i++)); do hosts+="${hosts:+,}h$i:$K"; done
export GPULAUNCH_TIMEOUT=30

# lost_case NAME HOST LIVENESS: start the job, cut HOST's links once every program runs, and
# check the user's mpirun: its exit status and the seconds from the cut to its return.
lost_case() {
  local name=$1 host=$2 live=$3 i rc secs
  printf '[job]\ncommand = %s sleep 300\n%s' "$PROG" "${live:+liveness_timeout = $live
}" >"$T/$name.conf"
  rm -f "$T/done"
  (netns_run $((NH * K)) "$hosts" "$GPULAUNCH" "$T/$name.conf"; echo "$RC" >"$T/done") &
  for ((i = 0; i < 150; i++)); do
    [ "$(running_progs)" -ge $((NH * K)) ] && break
    sleep 0.2
  done
  if [ "$(running_progs)" -lt $((NH * K)) ]; then
    bad "$name: the job did not start"
    return
  fi
  local t0
  t0=$(date +%s.%N)
  netns_link_down "$host"
  netns_exec "$host" ip link set eno1 down # its management NIC too: the host is gone
  for ((i = 0; i < 600; i++)); do
    [ -f "$T/done" ] && break
    sleep 0.1
  done
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ ! -f "$T/done" ]; then
    bad "$name: the user's mpirun still runs ${secs}s after $host was lost"
    return
  fi
  rc=$(cat "$T/done")
  [ "$rc" = 68 ] || bad "$name: mpirun exited $rc, expected 68"
  [ "$(echo "$secs <= 30" | bc)" = 1 ] || bad "$name: mpirun returned ${secs}s after the loss (> 30 s)"
  grep -Eq "no heartbeat from their supervisor" "$T/err" || bad "$name: the loss was not named"
  [ "$FAILED" = 0 ] && pass "$name: $host lost mid-job, the user's plain mpirun (no keepalive option) returned 68 ${secs}s later"
  wait
}

lost_case middle h2 ""
grep -Eq "rank 4 \(host h2\), rank 5 \(host h2\): no heartbeat" "$T/err" || bad "middle: h2's ranks not named"
netns_teardown
NETNS_RICH=1 NETNS_KEEPALIVE=0 netns_setup "$NH"
T=$NETNS_DIR
lost_case rank0_host h0 5s
exit "$FAILED"
