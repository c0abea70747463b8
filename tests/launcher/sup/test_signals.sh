#!/usr/bin/env bash
# Signals to the job reach every program: SIGUSR1/SIGUSR2 forwarded, SIGTERM (preemption) turned
# into the preempt signal, then SIGKILL after the grace; the job says "preempted".
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
export GPL_TEST_DIR="$T"

wait_files() { # wait_files PATTERN COUNT SECONDS
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    # shellcheck disable=SC2086
    [[ $(ls $1 2>/dev/null | wc -l) -ge $2 ]] && return 0
    sleep 0.1
  done
  fail "expected $2 files $1"
}

start_job() { # start_job NP ARGS...: mpirun in the background
  local np=$1
  shift
  rm -f "$T"/ready.* "$T"/SIG*
  "$MPIEXEC" -np "$np" --oversubscribe --bind-to none "$@" >"$T/out" 2>"$T/err" &
  JOB=$!
  wait_files "$T/ready.*" "$np" 20
}

start_job 4 "$GPULAUNCH" -- "$PROG" signals 30
kill -USR1 "$JOB"
wait_files "$T/SIGUSR1.*" 4 10
kill -USR2 "$JOB"
wait_files "$T/SIGUSR2.*" 4 10
kill -0 "$JOB" || fail "the job must go on after SIGUSR1/SIGUSR2"
signal_job TERM
wait_files "$T/SIGTERM.*" 4 1
took=$(elapsed "$t0")
[[ $RC != 0 ]] || fail "mpirun must not exit 0 after SIGTERM"
assert_grep "$T/err" "gpulaunch: SIGTERM received: stopping the job; every program gets SIGTERM now" "stop said at once"
# Plain mpirun SIGKILLs its ranks a second after its SIGTERM: said once, and mpirun's teardown
# is not also reported as a dead gpulaunch (issue 21).
assert_grep "$T/err" "gpulaunch: the SIGTERM came from mpirun, which SIGKILLs every rank" "no grace under plain mpirun said"
assert_grep "$T/err" "gpulaunch: job preempted: SIGTERM from mpirun" "preempted said"
assert_nogrep "$T/err" "gpulaunch died|no heartbeat" "the stop is not also a lost rank"
assert_le "$took" 5 "time to end after SIGTERM"
pass "SIGUSR1, SIGUSR2 and SIGTERM to mpirun reach all 4 programs (ended in ${took}s), one account of the stop"

# preempt_signal = SIGUSR1: programs get SIGUSR1 (to checkpoint), then SIGKILL after the grace,
# under the recommended form, gpulaunch-run (plain mpirun would SIGKILL them after 1 s), which
# exits 75 itself.
cat >"$T/p.conf" <<CONF
[job]
command = $PROG signals 30
preempt_signal = SIGUSR1
grace = 2s
checkpoint_dir = $T/ckpt
CONF
MPIEXEC="$(dirname "$GPULAUNCH")/gpulaunch-run" start_job 4 "$GPULAUNCH" "$T/p.conf" --summary "$T/s.json"
signal_job TERM
took=$(elapsed "$t0")
wait_files "$T/SIGUSR1.*" 4 1
[[ -z $(ls "$T"/SIGTERM.* 2>/dev/null) ]] || fail "programs must get SIGUSR1, not SIGTERM"
assert_grep "$T/err" "every program gets SIGUSR1 now, SIGKILL after 2 s" "preemption announced"
assert_grep "$T/err" "gpulaunch: job preempted: SIGTERM received; every program got SIGUSR1" "preempted reported"
assert_le 1.9 "$took" "SIGKILL only after the grace"
assert_le "$took" 10 "ended soon after the grace"
grep -q '"preempted":[[:space:]]*true' "$T/s.json" || fail "summary says preempted"
assert_eq "$RC" 75 "gpulaunch-run's exit status"
pass "preempt_signal = SIGUSR1: every program got SIGUSR1, SIGKILL after the 2 s grace, 'preempted'"

# SIGINT to gpulaunch-run (Ctrl-C reaches it, never mpirun: its own process group): every
# program gets SIGINT at once, and the command exits 130 (interrupted) once all are done.
MPIEXEC="$(dirname "$GPULAUNCH")/gpulaunch-run" start_job 4 "$GPULAUNCH" -- "$PROG" signals 30
signal_job INT
took=$(elapsed "$t0")
wait_files "$T/SIGINT.*" 4 1
assert_eq "$RC" 130 "gpulaunch-run's exit status after SIGINT"
assert_grep "$T/err" "gpulaunch: job interrupted by SIGINT" "interrupted said"
assert_le "$took" 10 "time to end after SIGINT"
pass "SIGINT to gpulaunch-run: all 4 programs got SIGINT, exit 130 after ${took}s"

# Alone, the exit status itself says preempted (75).
rm -f "$T"/ready.* "$T"/SIG*
"$GPULAUNCH" "$T/p.conf" >"$T/out" 2>"$T/err" &
JOB=$!
wait_files "$T/ready.*" 1 20
signal_job TERM
assert_eq "$RC" 75 "exit status of a preempted job"
pass "alone: SIGTERM gives exit status 75 (preempted)"

# mpirun tears a job down with SIGTERM when one of its ranks dies: that is not a preemption.
start_job 4 "$GPULAUNCH" -- "$PROG" signals 30
victim=$(pgrep -P "$JOB" -x gpulaunch | sed -n 2p) # mpirun starts the ranks itself
[[ -n $victim ]] || fail "no gpulaunch rank found under mpirun"
kill -KILL "$victim"
set +e
wait "$JOB"
RC=$?
set -e
[[ $RC != 0 && $RC != 75 ]] || fail "a dead rank must not end the job with status $RC"
assert_nogrep "$T/err" "job preempted" "mpirun's teardown after a dead rank is not a preemption"
pass "a rank killed under mpirun: mpirun's SIGTERM to the others is not reported as preemption (status $RC)"
