#!/usr/bin/env bash
# What each test cost in the last CTest run of one or more build folders, from CTest's own log
# (BUILD/Testing/Temporary/LastTest.log: each test's "Test time"), slowest first.
#
# usage: scripts/test-times.sh [--top N] [--doc] BUILD...
#   BUILD   a build folder where ctest ran (scripts/test.sh: build-test, build-nocuda, build-fuzz)
#   --top N only the N slowest tests, then the totals (default: every test)
#   --doc   write the table into docs/testing.md, between its "BEGIN TEST TIMES" and
#           "END TEST TIMES" lines (the table there is the last full run's: scripts/test.sh
#           --times-doc does this at its end)
# Prints "seconds  build  test  status" lines, then each build's test count and the sum of its
# tests' times. The sum is CPU-side time of tests, not the wall clock of a parallel run (ctest -j):
# scripts/test.sh prints that one too.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
top=0
doc=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --top) top="${2:?--top needs a number}"; shift 2 ;;
    --doc) doc=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "test-times.sh: unknown option $1" >&2; exit 64 ;;
    *) break ;;
  esac
done
[[ $# -gt 0 ]] || { echo "test-times.sh: name at least one build folder (scripts/test-times.sh --help)" >&2; exit 64; }
[[ $top =~ ^[0-9]+$ ]] || { echo "test-times.sh: --top N: a whole number" >&2; exit 64; }

# One "seconds<TAB>build<TAB>test<TAB>status" line per test of each build's last run.
rows() {
  local b log
  for b in "$@"; do
    log="$b/Testing/Temporary/LastTest.log"
    if [[ ! -f $log ]]; then
      echo "test-times.sh: $log: no CTest run there" >&2
      exit 2
    fi
    awk -v build="$(basename "$b")" '
      /^[0-9]+\/[0-9]+ Testing: / { name = $3; next }
      /^Test time = / && name != "" { secs = $4; want = 1; next }
      want && /^Test / { st = $2; sub(/\.$/, "", st); if (st == "Pass") st = "Passed"; printf "%s\t%s\t%s\t%s\n", secs, build, name, st; name = ""; want = 0 }
    ' "$log"
  done
}

table=$(rows "$@" | sort -t$'\t' -k1,1 -g -r)
totals=$(printf '%s\n' "$table" | awk -F'\t' '
  NF { n[$2]++; s[$2] += $1; all += $1; if (!($2 in seen)) { seen[$2] = 1; order[++k] = $2 } }
  END { for (i = 1; i <= k; i++) printf "%s\t%d\t%.0f\n", order[i], n[order[i]], s[order[i]]; printf "all\t%d\t%.0f\n", NR, all }')

if ((doc)); then
  md="$root/docs/testing.md"
  out=$(mktemp)
  trap 'rm -f "$out"' EXIT
  {
    echo "| seconds | build | test | result |"
    echo "|---:|---|---|---|"
    printf '%s\n' "$table" | awk -F'\t' 'NF { printf "| %.1f | %s | `%s` | %s |\n", $1, $2, $3, $4 }'
    echo
    printf '%s\n' "$totals" | awk -F'\t' '{ printf "%s%s: %d tests, %s s", (NR > 1 ? "; " : "Sum of the tests'"'"' times, "), $1, $2, $3 } END { print "." }'
  } >"$out.block"
  awk -v block="$out.block" '
    /^<!-- BEGIN TEST TIMES/ { print; while ((getline l < block) > 0) print l; skip = 1; next }
    /^<!-- END TEST TIMES/ { skip = 0 }
    !skip { print }' "$md" >"$out"
  grep -q '^<!-- BEGIN TEST TIMES' "$md" || { echo "test-times.sh: $md has no BEGIN TEST TIMES line" >&2; rm -f "$out.block"; exit 2; }
  cat "$out" >"$md"
  rm -f "$out.block"
  echo "test-times.sh: docs/testing.md: $(printf '%s\n' "$table" | grep -c .) tests"
  exit 0
fi

if ((top > 0)); then
  printf '%s\n' "$table" | head -n "$top" | awk -F'\t' '{ printf "%8.1f s  %-13s %-38s %s\n", $1, $2, $3, $4 }'
else
  printf '%s\n' "$table" | awk -F'\t' 'NF { printf "%8.1f s  %-13s %-38s %s\n", $1, $2, $3, $4 }'
fi
printf '%s\n' "$totals" | awk -F'\t' '{ printf "%s: %d tests, %s s of test time\n", $1, $2, $3 }'
