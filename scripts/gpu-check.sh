#!/usr/bin/env bash
# GPU check: runs the prebuilt bundle (scripts/gpu-bundle.sh, .gpubundle/) on a GPU machine that has
# nothing of gpulaunch's installed - no Open MPI, hwloc, libuv, no compiler needed, no network -
# under one global deadline, and writes everything to an output folder:
#   facts (GPU, driver, CUDA, the NCCL found and its version), the bundle check, CUDA vs C reference
#   bit for bit, kernel GB/s against a device-to-device copy, ncu DRAM throughput of pack/unpack,
#   compute-sanitizer memcheck, the 1-rank NCCL path, init timeout and abort with a lone rank of 2,
#   fused vs unfused on one GPU, the GPU monitor's under-use alarm on a fed and a starved GPU, and
#   tests/torch/ddp_train.py on the nccl backend under gpulaunch.
# Without a GPU it says so, prints the facts and runs what needs none (exit 2).
#
# usage: scripts/gpu-check.sh [--bundle DIR] [--out DIR] [--deadline SECONDS] [--mib N]
#   --bundle DIR    the bundle (default <repo>/.gpubundle)
#   --out DIR       where the results go (default $OUT, else <repo>/out/gpu-check); at most 8
#                   files, none in a sub-folder: summary.md (also printed), steps.log (every
#                   step's output), bench_nccl.json, bench_fused.json, kernels.txt, ncu.csv,
#                   memcheck.txt, torch.txt
#   --deadline S    the whole run ends within S seconds (default 540: 9 minutes)
#   --mib N         MiB of fp32 gradients for the kernel benchmark (default 1024)
# Environment: GPULAUNCH_NCCL_LIB (NCCL to use; default: found - PyTorch's nvidia-nccl wheel,
#   /usr/local/cuda, ld.so.cache), PYTHON (with torch; default /opt/torch/.venv/bin/python3, python3).
# exit status: 0 all checks passed; 1 a check failed; 2 no GPU here (the rest ran); 3 no bundle.
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUNDLE="$ROOT/.gpubundle"
RES="${OUT:-$ROOT/out/gpu-check}"
DEADLINE_S=540
MIB=1024
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) BUNDLE=$2; shift 2 ;;
    --out) RES=$2; shift 2 ;;
    --deadline) DEADLINE_S=$2; shift 2 ;;
    --mib) MIB=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 64 ;;
  esac
done
T0=$(date +%s)
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
END=$((T0 + DEADLINE_S))
RESERVE=15 # seconds kept for the summary
mkdir -p "$RES"
SUMMARY="$RES/summary.md"
LOG="$RES/steps.log"
: >"$SUMMARY"
: >"$LOG"
BIN="$BUNDLE/bin"
GPL="$BIN/gpulaunch"
FAILED=()
declare -A RESULT
ORDER=()

say() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }
left() { echo $((END - $(date +%s) - RESERVE)); }
result() { # NAME TEXT: one line of the final table
  [[ -n "${RESULT[$1]+x}" ]] || ORDER+=("$1")
  RESULT[$1]=$2
}
pass() { result "$1" "pass${2:+: $2}"; }
fail() { result "$1" "**FAIL**${2:+: $2}"; FAILED+=("$1"); }
skip() { result "$1" "skipped: $2"; }

# step NAME LIMIT OUTFILE cmd...: run with min(LIMIT, time left) seconds; output to OUTFILE (and
# steps.log); RC is its status (124: timed out, 125: no time left to start it).
step() {
  local name=$1 limit=$2 out=$3 l
  shift 3
  l=$(left)
  ((l < limit)) && limit=$l
  if ((limit < 5)); then
    RC=125
    echo "== $name: not started, the deadline is near" >>"$LOG"
    return 0
  fi
  {
    echo ""
    echo "== $name ($(date -u +%H:%M:%S), limit ${limit}s)"
    echo "\$ $*"
  } >>"$LOG"
  timeout --kill-after=5 "$limit" "$@" >"$out" 2>&1
  RC=$?
  cat "$out" >>"$LOG"
  echo "== $name: status $RC after $(( $(date +%s) - T0 ))s of the run" >>"$LOG"
  ((RC == 124 || RC == 137)) && RC=124
  return 0
}
# bench_rows SIZE FILE: "op time us, algbw GB/s, #wrong" of each collective's row at SIZE bytes
# (out-of-place columns of gpulaunch bench's nccl-tests table, or in-place ones for an op that is
# in-place only, as fused and unfused are: N/A out of place; busbw is 0 on one rank).
bench_rows() {
  awk -v size="$1" '/Collective test starting:/ { op = $NF }
    $1 == size { c = ($6 == "N/A") ? 10 : 6
      printf "%s %s us %s GB/s %s wrong%s; ", op, $c, $(c + 1), $(c + 3), (c == 10 ? " (in place)" : "") }' "$2"
}
first_exe() { for f in "$@"; do [[ -x $f ]] && { echo "$f"; return; }; done; }
why_rc() { case "$1" in 124) echo "timed out" ;; 125) echo "no time left" ;; 77) echo "skipped by the test" ;; *) echo "status $1" ;; esac; }

say "## GPU check ($(date -u +%Y-%m-%dT%H:%M:%SZ), deadline ${DEADLINE_S}s)"
say ""
if [[ ! -x $GPL ]]; then
  say "gpu-check: no bundle at $BUNDLE (build it where the build tools are: scripts/gpu-bundle.sh)"
  exit 3
fi

# ---- 0. facts ----
say "### facts"
say "- host: $(hostname), $(nproc) CPUs, $(uname -sr), $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"')"
say "- bundle: $(sed -n 's/^commit: //p' "$BUNDLE/MANIFEST" 2>/dev/null), $(sed -n 's/^built: //p' "$BUNDLE/MANIFEST" 2>/dev/null)"
HAVE_GPU=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [[ -n "$(nvidia-smi -L 2>/dev/null)" ]]; then
  HAVE_GPU=1
  q=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.memory --format=csv,noheader 2>&1 | head -1)
  say "- GPU: $q (name, compute capability, driver, memory, max SM clock, max memory clock)"
  say "- CUDA driver: $(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)"
  nvidia-smi >>"$LOG" 2>&1
else
  why=$(command -v nvidia-smi >/dev/null 2>&1 && (nvidia-smi -L 2>&1 | head -1) || echo "nvidia-smi is not installed (no NVIDIA driver)")
  say "- GPU: **none**: ${why:-nvidia-smi lists no device}"
fi

# Python with PyTorch: the GPU machine's own (/opt/torch/.venv) first.
PY=""
for p in "${PYTHON:-}" /opt/torch/.venv/bin/python3 python3 /usr/bin/python3; do
  [[ -n $p ]] && command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' >/dev/null 2>&1 && { PY=$p; break; }
done
if [[ -n $PY ]]; then
  say "- PyTorch: $("$PY" -c 'import torch,sys; print(torch.__version__, "CUDA", torch.version.cuda, "NCCL", ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "(no CUDA device)", "python", sys.version.split()[0])' 2>&1 | tail -1) ($PY)"
else
  say "- PyTorch: not found (PYTHON, /opt/torch/.venv/bin/python3, python3)"
fi

# NCCL: never shipped; the machine's own. The first of GPULAUNCH_NCCL_LIB, PyTorch's wheel,
# the CUDA toolkit's, the loader's cache.
find_nccl() {
  if [[ -n "${GPULAUNCH_NCCL_LIB:-}" ]]; then echo "$GPULAUNCH_NCCL_LIB"; return; fi
  local c
  if [[ -n $PY ]]; then
    c=$("$PY" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
    [[ -f $c ]] && { echo "$c"; return; }
  fi
  for c in /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2 \
           /usr/local/cuda/lib64/libnccl.so.2 /usr/lib/x86_64-linux-gnu/libnccl.so.2; do
    [[ -f $c ]] && { echo "$c"; return; }
  done
  c=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
  [[ -n $c ]] && echo "$c"
}
NCCL=$(find_nccl)
if [[ -n $NCCL && -f $NCCL ]]; then
  export GPULAUNCH_NCCL_LIB=$NCCL
  say "- NCCL: $NCCL, $(grep -a -o -m1 'NCCL version [0-9][0-9.]*[+a-z0-9.]*' "$NCCL" | head -1 || echo 'version string not found')"
else
  say "- NCCL: **not found** (set GPULAUNCH_NCCL_LIB): the nccl steps will fail"
fi
say "- deadline: everything below within ${DEADLINE_S}s of the start"

# ---- 1. the bundle is complete here ----
step bundle 60 "$TMPD/bundle.txt" bash "$ROOT/tests/bundle/check_bundle.sh" "$BUNDLE"
if ((RC == 0)); then pass bundle "$(tail -1 "$TMPD/bundle.txt")"; else fail bundle "$(grep -m3 FAIL "$TMPD/bundle.txt" | tr '\n' ' ')"; fi

# ---- 2. CUDA vs the C reference, bit for bit ----
gpu_test() { # NAME LIMIT PROGRAM ARGS...: a test that exits 77 without a usable GPU
  local name=$1 limit=$2
  shift 2
  step "$name" "$limit" "$TMPD/$name.txt" "$@"
  if ((RC == 0)); then pass "$name" "$(grep -E 'PASSED|ok:|passed' "$TMPD/$name.txt" | tail -1)"
  elif ((RC == 77)); then
    if ((HAVE_GPU)); then fail "$name" "skipped although a GPU is here: $(grep -m1 -i skip "$TMPD/$name.txt")"
    else skip "$name" "no GPU ($(grep -m1 -i skip "$TMPD/$name.txt" | cut -c1-120))"; fi
  else fail "$name" "$(why_rc $RC); see steps.log"; fi
}
gpu_test kernels_vs_reference 120 "$BIN/test_kernels_gpu"
gpu_test nccl_one_rank_api 150 "$BIN/test_comm_gpu"

# ---- 3. kernel bandwidth against a device-to-device copy ----
if ((HAVE_GPU)); then
  step kernel_bandwidth 120 "$RES/kernels.txt" "$BIN/bench_kernels" --gpu-only --mib "$MIB" --reps 20
  if ((RC == 0)); then
    # rows "| op | wire | MB | ms | GB/s | ratio |": pack and unpack of each wire against the copy
    worst=$(awk -F'|' '$2 ~ /^ (pack|unpack) $/ {gsub(/ /,"",$7); print $7}' "$RES/kernels.txt" | sort -g | head -1)
    rows=$(awk -F'|' '$2 ~ /^ (pack|unpack) $/ {gsub(/ /,"",$2); gsub(/ /,"",$3); gsub(/ /,"",$6); gsub(/ /,"",$7); printf "%s %s %s GB/s (%s); ", $2, $3, $6, $7}' "$RES/kernels.txt")
    copy=$(awk -F'|' '$2 ~ /D2D copy/ {gsub(/ /,"",$6); print $6; exit}' "$RES/kernels.txt")
    if awk -v w="${worst:-0}" 'BEGIN { exit !(w >= 0.85) }'; then pass kernel_bandwidth "copy $copy GB/s; $rows"
    else fail kernel_bandwidth "worst ratio ${worst:-?} < 0.85 of the copy ($copy GB/s); $rows"; fi
  else fail kernel_bandwidth "$(why_rc $RC)"; fi
else
  step kernel_bandwidth_cpu 120 "$RES/kernels.txt" "$BIN/bench_kernels" --mib 64 --reps 3
  skip kernel_bandwidth "no GPU (the CPU reference against memcpy is in kernels.txt)"
fi

# ---- 4. ncu: DRAM throughput of pack and unpack ----
NCU=$(command -v ncu 2>/dev/null || first_exe /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu)
if ((HAVE_GPU)) && [[ -n $NCU ]]; then
  step ncu 150 "$RES/ncu.csv" "$NCU" --clock-control none --csv --kernel-name 'regex:pack_kernel|unpack_kernel|edge_kernel' \
    --launch-count 24 --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    "$BIN/bench_kernels" --gpu-only --mib 256 --reps 1
  if ((RC == 0)) && grep -q dram__throughput "$RES/ncu.csv"; then
    # mean per kernel and wire ((gpl_dtype_e)7 fp32, 9 bf16, 6 fp16) over the launches profiled
    pct=$(awk -F'","' '/dram__throughput/ {
        k = $5; sub(/>\(.*/, ">", k); gsub(/void |\(anonymous namespace\)::|\(gpl_dtype_e\)|\(int\)/, "", k)
        v = $NF; gsub(/[",]/, "", v); s[k] += v; n[k]++ }
      END { for (k in s) printf "%s %.1f%%; ", k, s[k] / n[k] }' "$RES/ncu.csv")
    pass ncu "DRAM throughput, % of peak (kernel<wire,table>: 7 fp32, 9 bf16, 6 fp16): $pct"
  else fail ncu "$(why_rc $RC); see steps.log"; fi
elif ((HAVE_GPU)); then fail ncu "ncu not found"
else skip ncu "no GPU"; fi

# ---- 5. compute-sanitizer memcheck of the kernels ----
SAN=$(command -v compute-sanitizer 2>/dev/null || first_exe /usr/local/cuda/bin/compute-sanitizer \
  /usr/local/cuda/compute-sanitizer/compute-sanitizer /opt/nvidia/nsight-compute/*/compute-sanitizer)
if ((HAVE_GPU)) && [[ -n $SAN ]]; then
  step memcheck 150 "$RES/memcheck.txt" "$SAN" --tool memcheck --error-exitcode 9 "$BIN/test_kernels_gpu"
  errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$RES/memcheck.txt" | tail -1)
  if ((RC == 0)) && [[ ${errs:-x} == 0 ]]; then pass memcheck "0 errors"
  else fail memcheck "$(why_rc $RC), ${errs:-?} errors"; fi
elif ((HAVE_GPU)); then fail memcheck "compute-sanitizer not found"
else skip memcheck "no GPU"; fi

# ---- 6. the 1-rank NCCL path through gpulaunch (a job of one: no mpirun, no MPI) ----
if ((HAVE_GPU)); then
  step nccl_bench 120 "$TMPD/nccl_bench.txt" env GPULAUNCH_LOG=info GPULAUNCH_LOG_SUBSYS=comm \
    "$GPL" bench --backend nccl --op allreduce,alltoall,allgather,broadcast,reducescatter \
    -b 1M -e 256M -f 16 -n 10 -w 3 -J "$RES/bench_nccl.json"
  used=$(grep -o -m1 'NCCL [0-9][0-9.]* from [^ ]*' "$TMPD/nccl_bench.txt")
  if ((RC == 0)); then pass nccl_bench "${used:-NCCL ?}; at 256 MiB: $(bench_rows 268435456 "$TMPD/nccl_bench.txt")"
  else fail nccl_bench "$(why_rc $RC); ${used:-NCCL not loaded}; see steps.log"; fi
else
  step one_rank_cpu 60 "$TMPD/one_rank.txt" "$GPL" bench --backend cpu -b 1K -e 1M -f 32 -n 3 -w 1
  if ((RC == 0)); then pass job_of_one_cpu "gpulaunch bench alone (cpu backend), no MPI"; else fail job_of_one_cpu "$(why_rc $RC)"; fi
  skip nccl_bench "no GPU"
fi

# ---- 7. init timeout and abort with a lone rank of 2 ----
gpu_test lone_rank_of_2 90 env GPULAUNCH_LOG=info GPULAUNCH_LOG_SUBSYS=comm "$BIN/test_comm_lone" 5
if [[ ${RESULT[lone_rank_of_2]} == pass* ]]; then
  grep -q "rank 1" "$TMPD/lone_rank_of_2.txt" || fail lone_rank_of_2 "the timeout message does not name rank 1"
  result lone_rank_of_2 "${RESULT[lone_rank_of_2]}; $(grep -o -m1 'comm_start_backend -> .*' "$TMPD/lone_rank_of_2.txt"); $(grep -o -m1 'communicator aborted in [0-9.]* s' "$TMPD/lone_rank_of_2.txt")"
fi

# ---- 8. fused vs unfused on one GPU ----
if ((HAVE_GPU)); then
  step fused 120 "$TMPD/fused.txt" "$GPL" bench --backend nccl --op fused,unfused --tensor-bytes 256K \
    -b 64M -e 256M -f 4 -n 10 -w 3 -J "$RES/bench_fused.json"
  if ((RC == 0)); then pass fused_vs_unfused "1024 tensors of 256 KiB: $(bench_rows 268435456 "$TMPD/fused.txt")"
  else fail fused_vs_unfused "$(why_rc $RC)"; fi
else skip fused_vs_unfused "no GPU"; fi

# ---- 9. the GPU monitor: a fed GPU and a starved one ----
# Two jobs of one under the monitor (NVML, GPM SM activity on Hopper), each 30 s: matrix products
# back to back, and the same products behind a 0.2 s data-loader sleep. Only the starved one may
# raise the under-use alarm, and it must name rank 0 and its GPU; both write the Prometheus
# textfile with dcgm-exporter's names and the GPU's identity. The figures go in the result line,
# the textfiles' main lines in steps.log.
# monitor_run NAME MODE: runs the workload MODE under the monitor; files $TMPD/mon_NAME.*
monitor_run() {
  local name=$1 mode=$2
  cat >"$TMPD/mon_$name.conf" <<CONF
[job]
command = $PY $ROOT/tests/launcher/ops/gpu_load.py $mode --seconds 30
[monitor]
interval = 500ms
window = 15s
sm_threshold = 80
prom = $TMPD/mon_$name.prom
CONF
  step "monitor_$name" 90 "$TMPD/mon_$name.txt" "$GPL" "$TMPD/mon_$name.conf" --summary "$TMPD/mon_$name.json"
  {
    echo "-- monitor_$name: the textfile's DCGM lines"
    grep -E '^(DCGM_FI_DEV_GPU_UTIL|DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_DEV_FB_USED|gpulaunch_gpu_under_threshold_alarm)\{' \
      "$TMPD/mon_$name-rank0.prom" 2>&1
  } >>"$LOG"
}
# monitor_fig NAME: "mean GPU busy B%, mean SM activity S% (judged by ...), alarm yes|no"
monitor_fig() {
  "$PY" - "$TMPD/mon_$1.json" <<'PY' 2>/dev/null || echo "no summary"
import json, sys
r = json.load(open(sys.argv[1]))["monitor"]["ranks"][0]
sm = "%.1f%%" % r["mean_sm_active"] if "mean_sm_active" in r else "- (no GPM)"
print("mean GPU busy %.1f%%, mean SM activity %s, judged by %s, %d samples, alarm %s"
      % (r["mean_busy"], sm, r["judged_by"], r["samples"], "yes" if r["warned"] else "no"))
PY
}
ALARM_RE='stayed under 80% for [0-9]+ s on rank 0 \(host [^)]*\) GPU [0-9]+'
if ((HAVE_GPU)) && [[ -n $PY ]] && "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  monitor_run fed fed
  rc_fed=$RC
  monitor_run starved starved
  rc_starved=$RC
  fed_alarms=$(grep -cE "$ALARM_RE" "$TMPD/mon_fed.txt")
  starved_alarm=$(grep -oE -m1 "(SM activity|GPU busy) $ALARM_RE" "$TMPD/mon_starved.txt")
  figs="fed: $(monitor_fig fed); starved: $(monitor_fig starved)"
  prom_alarm() { sed -n 's/^gpulaunch_gpu_under_threshold_alarm{.*} //p' "$TMPD/mon_$1-rank0.prom" 2>/dev/null; }
  alarms="textfile alarm $(prom_alarm fed) (fed), $(prom_alarm starved) (starved)"
  ident=$(grep -o -m1 'UUID="GPU-[^"]*",pci_bus_id="[^"]*",device="[^"]*",modelName="[^"]*"' "$TMPD/mon_starved-rank0.prom" 2>/dev/null)
  if ((rc_fed != 0 || rc_starved != 0)); then
    fail monitor_alarm "workload $(why_rc $rc_fed) (fed), $(why_rc $rc_starved) (starved); see steps.log"
  elif ((fed_alarms != 0)); then fail monitor_alarm "the fed GPU raised the alarm; $figs"
  elif [[ -z $starved_alarm ]]; then fail monitor_alarm "the starved GPU raised no alarm naming rank 0 and its GPU; $figs"
  elif [[ $alarms != "textfile alarm 0 (fed), 1 (starved)" ]]; then fail monitor_alarm "$alarms; $figs"
  elif [[ -z $ident ]]; then fail monitor_alarm "the textfile names no GPU (UUID, pci_bus_id, modelName); $figs"
  else pass monitor_alarm "only the starved GPU: \"$starved_alarm\"; $figs; $alarms; labels $ident"; fi
elif ((HAVE_GPU)); then fail monitor_alarm "no PyTorch with CUDA for the workloads (PYTHON)"
else skip monitor_alarm "no GPU"; fi

# ---- 10. the torchrun-style PyTorch script under gpulaunch (a job of one) ----
if [[ -n $PY ]]; then
  : >"$RES/torch.txt"
  for be in nccl gloo; do
    if [[ $be == nccl && $HAVE_GPU == 0 ]]; then continue; fi
    step "torch_$be" 150 "$TMPD/torch_$be.txt" "$GPL" -- "$PY" "$ROOT/tests/torch/ddp_train.py" --backend "$be" --steps 30
    { echo "== $be: status $RC"; cat "$TMPD/torch_$be.txt"; } >>"$RES/torch.txt"
    loss=$(grep -o -m1 'final_loss=[^ ]* world=[0-9]* backend=[a-z]*' "$TMPD/torch_$be.txt")
    if ((RC == 0)) && [[ -n $loss ]]; then pass "torch_$be" "$loss"; else fail "torch_$be" "$(why_rc $RC); see torch.txt"; fi
  done
  ((HAVE_GPU)) || skip torch_nccl "no GPU"
else
  if ((HAVE_GPU)); then fail torch_nccl "no python3 with torch"; else skip torch_nccl "no GPU, no PyTorch"; fi
fi

# ---- summary ----
say ""
say "### results ($(( $(date +%s) - T0 ))s of ${DEADLINE_S}s)"
say ""
say "| check | result |"
say "|---|---|"
for k in "${ORDER[@]}"; do say "| $k | ${RESULT[$k]} |"; done
say ""
if ((!HAVE_GPU)); then
  say "gpu-check: NO GPU on this machine: the GPU checks were skipped; facts and the checks that need no GPU ran${FAILED[*]:+ (failed: ${FAILED[*]})}"
  exit 2
fi
if ((${#FAILED[@]})); then
  say "gpu-check: FAILED: ${FAILED[*]} (everything in $RES)"
  exit 1
fi
say "gpu-check: all checks passed (everything in $RES)"
exit 0
