#!/usr/bin/env bash
# Issue 29: bench's result files (--json, --csv, [bench] json/csv, --summary) are checked before
# anything is measured: one that cannot be written ends the run at once, 64 for an option and 65
# for a config key (named with its file:line), and no file is left behind.
# shellcheck source=tests/launcher/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"

# refused RC WHAT-REGEX ARGS...: mpirun -np 2 gpulaunch bench ARGS ends with RC, naming WHAT, and
# prints no table row.
refused() {
  local rc=$1 what=$2 t0
  shift 2
  t0=$(now)
  run_mpi 2 "$GPULAUNCH" bench "$@" -b 1K -e 1K -n 1 -w 0
  assert_eq "$RC" "$rc" "bench $*: exit status"
  assert_grep "$T/err" "^gpulaunch bench: $what: cannot write there: " "bench $*: message"
  assert_nogrep "$T/out" 'Collective test starting' "bench $*: nothing measured"
  [[ ! -e $T/good.csv ]] || fail "bench $*: the good --csv file was left behind"
  assert_le "$(elapsed "$t0")" 20 "bench $*: seconds until the run ended"
}
refused 64 "--json" --csv "$T/good.csv" --json /no/such/dir/r.json
assert_grep "$T/err" "/no/such/dir/r.json: the folder /no/such/dir does not exist" "the folder named"
refused 64 "--csv" --csv /proc/gpulaunch-test.csv
assert_grep "$T/err" "cannot create /proc/gpulaunch-test.csv" "the file named"
refused 64 "--summary" --csv "$T/good.csv" --summary /proc/gpulaunch-test.json
printf '[bench]\ncsv = %s/missing/r.csv\n' "$T" >"$T/b.conf"
refused 65 ".*/b.conf:2" "$T/b.conf"
pass "a result path that cannot be written ends bench at once: 64 (option) or 65 (config key), no file left"

run_mpi 2 "$GPULAUNCH" bench -b 1K -e 1K -n 1 -w 0 --json "$T/r.json" --csv "$T/r.csv"
assert_eq "$RC" 0 "writable paths: exit status"
[[ -s $T/r.json && -s $T/r.csv ]] || fail "the results were not written"
pass "writable result paths: both written"
echo "$TESTS_RUN tests passed"
