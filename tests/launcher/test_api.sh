#!/usr/bin/env bash
# A wrapped program uses the public C API (gpl_init + fused allreduce) through its rank's
# gpulaunch (the comm proxy): the example program gets the right sums on 4 ranks.
source "$(dirname "$0")/../lib.sh"
EXAMPLE="$1"
host=$(hostname -s)

run_mpi 4 "$GPULAUNCH" -- "$EXAMPLE"
assert_eq "$RC" 0 "exit status"
assert_grep "$T/out" "^\[$host:0\] allreduce_example: 4 ranks, backend cpu" "example ran on 4 ranks"
assert_grep "$T/out" "^\[$host:0\]   ok\$" "example's results checked"
pass "the example program's gpl_init and fused allreduce work inside gpulaunch (4 ranks)"

run_one "$GPULAUNCH" -- "$EXAMPLE"
assert_eq "$RC" 0 "exit status alone"
assert_grep "$T/out" "allreduce_example: 1 ranks" "example alone"
pass "the example alone (a job of one)"
