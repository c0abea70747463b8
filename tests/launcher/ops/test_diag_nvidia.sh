#!/usr/bin/env bash
# `gpulaunch diag` and NVIDIA's tools, with stand-ins on PATH (tests/launcher/ops/standins: the
# real tools' options, output and exit codes; no GPU here): nvidia-bug-report.sh runs and its
# archive lands in the bundle and the tarball, --no-bug-report skips it, a hanging one is killed
# with its children at the bound; dcgmi diag -r 1 passed, failed checks named, no host engine
# said; the fabric manager's state on an NVSwitch system (a sysfs of one, through the test
# driver): failed is an error with its journal and log in the bundle, active is fine.
#   test_diag_nvidia.sh OPS_DIAG_RUN   (GPULAUNCH from CTest)
source "$(dirname "$0")/../../lib.sh"
DRIVER="${1:?usage: test_diag_nvidia.sh OPS_DIAG_RUN}"
STANDINS="$(cd "$(dirname "$0")/standins" && pwd)"
export PATH="$STANDINS:$PATH" STANDIN_MARK="$T/mark"
mkdir "$T/mark"
host=$(hostname -s 2>/dev/null || hostname)
hostdir() { # hostdir BUNDLE: the host's folder
  if [[ -d $1/$host ]]; then echo "$1/$host"; else find "$1" -mindepth 1 -maxdepth 1 -type d | head -1; fi
}

run_one "$GPULAUNCH" diag --out "$T/b1"
assert_eq "$RC" 0 "diag with nvidia-bug-report.sh and dcgmi"
hd=$(hostdir "$T/b1")
[[ -e $T/mark/bug-report.ran ]] || fail "nvidia-bug-report.sh was not run"
[[ -f $hd/nvidia-bug-report.log.gz ]] || fail "no archive in the bundle: $(ls "$hd")"
gzip -dc "$hd/nvidia-bug-report.log.gz" >"$T/report.log"
assert_grep "$T/report.log" "^Start of NVIDIA bug report log file" "the archive is the tool's"
assert_eq "$(stat -c %a "$hd/nvidia-bug-report.log.gz")" 600 "the archive's mode"
assert_grep "$hd/nvidia-bug-report.txt" "^\\$ nvidia-bug-report.sh --output-file .*/nvidia-bug-report.log   \(killed after 300 s\)" "the command and its 5-minute bound"
assert_grep "$hd/nvidia-bug-report.txt" "nvidia-bug-report.log.gz has been created" "its output"
tar -tzf "$T/b1.tar.gz" >"$T/list"
assert_grep "$T/list" "/nvidia-bug-report.log.gz$" "the archive in the tarball"
assert_grep "$T/out" "^  \[INFO\] NVIDIA bug report: nvidia-bug-report.log.gz in this host's folder \([0-9]+ KiB; NVIDIA's archive, not redacted" "the verdict names the archive"
assert_grep "$hd/dcgmi-diag.txt" "^Successfully ran diagnostic for group." "dcgmi's table"
assert_grep "$T/out" "^  \[OK\] dcgmi diag -r 1: all 9 checks passed" "dcgmi passed"
assert_grep "$T/b1/SUMMARY.txt" "nvidia-bug-report.txt, nvidia-bug-report.log.gz" "SUMMARY lists the files"
pass "nvidia-bug-report.sh's archive in the bundle and the tarball; dcgmi diag -r 1 passed"

rm -f "$T/mark/"*
run_one "$GPULAUNCH" diag --out "$T/b2" --no-tar --no-bug-report
assert_eq "$RC" 0 "--no-bug-report"
[[ ! -e $T/mark/bug-report.ran ]] || fail "--no-bug-report ran it"
hd=$(hostdir "$T/b2")
[[ ! -e $hd/nvidia-bug-report.txt && ! -e $hd/nvidia-bug-report.log.gz ]] || fail "--no-bug-report left its files"
[[ -s $hd/dcgmi-diag.txt ]] || fail "--no-bug-report skipped dcgmi too"
pass "--no-bug-report skips it"

t0=$(now)
STANDIN_BUG_REPORT=hang run_one "$GPULAUNCH" diag --out "$T/b3" --no-tar --bug-report-timeout 2
took=$(elapsed "$t0")
assert_eq "$RC" 0 "a hanging nvidia-bug-report.sh"
assert_le "$took" 12 "seconds of diag with a 2 s bound"
assert_le 2 "$took" "seconds: it waited its bound"
hd=$(hostdir "$T/b3")
assert_grep "$hd/nvidia-bug-report.txt" "^\(killed after 2 s: it hung\)" "the hang said in its file"
assert_grep "$hd/nvidia-bug-report.txt" "^nvidia-bug-report.sh will now collect information" "its output up to the hang"
assert_grep "$T/out" "^  \[WARN\] nvidia-bug-report.sh did not finish in 2 s and was killed" "the hang's verdict"
child=$(cat "$T/mark/bug-report.child")
# gone, or a zombie waiting for init to reap it (killed: its parent died first)
state=$(awk '{ print $3 }' "/proc/$child/stat" 2>/dev/null || true)
[[ -z $state || $state == Z ]] || fail "the hung tool's child $child is still running (state $state)"
run_one "$GPULAUNCH" diag --out "$T/b4" --bug-report-timeout soon
assert_eq "$RC" 64 "a bad --bug-report-timeout"
pass "a hanging nvidia-bug-report.sh is killed with its children at the bound (${took} s for 2 s)"

STANDIN_DCGMI=fail run_one "$GPULAUNCH" diag --out "$T/b5" --no-tar --no-bug-report
assert_eq "$RC" 0 "dcgmi fails"
assert_grep "$T/out" "^  \[ERROR\] dcgmi diag -r 1: 2 checks failed: Denylist, Persistence Mode \(see dcgmi-diag.txt\)" "the failed checks named"
STANDIN_DCGMI=noengine run_one "$GPULAUNCH" diag --out "$T/b6" --no-tar --no-bug-report
assert_grep "$T/out" "^  \[WARN\] dcgmi diag -r 1 did not run its checks \(exit status 255: Error: unable to establish a connection to the specified host: localhost\); is nv-hostengine running" "no host engine"
pass "dcgmi diag -r 1: failed checks named; a missing host engine said"

# An HGX-like sysfs: 4 NVSwitches (class 0x068000) beside a GPU (0x030200).
for d in 0000:05:00.0 0000:06:00.0 0000:07:00.0 0000:08:00.0 0000:18:00.0; do
  mkdir -p "$T/pci/$d"
  echo 0x10de >"$T/pci/$d/vendor"
  echo 0x068000 >"$T/pci/$d/class"
done
echo 0x030200 >"$T/pci/0000:18:00.0/class"
printf '[Dec 07 2026 03:00:02] [ERROR] [tid 2211] fabric manager NVIDIA GPU driver interface version 535.104.05 don'"'"'t match with driver version 535.161.08\n' >"$T/fm.log"
STANDIN_FM=failed run_one "$DRIVER" --out "$T/b7" --no-bug-report --pci-root "$T/pci" --fm-log "$T/fm.log"
assert_eq "$RC" 0 "the test driver"
assert_grep "$T/out" "^\[ERROR\] 4 NVSwitches and nvidia-fabricmanager is failed: CUDA cannot initialise the GPUs without it \(systemctl enable --now nvidia-fabricmanager" "a failed fabric manager"
hd=$(hostdir "$T/b7")
assert_grep "$hd/fabricmanager.txt" "^NVSwitches \(PCI\): 4" "the switches counted"
assert_grep "$hd/fabricmanager.txt" "nvidia-fabricmanager.service: Failed with result 'exit-code'" "its journal"
assert_grep "$hd/fabricmanager.txt" "\[ERROR\] \[tid 2211\] fabric manager NVIDIA GPU driver interface version" "its log"
STANDIN_FM=active run_one "$DRIVER" --out "$T/b8" --no-bug-report --pci-root "$T/pci" --fm-log "$T/fm.log"
assert_grep "$T/out" "^\[OK\] 4 NVSwitches; nvidia-fabricmanager is active" "an active fabric manager"
STANDIN_FM=nosystemd run_one "$DRIVER" --out "$T/b10" --no-bug-report --pci-root "$T/pci" --fm-log "$T/fm.log"
assert_grep "$T/out" "^\[WARN\] 4 NVSwitches; the state of nvidia-fabricmanager is unknown here" "no systemd: unknown, not an error"
assert_grep "$(hostdir "$T/b10")/fabricmanager.txt" "^System has not been booted with systemd" "systemctl's words kept"
rm -rf "$T/pci/0000:0"[5-8]":00.0"
run_one "$DRIVER" --out "$T/b9" --no-bug-report --pci-root "$T/pci"
assert_nogrep "$T/out" "fabricmanager" "no NVSwitch: no fabric manager verdict"
[[ ! -e $(hostdir "$T/b9")/fabricmanager.txt ]] || fail "no NVSwitch: no fabricmanager.txt"
pass "NVSwitch systems: the fabric manager's state, journal and log; failed is an error"
echo "# $TESTS_RUN passed"
