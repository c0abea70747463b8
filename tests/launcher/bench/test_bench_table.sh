#!/usr/bin/env bash
# The table as nccl-tests' all_reduce_perf prints it, parsed back: header, columns and units, the
# size sequence of -b/-e/-f, counts, bandwidth formulas, the footer; only rank 0 prints; the
# progress line shows on a terminal only.
# shellcheck source=tests/launcher/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"

run_mpi 4 "$GPULAUNCH" bench --op allreduce -b 1M -e 4M -f 2 -n 3 -w 1
assert_eq "$RC" 0 "exit status"
O="$T/out"
assert_grep "$O" '^# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2\(factor\) warmup iters: 1 iters: 3 agg iters: 1 validation: 1 graph: 0$' "nccl-tests' parameter line"
assert_grep "$O" '^# Using devices$' "device list"
assert_eq "$(grep -cE '^#  Rank  [0-3] Group  0 Pid +[0-9]+ on ' "$O")" 4 "one device line per rank"
assert_grep "$O" "^# time: per iteration the slowest rank's time \(max over ranks\), then the median" "timing definition in the header"
assert_grep "$O" '^#                                                              out-of-place                       in-place          $' "placement header"
assert_grep "$O" '^#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong$' "column names"
assert_grep "$O" '^#        \(B\)    \(elements\)                               \(us\)  \(GB/s\)  \(GB/s\)             \(us\)  \(GB/s\)  \(GB/s\)        $' "units"
pass "header lines as nccl-tests"
check_rows "$O" 13
assert_eq "$(rows "$O" | awk '{ printf "%s ", $1 }')" "1048576 2097152 4194304 " "sizes of -b 1M -e 4M -f 2"
assert_eq "$(rows "$O" | awk '{ printf "%s ", $2 }')" "262144 524288 1048576 " "counts: size / 4"
assert_eq "$(rows "$O" | awk '{ printf "%s%s%s ", $3, $4, $5 }')" "floatsum-1 floatsum-1 floatsum-1 " "type, redop, root"
assert_eq "$(wrong_total "$O")" 0 "no wrong elements"
busbw_consistent "$O" 1.5
pass "rows: 13 columns, sizes, counts, busbw = algbw * 2(n-1)/n"
assert_grep "$O" '^# Out of bounds values : 0 OK$' "footer: out of bounds"
assert_grep "$O" '^# Avg bus bandwidth    : [0-9.e+-]+ $' "footer: average"
avg=$(sed -n 's/^# Avg bus bandwidth    : \([^ ]*\) $/\1/p' "$O")
mean=$(rows "$O" | awk '{ s += $8 + $12; n += 2 } END { print s / n }')
awk -v a="$avg" -v m="$mean" 'BEGIN { d = a - m; if (d < 0) d = -d; exit !(d <= 0.01 + 0.01 * m) }' ||
  fail "average bus bandwidth $avg is not the mean $mean of the busbw columns"
assert_eq "$(grep -c '^# Collective test starting: allreduce' "$O")" 1 "only rank 0 prints the table"
assert_nogrep "$T/err" $'\r' "no progress line when stderr is not a terminal"
pass "footer as nccl-tests, one table"

# On a terminal: the progress line (script(1) gives the program a pseudo-terminal).
if command -v script >/dev/null; then
  script -qec "$GPULAUNCH bench -b 64K -e 256K -f 2 -n 2 -w 1" /dev/null >"$T/tty" 2>&1 </dev/null ||
    fail "bench under a pseudo-terminal: status $?"
  assert_grep "$T/tty" '# bench allreduce: size [0-9]/3, [0-9]+ bytes, (out-of-place|in-place)' "progress line on a terminal"
  assert_grep "$T/tty" ' +65536 +16384 +float +sum' "table under a terminal"
  pass "progress line on a terminal"
  # Under mpirun the ranks' stderr is a pipe to mpirun: the progress line goes to mpirun's
  # terminal, and nowhere when mpirun's own output is redirected (run_mpi above: none).
  script -qec "$MPIEXEC -np 2 --oversubscribe --bind-to none $GPULAUNCH bench -b 64K -e 256K -f 2 -n 2 -w 1" \
    /dev/null >"$T/tty2" 2>&1 </dev/null || fail "mpirun bench under a pseudo-terminal: status $?"
  assert_grep "$T/tty2" '# bench allreduce: size [0-9]/3, [0-9]+ bytes, (out-of-place|in-place)' "progress line under mpirun on a terminal"
  assert_grep "$T/tty2" ' +65536 +16384 +float +sum' "table under mpirun on a terminal"
  pass "progress line under mpirun on a terminal"
fi
echo "all $TESTS_RUN passed"
