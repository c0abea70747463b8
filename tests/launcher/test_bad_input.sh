#!/usr/bin/env bash
# Issue 14: every input is a regular file read with a cap, in bounded time and memory, and the
# small config holes are errors: /dev/zero as --topology, a FIFO as config/XML/replay,
# /dev/urandom and a large binary file as config, a 40k-key [env], grace = 1e20s, a NUL in a
# value, a second [section], a long [env] name, [bench] values only bench checked, --summary and
# --metrics into a missing folder.
source "$(dirname "$0")/../lib.sh"
PROG="$1"
# Every run here is bounded: 20 s and 2 GiB of address space (what /dev/zero read whole would
# blow through in a second). Under AddressSanitizer (scripts/test.sh --sanitize), which reserves
# terabytes of address space for its shadow, the time bound alone.
vlimit=2097152
if ldd "$GPULAUNCH" 2>/dev/null | grep libasan >/dev/null; then vlimit=unlimited; fi
bounded() {
  set +e
  (ulimit -v "$vlimit"; timeout 20 "$@") >"$T/out" 2>"$T/err"
  RC=$?
  set -e
  [[ $RC -ne 124 ]] || fail "'$*' did not end within 20 s"
}

t0=$(now)
bounded "$GPULAUNCH" topo --topology /dev/zero
assert_eq "$RC" 66 "topo --topology /dev/zero: topology error"
assert_grep "$T/err" "/dev/zero is a character device, not a regular file" "/dev/zero named"
assert_le "$(elapsed "$t0")" 5 "seconds for /dev/zero"
mkfifo "$T/fifo"
bounded "$GPULAUNCH" topo --topology "$T/fifo"
assert_eq "$RC" 66 "a FIFO as topology"
assert_grep "$T/err" "fifo is a FIFO, not a regular file" "the FIFO named"
bounded "$GPULAUNCH" check "$T/fifo"
assert_eq "$RC" 65 "a FIFO as config"
assert_grep "$T/err" "cannot open the config file: is a FIFO, not a regular file" "the FIFO config named"
printf '[job]\ncommand = %s sleep 0\n[monitor]\nreplay = %s\n' "$PROG" "$T/fifo" >"$T/replay.conf"
bounded "$GPULAUNCH" check "$T/replay.conf"
assert_eq "$RC" 65 "a FIFO as replay file"
assert_grep "$T/err" "replay.conf:4: \[monitor\] replay: '$T/fifo' is not a regular file" "the FIFO replay named with file:line"
printf '[job]\ncommand = %s sleep 0\n[topology]\nxml = /dev/zero\n' "$PROG" >"$T/xml.conf"
bounded "$GPULAUNCH" check "$T/xml.conf"
assert_eq "$RC" 65 "/dev/zero as [topology] xml"
pass "/dev/zero and FIFOs as topology, config, replay: refused at once, named"

t0=$(now)
bounded "$GPULAUNCH" check /dev/urandom
assert_eq "$RC" 65 "/dev/urandom as config"
assert_grep "$T/err" "character device, not a regular file" "/dev/urandom named"
head -c $((10 << 20)) /dev/urandom >"$T/big.bin"
bounded "$GPULAUNCH" check "$T/big.bin"
assert_eq "$RC" 65 "a 10 MiB file as config"
assert_grep "$T/err" "is 10485760 bytes, more than the 4194304 this input may have" "the size cap named"
head -c $((3 << 20)) /dev/urandom >"$T/mid.bin"
bounded "$GPULAUNCH" check "$T/mid.bin"
assert_eq "$RC" 65 "3 MiB of random bytes as config"
assert_grep "$T/err" "and [0-9]+ more errors" "errors counted past the first 20"
(($(wc -l <"$T/err") <= 25)) || fail "$(wc -l <"$T/err") lines of errors for a binary file"
assert_le "$(elapsed "$t0")" 10 "seconds for the three"
pass "/dev/urandom and large binary files as config: refused in bounded time, 20 errors and a count"

{
  printf '[job]\ncommand = %s env\n[env]\n' "$PROG"
  for ((i = 0; i < 40000; i++)); do printf 'K%05d = v%d\n' "$i" "$i"; done
} >"$T/env40k.conf"
t0=$(now)
bounded "$GPULAUNCH" check "$T/env40k.conf"
assert_eq "$RC" 0 "check of a 40k-key [env]"
assert_le "$(elapsed "$t0")" 3 "seconds for check of a 40k-key [env]"
t0=$(now)
run_mpi 2 "$GPULAUNCH" "$T/env40k.conf"
assert_eq "$RC" 0 "a 2-rank run with a 40k-key [env]"
assert_le "$(elapsed "$t0")" 15 "seconds for a 2-rank run with a 40k-key [env]"
assert_eq "$(grep -c '^\[[^]]*:1\] ENV K[0-9]*=' "$T/out")" 40000 "rank 1's program got all 40000 keys"
assert_grep "$T/out" "^\[[^]]*:0\] ENV K39999=v39999\$" "the last key"
pass "a 40k-key [env]: checked and run (2 ranks in $(elapsed "$t0") s), every key reaches the program"

conf() { cat >"$T/$1"; }
conf grace.conf <<CONF
[job]
command = $PROG sleep 0
grace = 1e20s
CONF
run_one "$GPULAUNCH" check "$T/grace.conf"
assert_eq "$RC" 65 "grace = 1e20s"
assert_grep "$T/err" "grace.conf:3: \[job\] grace: '1e20s' is out of range \(at most 2592000 s" "the range named"
printf '[job]\ncommand = %s sleep 0\nworkdir = /tmp\0/etc\n' "$PROG" >"$T/nul.conf"
run_one "$GPULAUNCH" check "$T/nul.conf"
assert_eq "$RC" 65 "a NUL byte in a value"
assert_grep "$T/err" "nul.conf:3: a NUL byte in the line" "the NUL named with file:line"
conf dup.conf <<CONF
[job]
command = $PROG sleep 0
[env]
A = 1
[job]
restarts = 1
CONF
run_one "$GPULAUNCH" check "$T/dup.conf"
assert_eq "$RC" 65 "a second [job]"
assert_grep "$T/err" "dup.conf:5: \[job\] appears a second time \(first at line 1\)" "the duplicate section named"
long=$(printf 'L%.0s' {1..190})
printf '[job]\ncommand = %s env\n[env]\n%s = whole\n' "$PROG" "$long" >"$T/long.conf"
run_mpi 1 "$GPULAUNCH" "$T/long.conf"
assert_eq "$RC" 0 "a 190-character [env] name"
assert_grep "$T/out" "ENV $long=whole\$" "the 190-character name reaches the program whole"
pass "1e20s, a NUL byte, a second [job]: config errors with file:line; a 190-character name kept"

conf bench.conf <<CONF
[bench]
op = allreduce,allfoo
CONF
run_one "$GPULAUNCH" check "$T/bench.conf"
assert_eq "$RC" 65 "check of a bad [bench] op"
assert_grep "$T/err" "op 'allreduce,allfoo' \($T/bench.conf:2\)" "the bad op named with file:line"
printf '[bench]\nmin_busbw = fast\n' >"$T/bench2.conf"
run_one "$GPULAUNCH" check "$T/bench2.conf"
assert_eq "$RC" 65 "check of a bad [bench] min_busbw"
printf '[accept]\nmin_busbw = lots\n' >"$T/acc.conf"
run_one "$GPULAUNCH" check "$T/acc.conf"
assert_eq "$RC" 65 "check of a bad [accept] min_busbw"
pass "check refuses the [bench] and [accept] values those modes refuse"

run_one "$GPULAUNCH" --summary "$T/no/such/folder/s.json" -- "$PROG" sleep 0
assert_eq "$RC" 64 "--summary into a missing folder"
assert_grep "$T/err" "--summary: cannot write there: .*the folder $T/no/such/folder does not exist" "the folder named"
run_one "$GPULAUNCH" --metrics "$T/no/m.jsonl" -- "$PROG" sleep 0
assert_eq "$RC" 64 "--metrics into a missing folder"
assert_grep "$T/err" "metrics.*the folder $T/no does not exist" "the metrics folder named"
pass "--summary and --metrics into a missing folder: exit 64 before anything runs"

# Issue 19: numbers are decimal (no hex, hex floats, inf, nan), and a bad number from the
# command line is a usage error (64) in every mode.
for v in 0x10s 0x1p3 inf nan; do
  printf '[job]\ncommand = %s sleep 0\ngrace = %s\n' "$PROG" "$v" >"$T/num.conf"
  run_one "$GPULAUNCH" check "$T/num.conf"
  assert_eq "$RC" 65 "grace = $v"
  assert_grep "$T/err" "num.conf:3: \[job\] grace: '$v' is not a duration" "grace = $v named with file:line"
done
printf '[bench]\nminbytes = 0x10\n' >"$T/num.conf"
run_one "$GPULAUNCH" check "$T/num.conf"
assert_eq "$RC" 65 "[bench] minbytes = 0x10"
for m in accept bench; do
  for v in abc 0x10 inf -1; do
    run_one "$GPULAUNCH" "$m" --min-busbw "$v"
    assert_eq "$RC" 64 "$m --min-busbw $v: a usage error"
  done
done
run_one "$GPULAUNCH" bench -b 0x10
assert_eq "$RC" 64 "bench -b 0x10"
pass "numbers are decimal; a bad --min-busbw is 64 in accept and bench"

printf '[job]\ncommand = %s sleep 0\n[env] x\n' "$PROG" >"$T/hdr.conf"
run_one "$GPULAUNCH" check "$T/hdr.conf"
assert_eq "$RC" 65 "[env] x"
assert_grep "$T/err" "hdr.conf:3: junk after the section header: 'x" "junk after a header named with file:line"
printf '[job]\ncommand = %s sleep 0\n[env]]\n' "$PROG" >"$T/hdr.conf"
run_one "$GPULAUNCH" check "$T/hdr.conf"
assert_eq "$RC" 65 "[env]]"
printf '[job] # the job\ncommand = %s sleep 0\n' "$PROG" >"$T/hdr.conf"
run_one "$GPULAUNCH" check "$T/hdr.conf"
assert_eq "$RC" 0 "a comment after a header"
printf '[job]\ncommand = %s sleep 0\n[env] HF_TOKEN=S3KRTz\n' "$PROG" >"$T/hdr.conf"
run_one "$GPULAUNCH" check "$T/hdr.conf"
assert_eq "$RC" 65 "[env] HF_TOKEN=..."
assert_nogrep "$T/err" "S3KRT" "the junk after a header is quoted redacted"
pass "junk after a section header is an error naming file:line"

# Issue 19: a zero sampling interval, empty output paths and an audit log that cannot be written
# are errors before anything runs (the audit log fails closed: no job without it; check says so).
printf '[job]\ncommand = %s sleep 0\n[monitor]\ninterval = 0s\n' "$PROG" >"$T/iv.conf"
bounded "$GPULAUNCH" check "$T/iv.conf"
assert_eq "$RC" 65 "[monitor] interval = 0s"
assert_grep "$T/err" "iv.conf:4: \[monitor\] interval: '0s' is below the minimum" "interval 0 named with file:line"
for key in "audit log" "monitor metrics" "monitor prom"; do
  set -- $key
  printf '[job]\ncommand = %s sleep 0\n[%s]\n%s =\n' "$PROG" "$1" "$2" >"$T/empty.conf"
  bounded "$GPULAUNCH" check "$T/empty.conf"
  assert_eq "$RC" 65 "empty [$1] $2"
  assert_grep "$T/err" "empty.conf:4: \[$1\] $2: empty value" "empty [$1] $2 named with file:line"
done
for opt in --metrics --prom; do
  bounded "$GPULAUNCH" "$opt" "" -- "$PROG" sleep 0
  assert_eq "$RC" 64 "empty $opt path"
  assert_grep "$T/err" "$opt: empty value" "empty $opt named"
done
printf '[job]\ncommand = %s touch %s\n[audit]\nlog = %s\n' "$PROG" "$T/ran" "$T/no-such-dir/audit.log" >"$T/audit.conf"
bounded "$GPULAUNCH" check "$T/audit.conf"
assert_eq "$RC" 65 "check with an audit log that cannot be written"
assert_grep "$T/err" "audit.conf:4: \[audit\] log cannot be written .*no-such-dir" "check names the audit log"
run_mpi 2 "$GPULAUNCH" "$T/audit.conf"
assert_eq "$RC" 65 "a job with an audit log that cannot be written"
[[ ! -e $T/ran ]] || fail "the program ran without its audit log"
pass "interval 0s, empty [audit] log / metrics / prom and --metrics/--prom '', audit log unwritable: errors, no job"

# A topology XML whose PCI bus ids are garbage (hwloc drops those objects: "0 GPUs" without a
# word) or that has no PU objects is a topology error naming the file and what is wrong.
XML=$(ls "$(dirname "$0")"/../data/topologies/*.xml | head -1)
sed -E 's/pci_busid="[^"]*"/pci_busid="zz:qq:xx.y"/' "$XML" >"$T/badbus.xml"
bounded "$GPULAUNCH" topo --topology "$T/badbus.xml"
assert_eq "$RC" 66 "garbage PCI bus ids"
assert_grep "$T/err" "badbus.xml: [0-9]+ of [0-9]+ PCI objects have a bus id that is not .*zz:qq:xx.y\" at line [0-9]+" "the bad bus id named"
python3 - "$XML" "$T/nopu.xml" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s = re.sub(r'<object type="PU"[^>]*/>', '', s)
s = re.sub(r'<object type="PU"[^>]*>.*?</object>', '', s, flags=re.S)
open(sys.argv[2], 'w').write(s)
PY
bounded "$GPULAUNCH" topo --topology "$T/nopu.xml"
assert_eq "$RC" 66 "a topology without PU objects"
assert_grep "$T/err" "nopu.xml: no PU \(processing unit\) object" "no PU named"
pass "topology XML with garbage PCI bus ids or no PU: error 66 naming the file, not 0 GPUs"
echo "$TESTS_RUN checks passed"
