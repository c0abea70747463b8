#!/bin/bash
# Run one libFuzzer harness for SECONDS on a scratch copy of its seed corpus (the tree is never
# written); a crash, a sanitizer report, a leak, a timeout or an out-of-memory is a finding: the
# reproducer is kept in FINDINGS/ and the test fails. Add a reproducer to corpus/<target>/ once
# the bug is fixed: the normal build replays it from then on.
#   run_fuzz.sh FUZZER SEED_DIR SECONDS FINDINGS_DIR
set -euo pipefail
fuzzer=${1:?fuzzer} seeds=${2:?seed dir} secs=${3:?seconds} findings=${4:?findings dir}
name=$(basename "$fuzzer")
work=$(mktemp -d "/tmp/$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$findings"
cp -r "$seeds"/. "$work/"
set +e
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -print_final_stats=1 -artifact_prefix="$findings/$name-" "$work" 2>"$work.log"
rc=$?
set -e
grep -E '^(stat::|#[0-9]+.*DONE)' "$work.log" | tail -4 || true
if [[ $rc -ne 0 ]]; then
  tail -n 60 "$work.log"
  found=("$findings/$name-"*)
  echo "FAIL: $name found something (exit $rc); reproducer(s): ${found[*]}"
  rm -f "$work.log"
  exit 1
fi
rm -f "$work.log"
echo "ok - $name: ${secs}s, no finding"
