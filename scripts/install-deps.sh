#!/usr/bin/env bash
# Install what gpulaunch needs to build and test, from Debian's packages, if it is missing.
# Usage (as root): scripts/install-deps.sh [--with-browser]
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config git
  libopenmpi-dev openmpi-bin
  libhwloc-dev hwloc
  libuv1-dev libinih-dev libcjson-dev libcmocka-dev libssl-dev
  iproute2 procps util-linux
  gnuplot-nox libxml2-utils shellcheck
)
if [[ "${1:-}" == "--with-browser" ]]; then
  pkgs+=(chromium)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}; run this script as root" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists yet; an old one may have stale ones.
if ! apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
