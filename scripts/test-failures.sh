#!/usr/bin/env bash
# Why each failed test of the last CTest run failed, in a few lines: its first failure lines and
# the end of its output (from Testing/Temporary/LastTest.log). scripts/test.sh prints it last, so
# the tail of a long CI log names the cause, not only the test.
# Usage: scripts/test-failures.sh [--lines N] BUILD_DIR...
set -euo pipefail
lines=25
if [[ "${1:-}" == "--lines" ]]; then
  lines="${2:?--lines needs a number}"
  shift 2
fi
for dir in "$@"; do
  failed="$dir/Testing/Temporary/LastTestsFailed.log"
  log="$dir/Testing/Temporary/LastTest.log"
  [[ -s "$failed" && -f "$log" ]] || continue
  while IFS=: read -r _ name; do
    [[ -n "$name" ]] || continue
    # LastTestsFailed.log outlives a later run that passes: only a failure of the last run counts.
    awk -v t="$name" '/^[0-9]+\/[0-9]+ Testing: / { on = ($3 == t) } on && /^Test (Failed|Passed)/ { s = $2 }
      END { exit s != "Failed." }' "$log" || continue
    echo "== why $name failed (${dir##*/}; the whole output: $log)"
    # The test's own output, between "Output:" and its end line; the FAIL/ERROR lines first,
    # then the last lines.
    awk -v t="$name" '
      /^[0-9]+\/[0-9]+ Testing: / && $3 == t { on = 1; out = 0; next }
      on && index($0, "\"" t "\" end time:") == 1 { on = 0 }
      on && /^<end of output>$/ { on = 0 }
      on && /^Output:/ { out = 1; next }
      on && out' "$log" >"${TMPDIR:-/tmp}/gpl-failed.$$" || true
    grep -nE '^(FAIL|not ok)|\[  ERROR|\[ERROR\]|\[FATAL\]|Timeout|timed out|Segmentation|Sanitizer' \
      "${TMPDIR:-/tmp}/gpl-failed.$$" | head -n 8 | sed 's/^/  ! /' || true
    tail -n "$lines" "${TMPDIR:-/tmp}/gpl-failed.$$" | sed 's/^/  | /'
    rm -f "${TMPDIR:-/tmp}/gpl-failed.$$"
  done <"$failed"
done
