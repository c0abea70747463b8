#!/usr/bin/env bash
# scripts/gpu-check.sh runs from a bundle as it would on the GPU machine: here, without a GPU, it
# must say so (exit 2), still print the facts and run what needs no GPU (the bundle check, a job of
# one without MPI, the PyTorch script on gloo where PyTorch is), keep to its deadline and to the
# GPU machine's limits on what comes back (at most 8 files, no sub-folder).
# usage: test_gpu_check.sh BUNDLE_DIR
B="$1"
export GPULAUNCH="${GPULAUNCH:-$B/bin/gpulaunch}" # (lib.sh wants it; the bundle's is the one run)
source "$(dirname "$0")/../lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
out="$T/out" # gpu-check.sh's --out, removed at exit with $T
mkdir "$out"
# What explains a failure here: gpu-check.sh's summary.
fail_context() { cat "$out/summary.md" 2>/dev/null; }
if command -v nvidia-smi >/dev/null 2>&1 && [[ -n "$(nvidia-smi -L 2>/dev/null)" ]]; then
  echo "skipped: a GPU is here; scripts/gpu-check.sh is the check to run on it"
  exit 77
fi
start=$(date +%s)
set +e
env -u LD_LIBRARY_PATH bash "$ROOT/scripts/gpu-check.sh" --bundle "$B" --out "$out" --deadline 240 >"$out.log" 2>&1
rc=$?
set -e
took=$(($(date +%s) - start))
cat "$out.log"
rm -f "$out.log"
[[ $rc -eq 2 ]] || fail "status $rc, want 2 (no GPU)"
grep -q "NO GPU on this machine" "$out/summary.md" || fail "no 'NO GPU' line"
grep -q "^- GPU: \*\*none\*\*" "$out/summary.md" || fail "the facts do not say there is no GPU"
grep -q "^- NCCL: " "$out/summary.md" || fail "no NCCL fact"
grep -q "^| bundle | pass" "$out/summary.md" || fail "the bundle check did not pass"
grep -q "^| job_of_one_cpu | pass" "$out/summary.md" || fail "the job of one did not run"
grep -q "^| kernels_vs_reference | skipped: no GPU" "$out/summary.md" || fail "GPU test not skipped as such"
((took <= 240 + 10)) || fail "took ${took}s, over its 240 s deadline"
n=$(find "$out" -type f | wc -l)
((n <= 8)) || fail "$n files in the output, more than the 8 that come back"
[[ -z "$(find "$out" -mindepth 1 -type d)" ]] || fail "sub-folders in the output"
echo "ok: gpu-check without a GPU: exit 2, facts and the GPU-free checks, ${took}s, $n files"
