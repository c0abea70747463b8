#!/usr/bin/env bash
# A CUDA out-of-memory error in a supervised program (tests/launcher/testprog's "oom": PyTorch's
# traceback and message, NCCL's teardown warning after it, exit status 1) under [job] restarts = 2:
# one attempt only, and the root cause names the rank, the peak device memory the monitor saw
# (a replayed recording: tests/launcher/ops/data/mem_filling.jsonl) and the remedies; with
# [job] restart_on_oom = true the restarts are used. The monitor warned once before, as free
# memory stayed under [monitor] mem_headroom. Any other failure is still restarted.
source "$(dirname "$0")/../../lib.sh"
PROG="${1:?usage: test_oom.sh TESTPROG FAKE_NVML_LIB}"
FAKE="${2:?usage: test_oom.sh TESTPROG FAKE_NVML_LIB}"
DATA="$(cd "$(dirname "$0")/data" && pwd)"
export GPL_TEST_DIR="$T"

conf() { # conf FILE RESTART_ON_OOM COMMAND...
  local f=$1 r=$2
  shift 2
  cat >"$f" <<CONF
[job]
command = $*
restarts = 2
restart_on_oom = $r
stop_timeout = 1s
[monitor]
replay = $DATA/mem_filling.jsonl
interval = 50ms
window = 20s
CONF
}
REMEDIES="to fit: a smaller batch per GPU, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \(less fragmentation\), activation checkpointing"

conf "$T/oom.conf" false "$PROG" oom 1 0.8
run_mpi 2 "$GPULAUNCH" "$T/oom.conf" --summary "$T/s.json"
assert_eq "$RC" 1 "exit status: the program's"
python3 - "$T/s.json" <<'PY' || fail "--summary: the root cause's OOM figures"
import json, sys
s = json.load(open(sys.argv[1]))
rc = s["run"]["root_cause"]
assert rc["rank"] == 1 and s["run"]["attempts"] == 1, s["run"]
assert rc["cuda_oom"]["mem_total_mib"] == 81920 and 78848 <= rc["cuda_oom"]["peak_mem_mib"] <= 80384, rc
assert "to fit: a smaller batch per GPU" in rc["message"], rc
PY
[[ -e $T/attempt0.1 ]] || fail "the first attempt ran"
[[ ! -e $T/attempt1.1 && ! -e $T/attempt1.0 ]] || fail "an out-of-memory error was restarted"
assert_nogrep "$T/err" "restarting all" "no restart"
# rank 1's memory in the recording reaches 77-78.5 GiB of 80 before it fails (16 samples at least)
assert_grep "$T/err" "^gpulaunch: rank 1 \(host [^)]*\) exited with status 1: CUDA out of memory \(peak GPU memory seen (78848|79360|79872|80384) MiB\) of the GPU's 81920 MiB; $REMEDIES$" \
  "the root cause: rank, peak and total memory, remedies"
assert_grep "$T/err" "^    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" "the program's last lines quoted"
assert_grep "$T/err" "^gpulaunch: not restarted: an out-of-memory error repeats at the same step \(\[job\] restart_on_oom = true retries it anyway; 2 restarts left\)" \
  "why it was not restarted"
assert_grep "$T/err" "^gpulaunch: job failed after 1 attempt \(exit status 1\)" "one attempt"
# the warning before it: rank 1's free memory under 5% from t=35 s of the recording, 20 s window
assert_eq "$(grep -c "device memory nearly full on rank 1 (host [^)]*) GPU 1: free memory stayed under 5% for 20 s" "$T/err")" 1 \
  "one low-headroom warning for rank 1"
pass "an OOM under restarts = 2: one attempt, the root cause names rank 1, its peak memory and the remedies"

rm -f "$T"/attempt*
conf "$T/retry.conf" true "$PROG" oom 1 0.3
run_mpi 2 "$GPULAUNCH" "$T/retry.conf"
assert_eq "$RC" 1 "restart_on_oom: exit status"
for a in 0 1 2; do [[ -e $T/attempt$a.1 ]] || fail "restart_on_oom: attempt $a ran"; done
assert_eq "$(grep -c "CUDA out of memory (peak GPU memory seen [0-9]* MiB) of the GPU's 81920 MiB; to fit: .*; restarting all 2 ranks" "$T/err")" 2 "two restarts, each naming the OOM"
assert_grep "$T/err" "^gpulaunch: job failed after 3 attempts \(exit status 1\)" "three attempts"
assert_nogrep "$T/err" "not restarted" "restart_on_oom: no refusal"
pass "restart_on_oom = true: the OOM is retried twice"

# Over NVML (the stand-in libnvidia-ml of tests/fake_nvml: 12 of 80 GiB used) with an interval
# no tick reaches: the OOM line itself takes the sample, so the peak is the memory held at the OOM.
cat >"$T/nvml.conf" <<CONF
[job]
command = $PROG oom 1 0.3
restarts = 1
[monitor]
interval = 1h
CONF
export GPULAUNCH_NVML_LIB="$FAKE"
export FAKE_NVML_GPUS="00000000:3B:00.0|NVIDIA H100 80GB HBM3|GPU-aaaa-0000;00000000:BC:00.0|NVIDIA H100 80GB HBM3|GPU-bbbb-0001"
run_mpi 2 "$GPULAUNCH" "$T/nvml.conf"
unset GPULAUNCH_NVML_LIB FAKE_NVML_GPUS
assert_eq "$RC" 1 "NVML: exit status"
assert_grep "$T/err" "^gpulaunch: rank 1 \(host [^)]*\) exited with status 1: CUDA out of memory \(peak GPU memory seen 12288 MiB\) of the GPU's 81920 MiB; $REMEDIES$" \
  "NVML: the peak sampled at the OOM"
pass "over NVML, the OOM line takes its own sample: the root cause has the memory held at the error"

# Not an OOM (exit 3 on the first attempt only): restarted as before, and it succeeds.
rm -f "$T"/attempt*
conf "$T/other.conf" false "$PROG" restart 1
run_mpi 2 "$GPULAUNCH" "$T/other.conf"
assert_eq "$RC" 0 "another failure: restarted and then fine"
assert_grep "$T/err" "rank 1 \(host [^)]*\) exited with status 3; restarting all 2 ranks \(restart 1 of 2\)" "restarted"
assert_nogrep "$T/err" "out of memory" "no OOM named"
pass "a failure that is not an OOM is still restarted"
echo "# $TESTS_RUN passed"
