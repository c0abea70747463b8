#!/usr/bin/env bash
# Fused pack/unpack against memcpy on this CPU, in the same run (the kernels' own benchmark,
# bench_kernels: 256 MiB of fp32 gradients in GPT-2-like tensors).
#   benchmarks/run_kernels.sh [--build DIR] [--reps R] [--mib M]
# shellcheck source=benchmarks/helpers.sh
source "$(dirname "$0")/helpers.sh"
parse_build_arg "$@"
REPS=9 MIB=256
set -- "${ARGS[@]+"${ARGS[@]}"}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --mib) MIB=$2; shift 2 ;;
    *) echo "run_kernels: unknown option $1" >&2; exit 64 ;;
  esac
done
B="$BUILD/benchmarks/bench_kernels"
need "$B"
echo "### fused pack/unpack vs memcpy (CPU)"
echo
machine
echo "- CPU flags: $(grep -o -w -E 'avx512f|avx512bw|avx512_bf16|avx512fp16|avx2|f16c' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo
show "$B" --mib "$MIB" --reps "$REPS"
echo
"$B" --mib "$MIB" --reps "$REPS"
