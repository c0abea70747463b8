#!/usr/bin/env bash
# Issue 14: the program's descendants (one in its process group, one that left it with setsid)
# die with the program, with a SIGKILLed gpulaunch and with a SIGKILLed mpirun; a killed
# gpulaunch leaves no gpulaunch-proxy-* folder behind.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
export GPL_TEST_DIR="$T" TMPDIR="$T"

# alive PID: running (a zombie waiting for a reaper that may never come is not alive)
alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $s != Z* ]]; }
tree_pids() { cat "$T"/tree.* 2>/dev/null; }
none_alive() {
  local what=$1 p i
  for ((i = 0; i < 50; i++)); do # up to 5 s for the reaper to finish
    local left=()
    for p in $(tree_pids); do alive "$p" && left+=("$p"); done
    ((${#left[@]} == 0)) && return 0
    sleep 0.1
  done
  ps -o pid,ppid,pgid,sid,stat,args -p "$(tree_pids | paste -sd,)" >&2 || true
  for p in $(tree_pids); do kill -9 "$p" 2>/dev/null || true; done
  fail "$what: descendants of the program survived: ${left[*]}"
}

# 1. gpulaunch alone, SIGKILLed while its program and the program's two children run.
rm -f "$T"/tree.* "$T"/ready.*
"$GPULAUNCH" -- "$PROG" tree 60 >"$T/out" 2>"$T/err" &
g=$!
wait_for "$T/ready.0" || fail "the program did not start"
(($(tree_pids | wc -l) == 2)) || fail "the program did not record its two children"
for p in $(tree_pids); do alive "$p" || fail "child $p is not running before the kill"; done
kill -9 "$g"
wait "$g" 2>/dev/null || true
none_alive "SIGKILL of gpulaunch"
compgen -G "$T/gpulaunch-proxy-*" >/dev/null && fail "a gpulaunch-proxy-* folder was left in TMPDIR"
pass "SIGKILLed gpulaunch: the program, its child and its setsid child are gone; no proxy folder left"

# 2. mpirun -np 2, mpirun SIGKILLed: every rank's tree goes.
rm -f "$T"/tree.* "$T"/ready.*
"$MPIEXEC" -np 2 --oversubscribe --bind-to none -x GPL_TEST_DIR -x TMPDIR \
  "$GPULAUNCH" -- "$PROG" tree 60 >"$T/out" 2>"$T/err" &
m=$!
{ wait_for "$T/ready.0" && wait_for "$T/ready.1"; } || fail "the programs did not start"
sleep 0.3
(($(tree_pids | wc -l) == 4)) || fail "the programs did not record their children"
kill -9 "$m"
wait "$m" 2>/dev/null || true
none_alive "SIGKILL of mpirun"
pass "SIGKILLed mpirun: both ranks' programs and all their children are gone"

# 3. The program ends on its own while its children still run: they go with it, at once.
rm -f "$T"/tree.* "$T"/ready.*
t0=$(now)
run_one "$GPULAUNCH" -- "$PROG" tree 0.5
assert_eq "$RC" 0 "a program that leaves children behind ends the job with its own status"
none_alive "the program's own end"
assert_le "$(elapsed "$t0")" 5 "seconds until the job ended"
pass "a program's leftover children (also setsid ones) end with it"

# 4. The whole tree is SIGKILLed after the grace, through the reaper: a setsid child too.
rm -f "$T"/tree.* "$T"/ready.*
cat >"$T/grace.conf" <<CONF
[job]
command = sh -c 'trap "" TERM; $PROG tree 60'
grace = 1s
CONF
"$GPULAUNCH" "$T/grace.conf" >"$T/out" 2>"$T/err" &
g=$!
wait_for "$T/ready.0" || fail "the program did not start"
kill -TERM "$g"
set +e
wait "$g"
RC=$?
set -e
assert_eq "$RC" 75 "SIGTERM: preempted"
none_alive "SIGKILL after the grace"
pass "after the grace, SIGKILL reaches every descendant"
echo "$TESTS_RUN checks passed"
