#!/bin/bash
# Many processes append audit lines to one log at once: every line must arrive whole (valid JSON,
# its own writer's words only), none lost, the file stays 0600, and the hash chain holds across
# the writers (`gpulaunch audit verify`: each append reads the last line under the lock).
set -euo pipefail
append=$1
gpulaunch=${2:-}
dir=$(mktemp -d /tmp/gpl-ops-auditc-XXXXXX)
trap 'rm -rf "$dir"' EXIT
log=$dir/audit.log
writers=8
lines=100
pids=()
for w in $(seq 1 "$writers"); do
  "$append" "$log" "$w" "$lines" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done

mode=$(stat -c %a "$log")
[ "$mode" = 600 ] || { echo "FAIL: mode $mode, want 600"; exit 1; }
total=$(wc -l <"$log")
[ "$total" -eq $((writers * lines)) ] || { echo "FAIL: $total lines, want $((writers * lines))"; exit 1; }
python3 - "$log" "$writers" "$lines" <<'PY'
import json, sys
log, writers, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
count = {}
with open(log) as f:
    for n, line in enumerate(f, 1):
        o = json.loads(line)  # raises on a torn or interleaved line
        w = o["ranks"]
        words = o["command"]
        assert len(words) == 300, (n, len(words))
        assert all(x.endswith("writer-%03d-x" % w) for x in words), ("mixed writers on line", n)
        assert o["event"] in ("start", "end")
        count[w] = count.get(w, 0) + 1
assert sorted(count) == list(range(1, writers + 1)), count
assert all(c == lines for c in count.values()), count
print("ok: %d writers x %d lines, all whole" % (writers, lines))
PY
if [ -n "$gpulaunch" ]; then
  "$gpulaunch" audit verify "$log" || { echo "FAIL: the chain breaks under concurrent writers"; exit 1; }
  # and verify sees an edit in the middle of it (exit 79, the line after the edited one)
  sed -i '400s/"event":"\(start\|end\)"/"event":"edited"/' "$log"
  rc=0
  out=$("$gpulaunch" audit verify "$log" 2>&1) || rc=$?
  [ "$rc" = 79 ] || { echo "FAIL: verify of an edited log exited $rc, want 79: $out"; exit 1; }
  case $out in *"$log:401:"*) ;; *) echo "FAIL: verify did not name line 401: $out"; exit 1 ;; esac
  echo "ok: chain verified, the edit at line 400 named at 401"
fi
