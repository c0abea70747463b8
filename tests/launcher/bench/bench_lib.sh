# shellcheck shell=bash
# Helpers of the bench script tests: tests/lib.sh, plus the table's rows and footer parsed back.
# shellcheck source=tests/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib.sh"
: "${BENCH_JSON_CHECK:=}"
# Start-up waits: fail fast rather than hang a test for a minute.
export GPULAUNCH_TIMEOUT="${GPULAUNCH_TIMEOUT:-30s}"

# rows FILE: the table's data lines (not starting with '#').
rows() { grep -v '^#' "$1" | grep -E '^ *[0-9]' || true; }

# check_rows FILE NCOLS: every data line has NCOLS columns.
check_rows() {
  local bad
  bad=$(rows "$1" | awk -v n="$2" 'NF != n { print NR": "$0 }')
  [[ -z "$bad" ]] || fail "rows with other than $2 columns: $bad"
}

# wrong_total FILE: sum of both #wrong columns (N/A counts 0).
wrong_total() { rows "$1" | awk '{ s += ($9 == "N/A" ? 0 : $9) + ($13 == "N/A" ? 0 : $13) } END { print s + 0 }'; }

# busbw_consistent FILE FACTOR: busbw = algbw * FACTOR and algbw = size / time, within the
# table's rounding, in every measured cell.
busbw_consistent() {
  rows "$1" | awk -v f="$2" '
    function near(a, b) { d = a - b; if (d < 0) d = -d; return d <= 0.011 + 0.006 * (a > b ? a : b) }
    function cell(t, a, b) {
      if (t == "N/A") return
      if (t <= 0) { print "time " t " in: " $0; bad = 1 }
      if (!near(a, $1 / t / 1000)) { print "algbw " a " != size/time " ($1 / t / 1000) " in: " $0; bad = 1 }
      if (!near(b, a * f)) { print "busbw " b " != algbw*" f " in: " $0; bad = 1 }
    }
    { cell($6, $7, $8); cell($10, $11, $12) }
    END { exit bad }' || fail "bandwidth columns inconsistent"
}
