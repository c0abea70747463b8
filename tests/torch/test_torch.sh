#!/usr/bin/env bash
# A real PyTorch client: the unmodified torchrun-style DDP script tests/torch/ddp_train.py (gloo
# on the CPU, init_method="env://", DistributedDataParallel, fixed seed) under
# `mpirun -np 4 gpulaunch -- python3 ddp_train.py` gives the same final loss as under
# `torchrun --nproc-per-node 4`; a crashing rank is named with its status; with restarts = 1 the
# job re-initialises the process group and finishes with the same loss.
source "$(dirname "$0")/../lib.sh"
SCRIPT="$(cd "$(dirname "$0")" && pwd)/ddp_train.py"
host=$(hostname -s)

need_torch_python
# Thread counts change the order of floating-point sums inside a rank: the same for both runs.
export OMP_NUM_THREADS=1
final() { { grep -o 'final_loss=[^ ]*' "$1" || true; } | tail -1 | cut -d= -f2; }

# 1. torchrun, the reference. torchrun >= 2 spells it --nproc-per-node; Debian's 1.13 knows only
#    --nproc_per_node, and on Python 3.11 its default log redirection fails to parse (a bug of
#    1.13's Std flags on 3.11), which --redirects 2 --tee 2 (stderr: tee'd) avoids.
cd "$T"
ref=""
for args in "--nproc-per-node 4" "--nproc_per_node 4" "--nproc_per_node 4 --redirects 2 --tee 2"; do
  # shellcheck disable=SC2086 # the options, split on purpose
  run_one "$PY" -m torch.distributed.run $args "$SCRIPT" --backend gloo
  ref=$(final "$T/out")
  [[ $RC == 0 && -n $ref ]] && break
done
[[ -n $ref ]] || fail "torchrun gave no final loss (exit $RC)"
pass "torchrun ($args): final loss $ref"

# 2. The same script under gpulaunch.
run_mpi 4 "$GPULAUNCH" -- "$PY" "$SCRIPT" --backend gloo
assert_eq "$RC" 0 "gpulaunch exit status"
got=$(final "$T/out")
assert_eq "$got" "$ref" "final loss under gpulaunch (torchrun's: $ref)"
assert_grep "$T/out" "final_loss=.* world=4 backend=gloo attempt=0" "rank 0's line"
pass "mpirun -np 4 gpulaunch -- python3 ddp_train.py: final loss $got, the same as torchrun's"

# 3. A crashing rank is named, with its status and last lines.
run_mpi 4 "$GPULAUNCH" -- "$PY" "$SCRIPT" --backend gloo --crash-rank 2
assert_eq "$RC" 7 "exit status of a crashed rank"
assert_grep "$T/err" "^gpulaunch: rank 2 \(host $host\) exited with status 7\$" "root cause names rank 2"
assert_grep "$T/err" "rank 2: crashing on purpose at step 5" "its last stderr line quoted"
pass "rank 2 crashes: exit 7, rank 2 and its host named, its last line quoted"

# 4. restarts = 1: rank 1 crashes on the first attempt only; every rank re-initialises the
#    process group (a new MASTER_PORT rendezvous) and the job finishes with the same loss.
printf '[job]\ncommand = %s %s --backend gloo --crash-rank 1 --crash-attempt 0\nrestarts = 1\n' "$PY" "$SCRIPT" >"$T/restart.conf"
run_mpi 4 "$GPULAUNCH" "$T/restart.conf"
assert_eq "$RC" 0 "exit status with restarts = 1"
assert_grep "$T/err" "rank 1 \(host $host\) exited with status 7; restarting all 4 ranks \(restart 1 of 1\)" "restart announced"
assert_grep "$T/out" "final_loss=.* attempt=1" "the second attempt finished"
assert_eq "$(final "$T/out")" "$ref" "final loss after the restart"
pass "restarts = 1: rank 1 crashed, all 4 restarted, init_process_group again, final loss $ref"
