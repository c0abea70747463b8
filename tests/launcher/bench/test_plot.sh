#!/usr/bin/env bash
# scripts/plot: bench JSON files (gpulaunch's, and nccl-tests' own -J shape) to SVG and PNG charts
# with one line per run; the SVG is valid XML with exactly that many plot lines; bad inputs are
# refused with the file named.
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../../lib.sh"
: "${GPULAUNCH_SOURCE_DIR:?}"
PLOT="$GPULAUNCH_SOURCE_DIR/scripts/plot"

# Two runs as gpulaunch bench writes them (one with two collectives), one as nccl-tests -J does.
row() { # SIZE BUSBW [OP]
  printf '{"size":%s,"count":%s,"type":"float","redop":"sum","root":-1,' "$1" $(($1 / 4))
  printf '"out_of_place":{"time":100,"alg_bw":1,"bus_bw":%s,"nwrong":0},' "$2"
  printf '"in_place":{"time":90,"alg_bw":1.1,"bus_bw":%s,"nwrong":0}' "$2"
  [[ -n "${3:-}" ]] && printf ',"op":"%s"' "$3"
  printf '}'
}
{ printf '{"version":2,"label":"cluster A","results":['
  row 1048576 2.5 allreduce; printf ','; row 4194304 3.5 allreduce; printf ','
  row 1048576 1.5 allgather; printf ','; row 4194304 2.0 allgather; printf ']}\n'; } >"$T/a.json"
{ printf '{"version":2,"label":null,"results":['
  row 1048576 5 allreduce; printf ','; row 4194304 7 allreduce; printf ','; row 16777216 9 allreduce; printf ']}\n'; } >"$T/cluster-b.json"
{ printf '{"version":2,"nccl_version":22804,"results":['  # nccl-tests: no "op", root as text
  printf '{"size":1048576,"count":262144,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":50.1,"alg_bw":20.9,"bus_bw":31.4,"nwrong":0},"in_place":{"time":49,"alg_bw":21.4,"bus_bw":32.1,"nwrong":0},"actual_iterations":20,"experiment_name":""}'
  printf ']}\n'; } >"$T/nccl.json"

"$PLOT" -o "$T/c.svg" --title 'A vs B "quoted"' "$T/a.json" "$T/cluster-b.json" "$T/nccl.json" >"$T/log"
[[ -s "$T/c.svg" ]] || fail "no SVG written"
xmllint --noout "$T/c.svg" || fail "the SVG is not valid XML"
n=$(grep -o 'id="gnuplot_plot_[0-9]*"' "$T/c.svg" | sort -u | wc -l)
[[ "$n" == 4 ]] || fail "expected 4 plot lines (A: allreduce, A: allgather, cluster-b, nccl), got $n"
for t in "cluster A: allreduce" "cluster A: allgather" "cluster-b" "nccl"; do
  grep -qF "<title>$t</title>" "$T/c.svg" || fail "no line titled '$t' in the SVG"
done
grep -q 'MiB' "$T/c.svg" || fail "size axis without binary units"
grep -q 'plot: wrote .*c.svg (4 lines)' "$T/log" || fail "no summary line"
pass "SVG: valid, 4 lines with legends from labels, file names and ops"

"$PLOT" -o "$T/c.png" "$T/cluster-b.json" >/dev/null
[[ "$(head -c 8 "$T/c.png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "not a PNG"
w=$(od -An -tu1 -j16 -N8 "$T/c.png" | awk '{ print $3 * 256 + $4, $7 * 256 + $8 }')
[[ "$w" == "960 600" ]] || fail "PNG size $w, expected 960 600"
pass "PNG: signature and size"

"$PLOT" -o "$T/i.svg" --inplace "$T/cluster-b.json" >/dev/null || fail "--inplace"
xmllint --noout "$T/i.svg" || fail "--inplace: not valid XML"
pass "--inplace"

# a real run's JSON, when the bench is built
if [[ -n "${GPULAUNCH:-}" && -x "${GPULAUNCH:-}" ]]; then
  "$GPULAUNCH" bench -b 64K -e 256K -f 2 -n 2 -w 1 --json "$T/real.json" >/dev/null 2>"$T/err" ||
    fail "bench failed: $(cat "$T/err")"
  "$PLOT" -o "$T/real.svg" "$T/real.json" "$T/a.json" >/dev/null || fail "plot of a real run"
  [[ $(grep -o 'id="gnuplot_plot_[0-9]*"' "$T/real.svg" | sort -u | wc -l) == 3 ]] || fail "real run: 3 lines expected"
  pass "a real run's JSON plots"
fi

# refusals
set +e
"$PLOT" -o "$T/x.svg" 2>"$T/err"; rc=$?
[[ $rc == 64 ]] || fail "no file: status $rc, expected 64"
echo '{"results": 3}' >"$T/bad.json"
"$PLOT" -o "$T/x.svg" "$T/bad.json" 2>"$T/err"; rc=$?
[[ $rc == 65 ]] || fail "bad JSON: status $rc, expected 65"
grep -q 'bad.json is not a bench JSON file' "$T/err" || fail "bad JSON: message $(cat "$T/err")"
"$PLOT" -o "$T/x.pdf" "$T/a.json" 2>"$T/err"; rc=$?
[[ $rc == 64 ]] || fail "pdf output: status $rc, expected 64"
set -e
pass "refuses no file, a file that is not bench JSON, an unknown format"
