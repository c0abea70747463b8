#!/usr/bin/env bash
# Issue 29: `gpulaunch accept`'s report paths (--json, --junit, --html, --exclude-out, --summary)
# are checked before anything is measured: one that cannot be written ends the run at once with
# 64, naming the option, the path and why, and leaves no file behind; a report that still fails
# at the end (here: a file size limit) is an ERROR row, and the verdict line says what it was.
#   test_accept_outpaths.sh   (GPULAUNCH, MPIEXEC from CTest; GPULAUNCH_SOURCE_DIR)
# shellcheck disable=SC1091 # tests/lib.sh, found at run time
. "$GPULAUNCH_SOURCE_DIR/tests/lib.sh"
printf '[accept]\nsize = 1M\niters = 2\ngpus = 0\n' >"$T/a.conf"

# refused OPTION PATH WHY: mpirun -np 2 accept with OPTION PATH (and a good --json) ends with 64
# before the first step, naming OPTION, PATH and WHY; nothing measured, no report file left.
refused() {
  local opt=$1 path=$2 why=$3 t0
  t0=$(now)
  run_mpi 2 "$GPULAUNCH" accept "$T/a.conf" --json "$T/good.json" "$opt" "$path"
  assert_eq "$RC" 64 "$opt $path: exit status"
  assert_grep "$T/err" "^gpulaunch accept: $opt: cannot write there: .*${path//./\\.}.*$why" "$opt $path: message"
  assert_nogrep "$T/out" '^Result:' "$opt $path: no verdict (nothing measured)"
  assert_nogrep "$T/err" 'placing ranks|could not write' "$opt $path: no step started"
  [[ ! -e $T/good.json ]] || fail "$opt $path: the good --json file was left behind"
  assert_le "$(elapsed "$t0")" 20 "$opt $path: seconds until the run ended"
}
refused --json /no/such/dir/a.json "does not exist"
refused --junit /proc/gpulaunch-test.xml "No such file or directory"
refused --html "$T" "Is a directory"
refused --exclude-out "$T/missing/bad.txt" "does not exist"
refused --summary /proc/gpulaunch-test.json "No such file or directory"
pass "an output path that cannot be written ends accept at once (64), before any measuring, no file left"

# The same paths, all writable: nothing is left where the check created and removed its file,
# and the run writes every report.
run_mpi 2 "$GPULAUNCH" accept "$T/a.conf" --json "$T/r.json" --junit "$T/r.xml" --html "$T/r.html" \
  --exclude-out "$T/bad.txt"
assert_eq "$RC" 0 "writable paths: exit status"
for f in r.json r.xml r.html bad.txt; do [[ -f $T/$f ]] || fail "$f was not written"; done
assert_grep "$T/out" '^Result: PASS: [0-9]+ passed, 0 warning\(s\), 0 failed, [0-9]+ skipped, 0 error\(s\) \(exit 0\)$' "verdict"
pass "writable report paths: the run writes them all, the verdict line unchanged"

# A report that cannot be written at the end (a 1 KiB file size limit, SIGXFSZ ignored: write
# fails with EFBIG): exit 74, an ERROR row "report", and the verdict says what the error was.
# A job of one (no mpirun), whose stdout and stderr are pipes, so that only the report is a file.
set +e
(trap '' XFSZ; ulimit -f 1; exec "$GPULAUNCH" accept "$T/a.conf" --json "$T/big.json") 2>&1 | cat >"$T/out"
RC=${PIPESTATUS[0]}
set -e
assert_eq "$RC" 74 "report that cannot be written in full: exit status"
assert_grep "$T/out" '^ERROR +report +JSON' "the report's ERROR row"
assert_grep "$T/out" "^Result: ERROR: [0-9]+ passed, 0 warning\(s\), 0 failed, [0-9]+ skipped, 1 error\(s\) \(exit 74\): report JSON: could not write the JSON report: .*big\.json: File too large$" "the verdict names the error"
pass "a report that fails at the end: ERROR row, verdict 'Result: ERROR: ... 1 error(s) (exit 74): report JSON: ...'"
echo "$TESTS_RUN tests passed"
