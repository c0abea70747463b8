#!/usr/bin/env bash
# libgpulaunch as a program outside the tree sees it: `cmake --install` into a scratch prefix puts
# the shared library, the public headers and nothing else, a pkg-config file and a CMake package
# there; the library exports the public API and no internals; a copy of examples/ builds against
# the install with pkg-config and with find_package(gpulaunch), runs alone and under mpirun, and
# the version macros, pkg-config, the CMake package and the library agree.
#   test_install.sh BUILD_DIR   (GPULAUNCH, MPIEXEC, GPULAUNCH_SOURCE_DIR from CTest;
#                                GPL_SANITIZE_FLAGS: the build's -fsanitize flags, if any)
# shellcheck disable=SC1091 # tests/lib.sh, found at run time
. "$GPULAUNCH_SOURCE_DIR/tests/lib.sh"
BUILD=${1:?usage: test_install.sh BUILD_DIR}
SRC=$GPULAUNCH_SOURCE_DIR
P="$T/prefix"
SAN=${GPL_SANITIZE_FLAGS:-}
CC=${CC:-cc}

# 1. Install into the prefix: what lands there.
cmake --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "cmake --install"; }
headers=$(cd "$P/include" && find . -type f | sort | tr '\n' ' ')
assert_eq "$headers" "./gpulaunch/comm.h ./gpulaunch/error.h ./gpulaunch/gpulaunch.h ./gpulaunch/types.h ./gpulaunch/version.h " \
  "installed headers: the public ones only"
so=$(find "$P" -name 'libgpulaunch.so' | head -n 1)
[ -n "$so" ] || fail "no libgpulaunch.so under $P"
LIBDIR=$(dirname "$so")
[ -f "$LIBDIR/pkgconfig/gpulaunch.pc" ] || fail "no gpulaunch.pc in $LIBDIR/pkgconfig"
for f in gpulaunchConfig.cmake gpulaunchConfigVersion.cmake gpulaunchTargets.cmake; do
  [ -f "$LIBDIR/cmake/gpulaunch/$f" ] || fail "no $f in $LIBDIR/cmake/gpulaunch"
done
if find "$P" -name '*.a' | grep -q .; then fail "static libraries installed: $(find "$P" -name '*.a')"; fi
soname=$(objdump -p "$LIBDIR/libgpulaunch.so" | awk '$1 == "SONAME" { print $2 }')
[[ "$soname" == libgpulaunch.so.* ]] || fail "soname '$soname'"
[ -e "$LIBDIR/$soname" ] || fail "$soname is not installed next to libgpulaunch.so"
pass "installed: library ($soname), 5 public headers, gpulaunch.pc, CMake package"

# 2. The library exports the API and nothing else: every function the headers declare, only gpl_*.
nm -D --defined-only "$LIBDIR/libgpulaunch.so" | awk '$2 == "T" { print $3 }' | sort -u >"$T/exported"
grep -hoE '\bgpl_[a-z0-9_]+\(' "$P"/include/gpulaunch/*.h | tr -d '(' | sort -u >"$T/declared"
other=$({ grep -v '^gpl_' "$T/exported" || true; } | head -n 5 | tr '\n' ' ')
[ -z "$other" ] || fail "internal symbols exported: $other"
missing=$(comm -23 "$T/declared" "$T/exported" | tr '\n' ' ')
[ -z "$missing" ] || fail "declared in the headers but not exported: $missing"
extra=$(comm -13 "$T/declared" "$T/exported" | tr '\n' ' ')
[ -z "$extra" ] || fail "exported but not declared in the installed headers: $extra"
pass "exports: the $(wc -l <"$T/declared") functions of the public headers, nothing internal"

# 3. examples/ outside the tree, built with pkg-config.
mkdir -p "$T/src"
cp -r "$SRC/examples/." "$T/src/"
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
assert_eq "$(pkg-config --modversion gpulaunch)" "$(awk -F'"' '/define GPULAUNCH_VERSION_STRING/ { print $2 }' "$P/include/gpulaunch/version.h")" \
  "pkg-config --modversion = GPULAUNCH_VERSION_STRING"
# shellcheck disable=SC2046,SC2086 # pkg-config's words and the sanitizer flags are separate words
$CC -std=c11 -Wall -Werror $SAN $(pkg-config --cflags gpulaunch) "$T/src/allreduce_example.c" \
  $(pkg-config --libs gpulaunch) -lm -o "$T/ex_pc" 2>"$T/cc.err" || { cat "$T/cc.err"; fail "pkg-config build"; }
cat >"$T/version.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <gpulaunch/gpulaunch.h>
int main(void) {
  printf("%d.%d.%d %s %s %x\n", GPULAUNCH_VERSION_MAJOR, GPULAUNCH_VERSION_MINOR, GPULAUNCH_VERSION_PATCH,
         GPULAUNCH_VERSION_STRING, gpl_version_string(), gpl_version());
  return gpl_version() == GPULAUNCH_VERSION_HEX && strcmp(gpl_version_string(), GPULAUNCH_VERSION_STRING) == 0 ? 0 : 1;
}
C
# shellcheck disable=SC2046,SC2086
$CC -std=c11 -Wall -Werror $SAN $(pkg-config --cflags gpulaunch) "$T/version.c" $(pkg-config --libs gpulaunch) \
  -o "$T/version" 2>"$T/cc.err" || { cat "$T/cc.err"; fail "version program build"; }
run_one env LD_LIBRARY_PATH="$LIBDIR" "$T/version"
assert_eq "$RC" 0 "the library's version = the headers' version ($(cat "$T/out"))"
v=$(pkg-config --modversion gpulaunch)
assert_grep "$T/out" "^$v $v $v " "version macros, string and gpl_version_string()"
pass "pkg-config: examples/ and a version check built outside the tree; versions agree ($v)"

# 4. The same examples/ with CMake's find_package (the imported target gpulaunch::gpulaunch).
cmake -S "$T/src" -B "$T/build" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="$SAN" >"$T/cmake.log" 2>&1 || { cat "$T/cmake.log"; fail "cmake configure"; }
cmake --build "$T/build" >"$T/build.log" 2>&1 || { cat "$T/build.log"; fail "cmake build"; }
EX_CM="$T/build/allreduce_example"
[ -x "$EX_CM" ] || fail "find_package build made no allreduce_example"
# (grep reads all of ldd's output: -q would stop at the match, and under pipefail ldd's SIGPIPE
# failed the check at times)
ldd "$EX_CM" | grep "libgpulaunch.so.* => $LIBDIR/" >/dev/null || fail "the CMake build does not load the installed library: $(ldd "$EX_CM" | grep gpulaunch)"
# A version the package does not provide is refused.
mkdir -p "$T/badver"
printf 'cmake_minimum_required(VERSION 3.22)\nproject(v C)\nfind_package(gpulaunch 99.0 REQUIRED)\n' >"$T/badver/CMakeLists.txt"
if cmake -S "$T/badver" -B "$T/badver/b" -DCMAKE_PREFIX_PATH="$P" >"$T/badver.log" 2>&1; then
  fail "find_package(gpulaunch 99.0) succeeded"
fi
grep -q "gpulaunchConfigVersion.cmake\|version: $v" "$T/badver.log" || fail "no version message: $(tail -n 5 "$T/badver.log")"
pass "find_package(gpulaunch): examples/ built and linked to the installed library; 99.0 refused"

# 5. Both builds run: alone (a job of one) and under mpirun with 2 ranks.
for ex in "$T/ex_pc" "$EX_CM"; do
  run_one env LD_LIBRARY_PATH="$LIBDIR" "$ex"
  assert_eq "$RC" 0 "${ex##*/} alone: exit status"
  assert_grep "$T/out" '^allreduce_example: 1 ranks, backend cpu' "${ex##*/} alone: one rank"
  assert_grep "$T/out" '^  ok$' "${ex##*/} alone: result"
  run_mpi 2 -x LD_LIBRARY_PATH="$LIBDIR" "$ex"
  assert_eq "$RC" 0 "${ex##*/} under mpirun: exit status"
  assert_grep "$T/out" '^allreduce_example: 2 ranks, backend cpu, wire bf16, overflow 0' "${ex##*/}: 2 ranks"
  assert_grep "$T/out" '^  grad1\[999\] = 1[45][0-9][0-9] \(expected 1500\)' "${ex##*/}: the average"
  assert_grep "$T/out" '^  ok$' "${ex##*/} under mpirun: result"
done
pass "the installed-library builds average over 2 ranks under mpirun and run alone"
echo "all $TESTS_RUN install tests passed"
