#!/usr/bin/env bash
# Issue 29: the wrapped program inherits its three standard streams and no other descriptor (not
# MPI's sockets and listeners, not mpirun's pipes); gpulaunch passes none on purpose (the proxy
# is a socket path in GPULAUNCH_PROXY). docs/supervision.md says so.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"

# fds_of RANK: the descriptor numbers rank RANK's program listed, sorted, on one line.
fds_of() { sed -n "s/.*FDS $1: *//p" "$T/out" | tr ' ' '\n' | sort -n | paste -sd' '; }

# 1. Under mpirun -np 2: Open MPI's sockets (its TCP listeners on 0.0.0.0 and [::]) stay with
# gpulaunch.
run_mpi 2 "$GPULAUNCH" -- "$PROG" fds
assert_eq "$RC" 0 "mpirun -np 2 gpulaunch -- testprog fds"
for r in 0 1; do
  assert_eq "$(fds_of "$r")" "0 1 2" "rank $r's open descriptors"
done
pass "mpirun -np 2: each rank's program has only descriptors 0, 1 and 2"

# 2. A descriptor gpulaunch itself inherited (the caller's fd 7, not close-on-exec) is not
# passed on either.
exec 7>"$T/leak"
run_one "$GPULAUNCH" -- "$PROG" fds
exec 7>&-
assert_eq "$RC" 0 "gpulaunch -- testprog fds"
assert_eq "$(fds_of 0)" "0 1 2" "open descriptors of a job of one"
assert_nogrep "$T/out" "FD 7 -> " "the caller's descriptor 7"
pass "a descriptor of gpulaunch's caller does not reach the program"
echo "$TESTS_RUN tests passed"
