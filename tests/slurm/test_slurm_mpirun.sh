#!/usr/bin/env bash
# scripts/slurm/gpulaunch-mpirun.sbatch on a real 2-node cluster, on 1 and on 2 nodes: signals
# Slurm sends the steps (scancel --signal, preemption) or only the batch script (scancel -b,
# --signal=B:TERM@120) reach every program once, the job says preempted (75), is requeued, and
# its second run appends to the same output; a plain scancel ends it at once, not requeued. The
# hostfile has each host's own count (sbatch -n 3 on 2 nodes: 2 + 1) and every program sees true
# SLURM_* rank variables.
#   test_slurm_mpirun.sh SIGREC TESTPROG
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurmlib.sh"
SIGREC=$1
PROG=$2
slurm_start 2 --cpus 2 --grace-time 10 --kill-wait 10 --cred-expire 10
cd "$T"
export GPULAUNCH_SCRIPTS=$GPULAUNCH_SOURCE_DIR/scripts
"$GPULAUNCH_SOURCE_DIR/scripts/slurm/render" --no-gpus --nodes 1 --gpus-per-node 2 --cpus-per-gpu 1 \
  --time 00:10:00 --job-name low mpirun >"$T/job.sbatch"

# release_requeued JOB RESTARTS: the requeued job runs again after Slurm's requeue delay (the
# cluster's cred_expire, 10 s; starting it sooner can kill it: "Job credential revoked").
release_requeued() {
  wait_until 40 "job $1 requeued ($2 restart(s), pending)" requeued_pending "$1" "$2"
  wait_until 90 "requeued job $1 completes" state_in "$1" COMPLETED
}
# submit NAME CONF [sbatch options]: the job id; waits until its programs run
submit() {
  local name=$1 conf=$2 np
  shift 2
  rm -rf "$T/rec" "$T/$name.out"
  mkdir -p "$T/rec"
  JOB=$(sx sbatch --parsable -J "$name" -o "$T/$name.out" "$@" "$T/job.sbatch" "$conf")
  np=$(awk '{ n += $1 } END { print n }' <<<"$NP_EXPECT")
  wait_until 60 "job $name: $np programs start" files_at_least "$T/rec/ready.0.*" "$np"
}

# The hostfile from SLURM_TASKS_PER_NODE (sbatch -n 3 -N 2: 2 + 1), true SLURM_* per program.
cat >"$T/env.conf" <<CONF
[job]
command = $PROG env
CONF
# As a user who asks for tasks, not tasks per node: the template without --ntasks-per-node.
sed '/^#SBATCH --ntasks-per-node=/d' "$T/job.sbatch" >"$T/any.sbatch"
JOB=$(sx sbatch --parsable -N2 -n3 -J env -o "$T/env.out" "$T/any.sbatch" "$T/env.conf")
wait_until 60 "the env job ends" state_in "$JOB" COMPLETED FAILED
assert_eq "$(job_field "$JOB" JobState)" COMPLETED "the env job"
assert_grep "$T/env.out" "3 rank\(s\) on 2 host\(s\): node0 slots=2 node1 slots=1" "hostfile from SLURM_TASKS_PER_NODE"
for r in 0 1 2; do
  node=$((r / 2))
  p="^\[node$node:$r\] ENV"
  assert_grep "$T/env.out" "$p SLURM_PROCID=$r\$" "rank $r SLURM_PROCID (not mpirun's daemon's)"
  assert_grep "$T/env.out" "$p SLURM_LOCALID=$((r % 2))\$" "rank $r SLURM_LOCALID"
  assert_grep "$T/env.out" "$p SLURM_NODEID=$node\$" "rank $r SLURM_NODEID"
  assert_grep "$T/env.out" "$p SLURM_NTASKS=3\$" "rank $r SLURM_NTASKS"
  assert_grep "$T/env.out" "$p SLURM_TASKS_PER_NODE=2,1\$" "rank $r SLURM_TASKS_PER_NODE"
done
pass "mpirun sbatch -N2 -n3: hostfile node0 slots=2 node1 slots=1; SLURM_PROCID/LOCALID/NODEID/NTASKS true"

# 1 node, preempt_signal = SIGUSR1: scancel --signal=TERM goes to the job's steps only; the relay
# step passes it to the batch script, which passes it to gpulaunch: every program gets SIGUSR1
# once and no SIGTERM, checkpoints; exit 75; the script requeues the job; run 2 completes.
cat >"$T/usr1.conf" <<CONF
[job]
command = $SIGREC $T/rec 300 1 0
preempt_signal = SIGUSR1
grace = 8s
CONF
NP_EXPECT=2
submit one "$T/usr1.conf"
t0=$(now)
sx scancel --signal=TERM "$JOB"
wait_until 30 "job 'one' is requeued" requeued_pending "$JOB" 1
took=$(elapsed "$t0")
sig_each "$T/rec" 0 2 USR1 1 gpulaunch "1 node, scancel --signal=TERM"
sig_each "$T/rec" 0 2 TERM 0 "" "1 node, scancel --signal=TERM: no SIGTERM besides preempt_signal"
release_requeued "$JOB" 1
assert_grep "$T/one.out" "gpulaunch: job preempted: SIGTERM received" "preemption said"
assert_grep "$T/one.out" "gpulaunch-mpirun: preempted \(exit 75\) after SIGTERM" "the script saw 75"
assert_grep "$T/one.out" "\(run 2\)" "run 2 appended to the same output"
[[ $(grep -c 'ready (restart 1)' "$T/one.out") == 2 ]] || fail "every program of run 2 started"
pass "mpirun sbatch, 1 node: scancel --signal=TERM: one SIGUSR1 per program, exit 75, requeued in ${took}s, run 2 completed"

# 2 nodes, real preemption (GraceTime 10 s): node1's programs get Slurm's SIGTERM themselves (the
# orted step), node0's from gpulaunch (the batch step is not signalled): once each.
cat >"$T/term.conf" <<CONF
[job]
command = $SIGREC $T/rec 300 1 0
grace = 8s
CONF
NP_EXPECT=4
submit two "$T/term.conf" -N2
t0=$(now)
sx sbatch --parsable -p urgent -N2 --exclusive -J urgent -o "$T/urgent.out" --wrap "sleep 2" >/dev/null
wait_until 30 "job 'two' is requeued" requeued_pending "$JOB" 1
took=$(elapsed "$t0")
sig_each "$T/rec" 0 4 TERM 1 "" "2 nodes, preemption"
for r in 2 3; do
  [[ $(sig_count "$T/rec/sig.0.$r" TERM slurmstepd) == 1 ]] || fail "rank $r (node1): SIGTERM from Slurm"
done
release_requeued "$JOB" 1
# The first to tell rank 0 is node1's gpulaunch (Slurm's SIGTERM) or node0's (the relay's copy).
assert_grep "$T/two.out" "gpulaunch: job preempted: SIGTERM (from Slurm|received): Slurm is preempting the job" "preemption said"
assert_grep "$T/two.out" "\(run 2\)" "run 2 appended"
[[ $(grep -c 'ready (restart 1)' "$T/two.out") == 4 ]] || fail "every program of run 2 started"
pass "mpirun sbatch, 2 nodes: preempted by 'urgent': one SIGTERM per program, exit 75, requeued in ${took}s, run 2 completed"

# 2 nodes, scancel -b --signal=TERM (what --signal=B:TERM@120 does before the time limit).
submit batch "$T/term.conf" -N2
t0=$(now)
sx scancel -b --signal=TERM "$JOB"
wait_until 30 "job 'batch' is requeued" requeued_pending "$JOB" 1
took=$(elapsed "$t0")
sig_each "$T/rec" 0 4 TERM 1 "" "2 nodes, SIGTERM to the batch script"
assert_grep "$T/batch.out" "gpulaunch-mpirun: SIGTERM received: passing it on" "the batch script passed it on"
sx scancel "$JOB"
pass "mpirun sbatch, 2 nodes: SIGTERM to the batch script: one SIGTERM per program, exit 75, requeued in ${took}s"

# 2 nodes, a user's plain scancel: the job ends (no mpirun left behind), it is not requeued.
cat >"$T/long.conf" <<CONF
[job]
command = $SIGREC $T/rec 300
grace = 4s
CONF
# (GPULAUNCH_LOG=info: rank 0's "scontrol show job N: ..." line says what Slurm answered, should a
# cancel ever be taken for a preemption: a suite run saw that once, without the line.)
GPULAUNCH_LOG=info submit cancel "$T/long.conf" -N2
t0=$(now)
sx scancel "$JOB"
wait_until 30 "the cancelled job is gone" state_in "$JOB" CANCELLED
took=$(elapsed "$t0")
cat "$T/cancel.out"
assert_eq "$(job_field "$JOB" Restarts)" 0 "a cancelled job is not requeued"
assert_nogrep "$T/cancel.out" "job preempted|requeueing" "a cancel is no preemption"
wait_until 20 "no mpirun or gpulaunch left on the nodes" nothing_left
pass "mpirun sbatch, 2 nodes: plain scancel ends the job in ${took}s, not requeued, nothing left"
echo "ok: $TESTS_RUN mpirun sbatch checks"
