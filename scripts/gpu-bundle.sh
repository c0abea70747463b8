#!/usr/bin/env bash
# Build the GPU check's bundle: the binaries scripts/gpu-check.sh runs on a GPU machine that has
# none of gpulaunch's build dependencies (no Open MPI, hwloc, libuv, inih, cJSON; no apt, no
# network), with every shared library they load from this machine, in an ignored folder.
#
# usage: scripts/gpu-bundle.sh [--out DIR] [--build DIR] [--check]
#   --out DIR    the bundle (default <repo>/.gpubundle; git-ignored)
#   --build DIR  the build folder (default <repo>/build-bundle)
#   --check      only check an existing bundle (tests/bundle/check_bundle.sh)
#
# Layout: bin/ (gpulaunch, gpulaunch-exec, the GPU tests and benchmarks, linked with RPATH
# $ORIGIN/../lib), lib/ (their libraries: the ldd closure, less the ones every Linux with a C++
# runtime has and the GPU machine's own: glibc, libstdc++, libgcc_s, libcuda, libnvidia-ml,
# libnccl), MANIFEST (commit, toolchain, files, sizes). NCCL is not shipped (too big, and the
# machine's own, e.g. PyTorch's nvidia-nccl wheel, is what training uses): gpulaunch loads it at
# run time (GPULAUNCH_NCCL_LIB). RPATH rather than LD_LIBRARY_PATH, so that the programs gpulaunch
# runs (python3 with torch) keep their own libraries. The whole bundle must stay under 64 MiB.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/.gpubundle"
BUILD="$ROOT/build-bundle"
CHECK_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --check) CHECK_ONLY=1; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-bundle: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if ((CHECK_ONLY)); then
  exec bash "$ROOT/tests/bundle/check_bundle.sh" "$OUT"
fi
export PATH="/usr/local/cuda/bin:$PATH"
if ! command -v patchelf >/dev/null; then
  echo "gpu-bundle: patchelf not found (scripts/install-deps.sh installs it)" >&2
  exit 3
fi
if ! command -v nvcc >/dev/null; then
  echo "gpu-bundle: nvcc not found (/usr/local/cuda/bin): the bundle needs the CUDA build" >&2
  exit 3
fi

# Programs the GPU check runs: "target path-in-build".
PROGS=(
  "gpulaunch launcher/gpulaunch"
  "gpulaunch-exec launcher/gpulaunch-exec"
  "test_kernels_gpu tests/kernels/test_kernels_gpu"
  "test_comm_gpu tests/comm/test_comm_gpu"
  "test_comm_lone tests/comm/test_comm_lone"
  "bench_kernels benchmarks/bench_kernels"
)
# $ORIGIN is for the dynamic loader; \$ keeps it from make, the single quotes from this shell.
# shellcheck disable=SC2016
cmake -S "$ROOT" -B "$BUILD" -DGPULAUNCH_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="80;90" -DCMAKE_SKIP_BUILD_RPATH=ON \
  '-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath,\$ORIGIN/../lib -Wl,--disable-new-dtags' >/dev/null
targets=()
for p in "${PROGS[@]}"; do targets+=("${p%% *}"); done
cmake --build "$BUILD" -j "${GPL_JOBS:-$(nproc)}" --target "${targets[@]}"

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
for p in "${PROGS[@]}"; do
  install -m 0755 "$BUILD/${p#* }" "$OUT/bin/"
  strip --strip-debug "$OUT/bin/${p%% *}"
done

# Libraries the GPU machine has itself (its own driver, its own NCCL), or that any Linux system
# with a C++ runtime has and must not be replaced by older copies: not shipped.
# shellcheck source=tests/bundle/system_libs.sh
. "$ROOT/tests/bundle/system_libs.sh"
NOT_SHIPPED=("${BUNDLE_SYSTEM_LIBS[@]}" "${BUNDLE_RUNTIME_LIBS[@]}")
SYSTEM_RE=$(bundle_lib_re "${NOT_SHIPPED[@]}")
# The ldd closure of every program (ldd follows dependencies of dependencies).
for f in "$OUT"/bin/*; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  if [[ $name =~ $SYSTEM_RE ]]; then continue; fi
  cp -L "$path" "$OUT/lib/$name"
  chmod 0644 "$OUT/lib/$name"
done
strip --strip-unneeded "$OUT"/lib/*.so* 2>/dev/null || true
# A library with a DT_RUNPATH of its own (Debian's libmpi: its openmpi folder) does not use the
# program's RPATH for its own dependencies: point every bundled library at its own folder.
for l in "$OUT"/lib/*; do
  # shellcheck disable=SC2016
  patchelf --force-rpath --set-rpath '$ORIGIN' "$l"
done

{
  echo "gpulaunch GPU bundle"
  echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with local changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"'), $(nvcc --version | tail -1)"
  echo "cuda architectures: sm_80, sm_90"
  list=$(printf '%s, ' "${NOT_SHIPPED[@]}")
  echo "not shipped (the GPU machine's own): ${list%, }"
  echo "files:"
  (cd "$OUT" && find bin lib -type f -printf '  %p %s\n' | sort)
} >"$OUT/MANIFEST"
size=$(du -sb "$OUT" | cut -f1)
echo "gpu-bundle: $OUT: $(find "$OUT/bin" -type f | wc -l) programs, $(find "$OUT/lib" -type f | wc -l) libraries, $((size / 1024 / 1024)) MiB"
exec bash "$ROOT/tests/bundle/check_bundle.sh" "$OUT"
