#!/usr/bin/env bash
# Issue 29: an unmodified torchrun-style PyTorch script (gloo, a 15 s timeout) where rank 2 sleeps
# forever in stuck_in_data_loader() and the others fail by gloo's timeout in all_reduce: the root
# cause names the rank that failed first and, beside it, rank 2, silent, in that function (its
# Python stack by py-spy, taken before it is stopped).
source "$(dirname "$0")/../../lib.sh"
need_torch_python
SCRIPT="$(cd "$(dirname "$0")/../hang" && pwd)/hang_train.py"
export OMP_NUM_THREADS=1
command -v py-spy >/dev/null || { echo "SKIP: no py-spy (scripts/install-deps.sh installs it)"; exit 77; }
host=$(hostname -s)
mkdir -p "$T/sum"

t0=$(now)
run_mpi 4 "$GPULAUNCH" --summary "$T/sum/s.json" -- "$PY" "$SCRIPT" --hang-rank 2 --hang-step 3 --steps 1000 --timeout-seconds 15
took=$(elapsed "$t0")
assert_eq "$RC" 1 "exit status: the timed-out rank's"
assert_grep "$T/err" "^gpulaunch: rank [013] \(host $host\) exited with status 1; rank 2 \(host $host\) was still running, silent for [0-9]+ s, in stuck_in_data_loader: the likely cause\$" "rank 2 named, in stuck_in_data_loader"
assert_eq "$(jq -c '.run.root_cause.silent | [.rank, .function]' "$T/sum/s.json")" '[2,"stuck_in_data_loader"]' "--summary's silent rank"
assert_le "$took" 60 "seconds to the end (start-up, 15 s timeout, stacks)"
pass "gloo timeout, rank 2 silent in stuck_in_data_loader: named beside the failure ($took s)"
