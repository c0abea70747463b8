#!/usr/bin/env bash
# Issue 29: the stacks are read by a plain user where kernel.yama.ptrace_scope is 1 (most
# distributions): gpulaunch-exec allows gpulaunch (PR_SET_PTRACER), so the straggler view's
# eu-stack, a child of gpulaunch and no ancestor of the program, may read it. A real unprivileged
# user runs the C straggler; ptrace_scope is set to 1 for the test and restored after.
source "$(dirname "$0")/../../lib.sh"
PROG=${1:?usage: test_straggler_ptrace.sh HANG_PROG}
knob=/proc/sys/kernel/yama/ptrace_scope
[ -w "$knob" ] || { echo "SKIP: no writable $knob (no Yama in this kernel, or not allowed here)"; exit 77; }
command -v useradd >/dev/null && command -v runuser >/dev/null || { echo "SKIP: no useradd/runuser"; exit 77; }
user="gplptr$$"
useradd --system --no-create-home --shell /usr/sbin/nologin "$user" 2>"$T/useradd.err" || {
  echo "SKIP: cannot create a user: $(cat "$T/useradd.err")"
  exit 77
}
old=$(cat "$knob")
trap 'echo "$old" >"$knob"; userdel "$user" 2>/dev/null; rm -rf "$T"' EXIT
echo 1 >"$knob" || { echo "SKIP: cannot set $knob to 1"; exit 77; }
chmod 0777 "$T"
printf '[job]\ncommand = %s straggle 1 40 400\n' "$PROG" >"$T/a.conf"
chmod 0644 "$T/a.conf"
set +e
runuser -u "$user" -- env HOME="$T" "$MPIEXEC" -np 3 --oversubscribe --bind-to none "$GPULAUNCH" \
  --summary "$T/a.json" "$T/a.conf" >"$T/out" 2>"$T/err"
RC=$?
set -e
assert_eq "$RC" 0 "exit status (as $user, ptrace_scope 1)"
assert_grep "$T/err" "^gpulaunch: rank 1 \(host [^)]*\) is the straggler: [0-9]+ % of its samples in slow_transform" "named"
pass "a plain user under ptrace_scope 1: rank 1 named in slow_transform"
