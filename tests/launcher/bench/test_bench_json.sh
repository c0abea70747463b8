#!/usr/bin/env bash
# --json in nccl-tests' -J shape (validated and round-tripped by cJSON in bench_json_check), its
# rows equal to the table's; --csv; --label; several ops in one run; the job summary's "bench".
# shellcheck source=tests/launcher/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
: "${BENCH_JSON_CHECK:?}"

run_mpi 4 "$GPULAUNCH" --summary "$T/summary.json" bench --op allreduce,allgather -b 64K -e 1M -f 4 \
  -n 3 -w 1 --json "$T/r.json" --csv "$T/r.csv" --label "cpu 4 ranks"
assert_eq "$RC" 0 "exit status"
"$BENCH_JSON_CHECK" "$T/r.json" >"$T/check" 2>"$T/err" || fail "JSON check: $(cat "$T/err")"
pass "JSON has nccl-tests' -J fields and round-trips"
assert_eq "$(grep -c '^row ' "$T/check")" 6 "two ops x three sizes in the results"
# the same rows as the table: size, count, type, redop, root, busbw (rounded as the table), #wrong
table=$(rows "$T/out" | awk '{ print $1, $2, $3, $4, $5, $8, $9, $12, $13 }')
json=$(awk '/^row / { printf "%s %s %s %s %s", $2, $3, $4, $5, $6
  b1 = $9; w1 = $10; b2 = $13; w2 = $14
  printf " %s %s %s %s\n", b1, w1, b2, w2 }' "$T/check")
paste <(echo "$table") <(echo "$json") | awk -F'\t' '{
  split($1, t, " "); split($2, j, " ")
  for (i = 1; i <= 5; i++) if (t[i] != j[i]) { print "field " i ": table " t[i] " json " j[i]; bad = 1 }
  for (i = 6; i <= 8; i += 2) { d = t[i] - j[i]; if (d < 0) d = -d; if (d > 0.006 + 0.006 * j[i]) { print "busbw: table " t[i] " json " j[i]; bad = 1 } }
  if (t[7] != j[7] || t[9] != j[9]) { print "#wrong differs"; bad = 1 }
} END { exit bad }' || fail "JSON rows differ from the table"
pass "JSON rows match the table (sizes, counts, busbw, #wrong)"
assert_grep "$T/check" '^label cpu 4 ranks$' "label"
assert_grep "$T/check" '^ranks 4$' "placement of 4 ranks"
assert_grep "$T/check" '^exit 0$' "exit code in the JSON"
assert_grep "$T/check" '^row [0-9]+ [0-9]+ float none -1 ' "allgather rows: redop none"
pass "label, placement, exit code"
assert_eq "$(wc -l <"$T/r.csv")" 7 "CSV: header and 6 rows"
assert_grep "$T/r.csv" '^op,size,count,type,redop,root,oop_time_us,' "CSV header"
assert_grep "$T/r.csv" '^allgather,1048576,65536,float,none,-1,[0-9.]+,[0-9.]+,[0-9.]+,0,' "CSV allgather row"
pass "CSV"
grep -q '"bench"' "$T/summary.json" || fail "the job summary has no bench object"
grep -q '"results"' "$T/summary.json" || fail "the job summary's bench has no results"
pass "summary has the bench results"
echo "all $TESTS_RUN passed"
