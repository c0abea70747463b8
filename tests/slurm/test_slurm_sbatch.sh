#!/usr/bin/env bash
# scripts/slurm/gpulaunch-srun.sbatch on a real 2-node cluster: a job of the preemptable
# partition is preempted by one of "urgent" (GraceTime 10 s): every program gets Slurm's SIGTERM
# once, checkpoints, the job says preempted (75) and is requeued; its second run appends to the
# same output file and completes. No variable is needed: the programs are done long before
# GraceTime ends, and Slurm would end the job FAILED (75); the template requeues it itself.
#   test_slurm_sbatch.sh SIGREC TESTPROG
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurmlib.sh"
SIGREC=$1
slurm_start 2 --cpus 2 --grace-time 10 --kill-wait 10 --cred-expire 10
cd "$T"
mkdir -p "$T/rec"
"$GPULAUNCH_SOURCE_DIR/scripts/slurm/render" --no-gpus --nodes 2 --gpus-per-node 2 --cpus-per-gpu 1 \
  --time 00:10:00 --job-name low srun >"$T/job.sbatch"
cat >"$T/job.conf" <<CONF
[job]
command = $SIGREC $T/rec 300 1 0
grace = 6s
CONF

# release_requeued JOB: a requeued job waits Slurm's requeue delay (the cluster's cred_expire,
# 10 s: squeue says Reason=BeginTime), then runs again.
release_requeued() {
  wait_until 30 "job $1 requeued (Restarts=1, pending)" requeued_pending "$1"
  local t0 r i
  t0=$(now)
  # Pending again, the job shows Reason=None for a moment before Slurm gives it its begin time.
  for ((i = 0; i < 15; i++)); do
    r=$(sx scontrol show job -o "$1" | grep -o 'Reason=[^ ]*')
    [[ $r != Reason=None ]] && break
    sleep 0.2
  done
  [[ $r == Reason=BeginTime ]] || fail "a requeued job waits for its begin time, not '$r'"
  wait_until 60 "the requeued job runs again" files_at_least "$T/rec/ready.1.*" 4
  echo "requeue delay: $(elapsed "$t0") s"
}

JOB=$(sx sbatch --parsable -o "$T/job.out" "$T/job.sbatch" "$T/job.conf")
wait_until 60 "the job's 4 programs start" files_at_least "$T/rec/ready.0.*" 4
t0=$(now)
sx sbatch --parsable -p urgent -N2 --exclusive -J urgent -o "$T/urgent.out" --wrap "sleep 2" >/dev/null
wait_until 30 "the preempted job's programs checkpoint" files_at_least "$T/rec/sig.0.*" 4
sig_each "$T/rec" 0 4 TERM 1 slurmstepd "preemption"
sig_each "$T/rec" 0 4 TERM 1 "" "preemption (from anyone)"
release_requeued "$JOB"
took=$(elapsed "$t0")
wait_until 90 "the requeued job completes" state_in "$JOB" COMPLETED
assert_le 7 "$took" "the requeue delay (cred_expire 10 s) holds"
out=$T/job.out
cat "$out"
assert_grep "$out" "gpulaunch: job preempted: SIGTERM from Slurm: Slurm is preempting the job" "preemption said"
assert_grep "$out" "gpulaunch-srun: preempted \(exit 75\)" "the script saw exit 75"
assert_grep "$out" "gpulaunch-srun: requeueing job $JOB" "the script requeued it (Slurm would not: GraceTime)"
assert_grep "$out" "job $JOB \(run 1\)" "first run in the output"
assert_grep "$out" "job $JOB \(run 2\)" "second run appended to the same output"
[[ $(grep -c 'ready (restart 1)' "$out") == 4 ]] || fail "every program of the second run started"
[[ $(grep -c 'checkpoint written' "$out") == 4 ]] || fail "every program checkpointed in the first run"
assert_eq "$(job_field "$JOB" Restarts)" 1 "requeued once"
assert_eq "$(job_field "$JOB" ExitCode)" 0:0 "the second run's exit code"
pass "srun sbatch: preempted by 'urgent', one SIGTERM per program, exit 75, requeued, second run appended and completed (${took}s from preemption to run 2)"

# A signal for the batch script only (scancel -b, --signal=B:TERM@120): passed on to the step
# through Slurm, so every program gets it once; exit 75, requeued.
rm -rf "$T/rec"
mkdir -p "$T/rec"
JOB=$(sx sbatch --parsable -o "$T/b.out" "$T/job.sbatch" "$T/job.conf")
wait_until 60 "the job's 4 programs start" files_at_least "$T/rec/ready.0.*" 4
sx scancel -b --signal=TERM "$JOB"
wait_until 30 "the job is requeued" requeued_pending "$JOB"
sig_each "$T/rec" 0 4 TERM 1 slurmstepd "scancel -b --signal=TERM"
sig_each "$T/rec" 0 4 TERM 1 "" "scancel -b --signal=TERM (from anyone)"
assert_grep "$T/b.out" "gpulaunch-srun: SIGTERM received" "the script got it"
assert_grep "$T/b.out" "gpulaunch-srun: preempted \(exit 75\)" "exit 75"
sx scancel "$JOB"
pass "srun sbatch: SIGTERM to the batch script only: one SIGTERM per program (through Slurm), exit 75, requeued"

# scancel --full --signal=TERM: Slurm 22.05 signals the batch script's process group (not the
# step); srun runs under gpulaunch-run in a process group of its own (and would ignore a SIGTERM
# by the shim): it must not kill the step; the script passes the signal on, every program gets one
# SIGTERM, checkpoints (1 s), exit 75, requeued.
rm -rf "$T/rec"
mkdir -p "$T/rec"
JOB=$(sx sbatch --parsable -o "$T/f.out" "$T/job.sbatch" "$T/job.conf")
wait_until 60 "the job's 4 programs start" files_at_least "$T/rec/ready.0.*" 4
t0=$(now)
sx scancel --full --signal=TERM "$JOB"
wait_until 30 "the job is requeued" requeued_pending "$JOB"
took=$(elapsed "$t0")
sig_each "$T/rec" 0 4 TERM 1 "" "scancel --full --signal=TERM"
[[ $(grep -c 'checkpoint written' "$T/f.out") == 4 ]] || fail "every program checkpointed after scancel --full"
assert_nogrep "$T/f.out" "forcing job termination|Killed" "srun must not kill the step"
assert_grep "$T/f.out" "gpulaunch-srun: requeueing job $JOB" "the script requeued it"
sx scancel "$JOB"
pass "srun sbatch: scancel --full --signal=TERM: one SIGTERM per program, checkpointed, exit 75, requeued in ${took}s"

# GraceTime=0 (partition nograce): Slurm requeues at once; srun ignores Slurm's SIGTERM, the
# programs checkpoint within KillWait, the template does not requeue a second time.
rm -rf "$T/rec"
mkdir -p "$T/rec"
JOB=$(sx sbatch --parsable -p nograce -o "$T/g.out" "$T/job.sbatch" "$T/job.conf")
wait_until 60 "the job's 4 programs start" files_at_least "$T/rec/ready.0.*" 4
sx sbatch --parsable -p urgent -N2 --exclusive -J urgent -o "$T/urgent.out" --wrap "sleep 2" >/dev/null
wait_until 30 "the job is requeued" requeued_pending "$JOB"
wait_until 20 "every program checkpoints" test "$(grep -c 'checkpoint written' "$T/g.out")" -eq 4
sleep 1
assert_eq "$(job_field "$JOB" Restarts)" 1 "GraceTime=0: requeued once"
assert_nogrep "$T/g.out" "forcing job termination" "srun must not kill the step"
sx scancel "$JOB"
pass "srun sbatch, GraceTime=0: requeued once by Slurm, every program checkpointed"
echo "ok: $TESTS_RUN sbatch (srun) checks"
