#!/usr/bin/env bash
# `mpirun -np 2 gpulaunch accept CONF --junit j.xml --json j.json`: a threshold that holds exits 0,
# one that cannot exits 73 with the failure in the JUnit file; warnings pass unless --strict;
# expectations against a real machine's topology file (g4dn.metal); "could not run" exits 74;
# every JUnit file validates against junit.xsd; the HTML page is well-formed with its chart; a
# node without a GPU fails unless [accept] gpus = 0 (or --gpus 0) allows it.
#   test_accept_mpi.sh   (GPULAUNCH, MPIEXEC from CTest; GPULAUNCH_TOPOLOGY_DIR, GPULAUNCH_SOURCE_DIR)
# shellcheck disable=SC1091 # tests/lib.sh, found at run time
. "$GPULAUNCH_SOURCE_DIR/tests/lib.sh"
XSD="$GPULAUNCH_SOURCE_DIR/tests/launcher/accept/junit.xsd"
G4DN="$GPULAUNCH_TOPOLOGY_DIR/hwloc-aws-g4dn.metal-8xt4.xml"

# This machine has no GPU: a run of it is a CPU-only run, which accept passes only when told so
# ([accept] gpus = 0). conf writes that unless a gpus=N is given; gpus= (empty) leaves it unset.
conf() { # conf NAME KEY=VALUE... -> $T/NAME.conf with an [accept] section (and others after '[')
  local f="$T/$1.conf" gpus="gpus = 0"
  shift
  for kv in "$@"; do case "$kv" in gpus=) gpus="" ;; gpus=*) gpus="${kv/=/ = }" ;; esac; done
  printf '[accept]\nsize = 4M\niters = 4\n%s\n' "$gpus" >"$f"
  for kv in "$@"; do
    case "$kv" in
      gpus=*) ;;
      \[*) printf '%s\n' "$kv" >>"$f" ;;
      *) printf '%s\n' "${kv/=/ = }" >>"$f" ;;
    esac
  done
}
junit_ok() { xmllint --noout --schema "$XSD" "$1" 2>"$T/xsd.err" || fail "$1 does not validate: $(cat "$T/xsd.err")"; }
json_get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$1" "$2"; }
check_status() { json_get "$1" "[c['status'] for c in d['checks'] if c['name']=='$2'][0]"; }

# 1. A threshold that holds: exit 0, every report written and valid.
conf holds min_busbw=0.001
run_mpi 2 "$GPULAUNCH" accept "$T/holds.conf" --junit "$T/j.xml" --json "$T/j.json" --html "$T/j.html" \
  --exclude-out "$T/bad.txt" --summary "$T/summary.json"
assert_eq "$RC" 0 "threshold that holds: exit status"
junit_ok "$T/j.xml"
assert_eq "$(json_get "$T/j.json" "d['verdict']")" pass "JSON verdict"
assert_eq "$(check_status "$T/j.json" busbw)" pass "busbw check"
assert_eq "$(json_get "$T/j.json" "d['allreduce']['min_busbw_GBps']")" 0.001 "threshold in the JSON"
assert_eq "$(json_get "$T/j.json" "d['ranks']")" 2 "ranks in the JSON"
assert_eq "$(json_get "$T/j.json" "len(d['hosts'])")" 1 "hosts in the JSON"
assert_eq "$(json_get "$T/j.json" "d['allreduce']['bytes']")" 4194304 "allreduce size"
assert_eq "$(check_status "$T/j.json" reachability)" pass "reachability"
assert_eq "$(wc -l <"$T/bad.txt")" 0 "no bad host: an empty exclude list"
assert_eq "$(json_get "$T/summary.json" "d['accept']['exit_code']")" 0 "summary accept object"
# NVML checks are skipped with the reason on this machine (no driver).
assert_grep "$T/j.json" '"detail":[[:space:]]*"NVML not available' "NVML skip reason"
assert_grep "$T/j.xml" '<skipped message="NVML not available' "NVML skipped in JUnit"
assert_grep "$T/out" '^Result: PASS' "terminal verdict"
assert_grep "$T/out" '^pass +busbw' "terminal table row"
xmllint --noout "$T/j.html" || fail "HTML is not well-formed"
assert_eq "$(xmllint --xpath 'count(//*[local-name()="rect" and contains(@class,"job")])' "$T/j.html")" 1 "job bar in the chart"
pass "threshold that holds: exit 0, JUnit valid, JSON/HTML/exclude written"

# 2. A threshold that cannot hold: 73, the failure in the JUnit file.
conf cannot min_busbw=1000000
run_mpi 2 "$GPULAUNCH" accept "$T/cannot.conf" --junit "$T/f.xml" --json "$T/f.json"
assert_eq "$RC" 73 "threshold that cannot hold: exit status"
junit_ok "$T/f.xml"
assert_eq "$(xmllint --xpath 'count(//testsuite[@name="job"]/testcase[starts-with(@name,"busbw[allreduce")]/failure)' "$T/f.xml")" 1 "busbw <failure>"
assert_eq "$(xmllint --xpath 'string(/testsuites/@failures)' "$T/f.xml")" 1 "testsuites failures"
assert_eq "$(check_status "$T/f.json" busbw)" fail "busbw check in the JSON"
assert_eq "$(json_get "$T/f.json" "d['verdict']")" fail "JSON verdict"
assert_grep "$T/out" '^FAIL +busbw' "terminal table shows the failure"
# ... and from the command line over a config that holds.
run_mpi 2 "$GPULAUNCH" accept "$T/holds.conf" --min-busbw 1e6 --junit "$T/f2.xml"
assert_eq "$RC" 73 "--min-busbw override"
junit_ok "$T/f2.xml"
pass "threshold that cannot hold: exit 73, <failure> in JUnit"

# 3. min_busbw = auto on one CPU node: measured, not judged, with the reason.
conf auto min_busbw=auto
run_mpi 2 "$GPULAUNCH" accept "$T/auto.conf" --json "$T/a.json"
assert_eq "$RC" 0 "auto on one node: exit status"
assert_eq "$(check_status "$T/a.json" busbw)" skipped "auto busbw"
assert_grep "$T/a.json" 'one node on the cpu backend' "auto: the reason"
pass "min_busbw = auto on one CPU node: skipped with the derivation's reason"

# 4. A real machine's topology: expectations that hold, the SYS warning, strict.
conf g4dn min_busbw=0.001 gpus=8 gpu_model=T4 nics=rdmap197s0
run_mpi 2 "$GPULAUNCH" accept "$T/g4dn.conf" --topology "$G4DN" --junit "$T/g.xml" --json "$T/g.json"
assert_eq "$RC" 0 "g4dn, warnings only: exit status"
junit_ok "$T/g.xml"
assert_eq "$(json_get "$T/g.json" "[c['status'] for c in d['checks'] if c['name']=='gpu_nic_path' and c['subject']=='GPU0'][0]")" warn "GPU0 SYS warning"
assert_eq "$(json_get "$T/g.json" "[c['value_text'] for c in d['checks'] if c['name']=='gpu_nic_path' and c['subject']=='GPU3'][0]")" "SYS to rdmap197s0" "GPU3 path"
assert_eq "$(check_status "$T/g.json" gpu_count)" pass "gpu_count 8"
assert_eq "$(check_status "$T/g.json" gpu_model)" pass "gpu_model T4"
assert_eq "$(json_get "$T/g.json" "d['counts']['warn']")" 8 "8 GPU->NIC warnings"
assert_eq "$(xmllint --xpath 'count(//testcase[@name="gpu_nic_path[GPU0]"]/system-out)' "$T/g.xml")" 1 "warning as system-out"
run_mpi 2 "$GPULAUNCH" accept "$T/g4dn.conf" --topology "$G4DN" --strict --junit "$T/gs.xml" --exclude-out "$T/gbad.txt"
assert_eq "$RC" 73 "strict: warnings fail"
junit_ok "$T/gs.xml"
assert_eq "$(xmllint --xpath 'count(//failure[@type="warn"])' "$T/gs.xml")" 8 "strict warnings as failures"
assert_eq "$(wc -l <"$T/gbad.txt")" 1 "strict: the node is excluded, one line"
pass "g4dn.metal: GPUs 0-3 SYS warn, exit 0; --strict exits 73"

# 5. Expectations that fail on that machine: count, model, a NIC it does not have.
conf g4dnbad min_busbw=0.001 gpus=4 gpu_model=H100 nics=mlx5_0
run_mpi 2 "$GPULAUNCH" accept "$T/g4dnbad.conf" --topology "$G4DN" --junit "$T/gb.xml" --json "$T/gb.json" \
  --exclude-out "$T/gb.txt"
assert_eq "$RC" 73 "wrong expectations: exit status"
junit_ok "$T/gb.xml"
for c in gpu_count gpu_model nic; do assert_eq "$(check_status "$T/gb.json" $c)" fail "$c fails"; done
host=$(json_get "$T/gb.json" "d['hosts'][0]")
assert_eq "$(grep -v '^#' "$T/gb.txt")" "$host" "exclude list names the node"
pass "g4dn.metal with wrong expectations: gpu_count/gpu_model/nic fail, host excluded"

# 6. Could not run: an explicit NCCL backend where there is none.
conf nonccl min_busbw=0.001 "[comm]" backend=nccl
run_mpi 2 "$GPULAUNCH" accept "$T/nonccl.conf" --junit "$T/e.xml" --json "$T/e.json"
assert_eq "$RC" 74 "could not run: exit status"
junit_ok "$T/e.xml"
assert_eq "$(check_status "$T/e.json" busbw)" error "busbw error"
assert_eq "$(xmllint --xpath 'count(//testcase[starts-with(@name,"busbw[allreduce")]/error)' "$T/e.xml")" 1 "<error> in JUnit"
pass "allreduce that cannot run: exit 74, <error> in JUnit"

# 6b. Reachability is the start-up's answer: on one node the interface agreement's choice (the
#     preflight, which probes between nodes, has nothing to prove); [accept] iface is an
#     expectation on that choice: the interface it chose passes, another fails the run.
row() { json_get "$1" "[c['$3'] for c in d['checks'] if c['name']=='reachability' and c['subject']=='$2'][0]"; }
assert_eq "$(row "$T/j.json" preflight status)" skipped "one node: no preflight row to pass"
assert_grep "$T/j.json" 'one node: no path between nodes to prove' "one node: the reason"
chosen=$(row "$T/j.json" "interface agreement" value_text | awk '{print $2}')
[ -n "$chosen" ] || fail "the interface agreement row names no interface"
conf ifok min_busbw=0.001 iface="$chosen"
run_mpi 2 "$GPULAUNCH" accept "$T/ifok.conf" --json "$T/ifok.json"
assert_eq "$RC" 0 "[accept] iface = the start-up's choice ($chosen): exit status"
assert_eq "$(row "$T/ifok.json" "interface agreement" status)" pass "[accept] iface = $chosen"
conf ifbad min_busbw=0.001 iface=nosuch0
run_mpi 2 "$GPULAUNCH" accept "$T/ifbad.conf" --json "$T/ifbad.json"
assert_eq "$RC" 73 "[accept] iface = nosuch0: exit status"
assert_eq "$(row "$T/ifbad.json" "interface agreement" status)" fail "[accept] iface = nosuch0"
assert_grep "$T/ifbad.json" "rank 0 \\(host [^)]*\\) uses $chosen, not nosuch0 as \\[accept\\] iface expects" "the mismatch named"
pass "reachability: the start-up's interface on one node; [accept] iface checked against it"

# 6c. A GPU acceptance run on a node without a GPU fails, saying how to allow it; gpus = 0 (or
#     --gpus 0) is a run meant for such nodes and passes. (Skipped where this machine has a GPU.)
if [ -e /proc/driver/nvidia/gpus ] || lspci -d 10de: 2>/dev/null | grep -q .; then
  echo "skip: 6c needs a machine without an NVIDIA GPU"
else
  conf nogpu min_busbw=0.001 gpus=
  run_mpi 2 "$GPULAUNCH" accept "$T/nogpu.conf" --json "$T/ng.json" --junit "$T/ng.xml" --html "$T/ng.html"
  assert_eq "$RC" 73 "no GPU, no [accept] gpus: exit status"
  assert_eq "$(check_status "$T/ng.json" gpu_count)" fail "gpu_count on a node without a GPU"
  assert_grep "$T/out" '^FAIL +gpu_count' "terminal row"
  assert_grep "$T/out" 'no GPU on this node .*set \[accept\] gpus = 0 \(or --gpus 0\)' "the message says how to allow it"
  assert_grep "$T/out" '^Result: FAIL' "terminal verdict"
  junit_ok "$T/ng.xml"
  assert_eq "$(xmllint --xpath 'count(//testcase[@name="gpu_count"]/failure)' "$T/ng.xml")" 1 "gpu_count <failure> in JUnit"
  assert_grep "$T/ng.html" 'FAILED' "HTML verdict"
  assert_nogrep "$T/ng.html" 'are fit for the run' "HTML does not call the node fit"
  run_mpi 2 "$GPULAUNCH" accept "$T/nogpu.conf" --gpus 0 --json "$T/ng0.json"
  assert_eq "$RC" 0 "no GPU with --gpus 0: exit status"
  assert_eq "$(check_status "$T/ng0.json" gpu_count)" pass "gpu_count with --gpus 0"
  conf nogpu0 min_busbw=0.001 gpus=0
  run_mpi 2 "$GPULAUNCH" accept "$T/nogpu0.conf"
  assert_eq "$RC" 0 "no GPU with [accept] gpus = 0: exit status"
  assert_grep "$T/out" '^Result: PASS' "gpus = 0: verdict"
  pass "no GPU: exit 73 naming [accept] gpus = 0; passes with gpus = 0 and --gpus 0"
fi

# 7. Usage and progress.
run_mpi 2 "$GPULAUNCH" accept "$T/holds.conf" --bogus
assert_eq "$RC" 64 "unknown option"
run_mpi 1 "$GPULAUNCH" accept "$T/holds.conf" --progress
assert_eq "$RC" 0 "--progress"
assert_grep "$T/err" '\[6/8\] allreduce bus bandwidth' "progress line"
run_mpi 1 "$GPULAUNCH" accept "$T/holds.conf"
assert_nogrep "$T/err" '\[6/8\]' "no progress without a terminal"
pass "usage error 64; progress only when asked or on a terminal"
echo "all $TESTS_RUN accept MPI tests passed"
