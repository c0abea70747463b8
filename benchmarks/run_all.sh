#!/usr/bin/env bash
# Every figure of benchmarks/RESULTS.md, one script after the other, as Markdown on stdout.
#   benchmarks/run_all.sh [--build DIR]     (build first: scripts/build.sh, or cmake --build)
# Each script can be run alone with its own options (see its header).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
echo "## gpulaunch benchmarks"
echo
rc=0
for s in run_allreduce_vs_mpi run_startup run_kernels run_fused run_topology run_gpu; do
  bash "$HERE/$s.sh" "$@" || { rc=$?; echo; echo "($s.sh failed with status $rc)"; }
  echo
done
exit "$rc"
