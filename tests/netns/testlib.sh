# shellcheck shell=bash disable=SC2034
# (SC2034: fail is read by the script that sources this file)
# The start of every tests/netns/test_*.sh: Open MPI allowed as root, no inherited
# NCCL_SOCKET_IFNAME, the harness (netns.sh) sourced and required (exit 77 = skip without network
# namespaces), and the reporters: `ok WHAT`; `bad WHAT` marks the test failed and shows the end of
# the last netns_run's output. A script ends with: exit "$fail".
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset NCCL_SOCKET_IFNAME
# shellcheck disable=SC1091 # the harness, next to this file
. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"
netns_require
fail=0
bad() {
  local f
  echo "FAIL: $*"
  for f in out err; do
    if [ -n "$NETNS_DIR" ] && [ -f "$NETNS_DIR/$f" ]; then
      echo "---- $f"
      tail -n 40 "$NETNS_DIR/$f"
    fi
  done
  fail=1
}
ok() { echo "ok - $*"; }

# Watching a job of the test program ($PROG, the script's) and gpulaunch ($GPULAUNCH) in our
# namespaces; a script that starts its job in the background writes "$T/done" when it ends.
# ours: how many gpulaunch and test programs are still alive, by executable.
ours() {
  local h p n=0 exe
  for h in "${NETNS_HOSTS[@]}"; do
    for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do
      exe=$(readlink "/proc/$p/exe" 2>/dev/null) || continue
      [ "$exe" = "$(readlink -f "$GPULAUNCH")" ] || [ "$exe" = "$(readlink -f "$PROG")" ] && n=$((n + 1))
    done
  done
  echo "$n"
}
# running_progs: how many test programs of the job run (`$PROG sleep ...`).
running_progs() {
  local h p n=0
  for h in "${NETNS_HOSTS[@]}"; do
    for p in $(ip netns pids "${NETNS_NS[$h]}" 2>/dev/null); do
      grep -qa "sleep" "/proc/$p/cmdline" 2>/dev/null && [ "$(readlink "/proc/$p/exe")" = "$(readlink -f "$PROG")" ] &&
        n=$((n + 1))
    done
  done
  echo "$n"
}
# wait_gone SECONDS: prints the seconds from now until all of ours are gone (999 if not within).
wait_gone() {
  local t0 i
  t0=$(date +%s.%N)
  for ((i = 0; i < $1 * 10; i++)); do
    [ "$(ours)" = 0 ] && { echo "$(date +%s.%N) - $t0" | bc; return; }
    sleep 0.1
  done
  echo 999
}
# wait_done SECONDS: until "$T/done" exists; 1 if not within.
wait_done() { for ((i = 0; i < $1 * 10; i++)); do [ -f "$T/done" ] && return 0; sleep 0.1; done; return 1; }
