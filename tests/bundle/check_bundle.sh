#!/usr/bin/env bash
# Is a GPU bundle (scripts/gpu-bundle.sh) complete? With a clean environment (no LD_LIBRARY_PATH),
# every program's and every bundled library's dependencies must resolve into the bundle's lib/,
# except the libraries a GPU machine has itself (glibc, libstdc++, libgcc_s, libcuda, libnvidia-ml:
# BUNDLE_SYSTEM_LIBS in system_libs.sh; NCCL is loaded at run time, so no program may link it);
# nothing may be "not found"; the programs carry RPATH $ORIGIN/../lib (DT_RPATH, which also
# serves their libraries' own dependencies); the bundle is under 64 MiB (the GPU machine's
# working-tree limit); every shipped library is loaded by some program; and gpulaunch from the bundle runs a job of one in that clean environment.
# usage: check_bundle.sh BUNDLE_DIR
set -euo pipefail
B=$(cd "${1:?usage: check_bundle.sh BUNDLE_DIR}" && pwd)
# shellcheck source=tests/bundle/system_libs.sh
. "$(dirname "${BASH_SOURCE[0]}")/system_libs.sh"
SYSTEM_RE=$(bundle_lib_re "${BUNDLE_SYSTEM_LIBS[@]}")
bad=0
err() { echo "FAIL: $*"; bad=1; }
clean() { env -i PATH=/usr/bin:/bin HOME="${HOME:-/tmp}" "$@"; }

[[ -x $B/bin/gpulaunch && -x $B/bin/gpulaunch-exec ]] || err "no bin/gpulaunch or bin/gpulaunch-exec in $B"
# ldd of a program lists its whole closure, resolved as the loader would: the program's DT_RPATH
# also serves its libraries' dependencies, and each bundled library has RPATH $ORIGIN itself.
used="$(mktemp)"
trap 'rm -f "$used"' EXIT
for f in "$B"/bin/*; do
  [[ -f $f ]] || continue
  if command -v readelf >/dev/null; then # (binutils: a GPU machine may lack it; ldd below decides)
    rp=$(readelf -d "$f" | sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p')
    # shellcheck disable=SC2016
    [[ $rp == *'$ORIGIN/../lib'* ]] || err "${f#"$B"/}: RPATH is '${rp:-none}', not \$ORIGIN/../lib"
  fi
  while read -r line; do
    name=$(awk '{print $1}' <<<"$line")
    if [[ $line == *"not found"* ]]; then
      err "${f#"$B"/}: $name not found"
    elif [[ $line == *"=>"* ]]; then
      path=$(realpath -m "$(awk '{print $3}' <<<"$line")")
      if [[ $name =~ $SYSTEM_RE ]]; then
        [[ $path != "$B"/* ]] || err "${f#"$B"/}: $name is the machine's own, but the bundle ships it"
      elif [[ $path != "$B"/lib/* ]]; then
        err "${f#"$B"/}: $name resolves to $path, outside the bundle"
      else
        echo "${path##*/}" >>"$used"
      fi
    fi
  done < <(clean ldd "$f" 2>&1)
done
nlibs=0
for l in "$B"/lib/*; do
  [[ -f $l ]] || continue
  nlibs=$((nlibs + 1))
  grep -qxF "${l##*/}" "$used" || err "lib/${l##*/} is shipped but no program loads it"
done
size=$(du -sb "$B" | cut -f1)
((size < 64 * 1024 * 1024)) || err "the bundle is $((size / 1048576)) MiB, over 64 MiB"
[[ ! -e $B/lib/libnccl.so.2 ]] || err "libnccl.so.2 is shipped (the GPU machine's own must be used)"

# It runs: a job of one, no MPI, no LD_LIBRARY_PATH, from the bundle's own folder.
out=$(clean "$B/bin/gpulaunch" --version 2>&1) || err "bin/gpulaunch --version: $out"
# shellcheck disable=SC2016
out=$(clean "$B/bin/gpulaunch" -- /bin/sh -c 'echo "bundle ok rank=$RANK size=$WORLD_SIZE"' 2>&1) ||
  err "bin/gpulaunch -- sh: status $?: $out"
grep -q "bundle ok rank=0 size=1" <<<"$out" || err "bin/gpulaunch -- sh printed: $out"
if ((bad)); then
  exit 1
fi
echo "ok: $B is complete: $(find "$B/bin" -type f | wc -l) programs, $nlibs libraries, $((size / 1048576)) MiB, every dependency resolves with a clean environment"
