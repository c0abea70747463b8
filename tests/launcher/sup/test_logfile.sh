#!/usr/bin/env bash
# Issue 14: a rank whose log file cannot be opened ends the job at once on every rank, named
# (rank, host, path, why), exit 65, instead of a 60 s hang; a log file system that fills up is
# reported (which rank, how many bytes) and a job that otherwise succeeded exits 76.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
export GPL_TEST_DIR="$T"

mkdir -p "$T/logs/rank-2.log" # a folder where rank 2's file should be
cat >"$T/logs.conf" <<CONF
[job]
command = $PROG signals 5
log_dir = $T/logs
timeout = 60s
CONF
t0=$(now)
run_mpi 4 -x GPL_TEST_DIR "$GPULAUNCH" "$T/logs.conf"
assert_eq "$RC" 65 "a rank that cannot open its log: configuration error"
assert_le "$(elapsed "$t0")" 10 "seconds until every rank left (the deadline is 60 s)"
assert_grep "$T/err" "rank 2 \(host [^)]*\): \[job\] log_dir \($T/logs.conf:3\): cannot open its log file: $T/logs/rank-2.log: Is a directory" \
  "rank, host, origin, path and reason named"
assert_nogrep "$T/err" "MPI_Testall|timed out" "no misleading MPI or timeout message"
for r in 0 1 3; do [[ -f $T/logs/rank-$r.log ]] || fail "rank $r's log was not opened"; done
compgen -G "$T/ready.*" >/dev/null && fail "a program was started"
pass "rank 2's log cannot be opened: every rank leaves in $(elapsed "$t0") s with exit 65, rank 2 named"

# A full file system: a tmpfs of 64 KiB as log_dir, a program that writes more.
if [[ $(id -u) -ne 0 ]]; then
  echo "ok - full file system: skipped (mounting a tmpfs needs root)"
  exit 0
fi
mkdir -p "$T/full"
if ! mount -t tmpfs -o size=64k tmpfs "$T/full" 2>"$T/mount.err"; then
  echo "ok - full file system: skipped (cannot mount a tmpfs here: $(cat "$T/mount.err"))"
  exit 0
fi
trap 'umount "$T/full" 2>/dev/null; rm -rf "$T"' EXIT
cat >"$T/full.conf" <<CONF
[job]
command = $PROG burst 5000
log_dir = $T/full
CONF
run_mpi 2 "$GPULAUNCH" "$T/full.conf"
assert_eq "$RC" 76 "a log that could not be written in full: exit 76"
assert_grep "$T/err" "rank [01] \(host [^)]*\): its log file $T/full/rank-[01].log is incomplete \([0-9]+ bytes not written\): No space left on device" \
  "the incomplete log named, with its size and why"
assert_grep "$T/err" "log file $T/full/rank-[01].log: write failed: No space left on device" "said when it happened"
# The output itself was not affected.
assert_eq "$(grep -c ' out rank=1 line=' "$T/out")" 5000 "rank 1's stdout lines all passed on"
pass "a full log file system: reported per rank with the bytes lost, exit 76, the output intact"
echo "$TESTS_RUN checks passed"
