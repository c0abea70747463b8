#!/usr/bin/env bash
# A gpulaunch killed with SIGKILL under srun (its node's OOM killer, a crash): the job ends within
# seconds, rank 0 names the dead rank and its host, and the exit status is its own (68: a rank is
# missing), never 75 (a requeue). With and without srun --kill-on-bad-exit.
# The supervisors' liveness connection (launcher/live/liveness.c) notices it. The programs end at
# their SIGTERM (sigrec's checkpoint of 0 s): the other ranks then exit 68 at once, where a program
# that waited out stop_timeout (1 s) raced Slurm's PMIx plugin, whose error handler cancelled the
# step 1 s after the task's death despite --kill-on-bad-exit=0 (a suite run saw "tasks 0-1: Killed").
#   test_slurm_dead_rank.sh SIGREC TESTPROG
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurmlib.sh"
SIGREC=$1
slurm_start 2 --kill-wait 30
cd "$T"
cat >"$T/job.conf" <<CONF
[job]
command = $SIGREC $T/rec 120 0
grace = 5s
CONF

# The pid of the gpulaunch of rank R (its SLURM_PROCID) on node K.
gpulaunch_of() {
  local id p
  id=$(sed -n 's/^CL_ID=//p' "$CL/cluster.env")
  for p in $(ip netns pids "$id-n$2"); do
    [[ $(cat "/proc/$p/comm" 2>/dev/null) == gpulaunch ]] || continue
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$1" && { echo "$p"; return; }
  done
}

for kob in 0 1; do
  rm -rf "$T/rec"
  mkdir -p "$T/rec"
  sx srun --mpi=pmix --kill-on-bad-exit=$kob -N2 -n4 --ntasks-per-node=2 -J dead "$GPULAUNCH" "$T/job.conf" \
    >"$T/out" 2>"$T/err" &
  job=$!
  wait_until 30 "every program started" files_at_least "$T/rec/ready.0.*" 4
  victim=$(gpulaunch_of 3 1)
  [[ -n $victim ]] || fail "no gpulaunch of rank 3 on node1"
  t0=$(now)
  kill -KILL "$victim"
  set +e
  wait "$job"
  RC=$?
  set -e
  took=$(elapsed "$t0")
  assert_le "$took" 12 "--kill-on-bad-exit=$kob: the job must end within seconds of a dead rank"
  [[ $RC != 75 && $RC != 0 ]] || fail "--kill-on-bad-exit=$kob: exit status $RC"
  assert_grep "$T/err" "rank 3 .*node1" "--kill-on-bad-exit=$kob: the root cause names rank 3 and node1"
  assert_nogrep "$T/err" "job preempted" "--kill-on-bad-exit=$kob: a dead rank is no preemption"
  # srun exits with the highest task status: the killed one's 137; the others said 68.
  assert_grep "$T/err" "tasks? [0-9,-]+: Exited with exit code 68" "--kill-on-bad-exit=$kob: the other ranks exit 68"
  assert_nogrep "$T/err" "exit code 75" "--kill-on-bad-exit=$kob: no rank exits 75"
  pass "srun --kill-on-bad-exit=$kob: SIGKILL of rank 3's gpulaunch ends the job in ${took}s, status $RC, rank 3 (node1) named"
done
echo "ok: $TESTS_RUN dead rank checks"
