#!/usr/bin/env bash
# Issue 18: a wrapped C program on the C API (gpl_progress + gpl_barrier through gpulaunch's
# proxy) hangs in a blocking read in stuck_in_read() on one rank: named from its native stack
# (gdb), with /proc state and wchan. 1. the others wait in gpl_barrier (np 3, rank 1 hangs);
# 2. the others idle in a sleep loop calling nothing (np 4, rank 0 itself hangs), the program
# started by a shell that waits for it.
source "$(dirname "$0")/../../lib.sh"
PROG=${1:?usage: test_hang_native.sh HANG_PROG}
command -v gdb >/dev/null || { echo "SKIP: no gdb"; exit 77; }
host=$(hostname -s)

printf '[job]\ncommand = %s barrier 1 4 100000\nhang_timeout = 4s\nlog_dir = %s/l1\n' "$PROG" "$T" >"$T/a.conf"
FAIL_SHOW="$T/l1/gpulaunch-hang.txt $T/l2/gpulaunch-hang.txt" # each rank's frames, should a verdict be wrong
FAIL_SHOW_GREP='^(no progress|rank|odd|====|@@comm|@@state|@@frames)'
t0=$(now)
run_mpi 3 "$GPULAUNCH" "$T/a.conf"
took=$(elapsed "$t0")
assert_eq "$RC" 77 "exit status (others in gpl_barrier)"
assert_le "$took" 24 "seconds to the end (hang_timeout 4 s + 20 s)"
assert_grep "$T/err" "^gpulaunch: hang: rank 1 \(host $host, pid [0-9]+\) is in stuck_in_read .*the other 2 ranks are in gpl_barrier" "rank 1 named, in stuck_in_read"
j="$T/l1/gpulaunch-hang.json"
assert_eq "$(jq -c .odd_ranks "$j")" "[1]" "odd ranks"
assert_eq "$(jq -r '.ranks[1].processes[0].tool' "$j")" gdb "native stacks with gdb"
jq -r '.ranks[1].processes[0].frames | join(" ")' "$j" | grep -q "read.* stuck_in_read main" || fail "rank 1's frames: $(jq -c '.ranks[1].processes[0].frames' "$j")"
assert_eq "$(jq -r '.ranks[1].processes[0].threads[0].wchan' "$j" | sed 's/^anon_//')" pipe_read "rank 1's wchan (anon_pipe_read on newer kernels)"
assert_eq "$(jq -r '.ranks[1].processes[0].threads[0].state' "$j")" S "rank 1's state"
pass "C program, rank 1 in a blocking read, others in gpl_barrier: named via gdb in $took s (wchan pipe_read)"

# (under a shell that waits for it: the program below the shell is the one compared)
printf '[job]\ncommand = /bin/sh -c "%s sleep 0 3 100000; exit 3"\nhang_timeout = 4s\nlog_dir = %s/l2\n' "$PROG" "$T" >"$T/b.conf"
t0=$(now)
run_mpi 4 "$GPULAUNCH" "$T/b.conf"
took=$(elapsed "$t0")
assert_eq "$RC" 77 "exit status (others in a sleep loop)"
assert_le "$took" 24 "seconds to the end"
assert_grep "$T/err" "^gpulaunch: hang: rank 0 \(host $host, pid [0-9]+\) is in stuck_in_read .*the other 3 ranks are in idle_forever" "rank 0 named"
assert_eq "$(jq -c .odd_ranks "$T/l2/gpulaunch-hang.json")" "[0]" "odd ranks"
assert_eq "$(jq -r '.ranks[0].processes[0].comm' "$T/l2/gpulaunch-hang.json")" hang_prog "the process compared is the program, not its shell"
pass "C program under sh -c, rank 0 in a blocking read, others sleeping: rank 0 named in $took s"
