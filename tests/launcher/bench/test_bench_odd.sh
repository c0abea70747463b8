#!/usr/bin/env bash
# Odd sizes and rank counts that do not divide them: counts are rounded down to a multiple of the
# rank count (as nccl-tests) and still checked exactly; a job of one rank.
# shellcheck source=tests/launcher/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"

run_mpi 3 "$GPULAUNCH" bench --op allreduce,allgather,reducescatter,alltoall,broadcast -b 1001 -e 100003 -f 9 -n 2 -w 1 -d float
assert_eq "$RC" 0 "exit status"
check_rows "$T/out" 13
assert_eq "$(wrong_total "$T/out")" 0 "wrong elements"
# requested 1001, 9009, 81081 bytes of float on 3 ranks
exp="1000 250 9008 2252 81080 20270 "                     # allreduce: count = size/4
exp+="996 83 9000 750 81072 6756 "                        # allgather: per-rank count, size = 3*count*4
exp+="996 83 9000 750 81072 6756 "                        # reducescatter: the same
exp+="996 83 9000 750 81072 6756 "                        # alltoall: per-peer count
exp+="1000 250 9008 2252 81080 20270 "                    # broadcast
assert_eq "$(rows "$T/out" | awk '{ printf "%s %s ", $1, $2 }')" "$exp" "sizes and counts"
pass "3 ranks, odd sizes: counts rounded down to a multiple of 3, results exact"

run_mpi 1 "$GPULAUNCH" bench --op allreduce,allgather,fused -b 4095 -e 65537 -f 4 -n 2 -w 1 -d half
assert_eq "$RC" 0 "one rank: exit status"
assert_grep "$T/out" 'bench on 1 rank \(1 node\)' "header says one rank"
assert_eq "$(wrong_total "$T/out")" 0 "one rank: wrong elements"
assert_eq "$(rows "$T/out" | head -3 | awk '{ printf "%s %s ", $8, $12 }')" "0.00 0.00 0.00 0.00 0.00 0.00 " "one rank: allreduce moves nothing over a bus (busbw 0)"
pass "one rank"
echo "all $TESTS_RUN passed"
