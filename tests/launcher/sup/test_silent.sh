#!/usr/bin/env bash
# Issue 29: when the first rank fails and others still run, the silent ones' stacks are taken
# before they are stopped, and the root cause names the likely cause beside the failure. A C
# program (silent_prog.c, stacks by gdb): 1. rank 2 sleeps in stuck_in_data_loader(), ranks 1
# and 3 wait as in a collective, rank 0 gives up after 8 s: rank 2 named, in that function; 2.
# every rank busy printing when rank 1 fails: the line and timing of before, no stacks taken;
# 3. every rank still running waits as in a collective: stacks taken, nobody named.
source "$(dirname "$0")/../../lib.sh"
PROG=${1:?usage: test_silent.sh SILENT_PROG}
command -v gdb >/dev/null || { echo "SKIP: no gdb"; exit 77; }
host=$(hostname -s)
mkdir -p "$T/sum"

t0=$(now)
run_mpi 4 "$GPULAUNCH" --summary "$T/sum/s.json" -- "$PROG" 2 0 3 8
took=$(elapsed "$t0")
assert_eq "$RC" 1 "exit status: the failure's"
assert_grep "$T/err" "^gpulaunch: rank 0 \(host $host\) exited with status 1; rank 2 \(host $host\) was still running, silent for [0-9]+ s, in stuck_in_data_loader > nap: the likely cause\$" "rank 2 named, in stuck_in_data_loader"
assert_grep "$T/err" "^    rank 0: allreduce timed out after 8 s waiting for its peers\$" "the failure's last line quoted"
assert_grep "$T/err" "job failed after 1 attempt \(exit status 1\); the other 3 ranks were stopped\$" "the others stopped"
[[ $(grep -c "the likely cause" "$T/err") == 1 ]] || fail "named once"
jq -r .run.root_cause.message "$T/sum/s.json" | grep -q "rank 2 (host $host) was still running, silent for [0-9]* s, in stuck_in_data_loader > nap: the likely cause" ||
  fail "--summary's root cause: $(jq -c .run.root_cause "$T/sum/s.json")"
assert_eq "$(jq -c '.run.root_cause.silent | [.rank, .host, .function, .silent_s >= 5]' "$T/sum/s.json")" "[2,\"$host\",\"stuck_in_data_loader > nap\",true]" "--summary's silent rank"
# 1.5 s of steps, 8 s of waiting, 1 s settle, the stacks (6 s at most), the stop
assert_le "$took" 24 "seconds to the end"
pass "rank 0 times out, rank 2 silent in stuck_in_data_loader: named beside the failure ($took s)"

t0=$(now)
run_mpi 4 "$GPULAUNCH" -- "$PROG" busy 1 10
took=$(elapsed "$t0")
assert_eq "$RC" 1 "exit status (busy ranks)"
assert_grep "$T/err" "^gpulaunch: rank 1 \(host $host\) exited with status 1\$" "the failure's line as before"
assert_nogrep "$T/err" "likely cause|taking their stacks" "nobody named, no stacks taken"
assert_le "$took" 10 "seconds to the end (2 s of steps, the failure's 5 s)"
pass "every rank busy when rank 1 fails: the line of before, in $took s"

t0=$(now)
run_mpi 3 "$GPULAUNCH" -- "$PROG" -1 0 3 6
took=$(elapsed "$t0")
assert_eq "$RC" 1 "exit status (all waiting)"
assert_grep "$T/err" "^gpulaunch: rank 0 \(host $host\) exited with status 1\$" "the failure's line as before"
assert_nogrep "$T/err" "likely cause" "nobody named when every silent rank waits for a peer"
assert_le "$took" 22 "seconds to the end"
pass "every rank still running waits as in a collective: nobody named ($took s)"
