#!/usr/bin/env bash
# Issue 14: another local user plants links, FIFOs and files of their own where a root job
# writes: the per-rank logs, the audit log, --summary, --metrics, in a shared (sticky, 1777)
# folder, and a log folder that is itself their link. Nothing is ever written through them, the
# job says which file and why, and a folder others may write without the sticky bit is refused.
# A real unprivileged user is created for it (useradd) and removed at the end.
source "$(dirname "$0")/../lib.sh"
PROG="$1"
if [[ $(id -u) -ne 0 ]] || ! command -v useradd >/dev/null || ! command -v runuser >/dev/null; then
  echo "SKIP: needs root, useradd and runuser (a second local user plants the links)"
  exit 77
fi
user="gplatk$$"
useradd --system --no-create-home --shell /usr/sbin/nologin "$user" 2>"$T/useradd.err" || {
  echo "SKIP: cannot create a user: $(cat "$T/useradd.err")"
  exit 77
}
trap 'userdel "$user" 2>/dev/null; rm -rf "$T"' EXIT
as_user() { runuser -u "$user" -- "$@"; }

chmod 0711 "$T" # the other user may pass through to the shared folders, not list ours
printf 'victim\n' >"$T/victim"
chmod 0644 "$T/victim"
victim_sum=$(sha256sum <"$T/victim")
untouched() { [[ $(sha256sum <"$T/victim") == "$victim_sum" ]] || fail "$1: the victim file was written through a link"; }

shared="$T/shared"
mkdir "$shared" && chmod 1777 "$shared"
as_user ln -s "$T/victim" "$shared/rank-0.log"
as_user ln -s "$T/victim" "$shared/rank-1.log"
as_user ln -s "$T/victim" "$shared/audit.log"
as_user ln -s "$T/victim" "$shared/summary.json"
as_user ln -s "$T/victim" "$shared/metrics.jsonl"

cat >"$T/logs.conf" <<CONF
[job]
command = $PROG burst 10
log_dir = $shared
CONF
run_mpi 2 "$GPULAUNCH" "$T/logs.conf"
untouched "rank logs"
assert_eq "$RC" 65 "planted rank logs: configuration error"
assert_grep "$T/err" "rank 0 \(host [^)]*\): \[job\] log_dir .*$shared/rank-0.log is a symbolic link; refusing to write through it" "rank 0's link named"
assert_grep "$T/err" "rank 1 \(host [^)]*\): .*$shared/rank-1.log is a symbolic link" "rank 1's link named"
pass "links planted as rank-N.log in a sticky shared folder: refused on every rank, nothing written"

cat >"$T/audit.conf" <<CONF
[job]
command = $PROG burst 10
[audit]
log = $shared/audit.log
[monitor]
replay = $GPULAUNCH_SOURCE_DIR/tests/launcher/ops/data/all_busy.jsonl
interval = 10ms
CONF
# The audit log fails closed: the job does not start, and the link is named.
run_one "$GPULAUNCH" "$T/audit.conf"
untouched "audit log"
assert_eq "$RC" 65 "a planted audit log: the job does not start"
assert_grep "$T/err" "\[audit\] log cannot be written \($shared/audit.log is a symbolic link" "the audit link named"
sed -i '/^\[audit\]/,/^log = /d' "$T/audit.conf"
run_one "$GPULAUNCH" "$T/audit.conf" --summary "$shared/summary.json" --metrics "$shared/metrics.jsonl"
untouched "summary, metrics"
assert_grep "$T/err" "cannot write the summary: $shared/summary.json is a symbolic link" "the summary link named"
assert_grep "$T/err" "metrics file: $shared/metrics.jsonl is a symbolic link" "the metrics link named"
assert_eq "$RC" 76 "the job ran; its summary could not be written: 76"
pass "links planted as the audit log, --summary and --metrics: none written through, each named"

# A FIFO (would block an open), and a regular file of the other user's (would hand them our log).
other="$T/other"
mkdir "$other" && chmod 1777 "$other"
as_user mkfifo "$other/rank-0.log"
printf '[job]\ncommand = %s burst 10\nlog_dir = %s\n' "$PROG" "$other" >"$T/fifo.conf"
t0=$(now)
run_one timeout 20 "$GPULAUNCH" "$T/fifo.conf"
assert_eq "$RC" 65 "a FIFO as rank-0.log"
assert_grep "$T/err" "rank-0.log is a FIFO or socket, not a regular file|rank-0.log is a FIFO, not a regular file|belongs to another user" "the FIFO refused"
assert_le "$(elapsed "$t0")" 5 "seconds (no hang in open)"
rm -f "$other/rank-0.log"
as_user touch "$other/rank-0.log"
run_one "$GPULAUNCH" "$T/fifo.conf"
assert_eq "$RC" 65 "another user's file as rank-0.log"
assert_grep "$T/err" "rank-0.log belongs to another user \(uid [0-9]+\); refusing to write to it" "the foreign file refused"
pass "a FIFO or another user's file as rank-0.log: refused at once"

# The log folder itself a link of the other user's; a folder others may write, not sticky.
mkdir "$T/rootlogs"
as_user ln -s "$T/rootlogs" "$shared/logs"
printf '[job]\ncommand = %s burst 10\nlog_dir = %s/logs\n' "$PROG" "$shared" >"$T/dirlink.conf"
run_one "$GPULAUNCH" "$T/dirlink.conf"
assert_eq "$RC" 65 "log_dir through another user's link"
assert_grep "$T/err" "$shared/logs is a symbolic link owned by another user \(uid [0-9]+\)" "the folder link named"
[[ -z $(ls -A "$T/rootlogs") ]] || fail "a log was written through the folder link"
open="$T/open"
mkdir "$open" && chmod 0777 "$open"
printf '[job]\ncommand = %s burst 10\nlog_dir = %s\n' "$PROG" "$open" >"$T/open.conf"
run_one "$GPULAUNCH" "$T/open.conf"
assert_eq "$RC" 65 "log_dir writable by others, not sticky"
assert_grep "$T/err" "the folder $open is writable by other users \(mode 0777\) without the sticky bit" "the open folder refused"
pass "a log folder behind another user's link, or writable by all without the sticky bit: refused"

# A hard link to a file of ours in the shared folder (possible where fs.protected_hardlinks=0).
if as_user ln "$T/victim" "$shared/rank-0.hard" 2>/dev/null; then
  rm -f "$shared/rank-0.log" "$shared/rank-1.log"
  as_user ln "$T/victim" "$shared/rank-0.log"
  run_one "$GPULAUNCH" "$T/logs.conf"
  untouched "a hard link"
  assert_eq "$RC" 65 "a hard link as rank-0.log"
  pass "a hard link planted as rank-0.log: refused"
else
  echo "ok - hard link: the kernel refuses it here (fs.protected_hardlinks=1); nothing to plant"
fi
# Issue 19: folders gpulaunch creates (log_dir, diag --out) are made component by component
# without following another user's link: their link to a folder of ours, as a middle component
# of log_dir or as the diag bundle's folder, gets nothing created through it.
mkdir "$T/target" && chmod 0755 "$T/target"
as_user ln -s "$T/target" "$shared/evil"
cat >"$T/deep.conf" <<CONF
[job]
command = $PROG burst 10
log_dir = $shared/evil/run1/logs
CONF
run_mpi 2 "$GPULAUNCH" "$T/deep.conf"
assert_eq "$RC" 65 "log_dir through another user's link"
assert_grep "$T/err" "$shared/evil is a symbolic link owned by another user" "the link is named"
[[ -z $(ls -A "$T/target") ]] || fail "a folder was created through the link: $(ls -A "$T/target")"
run_one "$GPULAUNCH" diag --out "$shared/evil/bundle"
assert_eq "$RC" 76 "diag --out through another user's link"
assert_grep "$T/err" "symbolic link owned by another user" "diag names the link"
assert_nogrep "$T/out" "bundle in" "no 'bundle in' when nothing was written"
[[ -z $(ls -A "$T/target") ]] || fail "diag created something through the link: $(ls -A "$T/target")"
# A folder another user owns and anyone may write (no sticky bit): nothing is created in it.
as_user mkdir "$shared/open" && as_user chmod 0777 "$shared/open"
run_one "$GPULAUNCH" diag --out "$shared/open/bundle"
assert_eq "$RC" 76 "diag --out in another user's world-writable folder"
assert_grep "$T/err" "belongs to another user|writable by other users" "the unsafe parent is named"
[[ ! -e $shared/open/bundle ]] || fail "the bundle folder was created in an unsafe folder"
pass "log_dir and diag --out: no folder created through another user's link or in their open folder; diag exits 76"
echo "$TESTS_RUN checks passed"
