#!/usr/bin/env bash
# tests/needs.sh, the guard every skippable test runs under: a skip passes only where a declared
# need is missing (here: the build's CUDA/NCCL flags, set by hand), a skip on a machine that has
# everything is a failure, a skip without a reason is a failure, other exit codes pass through.
#   test_needs.sh   (GPULAUNCH_SOURCE_DIR from CTest)
# shellcheck disable=SC1091 # tests/lib.sh, found at run time
. "$GPULAUNCH_SOURCE_DIR/tests/lib.sh"
NEEDS="$GPULAUNCH_SOURCE_DIR/tests/needs.sh"
skip_cmd=(sh -c 'echo "SKIP: pretending to lack CUDA"; exit 77')

run_one env GPL_BUILD_CUDA=1 bash "$NEEDS" cuda -- "${skip_cmd[@]}"
assert_eq "$RC" 1 "a skip on a build that has CUDA"
assert_grep "$T/out" "^FAIL: the test skipped, but this machine has everything it declared it needs \(cuda\): SKIP: pretending" \
  "the failure says why"
run_one env GPL_BUILD_CUDA=0 bash "$NEEDS" cuda -- "${skip_cmd[@]}"
assert_eq "$RC" 77 "a skip on a build without CUDA"
assert_grep "$T/out" "^skipped: this machine lacks cuda \(this build has no CUDA\)" "the skip names what is missing"
assert_grep "$T/out" "^SKIP: pretending to lack CUDA" "the test's own output passes through"
run_one env GPL_BUILD_CUDA=1 GPL_BUILD_NCCL=0 bash "$NEEDS" cuda,nccl -- "${skip_cmd[@]}"
assert_eq "$RC" 77 "one of two needs missing"
assert_grep "$T/out" "lacks nccl \(" "the missing one named"
pass "a skip passes only where a declared need is missing"

run_one env GPL_BUILD_CUDA=0 bash "$NEEDS" cuda -- sh -c 'exit 77'
assert_eq "$RC" 1 "a skip without a reason"
assert_grep "$T/out" "skipped \(exit 77\) without a line saying why" "the failure says why"
for code in 0 1 5 124; do
  run_one env GPL_BUILD_CUDA=0 bash "$NEEDS" cuda -- sh -c "echo hello; exit $code"
  assert_eq "$RC" "$code" "exit $code passes through"
  assert_grep "$T/out" "^hello$" "output of exit $code"
done
run_one bash "$NEEDS" nosuchneed -- sh -c 'echo "SKIP: x"; exit 77'
assert_eq "$RC" 2 "an unknown need is an error"
pass "no reason is a failure; other exit codes and the output pass through; unknown needs refused"
