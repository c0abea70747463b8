#!/usr/bin/env bash
# Merged streams (issue 21): with `> log 2>&1` no line is split or lost, whatever mix of stdout,
# stderr, partial writes and \r progress 4 ranks' programs write (testprog pieces: each line in
# three write(2) calls at random cuts). mpirun reads each rank's two streams apart and writes
# what it read at any byte, so rank 0's gpulaunch writes every line through one stream when its
# stdout and stderr end in the same file: under plain mpirun, gpulaunch-run, and alone.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
RUN="$(dirname "$GPULAUNCH")/gpulaunch-run"
N=2000
check() { # check LOG NRANKS: every program line whole, none lost
  local got
  got=$(awk '/^\[[^]]*:[0-3]\] (OUT|ERR) r[0-3] i[0-9]+ (x*|0%\r25%\r50%\r75%\rdone) END$/ {ok++; next}
             /^\[[^]]*:[0-9]+\] / {bad++; if (bad < 4) print "cut: " substr($0, 1, 100) > "/dev/stderr"}
             END {print ok + 0, bad + 0}' "$1")
  assert_eq "$got" "$((2 * N * $2)) 0" "whole lines, cut lines in ${1##*/}"
}
for form in mpirun gpulaunch-run; do
  if [[ $form == mpirun ]]; then cmd=("$MPIEXEC"); else cmd=("$RUN"); fi
  set +e
  "${cmd[@]}" -np 4 --oversubscribe --bind-to none "$GPULAUNCH" -- "$PROG" pieces "$N" >"$T/log" 2>&1
  RC=$?
  set -e
  assert_eq "$RC" 0 "$form: exit status"
  check "$T/log" 4
  pass "$form -np 4 ... > log 2>&1: all $((8 * N)) lines whole (both streams, 3 pieces each, \\r bars)"
done
set +e
"$GPULAUNCH" -- "$PROG" pieces "$N" >"$T/log" 2>&1
RC=$?
set -e
assert_eq "$RC" 0 "alone: exit status"
check "$T/log" 1
pass "alone > log 2>&1: all $((2 * N)) lines whole"
# Streams kept apart still are: stdout lines on stdout, stderr lines on stderr.
run_mpi 4 "$GPULAUNCH" -- "$PROG" pieces 200
assert_eq "$RC" 0 "separate streams: exit status"
assert_eq "$(grep -c ' OUT r' "$T/out")" 800 "stdout lines on stdout"
assert_eq "$(grep -c ' ERR r' "$T/err")" 800 "stderr lines on stderr"
pass "stdout and stderr to different files stay apart"
