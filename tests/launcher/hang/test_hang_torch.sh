#!/usr/bin/env bash
# Issue 18: an unmodified torchrun-style PyTorch script (gloo) where rank 2 sleeps in
# stuck_in_data_loader() while the others wait in dist.all_reduce. The hang watchdog names rank 2
# and that function from its Python stack (py-spy), shows all_reduce in the others', writes the
# report (text + JSON) beside --summary and ends the job with exit 77 within hang_timeout + 20 s.
# With hang_action = report the job goes on (the sleep ends) and succeeds.
source "$(dirname "$0")/../../lib.sh"
need_torch_python
SCRIPT="$(cd "$(dirname "$0")" && pwd)/hang_train.py"
export OMP_NUM_THREADS=1
command -v py-spy >/dev/null || { echo "SKIP: no py-spy (scripts/install-deps.sh installs it)"; exit 77; }
host=$(hostname -s)
mkdir -p "$T/sum"

printf '[job]\ncommand = %s %s --hang-rank 2 --hang-step 3 --steps 1000\nhang_timeout = 5s\n' "$PY" "$SCRIPT" >"$T/hang.conf"
t0=$(now)
run_mpi 4 "$GPULAUNCH" --summary "$T/sum/summary.json" "$T/hang.conf"
took=$(elapsed "$t0")
assert_eq "$RC" 77 "exit status of a hung job"
assert_le "$took" 25 "seconds from the start to the end (hang_timeout 5 s + 20 s)"
assert_grep "$T/err" "^gpulaunch: hang: .*rank 2 \(host $host, pid [0-9]+\) is in stuck_in_data_loader" "stderr names rank 2 and its function"
assert_grep "$T/err" "the other 3 ranks are in all_reduce" "stderr says where the others are"
assert_grep "$T/err" "job failed after 1 attempt \(exit status 77\)" "the job's end"
json="$T/sum/gpulaunch-hang.json"
[[ -f $json && -f $T/sum/gpulaunch-hang.txt ]] || fail "no hang report beside --summary"
assert_eq "$(jq -c .odd_ranks "$json")" "[2]" "odd ranks in the JSON report"
assert_eq "$(jq -r .odd_function "$json")" "stuck_in_data_loader" "the odd rank's function"
assert_eq "$(jq -r '.ranks[2].processes[0].tool' "$json")" "py-spy" "rank 2's stack tool"
jq -r '.ranks[2].processes[0].stack' "$json" | grep -q "stuck_in_data_loader (hang_train.py" || fail "rank 2's Python stack lacks stuck_in_data_loader"
for r in 0 1 3; do
  jq -r ".ranks[$r].processes[0].stack" "$json" | grep -q "all_reduce (.*distributed_c10d.py" || fail "rank $r's stack lacks all_reduce"
  assert_eq "$(jq -r ".ranks[$r].odd" "$json")" false "rank $r is not odd"
done
assert_eq "$(jq -r '.ranks[2].processes[0].threads[0].wchan' "$json")" hrtimer_nanosleep "rank 2's main thread sleeps in the kernel"
assert_eq "$(jq -r .run.hung "$T/sum/summary.json")" true "summary: hung"
assert_eq "$(jq -r .exit_code "$T/sum/summary.json")" 77 "summary: exit code"
pass "rank 2 in stuck_in_data_loader: named with its host, pid and function, the others in all_reduce, exit 77 after $took s"

# hang_action = report: the report, and the job goes on; the sleep ends and it succeeds.
printf '[job]\ncommand = %s %s --hang-rank 1 --hang-step 2 --hang-seconds 7 --steps 5\nhang_timeout = 3s\nhang_action = report\nlog_dir = %s/logs\n' "$PY" "$SCRIPT" "$T" >"$T/report.conf"
run_mpi 3 "$GPULAUNCH" "$T/report.conf"
assert_eq "$RC" 0 "exit status with hang_action = report"
assert_grep "$T/err" "rank 1 \(host $host, pid [0-9]+\) is in stuck_in_data_loader" "rank 1 named"
assert_grep "$T/err" "hang_action = report: the job goes on" "the job goes on"
assert_eq "$(jq -c .odd_ranks "$T/logs/gpulaunch-hang.json")" "[1]" "the report in log_dir"
pass "hang_action = report: rank 1 named, report in log_dir, the job finished (exit 0)"
