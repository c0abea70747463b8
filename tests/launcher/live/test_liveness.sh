#!/usr/bin/env bash
# Liveness of the supervisors (launcher/live/liveness.c) on one host under mpirun: a supervisor
# that stops (SIGSTOP: a hung gpulaunch) is named by rank 0 after liveness_timeout and the whole
# job ends with 68, no program left; a supervisor killed outright (SIGKILL) is named at once;
# liveness_timeout = 0 turns it off (the stopped supervisor then goes unnoticed until mpirun's
# own end).
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
host=$(hostname -s)
LIVE=2
printf '[job]\ncommand = %s sleep 60\nliveness_timeout = %ss\n' "$PROG" "$LIVE" >"$T/live.conf"

# The pid of rank R's gpulaunch (not mpirun's) for the job of config C.
rank_pid() {
  local p
  for p in $(pgrep -f "$GPULAUNCH $2"); do
    [[ $(readlink "/proc/$p/exe") == "$(readlink -f "$GPULAUNCH")" ]] || continue
    tr '\0' '\n' <"/proc/$p/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
  done
}
start_bg() { # config: mpirun in the background, returns when the 4 programs run
  (set +e; "$MPIEXEC" -np 4 --oversubscribe --bind-to none "$GPULAUNCH" "$1" >"$T/out" 2>"$T/err"; echo $? >"$T/rc") &
  for _ in $(seq 1 100); do
    [[ $(pgrep -fc "$PROG sleep 60" || true) -ge 4 ]] && return 0
    sleep 0.1
  done
  fail "the programs did not start"
}

# 1. Rank 2's supervisor stops.
rm -f "$T/rc"
start_bg "$T/live.conf"
victim=$(rank_pid 2 "$T/live.conf")
[[ -n $victim ]] || fail "rank 2's gpulaunch not found"
t0=$(now)
kill -STOP "$victim"
wait_for "$T/rc" 30 || { kill -CONT "$victim"; fail "the job did not end 30 s after rank 2's supervisor stopped"; }
t1=$(now)
kill -CONT "$victim" 2>/dev/null || true
assert_eq "$(cat "$T/rc")" 68 "exit status"
assert_grep "$T/err" "^gpulaunch: rank 2 \(host $host\): no heartbeat from its supervisor for [0-9]+ s .*; ending the job \(exit status 68\)" "rank 2 named"
took=$(elapsed "$t0" "$t1")
assert_le "$took" $((LIVE + 10)) "time from the stop to the end of mpirun"
sleep 0.5
[[ $(pgrep -fc "$PROG sleep 60" || true) == 0 ]] || fail "a program outlived the job"
pass "rank 2's supervisor stopped: named, job ended with 68 ${took}s later, no program left"

# 2. Rank 3's gpulaunch killed: named as dead (mpirun may end the job first; either way 68 or
#    137 and no program left).
rm -f "$T/rc"
start_bg "$T/live.conf"
victim=$(rank_pid 3 "$T/live.conf")
kill -KILL "$victim"
wait_for "$T/rc" 20 || fail "the job did not end after rank 3's gpulaunch was killed"
rc=$(cat "$T/rc")
[[ $rc == 68 || $rc == 137 ]] || fail "exit status $rc after a killed supervisor"
sleep 0.5
[[ $(pgrep -fc "$PROG sleep 60" || true) == 0 ]] || fail "a program outlived the job"
pass "rank 3's gpulaunch killed: job ended ($rc), no program left"

# 2b. Rank 0's gpulaunch killed: each surviving rank sees it, but the root cause is printed once
#     for the job (it was once per surviving rank: 3 times for 4 ranks).
rm -f "$T/rc"
start_bg "$T/live.conf"
victim=$(rank_pid 0 "$T/live.conf")
[[ -n $victim ]] || fail "rank 0's gpulaunch not found"
kill -KILL "$victim"
wait_for "$T/rc" 20 || fail "the job did not end after rank 0's gpulaunch was killed"
sleep 0.5
[[ $(pgrep -fc "$PROG sleep 60" || true) == 0 ]] || fail "a program outlived the job"
n=$(grep -c "rank 0 (host $host): its gpulaunch died" "$T/err" || true)
assert_eq "$n" 1 "lines naming rank 0's dead gpulaunch"
pass "rank 0's gpulaunch killed: the root cause printed once, no program left"

# 3. liveness_timeout = 0: off (the stopped supervisor is not named within 2 x LIVE).
printf '[job]\ncommand = %s sleep 60\nliveness_timeout = 0\n' "$PROG" >"$T/off.conf"
rm -f "$T/rc"
start_bg "$T/off.conf"
victim=$(rank_pid 1 "$T/off.conf")
kill -STOP "$victim"
sleep $((LIVE * 2 + 1))
[[ ! -f $T/rc ]] || { kill -CONT "$victim"; fail "liveness_timeout = 0 still ended the job"; }
kill -CONT "$victim"
pkill -f "$PROG sleep 60" || true
wait_for "$T/rc" 20 || true
assert_nogrep "$T/err" "no heartbeat" "no liveness message when off"
pass "liveness_timeout = 0: off"
