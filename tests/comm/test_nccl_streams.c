/* The nccl backend's stream order (comm/nccl_streams.c) against a model of CUDA's streams and
 * events (tests/comm/cuda_standin.c), no GPU: a NULL stream is ordered after the legacy stream's
 * gradients and before what the program queues there next; a second call on another stream does
 * not write the shared scratch before the first call's unpack has read it. Each case also runs
 * the same work without the ordering calls and checks that the model then finds no order, so the
 * test can fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comm/nccl_streams.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "tests/comm/cuda_standin.h"

static int setup(void **state) {
  (void)state;
  standin_reset();
  return 0;
}

/* A program computed gradients on the legacy stream and passes NULL. */
static void test_null_stream_follows_and_precedes_legacy(void **state) {
  (void)state;
  nccl_streams_t s;
  assert_int_equal(nccl_streams_init(&s), GPL_OK);
  standin_op_t grads = standin_work(cudaStreamLegacy);
  cudaStream_t use;
  assert_int_equal(nccl_streams_enter(&s, NULL, &use), GPL_OK);
  assert_ptr_equal(use, s.own);
  standin_op_t pack = standin_work(use), sum = standin_work(use), unpack = standin_work(use);
  assert_int_equal(nccl_streams_leave(&s, NULL, use), GPL_OK);
  standin_op_t optimizer = standin_work(cudaStreamLegacy);
  assert_true(standin_before(&grads, &pack));
  assert_true(standin_before(&pack, &sum) && standin_before(&sum, &unpack));
  assert_true(standin_before(&unpack, &optimizer));

  /* the defect: work on the communicator's own (non-blocking) stream without the events */
  standin_op_t grads2 = standin_work(cudaStreamLegacy);
  standin_op_t pack2 = standin_work(s.own);
  standin_op_t next2 = standin_work(cudaStreamLegacy);
  assert_false(standin_before(&grads2, &pack2));
  assert_false(standin_before(&pack2, &next2));
  nccl_streams_destroy(&s);
}

/* A stream of the caller's own is used as it is: the caller orders its own work, as with NCCL. */
static void test_caller_stream_is_used_as_is(void **state) {
  (void)state;
  nccl_streams_t s;
  cudaStream_t mine, use;
  assert_int_equal(nccl_streams_init(&s), GPL_OK);
  assert_int_equal(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking), cudaSuccess);
  standin_op_t before = standin_work(mine);
  assert_int_equal(nccl_streams_enter(&s, mine, &use), GPL_OK);
  assert_ptr_equal(use, mine);
  standin_op_t op = standin_work(use);
  assert_int_equal(nccl_streams_leave(&s, mine, use), GPL_OK);
  standin_op_t legacy = standin_work(cudaStreamLegacy);
  assert_true(standin_before(&before, &op));
  assert_false(standin_before(&op, &legacy)); /* no wait forced on the legacy stream */
  nccl_streams_destroy(&s);
}

/* One fused call's bucket: pack, sum, unpack on `st`, bracketed as comm/fused.c does it. */
static void fused_call(nccl_streams_t *s, cudaStream_t st, int ordered, standin_op_t *pack,
                       standin_op_t *unpack) {
  if (ordered) assert_int_equal(nccl_streams_scratch_acquire(s, st), GPL_OK);
  *pack = standin_work(st);
  (void)standin_work(st); /* the allreduce */
  *unpack = standin_work(st);
  if (ordered) assert_int_equal(nccl_streams_scratch_release(s, st), GPL_OK);
}

static void test_scratch_handed_between_streams(void **state) {
  (void)state;
  nccl_streams_t s;
  cudaStream_t a, b, c;
  assert_int_equal(nccl_streams_init(&s), GPL_OK);
  assert_int_equal(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  assert_int_equal(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  assert_int_equal(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking), cudaSuccess);
  standin_op_t pa, ua, pb, ub, pc, uc;
  fused_call(&s, a, 1, &pa, &ua);
  fused_call(&s, b, 1, &pb, &ub);
  fused_call(&s, c, 1, &pc, &uc);
  assert_true(standin_before(&ua, &pb));
  assert_true(standin_before(&ub, &pc));
  assert_true(standin_before(&ua, &pc));
  /* only the scratch is ordered: b's pack does not wait for work a queues later */
  standin_op_t later_a = standin_work(a);
  fused_call(&s, b, 1, &pb, &ub);
  assert_false(standin_before(&later_a, &pb));
  assert_true(standin_before(&uc, &pb));

  /* the defect: the same calls without the hand-over overlap on the shared bucket */
  standin_reset();
  nccl_streams_t t;
  assert_int_equal(nccl_streams_init(&t), GPL_OK);
  assert_int_equal(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  assert_int_equal(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  fused_call(&t, a, 0, &pa, &ua);
  fused_call(&t, b, 0, &pb, &ub);
  assert_false(standin_before(&ua, &pb));
  nccl_streams_destroy(&t);
  nccl_streams_destroy(&s);
}

/* Before the scratch is freed the host waits for its last user, bounded. */
static void test_scratch_idle_waits_bounded(void **state) {
  (void)state;
  nccl_streams_t s;
  assert_int_equal(nccl_streams_init(&s), GPL_OK);
  assert_int_equal(nccl_streams_scratch_idle(&s, 1.0), GPL_OK);
  assert_int_equal(standin_event_queries(), 0); /* never used: nothing to wait for */
  assert_int_equal(nccl_streams_scratch_release(&s, s.own), GPL_OK);
  standin_event_busy(5);
  assert_int_equal(nccl_streams_scratch_idle(&s, 5.0), GPL_OK);
  assert_int_equal(standin_event_queries(), 6);
  standin_event_busy(-1);
  double t0 = util_now();
  assert_int_equal(nccl_streams_scratch_idle(&s, 0.3), GPL_ETIMEDOUT);
  double took = util_now() - t0;
  assert_true(took >= 0.3 && took < 3.0);
  nccl_streams_destroy(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_null_stream_follows_and_precedes_legacy, setup),
      cmocka_unit_test_setup(test_caller_stream_is_used_as_is, setup),
      cmocka_unit_test_setup(test_scratch_handed_between_streams, setup),
      cmocka_unit_test_setup(test_scratch_idle_waits_bounded, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
