#!/usr/bin/env bash
# gpulaunch under srun on a real 2-node Slurm cluster: --mpi=pmix runs the job (the program's
# RANK and SLURM_* agree), the built-in trainer, a failing rank's root cause, and srun without
# PMIx (--mpi=pmi2, --mpi=none) says in one line what to pass, with exit status 64.
#   test_slurm_srun.sh SIGREC TESTPROG
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/slurmlib.sh"
PROG=$2
slurm_start 2
cd "$T"

# 4 ranks on 2 nodes (3 + 1: Slurm's block distribution fills node0 first).
cat >"$T/env.conf" <<CONF
[job]
command = $PROG env
CONF
set +e
sx srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 "$GPULAUNCH" "$T/env.conf" >"$T/out" 2>"$T/err"
RC=$?
set -e
assert_eq "$RC" 0 "srun --mpi=pmix: exit status"
for r in 0 1 2 3; do
  node=$((r / 2))
  p="^\[node$node:$r\] ENV"
  assert_grep "$T/out" "$p RANK=$r\$" "rank $r RANK"
  assert_grep "$T/out" "$p SLURM_PROCID=$r\$" "rank $r SLURM_PROCID = RANK"
  assert_grep "$T/out" "$p SLURM_LOCALID=$((r % 2))\$" "rank $r SLURM_LOCALID = LOCAL_RANK"
  assert_grep "$T/out" "$p SLURM_NODEID=$node\$" "rank $r SLURM_NODEID = GROUP_RANK"
  assert_grep "$T/out" "$p GROUP_RANK=$node\$" "rank $r GROUP_RANK"
  assert_grep "$T/out" "$p SLURM_NTASKS=4\$" "rank $r SLURM_NTASKS"
  assert_grep "$T/out" "$p SLURM_TASKS_PER_NODE=2\(x2\)\$" "rank $r SLURM_TASKS_PER_NODE"
  assert_grep "$T/out" "$p SLURM_GTIDS=$((node * 2)),$((node * 2 + 1))\$" "rank $r SLURM_GTIDS"
  assert_grep "$T/out" "$p SLURM_JOB_ID=[0-9]+\$" "rank $r keeps SLURM_JOB_ID"
done
assert_nogrep "$T/out" "ENV (SLURM_TASK_PID|SLURM_PMIX|PMIX_|OMPI_)" "task and PMIx variables must not reach the program"
pass "srun --mpi=pmix -N2 -n4: every program's RANK, LOCAL_RANK, GROUP_RANK and SLURM_* agree"

# The built-in trainer over both nodes.
set +e
sx srun --mpi=pmix -N2 -n2 "$GPULAUNCH" "$GPULAUNCH_SOURCE_DIR/examples/train.conf" --summary "$T/s.json" >"$T/out" 2>"$T/err"
RC=$?
set -e
assert_eq "$RC" 0 "trainer under srun: exit status"
grep -q '"final_loss"' "$T/s.json" || fail "trainer summary has no final_loss"
grep -q '"nodes":[[:space:]]*2' "$T/s.json" || fail "trainer summary: 2 nodes"
pass "srun: the built-in trainer on 2 nodes"

# A failing rank: its status, its rank and host, fast.
cat >"$T/fail.conf" <<CONF
[job]
command = $PROG fail 3 7 0.5
CONF
t0=$(now)
set +e
sx srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 "$GPULAUNCH" "$T/fail.conf" >"$T/out" 2>"$T/err"
RC=$?
set -e
took=$(elapsed "$t0")
assert_eq "$RC" 7 "srun: a failed program's status"
assert_grep "$T/err" "gpulaunch: rank 3 \(host node1\) exited with status 7" "root cause"
assert_le "$took" 15 "a failed rank ends the job"
pass "srun: rank 3 (node1) fails with 7: root cause said, srun exits 7 (${took}s)"

# Without PMIx: one line that says what to pass, exit status 64, none of Open MPI's text.
for mpi in pmi2 none; do
  set +e
  sx srun --mpi="$mpi" -N2 -n4 "$GPULAUNCH" "$T/env.conf" >"$T/out" 2>"$T/err"
  RC=$?
  set -e
  assert_eq "$RC" 64 "srun --mpi=$mpi: exit status"
  [[ $(grep -c 'srun --mpi=pmix' "$T/err") == 1 ]] || fail "srun --mpi=$mpi: want one line naming --mpi=pmix"
  assert_grep "$T/err" "^gpulaunch: srun started this job without PMIx \(--mpi=$mpi" "srun --mpi=$mpi: says what it saw"
  assert_nogrep "$T/err" "OPAL ERROR|PMI support|ORTE" "srun --mpi=$mpi: Open MPI's own error must not come"
done
# MpiDefault=none (the cluster's, as Debian's): plain srun.
set +e
sx srun -N1 -n2 "$GPULAUNCH" "$T/env.conf" >"$T/out" 2>"$T/err"
RC=$?
set -e
assert_eq "$RC" 64 "plain srun (MpiDefault=none): exit status"
assert_grep "$T/err" "run srun --mpi=pmix" "plain srun: what to pass"
pass "srun --mpi=pmi2 / none / MpiDefault: one line 'run srun --mpi=pmix', exit 64"
echo "ok: $TESTS_RUN srun checks"
