#!/usr/bin/env bash
# --min-busbw: exit 72 and by how much when the bus bandwidth falls short (largest size, or per
# size with SIZE:X), 0 when it is met; a SIZE that is not in the sweep is a usage error (64); the
# [bench] min_busbw key of a config file works the same and is named with its file:line.
# shellcheck source=tests/launcher/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
B=(bench -b 64K -e 256K -f 2 -n 2 -w 1)

run_mpi 4 "$GPULAUNCH" "${B[@]}" --min-busbw 1e9
assert_eq "$RC" 72 "exit status below the threshold"
assert_grep "$T/err" 'allreduce bus bandwidth [0-9.e+-]+ GB/s at 262144 bytes is below the threshold 1e\+09 GB/s \(--min-busbw\) by [0-9.e+]+ GB/s \([0-9.]+%\)' "message says by how much"
assert_grep "$T/out" '^# Min bus bandwidth    : 1e\+09 GB/s at 262144 B: [0-9.e+-]+ FAILED \(short by' "footer line"
pass "an unreachable threshold fails with 72 and says by how much"

run_mpi 4 "$GPULAUNCH" "${B[@]}" --min-busbw 0.000001
assert_eq "$RC" 0 "exit status above the threshold"
assert_grep "$T/out" '^# Min bus bandwidth    : 1e-06 GB/s at 262144 B: [0-9.e+-]+ OK$' "footer line OK"
pass "a reachable threshold passes"

run_mpi 4 "$GPULAUNCH" "${B[@]}" --min-busbw 64K:1e9,256K:0.000001
assert_eq "$RC" 72 "exit status, per size"
assert_grep "$T/err" 'at 65536 bytes is below the threshold 1e\+09' "names the size that fell short"
assert_grep "$T/out" 'Min bus bandwidth    : 1e-06 GB/s at 262144 B: .* OK' "the other size passed"
run_mpi 4 "$GPULAUNCH" "${B[@]}" --min-busbw 64K:0.000001,128K:0.000001
assert_eq "$RC" 0 "exit status, per size, all met"
pass "per-size thresholds"

run_mpi 4 "$GPULAUNCH" "${B[@]}" --min-busbw 100K:1
assert_eq "$RC" 64 "a size outside the sweep"
assert_grep "$T/err" 'not one of the sizes of this sweep: 65536 131072 262144' "lists the sweep"
run_mpi 4 "$GPULAUNCH" "${B[@]}" --min-busbw fast
assert_eq "$RC" 64 "not a number"
pass "bad thresholds are usage errors"

printf '[bench]\nminbytes = 64K\nmaxbytes = 64K\niters = 2\nwarmup = 1\nmin_busbw = 1e9\n' >"$T/b.conf"
run_mpi 4 "$GPULAUNCH" bench "$T/b.conf"
assert_eq "$RC" 72 "threshold from the config file"
assert_grep "$T/err" "\\($T/b.conf:6\\)" "names the file and line"
pass "[bench] min_busbw in a config file"
echo "all $TESTS_RUN passed"
