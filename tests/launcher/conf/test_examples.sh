#!/usr/bin/env bash
# Every example config (examples/*.conf, what the README points users to) passes `gpulaunch check`,
# and every setting it writes is taken: each `key = value` line shows up as the origin of a value.
source "$(dirname "$0")/../../lib.sh"
SRC="${GPULAUNCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}"

n=0
for c in "$SRC"/examples/*.conf; do
  name=${c#"$SRC"/}
  run_one "$GPULAUNCH" check "$c"
  assert_eq "$RC" 0 "gpulaunch check $name: exit status"
  assert_grep "$T/out" "^# $c: OK\$" "gpulaunch check $name: verdict line"
  while IFS=: read -r line key; do
    grep -q -- "# $c:$line$" "$T/out" || fail "$name:$line: '$key' is not among the effective settings"
  done < <(awk '/^[A-Za-z_][A-Za-z0-9_]*[ \t]*=/ { sub(/[ \t]*=.*/, ""); print FNR ":" $0 }' "$c")
  pass "$name: valid, every setting taken"
  n=$((n + 1))
done
((n >= 3)) || fail "only $n example configs under $SRC/examples"
