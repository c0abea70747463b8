#!/usr/bin/env bash
# Signals under srun on a real 2-node cluster. Slurm signals every process of the step, the
# program included: each program must get each signal once (gpulaunch does not send it again),
# keep its grace, and a user's scancel is not reported as preemption.
#   test_slurm_signals.sh SIGREC TESTPROG
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurmlib.sh"
SIGREC=$1
slurm_start 2 --kill-wait 20
cd "$T"
NP=4

# start_job NAME CONF: srun in the background; every program ready
start_job() {
  rm -rf "$T/rec"
  mkdir -p "$T/rec"
  sx srun --mpi=pmix -N2 -n$NP --ntasks-per-node=2 -J "$1" "$GPULAUNCH" "$2" --summary "$T/s.json" \
    >"$T/out" 2>"$T/err" &
  JOB_PID=$!
  wait_until 30 "every program of $1 started" files_at_least "$T/rec/ready.0.*" $NP
  JOB=$(sx squeue -h -n "$1" -o %i)
  [[ -n $JOB ]] || fail "no job $1 in squeue"
}
end_job() {
  set +e
  wait "$JOB_PID"
  RC=$?
  set -e
}

# preempt_signal = SIGUSR1, grace 4 s; scancel --signal=TERM: Slurm's SIGTERM reaches every
# program itself; gpulaunch sends no SIGUSR1 on top and SIGKILLs only after the grace.
cat >"$T/usr1.conf" <<CONF
[job]
command = $SIGREC $T/rec 120
preempt_signal = SIGUSR1
grace = 4s
CONF
start_job sigusr1 "$T/usr1.conf"
t0=$(now)
sx scancel --signal=TERM "$JOB"
end_job
took=$(elapsed "$t0")
assert_eq "$RC" 75 "scancel --signal=TERM: exit status"
sig_each "$T/rec" 0 $NP TERM 1 slurmstepd "scancel --signal=TERM"
sig_each "$T/rec" 0 $NP TERM 1 "" "scancel --signal=TERM (from anyone)"
sig_each "$T/rec" 0 $NP USR1 0 "" "preempt_signal on top of Slurm's SIGTERM"
assert_le 3.9 "$took" "the grace (4 s) must hold"
assert_le "$took" 15 "SIGKILL soon after the grace"
assert_grep "$T/err" "gpulaunch: job preempted: SIGTERM from Slurm: Slurm signalled the running job" "preemption said"
assert_grep "$T/err" "preempt_signal = SIGUSR1 is not sent on top of Slurm's SIGTERM" "the preempt_signal hint"
grep -q '"preempted":[[:space:]]*true' "$T/s.json" || fail "summary: preempted"
pass "scancel --signal=TERM, preempt_signal=SIGUSR1: one SIGTERM per program, no SIGUSR1, grace held (${took}s), exit 75"

# The default preempt signal, a program that checkpoints in 1.5 s and exits: the job ends then.
cat >"$T/term.conf" <<CONF
[job]
command = $SIGREC $T/rec 120 1.5 0
grace = 10s
CONF
start_job sigterm "$T/term.conf"
t0=$(now)
sx scancel --signal=TERM "$JOB"
end_job
took=$(elapsed "$t0")
assert_eq "$RC" 75 "checkpoint and exit: exit status"
sig_each "$T/rec" 0 $NP TERM 1 "" "scancel --signal=TERM"
assert_le 1.4 "$took" "the checkpoint's time"
assert_le "$took" 9 "the job ends when the programs are done, not at the grace (10 s)"
[[ $(grep -c 'checkpoint written' "$T/out") == "$NP" ]] || fail "every program checkpoints"
pass "scancel --signal=TERM: each program got one SIGTERM, checkpointed and exited (${took}s), exit 75"

# SIGUSR1 from Slurm: once per program, the job goes on; then a user's plain scancel: Slurm's
# SIGCONT + SIGTERM once, "cancelled, not preempted", status 143 (not 75).
cat >"$T/plain.conf" <<CONF
[job]
command = $SIGREC $T/rec 120
grace = 3s
CONF
start_job cancel "$T/plain.conf"
sx scancel --signal=USR1 "$JOB"
wait_until 10 "SIGUSR1 reaches every program" files_at_least "$T/rec/sig.0.*" $NP
sleep 1
sig_each "$T/rec" 0 $NP USR1 1 slurmstepd "scancel --signal=USR1"
sig_each "$T/rec" 0 $NP USR1 1 "" "scancel --signal=USR1 (from anyone)"
state_in "$JOB" RUNNING || fail "SIGUSR1 must not end the job"
t0=$(now)
sx scancel "$JOB"
end_job
took=$(elapsed "$t0")
[[ $RC != 75 && $RC != 0 ]] || fail "a user's scancel must not exit $RC"
sig_each "$T/rec" 0 $NP TERM 1 "" "scancel"
assert_grep "$T/err" "gpulaunch: job cancelled, not preempted: SIGTERM from Slurm: Slurm is cancelling the job" "cancel said"
assert_nogrep "$T/err" "job preempted" "a cancel is no preemption"
grep -q '"cancelled":[[:space:]]*true' "$T/s.json" || fail "summary: cancelled"
grep -q '"exit_code":[[:space:]]*143' "$T/s.json" || fail "summary: exit code 143"
assert_le "$took" 15 "the grace (3 s), well before KillWait (20 s)"
pass "scancel --signal=USR1: one SIGUSR1 each, job goes on; scancel: one SIGTERM, 'cancelled', status $RC (${took}s)"
echo "ok: $TESTS_RUN Slurm signal checks"
