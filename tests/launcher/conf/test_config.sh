#!/usr/bin/env bash
# Broken configs: the error names file:line and the key (with the nearest valid key for a typo),
# the exit status is 65 and nothing is started; `check` prints the effective settings.
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
export GPL_TEST_DIR="$T"

conf() { cat >"$T/$1"; }
check_bad() { # check_bad FILE PATTERN WHAT
  run_mpi 4 "$GPULAUNCH" "$T/$1"
  assert_eq "$RC" 65 "$3: exit status"
  assert_grep "$T/err" "$2" "$3"
  [[ $(grep -cE -- "$2" "$T/err") == 1 ]] || fail "$3: the message must be printed once, not once per rank"
  [[ ! -f "$T/ready.0" ]] || fail "$3: the program must not start"
  run_one "$GPULAUNCH" check "$T/$1"
  assert_eq "$RC" 65 "$3: check exit status"
  assert_grep "$T/err" "$2" "$3 (check)"
}

conf typo.conf <<CONF
[job]
command = $PROG signals 1
restart = 2
CONF
check_bad typo.conf "^gpulaunch: $T/typo.conf:3: \[job\] unknown key 'restart' \(did you mean 'restarts'\?\)\$" "typo"

conf section.conf <<CONF
[job]
command = $PROG signals 1
[topolgy]
bind = cores
CONF
check_bad section.conf "$T/section.conf:3: unknown section \[topolgy\] \(did you mean \[topology\]\?\)" "unknown section"

conf empty.conf <<CONF
[job]
command = $PROG signals 1
[bogus]
CONF
check_bad empty.conf "$T/empty.conf:3: unknown section \[bogus\]" "unknown empty section"

conf number.conf <<CONF
[job]
command = $PROG signals 1
restarts = three
CONF
check_bad number.conf "$T/number.conf:3: \[job\] restarts: 'three' is not a whole number" "bad number"

conf range.conf <<CONF
[job]
command = $PROG signals 1
restarts = -1
CONF
check_bad range.conf "$T/range.conf:3: \[job\] restarts: '-1' is out of range" "out of range"

conf nocmd.conf <<CONF
[job]
restarts = 1
[env]
A = b
CONF
check_bad nocmd.conf "$T/nocmd.conf: \[job\] has neither 'command' nor 'builtin'" "missing command"

conf enum.conf <<CONF
[job]
command = $PROG signals 1
[topology]
bind = core
CONF
check_bad enum.conf "$T/enum.conf:4: \[topology\] bind: 'core' is not one of cores\|numa\|none \(did you mean 'cores'\?\)" "bad choice"

conf quote.conf <<CONF
[job]
command = $PROG "signals 1
CONF
check_bad quote.conf "$T/quote.conf:2: \[job\] command: cannot split the command: unterminated double quote" "bad quoting"

conf dup.conf <<CONF
[job]
command = $PROG signals 1
command = $PROG env
CONF
check_bad dup.conf "$T/dup.conf:3: \[job\] duplicate key 'command' \(first set at line 2\)" "duplicate key"

conf xml.conf <<CONF
[job]
command = $PROG signals 1
[topology]
xml = no-such-topology.xml
CONF
check_bad xml.conf "$T/xml.conf:4: \[topology\] xml: cannot open '$T/no-such-topology.xml'" "missing file"

run_one "$GPULAUNCH" check "$T/does-not-exist.conf"
assert_eq "$RC" 65 "missing config file"
assert_grep "$T/err" "$T/does-not-exist.conf: cannot open the config file" "missing config named"
pass "typo, unknown section, bad number/range/choice/quoting, duplicate, missing command/file: 65 with file:line"

# Spaces inside a section header name the same section (inih keeps them; we must not lose keys).
conf spaced.conf <<CONF
[job]
command = $PROG signals 1
[ topology ]
bind = bogus
CONF
check_bad spaced.conf "$T/spaced.conf:4: \[topology\] bind: 'bogus' is not one of" "a bad value under '[ topology ]'"

conf empty_value.conf <<CONF
[job]
command = $PROG signals 1
restarts =
CONF
check_bad empty_value.conf "$T/empty_value.conf:3: \[job\] restarts: empty value" "an empty number"

conf nccl_typo.conf <<CONF
[job]
command = $PROG signals 1
[nccl]
SOCKET_IFNAM = eth0
CONF
check_bad nccl_typo.conf "$T/nccl_typo.conf:4: \[nccl\] unknown NCCL variable 'SOCKET_IFNAM' \(did you mean 'SOCKET_IFNAME'\?\)" "a typo in [nccl]"

conf workdir.conf <<CONF
[job]
command = $PROG signals 1
workdir = $T/no-such-folder
CONF
run_mpi 2 "$GPULAUNCH" "$T/workdir.conf"
assert_eq "$RC" 65 "a missing workdir: exit status"
assert_grep "$T/err" "rank 0 \(host [^)]*\): \[job\] workdir '$T/no-such-folder': No such file or directory \($T/workdir.conf:3\)" "a missing workdir named with file:line"
run_one "$GPULAUNCH" check "$T/workdir.conf"
assert_eq "$RC" 65 "a missing workdir: check"
assert_grep "$T/err" "$T/workdir.conf:3: \[job\] workdir" "a missing workdir: check names file:line"

conf noprog.conf <<CONF
[job]
command = $T/no-such-trainer --lr 3
CONF
run_one "$GPULAUNCH" check "$T/noprog.conf"
assert_eq "$RC" 65 "a missing program: check"
assert_grep "$T/err" "$T/noprog.conf:2: \[job\] command: cannot run '$T/no-such-trainer' here: no such file" "a missing program: check names file:line"
run_mpi 2 "$GPULAUNCH" "$T/noprog.conf"
assert_eq "$RC" 71 "a missing program: run"
assert_grep "$T/err" "cannot run '$T/no-such-trainer': no such file \($T/noprog.conf:2: \[job\] command\)" "a missing program: the run names file:line"

run_one "$GPULAUNCH" check "$T"
assert_eq "$RC" 65 "a folder as config"
assert_grep "$T/err" "cannot open the config file: Is a directory" "a folder as config named"
run_one "$GPULAUNCH" --
assert_eq "$RC" 64 "'--' and nothing after it is a usage error"
pass "spaced section headers, empty values, [nccl] typos, workdir and program checked: file:line"

# Numbers are decimal ("010" is ten), '#' after a space starts a comment, a UTF-8 BOM is skipped;
# check shows the values in effect.
printf '\xef\xbb\xbf' >"$T/decimal.conf"
cat >>"$T/decimal.conf" <<CONF
[job]
command = $PROG 'x # y' z # not an argument
restarts = 010 # ten
master_port = 020000
[ env ]
GPL_SPACED = 1
CONF
run_one "$GPULAUNCH" check "$T/decimal.conf"
assert_eq "$RC" 0 "check of decimal.conf"
assert_grep "$T/out" "^restarts += 10 +# $T/decimal.conf:3\$" "010 is ten"
assert_grep "$T/out" "^master_port += 20000 " "020000 is twenty thousand"
assert_grep "$T/out" "^GPL_SPACED += 1 " "a key under '[ env ]' kept"
run_one "$GPULAUNCH" env "$T/decimal.conf"
assert_grep "$T/out" ": $PROG 'x # y' z\$" "an inline '#' comment is cut, a quoted '#' is kept"
pass "decimal numbers, inline '#' comments, BOM, spaced headers"

conf good.conf <<CONF
# a comment
[job]
command = $PROG 'a b' "c d" e\\ f
  --long-option value
restarts = 2
[nccl]
SOCKET_IFNAME = =eth0
CONF
run_one "$GPULAUNCH" check "$T/good.conf"
assert_eq "$RC" 0 "check of a good config"
assert_grep "$T/out" "^restarts += 2 +# $T/good.conf:5\$" "effective restarts with origin"
assert_grep "$T/out" "^grace += 10s +# default\$" "defaults shown"
assert_grep "$T/out" "^NCCL_SOCKET_IFNAME += =eth0 " "[nccl] key with prefix added"
run_one "$GPULAUNCH" env "$T/good.conf"
assert_grep "$T/out" "^# rank 0 .*: $PROG 'a b' 'c d' 'e f' --long-option value\$" "command split like a shell, continuation line appended"
pass "check prints the effective settings; commands split like a POSIX shell"

# Log lines name source files relative to the project, never by the build machine's path: the
# CHECK chain of a failed topology load at info level.
SRC=$(cd "$(dirname "$0")/../../.." && pwd)
GPULAUNCH_LOG=info run_one "$GPULAUNCH" topo --topology "$T/missing.xml"
assert_grep "$T/err" " topology/[a-z_]+\.c:[0-9]+ -> -[0-9]+ " "the CHECK chain names topology/FILE.c:LINE"
assert_nogrep "$T/err" "$SRC/" "no absolute source path ($SRC) in log lines"
pass "log lines show project-relative source paths"
