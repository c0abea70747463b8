#!/usr/bin/env bash
# Issue 14: gpulaunch's stdout goes to a reader that stopped reading (a FIFO whose reader sleeps,
# as in `gpulaunch x.conf | sleep 25`) while the program floods it: SIGTERM is still served at
# once (the program gets it within a second), SIGKILL comes after the grace, gpulaunch ends
# soon after, and the lines it could not write are counted, not silently gone.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
export GPL_TEST_DIR="$T"
mkfifo "$T/fifo"
# The reader opens the FIFO and never reads; it is ours to kill at the end.
# shellcheck disable=SC2217 # the point: a reader that holds the FIFO open and never reads
sleep 60 <"$T/fifo" &
reader=$!
trap 'kill "$reader" 2>/dev/null || true; rm -rf "$T"' EXIT

cat >"$T/flood.conf" <<CONF
[job]
command = $PROG flood
grace = 3s
CONF
"$GPULAUNCH" "$T/flood.conf" >"$T/fifo" 2>"$T/err" &
g=$!
wait_for "$T/ready.0" || fail "the program did not start"
sleep 2 # the FIFO (64 KiB) and gpulaunch's queue fill; the program blocks in write
t0=$(now)
kill -TERM "$g"
wait_for "$T/SIGTERM.0" || fail "the program never got SIGTERM (the loop is blocked)"
got=$(cat "$T/SIGTERM.0")
assert_le "$(elapsed "$t0" "$got")" 1.5 "seconds from SIGTERM to the program's handler"
set +e
wait "$g"
RC=$?
set -e
t1=$(now)
assert_eq "$RC" 75 "exit status: preempted"
assert_le "$(elapsed "$t0" "$t1")" 8 "seconds until gpulaunch ended with its stdout blocked"
assert_grep "$T/err" "job preempted" "the preemption said on stderr"
assert_grep "$T/err" "lines? \([0-9]+ bytes\) of the job's output could not be written to standard output" \
  "the lines that could not be written are counted"
pass "stdout blocked: SIGTERM served in $(elapsed "$t0" "$got") s, exit 75 after $(elapsed "$t0" "$t1") s, drops counted"

# A program that ignores SIGTERM while stdout is blocked: SIGKILL after the grace still comes.
cat >"$T/stubborn.conf" <<CONF
[job]
command = sh -c 'trap "" TERM; exec $PROG burst 100000000'
grace = 2s
CONF
rm -f "$T"/ready.*
"$GPULAUNCH" "$T/stubborn.conf" >"$T/fifo" 2>"$T/err" &
g=$!
sleep 2
t0=$(now)
kill -TERM "$g"
set +e
wait "$g"
RC=$?
set -e
t1=$(now)
assert_eq "$RC" 75 "exit status: preempted"
assert_grep "$T/err" "did not end after the grace period; sending SIGKILL" "SIGKILL after the grace"
assert_le "$(elapsed "$t0" "$t1")" 7 "seconds until gpulaunch ended (grace 2 s)"
pass "stdout blocked, SIGTERM ignored: SIGKILL after the grace, gpulaunch gone after $(elapsed "$t0" "$t1") s"
echo "$TESTS_RUN checks passed"
