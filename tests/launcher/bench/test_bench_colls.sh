#!/usr/bin/env bash
# Every collective on 4 ranks of the cpu backend, with several dtypes and reduction ops: exit 0,
# no wrong elements, busbw = algbw * the collective's nccl-tests factor.
# shellcheck source=tests/launcher/bench/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
S=(-b 4K -e 256K -f 8 -n 2 -w 1 --backend cpu)

one() { # OP FACTOR ARGS...
  local op=$1 f=$2
  shift 2
  run_mpi 4 "$GPULAUNCH" bench --op "$op" "${S[@]}" "$@"
  assert_eq "$RC" 0 "$op $*: exit status"
  assert_grep "$T/out" 'backend cpu$' "$op: backend cpu"
  check_rows "$T/out" 13
  assert_eq "$(rows "$T/out" | wc -l)" 3 "$op $*: three sizes"
  assert_eq "$(wrong_total "$T/out")" 0 "$op $*: wrong elements"
  busbw_consistent "$T/out" "$f"
  pass "$op $*"
}
one allreduce 1.5 -d float -o sum
one allreduce 1.5 -d half -o prod
one allreduce 1.5 -d bfloat16 -o max
one allreduce 1.5 -d int8 -o min
one allreduce 1.5 -d double -o avg
one allreduce 1.5 -d uint64 -o sum
one reducescatter 0.75 -d bfloat16 -o sum
one reducescatter 0.75 -d int32 -o max
one reducescatter 0.75 -d half -o avg
one allgather 0.75 -d half
one allgather 0.75 -d uint8
one broadcast 1 -d double -r 3
one broadcast 1 -d int32 -r 1
one alltoall 0.75 -d float
one alltoall 0.75 -d bfloat16
assert_eq "$(rows "$T/out" | awk '{ printf "%s ", $10 }')" "N/A N/A N/A " "alltoall has no in-place form"
one fused 1.5 -d bfloat16 --tensor-bytes 1K
one fused 1.5 -d half
one fused 1.5 -d float --tensor-bytes 3000 --bucket-mb 0.05
assert_eq "$(rows "$T/out" | awk '{ printf "%s ", $6 }')" "N/A N/A N/A " "fused has no out-of-place form"
one unfused 1.5 --tensor-bytes 4K
echo "all $TESTS_RUN passed"
