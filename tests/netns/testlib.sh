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
