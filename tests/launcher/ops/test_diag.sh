#!/bin/bash
# diag bundle on this GPU-less machine: the "no GPU" verdict, the expected files, a tarball, and
# no secret from the environment or the config anywhere in the bundle or the tarball.
#   test_diag.sh OPS_DIAG_RUN [--mpi]        the bundle code through the test driver
#   test_diag.sh GPULAUNCH --cli [--mpi]     the same through `gpulaunch diag CONFIG --out DIR`
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../../lib.sh"
driver=$1
shift
mode="" cli=0
for a in "$@"; do
  case $a in
    --mpi) mode=--mpi ;;
    --cli) cli=1 ;;
  esac
done
# The command line of one rank. Without nvidia-bug-report.sh: on a GPU host the real one would
# take minutes (test_diag_nvidia.sh runs it, as a stand-in).
run_args() {
  if ((cli)); then
    echo diag "$dir/train.conf" --out "$out" --no-bug-report
  else
    echo ${mode:+--mpi} --out "$out" --config "$dir/train.conf" --no-bug-report
  fi
}
dir=$T

# Secrets planted in the environment and in the config.
export MY_API_TOKEN=s3cr3t-tok-9d8e7f1a
export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI-s3cr3t-K7MDENG
export SLURM_JOB_TOKEN=slurm-s3cr3t-4242      # a variable diag lists: value must be redacted
export NCCL_IB_PASSWORD=ncclpw-s3cr3t-77
export NCCL_SOCKET_IFNAME=lo                  # present and up: no NCCL_SOCKET_IFNAME verdict
secrets=(s3cr3t-tok-9d8e7f1a wJalrXUtnFEMI-s3cr3t-K7MDENG slurm-s3cr3t-4242 ncclpw-s3cr3t-77
         hf_s3cr3t_abcdef key-s3cr3t-555 bearer-s3cr3t-xyz)
cat >"$dir/train.conf" <<'CONF'
[job]
command = python train.py --api-key=key-s3cr3t-555
[env]
HF_TOKEN = hf_s3cr3t_abcdef
CONF

out=$dir/bundle
read -r -a args <<<"$(run_args)"
if [ "$mode" = --mpi ]; then
  "$MPIEXEC" -np 2 --oversubscribe --bind-to none "$driver" "${args[@]}" >"$dir/stdout" 2>&1 ||
    { cat "$dir/stdout"; fail "diag under mpirun"; }
else
  # A stand-in nvidia-smi that prints the whole environment and a credential header: what diag
  # captures from commands must be scrubbed too.
  mkdir "$dir/bin"
  cat >"$dir/bin/nvidia-smi" <<'SMI'
#!/bin/sh
echo "fake nvidia-smi $*"
env
echo "Authorization: bearer-s3cr3t-xyz"
SMI
  chmod +x "$dir/bin/nvidia-smi"
  PATH=$dir/bin:$PATH "$driver" "${args[@]}" >"$dir/stdout" 2>&1 || { cat "$dir/stdout"; fail "diag"; }
fi
cat "$dir/stdout"

host=$(hostname -s 2>/dev/null || hostname)
hd=$out/$host
[ -d "$hd" ] || hd=$(find "$out" -mindepth 1 -maxdepth 1 -type d | head -1)
[ -f "$out/SUMMARY.txt" ] || fail "no SUMMARY.txt"
echo "--- SUMMARY.txt"; cat "$out/SUMMARY.txt"

# The verdict list comes first, worst first, and says there is no GPU.
first=$(grep -m1 '^  \[' "$out/SUMMARY.txt")
case $first in
  *"[ERROR] "*": no GPU: no NVIDIA PCI device found / no NVIDIA driver (libnvidia-ml.so.1 not found"*) ;;
  *) fail "first verdict is not the no-GPU one: $first" ;;
esac
if [ "$mode" = --mpi ]; then
  grep -q 'under MPI' "$out/SUMMARY.txt" || fail "SUMMARY does not say under MPI"
  [ "$(find "$out" -mindepth 1 -maxdepth 1 -type d | wc -l)" -eq 1 ] || fail "one node, one folder"
  grep -q 'nvidia-smi not found on PATH' "$hd/nvidia-smi-q.txt" || fail "missing nvidia-smi not said"
else
  grep -q 'without MPI' "$out/SUMMARY.txt" || fail "SUMMARY does not say without MPI"
  grep -q '^fake nvidia-smi -q' "$hd/nvidia-smi-q.txt" || fail "nvidia-smi -q not captured"
  grep -q '^fake nvidia-smi topo -m' "$hd/nvidia-smi-topo.txt" || fail "nvidia-smi topo -m not captured"
  grep -q '^MY_API_TOKEN=<redacted>' "$hd/nvidia-smi-q.txt" || fail "command output not scrubbed"
  grep -q '^Authorization: <redacted>' "$hd/nvidia-smi-q.txt" || fail "credential header not scrubbed"
fi

for f in versions.txt system.txt topology.xml plan.txt network.txt config.txt config-file.conf \
         env.txt kernel.txt verdicts.txt nvidia-smi-q.txt nvidia-smi-topo.txt; do
  [ -s "$hd/$f" ] || fail "missing or empty $f"
done
grep -q '^gpulaunch ' "$hd/versions.txt" || fail "no gpulaunch version"
grep -q '^MPI  *Open MPI' "$hd/versions.txt" || fail "no MPI version"
grep -q '^hwloc  *API 2\.' "$hd/versions.txt" || fail "no hwloc version"
grep -q '^NVML  *unavailable' "$hd/versions.txt" || fail "NVML line"
grep -q '^CUDA runtime ' "$hd/versions.txt" || fail "no CUDA runtime line"
grep -q '^NCCL ' "$hd/versions.txt" || fail "no NCCL line"
xmllint --noout "$hd/topology.xml" || fail "topology.xml is not XML"
grep -q '<topology' "$hd/topology.xml" || fail "topology.xml is not an hwloc export"
grep -q '^lo ' "$hd/network.txt" || fail "no interface table"
grep -q '^SLURM_JOB_TOKEN=<redacted>$' "$hd/env.txt" || fail "SLURM_JOB_TOKEN not listed redacted"
grep -q '^NCCL_SOCKET_IFNAME=lo$' "$hd/env.txt" || fail "NCCL variables not listed"
grep -Eq 'HF_TOKEN *= <redacted>' "$hd/config.txt" || fail "config secret not redacted"
grep -q -- '--api-key=<redacted>' "$hd/config-file.conf" || fail "config file copy not redacted"

[ -f "$out.tar.gz" ] || fail "no $out.tar.gz"
mkdir "$dir/x"
tar -xzf "$out.tar.gz" -C "$dir/x"
[ -f "$dir/x/bundle/SUMMARY.txt" ] || fail "tarball lacks SUMMARY.txt"

# No secret anywhere: the folder, the tarball's contents and the tarball itself (compressed
# bytes would hide it, so grep the extracted files and the uncompressed tar stream).
for s in "${secrets[@]}"; do
  if grep -r -l -F -- "$s" "$out" "$dir/x" >/dev/null; then
    grep -r -n -F -- "$s" "$out" "$dir/x" | head
    fail "secret $s in the bundle"
  fi
  if gzip -dc "$out.tar.gz" | grep -q -a -F -- "$s"; then fail "secret $s in the tarball"; fi
  if grep -q -F -- "$s" "$dir/stdout"; then fail "secret $s printed"; fi
done
echo "ok: diag bundle ${mode:-without MPI}$( ((cli)) && echo ", gpulaunch diag"), no secret in $(find "$out" -type f | wc -l) files"
