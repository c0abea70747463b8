#!/usr/bin/env bash
# Issue 14: a line longer than the 1 MiB cap (and a tqdm-like bar that only writes '\r') from
# several ranks at once: every piece is cut at the cap, prefixed with its rank and ended, and no
# other rank's bytes ever land inside it; nothing is lost. (output = rank0, the default: with
# output = local each rank writes to mpirun, which splits the streams where it likes.)
source "$(dirname "$0")/../../lib.sh"
PROG="$1"
host=$(hostname -s)
N=$((3 * 1048576 + 12345)) # three whole pieces and a rest
CAP=1048576

mode=rank0
{
  printf '[job]\ncommand = %s longline %d\noutput = %s\n' "$PROG" "$N" "$mode" >"$T/long.conf"
  # (not $T/out: fail() would print its megabyte lines)
  set +e
  "$MPIEXEC" -np 3 --oversubscribe --bind-to none "$GPULAUNCH" "$T/long.conf" >"$T/long.out" 2>"$T/err"
  RC=$?
  set -e
  assert_eq "$RC" 0 "exit status ($mode)"
  # Each line: a prefix, then one rank's letter only (a piece) or its \r progress bar.
  LC_ALL=C awk -v host="$host" -v cap="$CAP" '
    {
      if (!match($0, /^\[[^]]*:[0-9]+\] /)) { print "no prefix: line " NR; bad = 1; next }
      split(substr($0, 2, RLENGTH - 3), hr, ":"); r = hr[2] + 0
      body = substr($0, RLENGTH + 1); c = sprintf("%c", 97 + r)
      if (body ~ ("^" c "+$")) {
        if (length(body) > cap) { print "a piece over the cap: " length(body); bad = 1 }
        bytes[r] += length(body); pieces[r]++
      } else if (body ~ ("^(\r" c " progress [0-9]+% +)+$")) {
        bars[r]++
      } else { print "rank " r " line " NR " holds another rank'"'"'s bytes: " substr(body, 1, 60); bad = 1 }
    }
    END {
      for (r = 0; r < 3; r++)
        printf "rank %d: %d bytes in %d pieces, %d bar lines\n", r, bytes[r], pieces[r], bars[r]
      exit bad
    }' "$T/long.out" >"$T/check" || { cut -c1-200 "$T/check" | head -20; fail "lines mixed or unprefixed ($mode)"; }
  for r in 0 1 2; do
    assert_grep "$T/check" "^rank $r: $N bytes in 4 pieces, 1 bar lines\$" "rank $r's long line ($mode)"
  done
}
pass "3 ranks x a line of $N bytes and a \\r bar: pieces of at most 1 MiB, each prefixed, none mixed"
echo "$TESTS_RUN checks passed"
