#!/usr/bin/env bash
# A failing rank ends the whole job within 5 s (1 s of it waiting for others that fail too, up
# to 2 s mpirun's own kill sequence at times: launcher/job/job.c) with one root-cause line; the
# rank that failed first is the cause; signals, a missing program and left-behind children are
# handled.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
export GPL_TEST_DIR="$T"
host=$(hostname -s)

run_mpi 4 "$GPULAUNCH" -- "$PROG" fail 2 7 1.0
end=$(now)
assert_eq "$RC" 7 "mpirun exit status"
assert_grep "$T/err" "^gpulaunch: rank 2 \(host $host\) exited with status 7\$" "root-cause line"
assert_grep "$T/err" "^    fatal: giving up with 7\$" "last stderr lines quoted"
assert_grep "$T/err" "^    first complaint of rank 2\$" "earlier stderr lines quoted"
[[ $(grep -c "^gpulaunch: rank .* exited with status" "$T/err") == 1 ]] || fail "exactly one root cause"
took=$(elapsed "$(cat "$T/failtime.2")" "$end")
assert_le "$took" 5.0 "time from the failure to the end of mpirun"
pass "rank 2 exits 7: job ended ${took}s after the failure with the root cause"

# A failure that makes its peers fail: the one that failed first is the cause, though its peers
# end and report before it (rank 1 tears down for 0.5 s after its connections close).
run_mpi 4 "$GPULAUNCH" -- "$PROG" cascade 1 7
assert_eq "$RC" 7 "exit status of the first failure, not of its peers'"
assert_grep "$T/err" "^gpulaunch: rank 1 \(host $host\) exited with status 7\$" "the first failure named"
assert_grep "$T/err" "^    crashing on purpose with 7\$" "its last line quoted"
assert_grep "$T/err" "exit status 7\); 3 other ranks failed after it, 0 were stopped\$" "the others counted"
pass "peers fail of rank 1 and end first: rank 1 (status 7) is the cause"

run_mpi 4 "$GPULAUNCH" -- "$PROG" killself 1 9
assert_eq "$RC" 137 "exit status after SIGKILL"
assert_grep "$T/err" "^gpulaunch: rank 1 \(host $host\) killed by signal SIGKILL\$" "killed-by-signal root cause"
assert_grep "$T/err" "about to die by signal 9" "last line before the signal"
pass "rank 1 killed by SIGKILL: status 137 and the signal named"

run_mpi 4 "$GPULAUNCH" -- /nonexistent/trainer --lr 3
assert_eq "$RC" 71 "exit status for a program that cannot run"
assert_grep "$T/err" "rank 0 \(host $host\): cannot run '/nonexistent/trainer': no such file" "missing program named"
run_mpi 2 "$GPULAUNCH" -- no-such-program-gpl
assert_eq "$RC" 71 "exit status for a program not in PATH"
assert_grep "$T/err" "cannot run 'no-such-program-gpl': not found in PATH" "not in PATH"
pass "a missing program stops the job before anything starts (status 71)"

run_mpi 4 "$GPULAUNCH" -- "$PROG" orphan 1
assert_eq "$RC" 1 "exit status of the orphan test"
sleep 0.3
for r in 0 1 2 3; do
  pid=$(cat "$T/orphan.$r")
  # Dead or a zombie (this container's PID 1 may not reap orphans): either way not running.
  st=$(ps -o stat= -p "$pid" 2>/dev/null || true)
  [[ -z "$st" || "$st" == Z* ]] || fail "rank $r left its child $pid running (state $st)"
done
pass "no process of the program outlives the job"

# Restarts exhausted: the status of the last failure.
cat >"$T/r.conf" <<CONF
[job]
command = $PROG fail 0 5 0.2
restarts = 1
CONF
run_mpi 2 "$GPULAUNCH" "$T/r.conf"
assert_eq "$RC" 5 "exit status after restarts are used up"
assert_grep "$T/err" "restarting all 2 ranks \(restart 1 of 1\)" "restart announced"
assert_grep "$T/err" "job failed after 2 attempts \(exit status 5\)" "failure after 2 attempts"
pass "restarts used up: the job fails with the program's status"
