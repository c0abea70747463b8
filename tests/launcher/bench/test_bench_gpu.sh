#!/usr/bin/env bash
# NCCL on one GPU: gpulaunch bench --backend nccl with device buffers, every collective checked.
# Exit 77 (skipped) where there is no usable GPU or gpulaunch was built without CUDA.
# shellcheck source=tests/launcher/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
if ! command -v nvidia-smi >/dev/null || [[ -z "$(nvidia-smi -L 2>/dev/null)" ]]; then
  echo "SKIP: no GPU here"
  exit 77
fi
run_one "$GPULAUNCH" bench --backend nccl -b 1M -e 64M -f 4 -n 5 -w 2 --json "$T/g.json"
if [[ "$RC" == 69 ]]; then
  echo "SKIP: $(cat "$T/err")"
  exit 77
fi
assert_eq "$RC" 0 "exit status"
assert_grep "$T/out" 'backend nccl$' "nccl backend"
assert_grep "$T/out" '^#  Rank  0 Group  0 Pid +[0-9]+ on +[^ ]+ device  0 \[[0-9a-f]{4}:' "the GPU's PCI address"
assert_eq "$(wrong_total "$T/out")" 0 "wrong elements"
pass "allreduce on the GPU"
run_one "$GPULAUNCH" bench --backend nccl --op allgather,reducescatter,broadcast,alltoall,fused -d bfloat16 -b 1M -e 16M -f 4 -n 3 -w 1
assert_eq "$RC" 0 "exit status"
assert_eq "$(wrong_total "$T/out")" 0 "wrong elements"
pass "every collective and the fused allreduce on the GPU"
GPULAUNCH_TEST_CORRUPT=0 run_one "$GPULAUNCH" bench --backend nccl -b 1M -e 1M -n 2 -w 1
assert_eq "$RC" 72 "a corrupted device result is caught"
pass "corruption caught on the GPU path"
echo "all $TESTS_RUN passed"
