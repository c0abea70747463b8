#!/usr/bin/env bash
# A rank that never arrives at start-up is named within the deadline instead of a hang.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"

t0=$(now)
GPULAUNCH_TEST_STALL=3:60:init GPULAUNCH_TIMEOUT=2s run_mpi 4 "$GPULAUNCH" -- "$PROG" sleep 0
took=$(elapsed "$t0")
assert_eq "$RC" 68 "exit status of a start-up timeout"
assert_grep "$T/err" "timed out after 2.0 s in start-up \(MPI's first exchange; .*\): no answer from rank 3 \(host " "missing rank named (with its host)"
assert_le "$took" 15 "time to give up"
pass "rank 3 stalled at start-up: named after the 2 s deadline, status 68 (${took}s)"
