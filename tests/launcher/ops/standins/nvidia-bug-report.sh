#!/bin/sh
# Stand-in for the NVIDIA driver's nvidia-bug-report.sh (tests/launcher/ops/test_diag_nvidia.sh):
# its options, messages, exit codes and archive (--output-file FILE writes FILE.gz where gzip is).
# STANDIN_BUG_REPORT=ok (default) | hang (a driver call that never returns: a child that sleeps);
# STANDIN_MARK=DIR gets "bug-report.ran" (and "bug-report.child", the hung child's pid).
[ -n "$STANDIN_MARK" ] && : >"$STANDIN_MARK/bug-report.ran"
out=nvidia-bug-report.log
while [ $# -gt 0 ]; do
  case $1 in
    --output-file) out=$2; shift ;;
    --safe-mode|--extra-system-data) ;;
    -h|--help) echo "nvidia-bug-report.sh [OPTION]..."; exit 0 ;;
    *) echo "nvidia-bug-report.sh: unrecognized option '$1'"; exit 1 ;;
  esac
  shift
done
if [ "$(id -u)" -ne 0 ]; then
  echo "ERROR: Please run $(basename "$0") as root."
  exit 1
fi
cat <<MSG

nvidia-bug-report.sh will now collect information about your
system and create the file '$out.gz' in the current
directory.  It may take several seconds to run.  In some
cases, it may hang trying to capture data generated dynamically
by the Linux kernel and/or the NVIDIA kernel module.  While
the bug report log file will be incomplete if this happens, it
may still contain enough data to diagnose your problem.

MSG
if [ "${STANDIN_BUG_REPORT:-ok}" = hang ]; then
  printf 'Running nvidia-bug-report.sh...'
  sleep 600 &
  [ -n "$STANDIN_MARK" ] && echo $! >"$STANDIN_MARK/bug-report.child"
  wait
  exit 0
fi
{
  echo "____________________________________________"
  echo "Start of NVIDIA bug report log file.  Please include this file, along"
  echo "with a detailed description of your problem, when reporting a graphics"
  echo "driver bug via the NVIDIA Linux forum."
  echo "nvidia-bug-report.sh Version: 35510474"
  date
  uname -a
  echo "*** /proc/driver/nvidia/version does not exist"
} | gzip -c >"$out.gz"
echo "Running nvidia-bug-report.sh... complete."
echo
echo "The file $out.gz has been created; please send this report,"
echo "along with a description of your bug, to linux-bugs@nvidia.com."
