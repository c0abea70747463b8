#!/usr/bin/env bash
# Output: every line whole and prefixed, none lost under a burst, a last line without newline kept,
# other prefix modes, per-rank log files.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
N=20000
host=$(hostname -s)

run_mpi 4 "$GPULAUNCH" -- "$PROG" burst $N
assert_eq "$RC" 0 "exit status"
for r in 0 1 2 3; do
  o=$(grep -cE "^\[$host:$r\] out rank=$r line=[0-9]+ abcdefghijklmnopqrstuvwxyz0123456789 end\$" "$T/out" || true)
  e=$(grep -cE "^\[$host:$r\] err rank=$r line=[0-9]+ ABCDEFGHIJKLMNOPQRSTUVWXYZ end\$" "$T/err" || true)
  assert_eq "$o" "$N" "rank $r whole stdout lines"
  assert_eq "$e" "$N" "rank $r whole stderr lines"
  assert_grep "$T/out" "^\[$host:$r\] last line without newline rank=$r\$" "rank $r last partial line"
  # Order within a rank is kept.
  grep -E "^\[$host:$r\] out " "$T/out" | sed -E 's/.*line=([0-9]+).*/\1/' >"$T/seq"
  seq 0 $((N - 1)) | cmp -s - "$T/seq" || fail "rank $r stdout lines out of order"
done
total=$(wc -l <"$T/out")
assert_eq "$total" $((4 * N + 4)) "no other stdout lines"
pass "4 ranks x $N lines on each stream: all whole, prefixed, in order"

cat >"$T/rank.conf" <<CONF
[job]
command = $PROG burst 5
prefix = rank
log_dir = $T/logs
CONF
run_mpi 2 "$GPULAUNCH" "$T/rank.conf"
assert_eq "$RC" 0 "exit status (prefix rank)"
assert_grep "$T/out" "^\[1\] out rank=1 line=4 " "prefix = rank"
for r in 0 1; do
  [[ -f "$T/logs/rank-$r.log" ]] || fail "log file of rank $r missing"
  assert_grep "$T/logs/rank-$r.log" "^\[$r\] err rank=$r line=4 " "rank $r log has stderr"
  assert_grep "$T/logs/rank-$r.log" "^\[$r\] out rank=$r line=4 " "rank $r log has stdout"
done
pass "prefix = rank and per-rank log files"

sed -i 's/prefix = rank/prefix = none/' "$T/rank.conf"
run_mpi 2 "$GPULAUNCH" "$T/rank.conf"
assert_grep "$T/out" "^out rank=1 line=4 " "prefix = none"
pass "prefix = none"
