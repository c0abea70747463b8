#!/usr/bin/env bash
# Install what gpulaunch needs to build and test, from Debian's packages, if it is missing.
# Usage (as root): scripts/install-deps.sh [--with-browser]
set -euo pipefail

# What gpulaunch needs to build (scripts/container/Dockerfile installs these lib*-dev too;
# tests/scripts/test_dockerfile.sh checks that it does).
pkgs=(
  build-essential cmake pkg-config git
  libopenmpi-dev openmpi-bin libpmix-dev
  libhwloc-dev hwloc
  libuv1-dev libinih-dev libcjson-dev libssl-dev
  # the cloud's interruption notices over HTTP (launcher/preempt/)
  libcurl4-openssl-dev
  # the job key in a MUNGE credential where munged runs (launcher/job/seckey_munge.c; optional:
  # without it the build says "not built with MUNGE")
  libmunge-dev
  iproute2 iptables procps util-linux bc python3
  gnuplot-nox jq libxml2-utils shellcheck
  patchelf
  # A real PyTorch client in the tests (tests/torch): Debian's build, for /usr/bin/python3.
  python3-torch
  # a real one-machine Slurm for the slurm tests (scripts/slurm/cluster); runtime packages only
  munge slurmctld slurmd slurm-client
)
# What only the tests need, not the container image: cmocka (unit tests), clang and its runtime
# libraries (libFuzzer, for the fuzz build of scripts/test.sh), gdb and eu-stack (elfutils: the
# native stacks of a hung program, tests/launcher/hang), Prometheus' text parser for Python (reads
# the monitor's textfile, tests/launcher/ops) and node_exporter (scrapes that textfile over HTTP
# as its own user: tests/launcher/ops/test_prom_node_exporter.sh starts its own instance), tcpdump
# (a capture of a job's launch on its bridge: tests/netns/test_munge.sh).
test_pkgs=(
  libcmocka-dev
  clang-14 libclang-rt-14-dev
  gdb elfutils
  python3-prometheus-client prometheus-node-exporter curl
  tcpdump
)
# Chromium renders the acceptance report's HTML page in a test (skipped without it); it is big,
# so it is asked for separately and its failure to install does not stop the others.
browser=0
if [[ "${1:-}" == "--with-browser" ]]; then
  browser=1
fi

missing=()
for p in "${pkgs[@]}" "${test_pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((browser)) && ! command -v chromium >/dev/null 2>&1; then
  want_browser=1
else
  want_browser=0
fi
if ((${#missing[@]} > 0 || want_browser)) && [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}; run this script as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# The node_exporter package starts and enables a system service on port 9100; the tests run their
# own instance, so this script starts none (a policy-rc.d of its own for the install, where the
# machine has none) and leaves the service disabled.
node_exporter_new=0
[[ " ${missing[*]} " == *" prometheus-node-exporter "* ]] && node_exporter_new=1
policy_rc=/usr/sbin/policy-rc.d
if ((node_exporter_new)) && [[ ! -e $policy_rc ]]; then
  printf '#!/bin/sh\n# install-deps.sh: no service starts during its install\nexit 101\n' >"$policy_rc"
  chmod 0755 "$policy_rc"
  trap 'rm -f "$policy_rc"' EXIT
fi
if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  # A fresh machine has no package lists yet; an old one may have stale ones.
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
fi
if ((node_exporter_new)); then
  if command -v systemctl >/dev/null 2>&1; then
    systemctl disable prometheus-node-exporter.service >/dev/null 2>&1 || true
  else
    rm -f /etc/systemd/system/multi-user.target.wants/prometheus-node-exporter.service
  fi
fi
if ((want_browser)); then
  echo "install-deps: installing chromium (optional: the HTML report test)"
  apt-get install -y -q --no-install-recommends chromium ||
    { apt-get update -q && apt-get install -y -q --no-install-recommends chromium; } ||
    echo "install-deps: chromium could not be installed; the HTML render test will be skipped" >&2
fi

# cuobjdump and nvdisasm read the SASS of the kernels (tests/kernels/sass_stores.py: the unpack
# kernels' stores must be 128-bit). Debian's CUDA toolkit packages lag behind the toolkit in
# /usr/local/cuda, so where that toolkit lacks them they come from NVIDIA's wheels on PyPI (the
# binaries alone). Optional: without them that test is skipped.
cuda_bin=/usr/local/cuda/bin
if [[ -x $cuda_bin/nvcc && -w $cuda_bin && ( ! -x $cuda_bin/cuobjdump || ! -x $cuda_bin/nvdisasm ) ]]; then
  tmp=$(mktemp -d)
  if python3 -m pip --version >/dev/null 2>&1 &&
     python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" \
       nvidia-cuda-cuobjdump==13.2.86 nvidia-cuda-nvdisasm==13.2.78 &&
     python3 - "$tmp" "$cuda_bin" <<'PY'
import glob, os, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
for whl in glob.glob(os.path.join(tmp, "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            tool = os.path.basename(name)
            if name.endswith("/bin/" + tool) and tool in ("cuobjdump", "nvdisasm"):
                out = os.path.join(dest, tool)
                with open(out, "wb") as f:
                    f.write(z.read(name))
                os.chmod(out, 0o755)
PY
  then
    echo "install-deps: cuobjdump and nvdisasm installed in $cuda_bin"
  else
    echo "install-deps: cuobjdump/nvdisasm could not be installed; the SASS store test will be skipped" >&2
  fi
  rm -rf "$tmp"
fi

# py-spy reads a hung Python program's stacks (the hang watchdog; tests/launcher/hang). Debian has
# no package of it: the static binary comes from its wheel on PyPI, into /usr/local/bin.
if ! command -v py-spy >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; then
  tmp=$(mktemp -d)
  if python3 -m pip --version >/dev/null 2>&1 &&
     python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" py-spy==0.4.3 &&
     python3 - "$tmp" /usr/local/bin <<'PY'
import glob, os, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
for whl in glob.glob(os.path.join(tmp, "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            if name.endswith("/scripts/py-spy"):
                out = os.path.join(dest, "py-spy")
                with open(out, "wb") as f:
                    f.write(z.read(name))
                os.chmod(out, 0o755)
PY
  then
    echo "install-deps: py-spy installed in /usr/local/bin"
  else
    echo "install-deps: py-spy could not be installed; the Python hang test will be skipped" >&2
  fi
  rm -rf "$tmp"
fi
