#!/usr/bin/env bash
# Elastic jobs under Slurm (issue 28): scripts/slurm/gpulaunch-srun.sbatch with GPULAUNCH_NODES
# on a 3-node allocation (--no-kill), 2 ranks a node. node2's link is cut mid-run: gpulaunch names
# it, the step ends, and a new srun step goes on with node0 and node1 (4 ranks, restart count one
# higher, the same run id) from rank 0's checkpoint; the batch job completes with 0.
#   test_slurm_elastic.sh SIGREC TESTPROG
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurmlib.sh"
slurm_start 3 --cpus 2 --kill-wait 10
cd "$T"
# The trainer: tests/step_trainer.sh (a step every 0.2 s, rank 0 checkpoints, SIGTERM saves).
printf '[job]\ncommand = %s\ngrace = 5s\nliveness_timeout = 5s\n' "$GPULAUNCH_SOURCE_DIR/tests/step_trainer.sh $T 120" >"$T/job.conf"
"$GPULAUNCH_SOURCE_DIR/scripts/slurm/render" --no-gpus --nodes 3 --gpus-per-node 2 --cpus-per-gpu 1 \
  --time 00:10:00 --job-name elastic srun >"$T/job.sbatch"
grep -q -- '--no-kill' "$T/job.sbatch" || fail "the srun template does not keep the allocation on a node's loss (--no-kill)"

JOB=$(sx env GPULAUNCH_NODES=2 sbatch --parsable -o "$T/job.out" "$T/job.sbatch" "$T/job.conf")
starts() { grep -c "start rank .* world $1 " "$T/job.out" 2>/dev/null || true; }
started() { [[ $(starts "$1") -ge $2 ]]; }
wait_until 90 "the job's 6 ranks start on 3 nodes" started 6 6
wait_until 30 "rank 0 checkpoints" test -s "$T/ckpt"
sleep 1
t0=$(now)
id=$(sed -n 's/^CL_ID=//p' "$CL/cluster.env")
ip -n "$id-n2" link set eth0 down
wait_until 90 "4 ranks start again on node0 and node1" started 4 4
took=$(elapsed "$t0")
# node2 never reports back: the job stays COMPLETING until Slurm declares it down.
ended() { state_in "$JOB" COMPLETED COMPLETING; }
wait_until 120 "the batch job completes" ended
ip -n "$id-n2" link set eth0 up
cat "$T/job.out" >&2
assert_eq "$(job_field "$JOB" ExitCode)" 0:0 "the batch job's exit code"
assert_grep "$T/job.out" "gpulaunch-run: restart 1: host node2 lost" "the restart names node2"
assert_grep "$T/job.out" "start rank 3 world 4 restart 1 " "the new step's ranks see the restart count one higher"
runs=$(grep -o ' run [^ ]*' "$T/job.out" | sort -u | wc -l)
assert_eq "$runs" 1 "every launch has the same TORCHELASTIC_RUN_ID"
if grep "world 4 " "$T/job.out" | grep -q "host node2"; then fail "a rank of the new step runs on node2"; fi
resumed=$(sed -n 's/^.*start rank 0 world 4 restart 1 run [^ ]* host [^ ]* step \([0-9]*\) .*$/\1/p' "$T/job.out" | head -n 1)
assert_le 1 "${resumed:-0}" "rank 0 resumes from its checkpoint"
assert_grep "$T/job.out" "done rank 0 step 120" "the job completes"
pass "node2 cut: a new srun step on node0 and node1 started ${took}s later, resumed at step $resumed, completed"
echo "ok: $TESTS_RUN elastic Slurm checks"
