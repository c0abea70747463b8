#!/usr/bin/env bash
# Wrong elements are counted across all ranks and fail the run (exit 72): a test hook
# (GPULAUNCH_TEST_CORRUPT=rank) flips one output element on that rank before each check.
# shellcheck source=tests/launcher/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"

GPULAUNCH_TEST_CORRUPT=2 run_mpi 4 "$GPULAUNCH" bench -b 64K -e 256K -f 2 -n 2 -w 1
assert_eq "$RC" 72 "exit status with a corrupted element"
check_rows "$T/out" 13
assert_eq "$(rows "$T/out" | awk '{ printf "%s/%s ", $9, $13 }')" "1/1 1/1 1/1 " "one wrong element per result"
assert_grep "$T/out" '^# Out of bounds values : 6 FAILED$' "footer counts the failed results"
assert_grep "$T/err" 'allreduce: 6 wrong elements' "message on stderr"
pass "allreduce: one flipped element on rank 2 is caught in every result"

GPULAUNCH_TEST_CORRUPT=0 run_mpi 3 "$GPULAUNCH" bench --op allgather,broadcast,alltoall,reducescatter \
  -d half -b 6000 -e 6000 -n 2 -w 1 -r 1
assert_eq "$RC" 72 "exit status"
assert_eq "$(rows "$T/out" | awk '{ printf "%s/%s ", $9, $13 }')" "1/1 1/1 1/N/A 1/1 " "each collective catches it"
pass "allgather, broadcast, alltoall, reducescatter catch it too"

# The same run without the hook passes; with -c 0 nothing is checked (N/A) and the run passes.
run_mpi 3 "$GPULAUNCH" bench --op allgather,broadcast,alltoall,reducescatter -d half -b 6000 -e 6000 -n 2 -w 1 -r 1
assert_eq "$RC" 0 "exit status without corruption"
assert_eq "$(wrong_total "$T/out")" 0 "no wrong elements"
GPULAUNCH_TEST_CORRUPT=1 run_mpi 2 "$GPULAUNCH" bench -b 64K -e 64K -n 2 -w 1 -c 0
assert_eq "$RC" 0 "exit status with -c 0"
assert_eq "$(rows "$T/out" | awk '{ printf "%s/%s ", $9, $13 }')" "N/A/N/A " "-c 0: #wrong is N/A"
assert_grep "$T/out" 'validation: 0 ' "header says validation 0"
pass "-c 0 checks nothing; no corruption, no wrong elements"
echo "all $TESTS_RUN passed"
