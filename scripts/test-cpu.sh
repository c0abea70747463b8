#!/usr/bin/env bash
# How much of the machine each test keeps busy: its wall time and the CPU time of every process it
# started, in namespaces or daemonized too (a cgroup of its own: cpuacct, or cgroup v2's cpu.stat;
# without a writable cgroup, the rusage of its reaped children, which misses daemons), one test at
# a time; "light" where the CPU time is at most half the wall time (tests/CMakeLists.txt,
# "Where and how each test runs").
# Usage: scripts/test-cpu.sh BUILD_DIR TEST...   (exact CTest names; run it on an idle machine)
set -euo pipefail
build="${1:?usage: scripts/test-cpu.sh BUILD_DIR TEST...}"
shift
[[ -f "$build/CTestTestfile.cmake" ]] || { echo "test-cpu.sh: $build is not a build folder with tests" >&2; exit 64; }
[[ $# -gt 0 ]] || { echo "test-cpu.sh: name at least one test" >&2; exit 64; }
tmp=$(mktemp -d)
cg=""
for root in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
  if [[ -w $root ]] && mkdir "$root/gpl-test-cpu.$$" 2>/dev/null; then
    if [[ -f $root/gpl-test-cpu.$$/cpuacct.usage || -f $root/gpl-test-cpu.$$/cpu.stat ]]; then
      cg="$root/gpl-test-cpu.$$"
      break
    fi
    rmdir "$root/gpl-test-cpu.$$"
  fi
done
cleanup() {
  rm -rf "$tmp"
  [[ -z $cg ]] || rmdir "$cg" 2>/dev/null || true
}
trap cleanup EXIT
cg_ns() { # the cgroup's CPU time so far, in ns
  if [[ -f $cg/cpuacct.usage ]]; then cat "$cg/cpuacct.usage"; else
    awk '$1 == "usage_usec" { printf "%d\n", $2 * 1000 }' "$cg/cpu.stat"
  fi
}
echo "CPU time from: ${cg:-rusage of reaped children (no writable cgroup: daemons are missed)}"
printf '%-36s %8s %8s %6s %s\n' test wall_s cpu_s cpu/wall result
for t in "$@"; do
  result=passed
  if [[ -n $cg ]]; then
    before=$(cg_ns)
    t0=$(date +%s.%N)
    (echo "$BASHPID" >"$cg/cgroup.procs" && cd "$build" && exec ctest -R "^$t\$" --timeout 600) >"$tmp/log" 2>&1 ||
      result=failed
    t1=$(date +%s.%N)
    sleep 1 # what the test left behind is counted too, and has a moment to end
    cpu=$(awk -v a="$before" -v b="$(cg_ns)" 'BEGIN { print (b - a) / 1e9 }')
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
  else
    (cd "$build" && /usr/bin/time -o "$tmp/time" -f '%e %U %S' ctest -R "^$t\$" --timeout 600) >"$tmp/log" 2>&1 ||
      result=failed
    read -r wall user sys <"$tmp/time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
  fi
  grep -q 'No tests were found' "$tmp/log" && result="no such test"
  awk -v t="$t" -v w="$wall" -v c="$cpu" -v r="$result" '
    BEGIN { q = w > 0 ? c / w : 0
            printf "%-36s %8.1f %8.1f %6.2f %s%s\n", t, w, c, q, r, (q <= 0.5 ? " (light)" : "") }'
done
