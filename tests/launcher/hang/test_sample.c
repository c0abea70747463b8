/* Unit tests of the straggler by stack samples (launcher/hang/sample.c): the waiting table, the
 * program's own frames, a rank's window and report, and rank 0's verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "launcher/hang/sample.h"

#define PY "/usr/lib/python3/dist-packages/torch/"

/* A Python rank waiting in all_reduce (py-spy's frames, innermost first). */
static const char *py_wait = "all_reduce\t" PY "distributed/distributed_c10d.py\n"
                             "wrapper\t" PY "distributed/c10d_logger.py\n"
                             "main\t/home/u/train.py\n<module>\t/home/u/train.py\n";
/* ... and the straggler in slow_augment, called from the training step. */
static const char *py_work = "slow_augment\t/home/u/train.py\n"
                             "main\t/home/u/train.py\n<module>\t/home/u/train.py\n";
/* A native rank in gpl_allreduce (eu-stack -m), and one working in slow_transform. */
static const char *c_wait = "__GI___poll\t/usr/lib/x86_64-linux-gnu/libc.so.6\n"
                            "proxy_call\t/opt/gpulaunch/lib/libgpulaunch.so\n"
                            "gpl_allreduce\t/opt/gpulaunch/lib/libgpulaunch.so\n"
                            "straggle\t/home/u/prog\nmain\t/home/u/prog\n"
                            "__libc_start_call_main\t/usr/lib/x86_64-linux-gnu/libc.so.6\n";
static const char *c_work = "spin\t/home/u/prog\nslow_transform\t/home/u/prog\n"
                            "straggle\t/home/u/prog\nmain\t/home/u/prog\n";

static void test_classify(void **st) {
  (void)st;
  sample_t s;
  assert_int_equal(sample_classify(py_wait, &s), 1);
  assert_string_equal(s.f[0], "all_reduce");
  assert_int_equal(sample_classify(py_work, &s), 0);
  assert_string_equal(s.f[0], "slow_augment");
  assert_int_equal(s.nf, 2); /* <module> is no function of the program's */
  assert_int_equal(sample_classify(c_wait, &s), 1);
  assert_string_equal(s.f[0], "gpl_allreduce");
  assert_int_equal(sample_classify(c_work, &s), 0);
  assert_string_equal(s.f[0], "spin");
  assert_string_equal(s.f[1], "slow_transform");
  assert_int_equal(sample_classify("", &s), -1);
  /* start-up: imports and the rendezvous are not counted */
  assert_int_equal(sample_classify("<module>\t" PY "_decomp/__init__.py\n_call_with_frames_removed\t<frozen "
                                   "importlib._bootstrap>\n<module>\t/home/u/train.py\n", &s), SAMPLE_STARTUP);
  assert_int_equal(sample_classify("_store_based_barrier\t" PY "distributed/distributed_c10d.py\n"
                                   "init_process_group\t" PY "distributed/distributed_c10d.py\n", &s), SAMPLE_STARTUP);
  /* DDP: the gradients' all-reduce waits inside backward() */
  assert_int_equal(sample_classify("_engine_run_backward\t" PY "autograd/graph.py\nbackward\t" PY
                                   "autograd/__init__.py\nbackward\t" PY "_tensor.py\nmain\t/home/u/train.py\n", &s), 1);
  assert_string_equal(s.f[0], "backward");
  /* only library frames: the innermost is named */
  assert_int_equal(sample_classify("__nanosleep\t/usr/lib/libc.so.6\n", &s), 0);
  assert_string_equal(s.f[0], "__nanosleep");
  /* the synchronisations NCCL's asynchronous collectives wait in, and MPI's */
  assert_true(sample_is_wait("cudaStreamSynchronize", "/usr/lib/libcudart.so.12"));
  assert_true(sample_is_wait("synchronize", PY "cuda/__init__.py"));
  assert_true(sample_is_wait("ncclCommGetAsyncError", "/usr/lib/libnccl.so.2"));
  assert_true(sample_is_wait("PMPI_Wait", "/usr/lib/libmpi.so.40"));
  assert_true(sample_is_wait("c10d::ProcessGroupGloo::AsyncWork::wait", "libtorch_cpu.so"));
  assert_false(sample_is_wait("wait_for_batch", "/home/u/train.py"));
  assert_false(sample_is_wait("forward", PY "nn/modules/module.py"));
}

/* n samples, of which nwait waiting in `wait` and the rest working in `stack`. */
static void fill(sample_report_t *r, int n, int nwait, const char *wait, const char *stack) {
  sample_window_t w;
  memset(&w, 0, sizeof w);
  sample_t s;
  for (int i = 0; i < n; i++) {
    /* waits spread among the work, as sampling sees them */
    int is_wait = (i * nwait) / n != ((i + 1) * nwait) / n;
    sample_classify(is_wait ? wait : stack, &s);
    sample_add(&w, &s);
  }
  sample_report(&w, r);
}

static void test_straggler(void **st) {
  (void)st;
  sample_report_t r[4];
  sample_verdict_t v;
  const char *fb = "forward_backward\t/home/u/train.py\nmain\t/home/u/train.py\n";
  fill(&r[0], 32, 27, py_wait, fb);
  fill(&r[1], 32, 3, py_wait, py_work);
  fill(&r[2], 32, 26, py_wait, fb);
  fill(&r[3], 32, 28, py_wait, fb);
  sample_judge(r, 4, &v);
  assert_int_equal(v.rank, 1);
  assert_string_equal(v.func, "slow_augment");
  assert_string_equal(v.wait_func, "all_reduce");
  assert_true(v.share > 0.85);
  char line[512];
  sample_describe(&v, "n3", line, sizeof line);
  assert_non_null(strstr(line, "rank 1 (host n3) is the straggler: 91 % of its samples in slow_augment; "
                               "the other ranks spend 84 % waiting in all_reduce"));
  /* the callee that holds the time, not the helper every rank runs under it */
  fill(&r[0], 32, 26, c_wait, "spin\t/p\nshared_work\t/p\nmain\t/p\n");
  fill(&r[1], 32, 0, c_wait, c_work);
  fill(&r[2], 32, 27, c_wait, "spin\t/p\nshared_work\t/p\nmain\t/p\n");
  sample_judge(r, 3, &v);
  assert_int_equal(v.rank, 1);
  assert_string_equal(v.func, "slow_transform");
  assert_string_equal(v.wait_func, "gpl_allreduce");
}

/* The end of a PyTorch job (CI, 2026-12-07): the others wait in every sample, and the straggler's
 * window also holds work outside slow_augment (the last steps' logging, the teardown). main is on
 * every working stack and the others, never working, say nothing against it: still slow_augment,
 * the callee that holds most of main's time, not main. */
static void test_callee_when_others_only_wait(void **st) {
  (void)st;
  const char *other = "log_metrics\t/home/u/train.py\nmain\t/home/u/train.py\n<module>\t/home/u/train.py\n";
  sample_window_t w;
  memset(&w, 0, sizeof w);
  sample_t s;
  for (int i = 0; i < 32; i++) { /* 23 in slow_augment, 5 in log_metrics, 4 waiting */
    sample_classify(i < 23 ? py_work : i < 28 ? other : py_wait, &s);
    sample_add(&w, &s);
  }
  sample_report_t r[4];
  sample_report(&w, &r[1]);
  fill(&r[0], 32, 32, py_wait, py_work);
  fill(&r[2], 32, 32, py_wait, py_work);
  fill(&r[3], 32, 32, py_wait, py_work);
  sample_verdict_t v;
  sample_judge(r, 4, &v);
  assert_int_equal(v.rank, 1);
  assert_string_equal(v.func, "slow_augment");
  /* two functions of which neither holds most of main's time: main, their caller (naming one of
   * them would hide the other) */
  memset(&w, 0, sizeof w);
  const char *b = "slow_b\t/home/u/train.py\nmain\t/home/u/train.py\n<module>\t/home/u/train.py\n";
  for (int i = 0; i < 32; i++) { /* 15 in slow_augment, 13 in slow_b, 4 waiting */
    sample_classify(i < 15 ? py_work : i < 28 ? b : py_wait, &s);
    sample_add(&w, &s);
  }
  sample_report(&w, &r[1]);
  sample_judge(r, 4, &v);
  assert_int_equal(v.rank, 1);
  assert_string_equal(v.func, "main");
}

/* The straggler named among 4 ranks of n samples each, rank i waiting nwait[i] of them (rank 1
 * working in py_work, the others in forward_backward); -1: none. */
static int judge4(int n, int w0, int w1, int w2, int w3) {
  const char *fb = "forward_backward\t/home/u/train.py\nmain\t/home/u/train.py\n";
  int nwait[4] = {w0, w1, w2, w3};
  sample_report_t r[4];
  sample_verdict_t v;
  for (int i = 0; i < 4; i++) fill(&r[i], n, nwait[i], py_wait, i == 1 ? py_work : fb);
  sample_judge(r, 4, &v);
  return v.rank;
}

/* Balanced jobs are never flagged: alike ranks, a compute-bound job, too few samples. */
static void test_balanced(void **st) {
  (void)st;
  assert_int_equal(judge4(32, 18, 20, 22, 24), -1);
  /* compute-bound: nobody waits much, even if one rank waits less */
  assert_int_equal(judge4(32, 12, 1, 12, 13), -1);
  /* a short job: 12 samples need a wider gap */
  assert_int_equal(judge4(12, 8, 3, 8, 9), -1);
  assert_int_equal(judge4(12, 10, 0, 8, 9), 1);
  /* three ranks of 12 samples, 1 of 12 against 7 of 12 each: past the thresholds, but a gap the
   * noise of so few samples makes (z 2.9, a balanced run on 2 shared cores did it); the same
   * shares on 20 samples each are significant (z 4.1) */
  const char *fb = "forward_backward\t/home/u/train.py\nmain\t/home/u/train.py\n";
  sample_report_t r3[3];
  sample_verdict_t v3;
  for (int n = 12; n <= 20; n += 8) {
    int w = n == 12 ? 7 : 12;
    fill(&r3[0], n, w, py_wait, fb);
    fill(&r3[1], n, 1, py_wait, py_work);
    fill(&r3[2], n, w, py_wait, fb);
    sample_judge(r3, 3, &v3);
    assert_int_equal(v3.rank, n == 12 ? -1 : 1);
  }
  /* fewer than SAMPLE_FEW: no judgement */
  assert_int_equal(judge4(8, 8, 0, 8, 8), -1);
  /* one rank alone: none */
  sample_report_t r;
  sample_verdict_t v;
  fill(&r, 32, 0, py_wait, py_work);
  sample_judge(&r, 1, &v);
  assert_int_equal(v.rank, -1);
}

/* A rank is named only when two judgments in a row, the second on newer counts, name it. */
static void test_confirm(void **st) {
  (void)st;
  sample_streak_t k = {.rank = -1};
  sample_verdict_t one = {.rank = 1}, two = {.rank = 2}, none = {.rank = -1};
  assert_int_equal(sample_confirm(&k, &one, 3), 0);  /* seen once: a blip, maybe */
  assert_int_equal(sample_confirm(&k, &one, 3), 0);  /* the same counts again: nothing new */
  assert_int_equal(sample_confirm(&k, &one, 4), 1);  /* again on newer counts: named */
  assert_int_equal(sample_confirm(&k, &one, 4), 1);  /* and stays named */
  assert_int_equal(sample_confirm(&k, &two, 5), 0);  /* another rank starts over */
  assert_int_equal(sample_confirm(&k, &one, 6), 0);
  assert_int_equal(sample_confirm(&k, &none, 7), 0); /* a judgment with none ends the streak */
  assert_int_equal(sample_confirm(&k, &one, 8), 0);
  assert_int_equal(sample_confirm(&k, &one, 9), 1);
}

/* The window keeps the last SAMPLE_WINDOW samples. */
static void test_window(void **st) {
  (void)st;
  sample_window_t w;
  memset(&w, 0, sizeof w);
  sample_t s;
  sample_classify(py_wait, &s);
  for (int i = 0; i < SAMPLE_WINDOW; i++) sample_add(&w, &s);
  sample_classify(py_work, &s);
  for (int i = 0; i < 10; i++) sample_add(&w, &s);
  sample_report_t r;
  sample_report(&w, &r);
  assert_int_equal(r.n, SAMPLE_WINDOW);
  assert_int_equal(r.nwait, SAMPLE_WINDOW - 10);
  assert_string_equal(r.wait.name, "all_reduce");
  assert_int_equal(r.work[0].n, 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_classify),
      cmocka_unit_test(test_confirm),
      cmocka_unit_test(test_straggler),
      cmocka_unit_test(test_callee_when_others_only_wait),
      cmocka_unit_test(test_balanced),
      cmocka_unit_test(test_window),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
