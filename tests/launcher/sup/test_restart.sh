#!/usr/bin/env bash
# restarts = N: a failure stops every rank's program and starts all again together, with the
# same environment but the restart count.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
export GPL_TEST_DIR="$T"
host=$(hostname -s)

cat >"$T/r.conf" <<CONF
[job]
command = $PROG restart 1
restarts = 2
CONF
run_mpi 4 "$GPULAUNCH" "$T/r.conf"
assert_eq "$RC" 0 "exit status after a successful restart"
for r in 0 1 2 3; do
  [[ -f "$T/attempt0.$r" ]] || fail "rank $r did not run attempt 0"
  [[ -f "$T/attempt1.$r" ]] || fail "rank $r did not run attempt 1"
  [[ ! -f "$T/attempt2.$r" ]] || fail "rank $r ran a third attempt"
done
assert_grep "$T/err" "^gpulaunch: rank 1 \(host $host\) exited with status 3; restarting all 4 ranks \(restart 1 of 2\)\$" "restart announced"
ports=$(sed -n 's/.* port \([0-9]*\)$/\1/p' "$T/out" | sort -u | wc -l)
assert_eq "$ports" 1 "MASTER_PORT is the same on every attempt"
pass "rank 1 failed on attempt 0; all 4 ranks restarted together and succeeded"
