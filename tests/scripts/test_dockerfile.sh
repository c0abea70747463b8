#!/bin/bash
# scripts/container/Dockerfile cannot be built here (no Docker engine); check what can be:
# every COPY source exists in the build context (the repository root), every folder the root
# CMakeLists.txt adds is copied, every -D option is one the project declares, every pkg-config
# module the build looks for has its package installed, install-deps.sh's build libraries are
# installed, the image is an nvidia/cuda devel image, and the entrypoint is the installed binary.
#   test_dockerfile.sh SOURCE_DIR
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
src=${1:?source dir}
df=$src/scripts/container/Dockerfile
[[ -f $df ]] || fail "no $df"

# Instructions with continuation lines joined, comments dropped.
joined=$(sed -e '/^[[:space:]]*#/d' "$df" | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta')

from=$(grep -m1 -E '^ARG CUDA_IMAGE=' <<<"$joined" | cut -d= -f2-)
grep -qE '^FROM \$\{CUDA_IMAGE\}' <<<"$joined" || fail "FROM must use the CUDA_IMAGE argument"
[[ $from =~ ^nvidia/cuda:[0-9]+\.[0-9]+(\.[0-9]+)?-devel-ubuntu[0-9.]+$ ]] ||
  fail "base image '$from' is not an nvidia/cuda devel image"

# COPY sources exist; remember what is copied.
copied=()
while read -r _ args; do
  [[ $args == --from=* ]] && continue
  read -r -a words <<<"$args"
  for ((i = 0; i < ${#words[@]} - 1; i++)); do
    s=${words[i]%/}
    [[ -e $src/$s ]] || fail "COPY source $s does not exist in the build context"
    copied+=("$s")
  done
done < <(grep -E '^COPY ' <<<"$joined")
is_copied() {
  local d
  for d in "${copied[@]}"; do [[ $1 == "$d" || $1 == "$d"/* ]] && return 0; done
  return 1
}

# The cmake line, and what it turns off.
cmake_line=$(grep -oE 'cmake -S [^&]*' <<<"$joined" | head -1)
[[ -n $cmake_line ]] || fail "no cmake configure step"
tests_off=0
[[ $cmake_line == *"-DGPULAUNCH_TESTS=OFF"* ]] && tests_off=1
[[ $cmake_line == *"-DGPULAUNCH_CUDA=ON"* ]] || fail "the image must build with CUDA on"

# Every folder the build adds is copied (tests/ only when tests are on).
while read -r d; do
  [[ $d == tests && $tests_off == 1 ]] && continue
  is_copied "$d" || fail "root CMakeLists.txt adds $d/ but the Dockerfile does not copy it"
done < <(sed -n 's/^[[:space:]]*add_subdirectory(\([A-Za-z0-9_]*\)).*/\1/p' "$src/CMakeLists.txt")
# Files the CMake code includes by path are copied too.
while read -r inc; do
  is_copied "$inc" || fail "CMake includes $inc but the Dockerfile does not copy it"
done < <(grep -rhoE 'include\(\$\{(CMAKE_CURRENT_SOURCE_DIR|PROJECT_SOURCE_DIR)\}/[^ )]+' \
           --include=CMakeLists.txt "$src/CMakeLists.txt" "$src/launcher" |
         sed -E 's/.*\}\///' | while read -r p; do
           # CMAKE_CURRENT_SOURCE_DIR is launcher/ for launcher's CMakeLists
           [[ -e $src/$p ]] && echo "$p" || echo "launcher/$p"
         done)

# -D options are declared by the project (or are CMake's own).
while read -r d; do
  case $d in CMAKE_*) continue ;; esac
  grep -rqE "(option\($d |set\($d .*CACHE)" --include=CMakeLists.txt --include='*.cmake' "$src" ||
    fail "cmake option $d is not declared by the project"
done < <(grep -oE -- '-D[A-Z_0-9]+=' <<<"$cmake_line" | sed 's/^-D//; s/=$//')

# Packages installed in the image.
pkgs=" $(grep -E 'apt-get install' <<<"$joined" | sed -E 's/.*apt-get install//; s/&&.*//' | tr -s ' ') "
has() { [[ $pkgs == *" $1 "* ]]; }
grep -q 'rm -rf /var/lib/apt/lists' <<<"$joined" || fail "apt lists are not cleaned (image size)"
grep -q -- '--no-install-recommends' <<<"$joined" || fail "apt-get install without --no-install-recommends"

# pkg-config modules of the build -> the Ubuntu/Debian package that provides them.
declare -A provider=([hwloc]=libhwloc-dev [libuv]=libuv1-dev [inih]=libinih-dev
                     [libcjson]=libcjson-dev [libcrypto]=libssl-dev [cmocka]=libcmocka-dev
                     [libcurl]=libcurl4-openssl-dev [pmix]=libpmix-dev
                     [munge]=libmunge-dev)
while read -r mod; do
  [[ $mod == cmocka && $tests_off == 1 ]] && continue
  [[ -n ${provider[$mod]:-} ]] || fail "pkg-config module $mod: add its package to this test's table"
  has "${provider[$mod]}" || fail "pkg-config module $mod needs ${provider[$mod]} in the image"
done < <(grep -rhoE 'pkg_check_modules\([A-Z_]+ [^)]*\)' --include=CMakeLists.txt --include='*.cmake' "$src" |
         sed -E 's/.* ([a-z][a-z0-9_-]*)(>=[0-9.]+)?\)$/\1/' | sort -u)
has libopenmpi-dev || fail "Open MPI (libopenmpi-dev) missing"

# install-deps.sh's build libraries (the lib*-dev packages of its pkgs list) are in the image;
# its test_pkgs list (cmocka, clang for the fuzzers) is what only the tests need: the image may
# leave those out, so no library the build itself looks for may hide there.
if [[ -f $src/scripts/install-deps.sh ]]; then
  deps=$src/scripts/install-deps.sh
  build_list=$(sed -n '/^pkgs=(/,/^)/p' "$deps")
  test_list=$(sed -n '/^test_pkgs=(/,/^)/p' "$deps")
  [[ -n $build_list ]] || fail "scripts/install-deps.sh has no pkgs=( ... ) list"
  while read -r p; do
    has "$p" || fail "scripts/install-deps.sh installs $p but the image does not"
  done < <(grep -oE '\blib[a-z0-9.+-]+-dev\b' <<<"$build_list" | sort -u)
  for mod in "${!provider[@]}"; do
    [[ $mod == cmocka ]] && continue
    p=${provider[$mod]}
    grep -qw -- "$p" <<<"$test_list" &&
      fail "$p (pkg-config $mod, needed to build) is in install-deps.sh's test-only list"
  done
  # Every package of either list is one of the two lists only.
  while read -r p; do
    grep -qw -- "$p" <<<"$build_list" && fail "$p is in both lists of scripts/install-deps.sh"
  done < <(sed -e '1d;$d' <<<"$test_list" | tr ' ' '\n' | grep -v '^#' | grep -E '^[a-z0-9]')
fi

# The entrypoint is the binary `cmake --install --prefix P` puts in P/bin, in exec form.
ep=$(grep -E '^ENTRYPOINT ' <<<"$joined" | tail -1)
[[ $ep =~ ^ENTRYPOINT\ \[\"([^\"]+)\" ]] || fail "ENTRYPOINT must be in exec form: $ep"
bin=${BASH_REMATCH[1]}
prefix=$(grep -oE 'cmake --install [^ ]+ --prefix [^ ]+' <<<"$joined" | awk '{print $NF}')
[[ $bin == "$prefix/bin/gpulaunch" ]] || fail "ENTRYPOINT $bin is not $prefix/bin/gpulaunch"
grep -qE 'install\(TARGETS gpulaunch' "$src/launcher/CMakeLists.txt" ||
  fail "launcher/CMakeLists.txt does not install gpulaunch: the entrypoint would not exist"
grep -qE '^USER ' <<<"$joined" || fail "the image should not run as root (no USER)"
echo "ok: Dockerfile ($from, ${#copied[@]} COPY sources, entrypoint $bin)"
