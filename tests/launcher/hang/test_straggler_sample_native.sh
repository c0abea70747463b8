#!/usr/bin/env bash
# Issue 29, the straggler by stack samples ([job] straggler = sample, the default) with a native C
# program on the C API: every rank computes in shared_work() and waits in gpl_allreduce; rank 2
# also computes 40 ms per step in slow_transform(). Named (rank, host, slow_transform, the others
# waiting in gpl_allreduce) on stderr while the job runs, at the end and in --summary; the same
# program with no slow rank is never flagged; straggler = off samples nothing.
source "$(dirname "$0")/../../lib.sh"
PROG=${1:?usage: test_straggler_sample_native.sh HANG_PROG}
host=$(hostname -s)
LINE="^gpulaunch: rank 2 \(host $host\) is the straggler: [0-9]+ % of its samples in slow_transform; the other ranks spend [0-9]+ % waiting in gpl_allreduce$"

printf '[job]\ncommand = %s straggle 2 40 500\n' "$PROG" >"$T/a.conf"
run_mpi 3 "$GPULAUNCH" --summary "$T/a.json" "$T/a.conf"
assert_eq "$RC" 0 "exit status"
assert_grep "$T/err" "$LINE" "stderr names rank 2 and slow_transform"
assert_eq "$(grep -cE "$LINE" "$T/err")" 2 "named while it runs and once more at the end"
assert_eq "$(jq -r .straggler.rank "$T/a.json")" 2 "summary: rank"
assert_eq "$(jq -r .straggler.function "$T/a.json")" slow_transform "summary: function"
assert_eq "$(jq -r .straggler.others_waiting_in "$T/a.json")" gpl_allreduce "summary: the others' wait"
assert_le 0.5 "$(jq -r .straggler.function_fraction "$T/a.json")" "summary: its share in slow_transform"
pass "rank 2 named in slow_transform: $(grep -E "$LINE" "$T/err" | tail -1)"

printf '[job]\ncommand = %s straggle -1 0 1000\n' "$PROG" >"$T/b.conf"
for i in 1 2; do
  run_mpi 3 "$GPULAUNCH" --summary "$T/b.json" "$T/b.conf"
  assert_eq "$RC" 0 "exit status (balanced $i)"
  assert_nogrep "$T/err" "is the straggler" "balanced run $i"
  assert_eq "$(jq -r .straggler.flagged "$T/b.json")" false "balanced run $i: summary"
  assert_eq "$(jq -r .straggler.ranks_sampled "$T/b.json")" 3 "balanced run $i: every rank sampled"
done
pass "balanced: never flagged"

printf '[job]\ncommand = %s straggle 2 40 200\nstraggler = off\n' "$PROG" >"$T/c.conf"
run_mpi 3 "$GPULAUNCH" --summary "$T/c.json" "$T/c.conf"
assert_eq "$RC" 0 "exit status (off)"
assert_nogrep "$T/err" "straggler" "straggler = off"
assert_eq "$(jq -r '.straggler // "none"' "$T/c.json")" none "straggler = off: nothing in the summary"
pass "straggler = off: no view"
