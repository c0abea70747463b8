#!/usr/bin/env bash
# On a GPU machine: gpulaunch bench with the NCCL backend on one GPU (device buffers, every size
# checked), and the fused kernels against the device-to-device copy bandwidth. Without a GPU it
# says so and exits 0 (nothing measured).
#   benchmarks/run_gpu.sh [--build DIR]   (a CUDA build on a machine with the build tools; on a bare
#   GPU machine run scripts/gpu-check.sh from the bundle instead: scripts/gpu-bundle.sh)
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
echo "### GPU: NCCL allreduce on one GPU, fused kernels vs device copy"
echo
if ! command -v nvidia-smi >/dev/null || [[ -z "$(nvidia-smi -L 2>/dev/null)" ]]; then
  echo "No GPU on this machine ($(hostname)): not measured. Run this script (or scripts/gpu-check.sh) on a GPU machine."
  exit 0
fi
need "$GPULAUNCH" "$BUILD/benchmarks/bench_kernels"
machine
echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
echo
show "$GPULAUNCH" bench --backend nccl --op allreduce,allgather,reducescatter,fused -d bfloat16 -b 1M -e 1G -f 4 -n 20
echo
echo '```'
"$GPULAUNCH" bench --backend nccl --op allreduce -b 1M -e 1G -f 4 -n 20 -w 5
"$GPULAUNCH" bench --backend nccl --op fused -d bfloat16 -b 1M -e 1G -f 4 -n 20 -w 5
echo '```'
echo
show "$BUILD/benchmarks/bench_kernels" --gpu-only --mib 512 --reps 20
echo
"$BUILD/benchmarks/bench_kernels" --gpu-only --mib 512 --reps 20
