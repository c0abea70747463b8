/* Unit tests of the hang watchdog's verdict (launcher/hang/hang_report.c), the straggler view's
 * arithmetic (straggler.c) and the progress tracker's step regex (progress.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "launcher/hang/hang.h"
#include "launcher/hang/progress.h"
#include "launcher/hang/sample.h"
#include "launcher/hang/straggler.h"

static char *text_of(int pid, const char *frames) {
  static char buf[16][512];
  static int i;
  char *b = buf[i++ % 16];
  snprintf(b, 512, "@@pid %d\n@@comm prog\n@@tool gdb\n@@thread %d S do_sys_poll prog\n@@frames %s\n@@stack-begin\nraw\n@@stack-end\n",
           pid, pid, frames);
  return b;
}

/* The rank whose stack leaves the majority's path is named, with the function where it left. */
static void test_majority(void **st) {
  (void)st;
  hang_rank_t r[4] = {
      {0, "h0", text_of(10, "poll;recv_rep;proxy_run;gpl_barrier;main"), 5},
      {1, "h0", text_of(11, "__GI___libc_read;stuck_in_read;main"), 5},
      {2, "h1", text_of(12, "poll;recv_rep;proxy_run;gpl_barrier;main"), 5},
      {3, "h1", text_of(13, "poll;recv_rep;proxy_run;gpl_barrier;main"), 5},
  };
  int odd[4];
  hang_verdict_t v;
  hang_analyze(r, 4, odd, &v);
  assert_int_equal(v.nodd, 1);
  assert_int_equal(odd[1], 1);
  assert_int_equal(odd[0] + odd[2] + odd[3], 0);
  assert_string_equal(v.func, "stuck_in_read");
  assert_non_null(strstr(v.summary, "rank 1 (host h0, pid 11) is in stuck_in_read"));
  assert_non_null(strstr(v.summary, "the other 3 ranks are in gpl_barrier"));
}

/* Waiting ranks whose innermost frames differ (a progress engine's poll or yield) are still the
 * majority: only the outermost frames are compared. */
static void test_noise_inside_wait(void **st) {
  (void)st;
  hang_rank_t r[5] = {
      {0, "h", text_of(1, "epoll_wait;a;b;c;d;e;f;g;h;all_reduce;main;<module>"), 5},
      {1, "h", text_of(2, "sched_yield;x;b;c;d;e;f;g;h;all_reduce;main;<module>"), 5},
      {2, "h", text_of(3, "poll;a;b;c;d;e;f;g;h;all_reduce;main;<module>"), 5},
      {3, "h", text_of(4, "stuck_in_data_loader;main;<module>"), 5},
      {4, "h", NULL, 5},
  };
  int odd[5];
  hang_verdict_t v;
  hang_analyze(r, 5, odd, &v);
  assert_int_equal(v.nodd, 1);
  assert_int_equal(odd[3], 1);
  assert_string_equal(v.func, "stuck_in_data_loader");
  assert_non_null(strstr(v.summary, "1 rank sent no stack in time"));
}

/* Two ranks: no majority; the one not waiting for a peer is odd. Everyone alike: nobody. */
static void test_two_and_alike(void **st) {
  (void)st;
  hang_rank_t r[2] = {{0, "h", text_of(1, "poll;gpl_barrier;main"), 5}, {1, "h", text_of(2, "read;stuck_in_read;main"), 5}};
  int odd[2];
  hang_verdict_t v;
  hang_analyze(r, 2, odd, &v);
  assert_int_equal(odd[0], 0);
  assert_int_equal(odd[1], 1);
  assert_string_equal(v.func, "stuck_in_read");
  hang_rank_t same[3] = {{0, "h", text_of(1, "nanosleep;idle;main"), 5}, {1, "h", text_of(2, "nanosleep;idle;main"), 5},
                         {2, "h", text_of(3, "nanosleep;idle;main"), 5}};
  int odd3[3];
  hang_analyze(same, 3, odd3, &v);
  assert_int_equal(v.nodd, 0);
  assert_non_null(strstr(v.summary, "every rank has the same stack"));
}

/* A rank whose stack another tool read (eu-stack where gdb failed: __poll, read, @@GLIBC) is where
 * the others are, not odd (issue 34: a healthy rank named "in __poll"). */
static void test_tools_alike(void **st) {
  (void)st;
  hang_rank_t r[5] = {
      {0, "h0", text_of(10, "__GI___poll;progress;gpl_barrier;main"), 5},
      {1, "h0", text_of(11, "__poll;progress;gpl_barrier;main"), 5},
      {2, "h1", text_of(12, "poll@@GLIBC_2.2.5;progress;gpl_barrier;main"), 5},
      {3, "h1", text_of(13, "__GI___poll;progress;gpl_barrier;main"), 5},
      {4, "h2", text_of(14, "read;stuck_in_read;main"), 5},
  };
  int odd[5];
  hang_verdict_t v;
  hang_analyze(r, 5, odd, &v);
  assert_int_equal(v.nodd, 1);
  assert_int_equal(odd[4], 1);
  assert_non_null(strstr(v.summary, "rank 4 (host h2, pid 14) is in stuck_in_read"));
  assert_non_null(strstr(v.summary, "the other 4 ranks are in gpl_barrier"));
}

/* A rank that made progress within hang_timeout is not hung: never named, whatever its stack
 * (the others silent in a start-up, it already past it). */
static void test_live_never_named(void **st) {
  (void)st;
  hang_rank_t r[4] = {
      {0, "h0", text_of(10, "compute;train;main"), 1.5},
      {1, "h0", text_of(11, "_find_and_load;main"), 6},
      {2, "h1", text_of(12, "_find_and_load;main"), 6},
      {3, "h1", text_of(13, "_find_and_load;main"), 6},
  };
  int odd[4];
  hang_verdict_t v;
  hang_analyze_at(r, 4, 5, odd, &v);
  assert_int_equal(v.nodd, 0);
  assert_int_equal(odd[0], 0);
  hang_analyze(r, 4, odd, &v); /* without the timeout: the stack alone decides */
  assert_int_equal(odd[0], 1);
}

/* py-spy's text of a program importing modules is marked starting (hang_collect.c); a stack
 * without the mark, or no stack, is not. */
static void test_starting(void **st) {
  (void)st;
  assert_int_equal(hang_starting("@@pid 1\n@@startup 1\n@@tool py-spy\n@@frames a\n@@stack-begin\n"), 1);
  assert_int_equal(hang_starting(text_of(1, "_find_and_load;main")), 0);
  assert_int_equal(hang_starting(NULL), 0);
  /* waiting for the peers: a collective, a barrier; a rank at work or without a stack is not */
  assert_int_equal(hang_waiting(text_of(1, "poll;all_reduce;train;main")), 1);
  assert_int_equal(hang_waiting(text_of(2, "compute;train;main")), 0);
  assert_int_equal(hang_waiting(NULL), 0);
  /* only the first process's header counts */
  assert_int_equal(hang_starting("@@pid 1\n@@stack-begin\n@@stack-end\n@@pid 2\n@@startup 1\n"), 0);
}

/* py-spy's text of one rank as hang_collect writes it (startup: the @@startup mark). */
static char *pyspy_of(int pid, int startup, const char *frames) {
  static char buf[16][512];
  static int i;
  char *b = buf[i++ % 16];
  snprintf(b, 512, "@@pid %d\n@@comm python3\n%s@@tool py-spy\n@@frames %s\n@@stack-begin\nraw\n@@stack-end\n", pid,
           startup ? "@@startup 1\n" : "", frames);
  return b;
}

/* Too early for a verdict (issue 34, hang_netns under load), with the stacks as they came: the
 * silent ranks wait in all_reduce while their peers are still in the process group's rendezvous,
 * or while the stuck rank only just stopped (silent 0.3 s, a healthy rank's stale age 5 s). The
 * verdict then named nobody ("no majority"); it must wait, and once the stuck rank has been
 * silent hang_timeout, it is named and nobody else. */
static void test_too_early(void **st) {
  (void)st;
  const char *ar = "all_reduce;main;<module>";
  int starting = -1;
  hang_rank_t rdv[6] = {
      {0, "h0", pyspy_of(10, 0, ar), 5.0},
      {1, "h0", pyspy_of(11, 1, "_store_based_barrier;init_process_group;main;<module>"), 4.9},
      {2, "h1", pyspy_of(12, 0, ar), 4.9},
      {3, "h1", pyspy_of(13, 1, "_new_process_group_helper;init_process_group;main;<module>"), 4.9},
      {4, "h2", pyspy_of(14, 0, ar), 4.9},
      {5, "h2", pyspy_of(15, 1, "_new_process_group_helper;init_process_group;main;<module>"), 4.9},
  };
  assert_int_equal(hang_too_early(rdv, 6, 5, &starting), 1);
  assert_int_equal(starting, 1);

  hang_rank_t b[6] = {
      {0, "h0", pyspy_of(10, 0, ar), 0.3}, {1, "h0", pyspy_of(11, 0, ar), 0.3},
      {2, "h1", pyspy_of(12, 0, ar), 0.3}, {3, "h1", pyspy_of(13, 0, "stuck_in_data_loader;main;<module>"), 0.3},
      {4, "h2", pyspy_of(14, 0, ar), 0.3}, {5, "h2", pyspy_of(15, 0, ar), 5.0},
  };
  assert_int_equal(hang_too_early(b, 6, 5, &starting), 3);
  assert_int_equal(starting, 0);
  int odd[6];
  hang_verdict_t v;
  hang_analyze_at(b, 6, 5, odd, &v); /* what was said then: nobody named */
  assert_int_equal(v.nodd, 0);
  /* a hang_timeout later: the stuck rank is silent that long; a verdict now, naming it alone */
  for (int i = 0; i < 6; i++) b[i].silent_s = 5.2;
  assert_int_equal(hang_too_early(b, 6, 5, &starting), -1);
  hang_analyze_at(b, 6, 5, odd, &v);
  assert_int_equal(v.nodd, 1);
  assert_int_equal(odd[3], 1);
  assert_non_null(strstr(v.summary, "rank 3 (host h1, pid 13) is in stuck_in_data_loader"));
  assert_non_null(strstr(v.summary, "the other 5 ranks are in all_reduce"));

  /* a silent rank elsewhere, or whose stack did not come, is a verdict now */
  b[0].silent_s = 0.3;
  b[3].silent_s = 0.3;
  b[5].silent_s = 6;
  b[5].text = pyspy_of(15, 0, "stuck_in_data_loader;main;<module>");
  assert_int_equal(hang_too_early(b, 6, 5, &starting), -1);
  b[5].text = NULL;
  assert_int_equal(hang_too_early(b, 6, 5, &starting), -1);
  /* every rank waits (a collective hung as a whole): nobody on its way, a verdict now */
  hang_rank_t all[3] = {{0, "h0", pyspy_of(1, 0, ar), 6}, {1, "h0", pyspy_of(2, 0, ar), 0.5},
                        {2, "h1", pyspy_of(3, 0, ar), 6}};
  assert_int_equal(hang_too_early(all, 3, 5, &starting), -1);
  /* nobody silent that long: nothing to put off */
  all[0].silent_s = all[2].silent_s = 1;
  assert_int_equal(hang_too_early(all, 3, 5, &starting), -1);
}

/* The one straggler verdict (issue 34): what --summary's "straggler" says and the lines printed. */
typedef struct verdict_out_s {
  cJSON *sum;
  cJSON *o;
  char *text;
} verdict_out_t;

static void verdict(const strag_steps_t *st, const sample_verdict_t *sv, verdict_out_t *out) {
  static char *hosts[] = {"h0", "h1", "h2"};
  size_t len = 0;
  FILE *f = open_memstream(&out->text, &len);
  assert_non_null(f);
  out->sum = cJSON_CreateObject();
  strag_verdict(st, sv, hosts, f, out->sum);
  fclose(f);
  out->o = cJSON_GetObjectItem(out->sum, "straggler");
}

static void verdict_free(verdict_out_t *out) {
  cJSON_Delete(out->sum);
  free(out->text);
}

static int num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsNumber(v) ? v->valueint : -99;
}

static void test_one_verdict(void **state) {
  (void)state;
  /* the step view's slowest, unflagged: rank 2; the samples: rank 1 in slow_augment */
  strag_rank_t ranks[3] = {{0, 30, 0.1, 0.001}, {1, 30, 0.1, 0.0015}, {2, 30, 0.1, 0.002}};
  strag_steps_t st = {3, ranks, 0.1, 0.2, 2, 0};
  sample_verdict_t sv = {.rank = 1, .share = 0.83, .wait_self = 0.05, .wait_others = 0.8, .nranks = 3};
  snprintf(sv.func, sizeof sv.func, "slow_augment");
  snprintf(sv.wait_func, sizeof sv.wait_func, "all_reduce");
  verdict_out_t v;
  verdict(&st, &sv, &v);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v.o, "method")), "sample");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(v.o, "flagged")));
  assert_int_equal(num(v.o, "rank"), 1);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v.o, "function")), "slow_augment");
  assert_null(cJSON_GetObjectItem(v.o, "slowest")); /* the old keys are gone */
  assert_null(cJSON_GetObjectItem(v.o, "sample"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(v.o, "ranks")), 3);
  assert_non_null(strstr(v.text, "rank 1 (host h1) is the straggler"));
  assert_null(strstr(v.text, "rank 2"));
  verdict_free(&v);

  /* the step view flags rank 2 but the samples name rank 1: only rank 1 anywhere */
  st.flagged = 1;
  ranks[2].lag_s = 0.05;
  verdict(&st, &sv, &v);
  assert_int_equal(num(v.o, "rank"), 1);
  assert_null(strstr(v.text, "rank 2"));
  verdict_free(&v);

  /* sampled, nobody named; a synchronous job's step view sees only noise: no rank at all */
  sv.rank = -1;
  st.flagged = 0;
  verdict(&st, &sv, &v);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v.o, "method")), "sample");
  assert_true(cJSON_IsFalse(cJSON_GetObjectItem(v.o, "flagged")));
  assert_null(cJSON_GetObjectItem(v.o, "rank"));
  assert_int_equal(num(v.o, "ranks_sampled"), 3);
  assert_string_equal(v.text, "");
  verdict_free(&v);

  /* the samples name nobody, the step view flags rank 2 (ranks that run apart): the steps decide */
  st.flagged = 1;
  verdict(&st, &sv, &v);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v.o, "method")), "steps");
  assert_int_equal(num(v.o, "rank"), 2);
  assert_non_null(cJSON_GetObjectItem(v.o, "lag_s"));
  assert_non_null(strstr(v.text, "gpulaunch: straggler: rank 2 (host h2) reports its steps 50 ms after"));
  verdict_free(&v);

  /* no sampling ([job] straggler = steps): the step view alone; with neither, no key */
  verdict(&st, NULL, &v);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(v.o, "method")), "steps");
  assert_int_equal(num(v.o, "rank"), 2);
  verdict_free(&v);
  verdict(NULL, NULL, &v);
  assert_null(v.o);
  verdict_free(&v);
}

/* Garbage from a rank (no @@ lines, a frames line without frames) is no crash and no verdict. */
static void test_garbage(void **st) {
  (void)st;
  hang_rank_t r[3] = {{0, "h", "@@frames \n", 1}, {1, "h", "no header at all\n@@frames", 1}, {2, "h", "", 1}};
  int odd[3];
  hang_verdict_t v;
  hang_analyze(r, 3, odd, &v);
  assert_int_equal(v.nodd, 0);
  char dir[] = "/tmp/gplhangXXXXXX", txt[256], json[256];
  assert_non_null(mkdtemp(dir));
  assert_int_equal(hang_write_report(dir, r, 3, odd, &v, 5, txt, json, sizeof txt), 0);
  assert_int_equal(access(json, R_OK), 0);
  unlink(txt);
  unlink(json);
  rmdir(dir);
}

/* A rank that reports each step 50 ms after the others is the slowest, with that lag. */
static void test_straggler(void **st) {
  (void)st;
  enum { R = 4, N = 20 };
  prog_step_t s[R][N];
  prog_step_t *p[R];
  int n[R];
  for (int r = 0; r < R; r++) {
    for (int i = 0; i < N; i++) s[r][i] = (prog_step_t){i, 1000.0 + i * 0.1 + (r == 2 ? 0.05 : 0.001 * r)};
    p[r] = s[r];
    n[r] = N;
  }
  n[3] = N - 5; /* a rank with fewer steps kept */
  strag_rank_t out[R];
  double med;
  int slow;
  strag_compute(p, n, R, out, &med, &slow);
  assert_int_equal(slow, 2);
  assert_true(fabs(med - 0.1) < 1e-6);
  assert_true(fabs(out[2].lag_s - 0.0485) < 0.002);
  assert_true(fabs(out[0].lag_s) < 0.003);
}

/* \d in step_regex means a digit; the first group is the step; a bad regex is refused. */
static void test_step_regex(void **st) {
  (void)st;
  prog_t *p;
  char err[128];
  assert_int_equal(prog_create(&p, "step (\\d+)", NULL, err, sizeof err), 0);
  prog_line(p, "loss 0.5 step 17 lr 1", 21);
  prog_line(p, "nothing here", 12);
  prog_line(p, "step 18", 7);
  prog_step_t s[4];
  assert_int_equal(prog_steps(p, s, 4), 2);
  assert_true(s[0].step == 17 && s[1].step == 18);
  assert_true(prog_age(p) < 1.0);
  prog_free(p);
  assert_int_not_equal(prog_create(&p, "step (\\d+", NULL, err, sizeof err), 0);
  assert_true(err[0] != 0);
  /* what would take glibc's regcomp gigabytes (found by fuzz_hang) is refused with a reason */
  assert_int_not_equal(prog_create(&p, "step (x+++++++++++++++++++++++++)", NULL, err, sizeof err), 0);
  assert_non_null(strstr(err, "repetition of a repetition"));
  assert_int_not_equal(prog_create(&p, "((a{30}){30}){30}", NULL, err, sizeof err), 0);
  assert_int_not_equal(prog_create(&p, "(a{100})", NULL, err, sizeof err), 0);
  assert_non_null(strstr(err, "bound over 32"));
  /* a number that is not one is no step */
  assert_int_equal(prog_create(&p, "step (\\w+)", NULL, err, sizeof err), 0);
  prog_line(p, "step nan", 8);
  prog_line(p, "step inf", 8);
  prog_line(p, "step 5", 6);
  assert_int_equal(prog_steps(p, s, 4), 1);
  assert_true(s[0].step == 5);
  prog_free(p);
}

/* Issue 29: at a failure, the silent rank still running that is the likely cause. */
static void test_silent_pick(void **st) {
  (void)st;
  char f[256];
  /* rank 0 failed (no stack); 1 and 3 wait in the collective, 2 is in its data loader */
  hang_rank_t r[4] = {
      {0, "h0", "@@none the program is not running\n", 1},
      {1, "h0", text_of(11, "poll;proxy_run;gpl_barrier;train;main"), 16},
      {2, "h1", text_of(12, "__GI___clock_nanosleep;nanosleep;nap;stuck_in_data_loader;next_batch;train;main"), 16.5},
      {3, "h1", text_of(13, "poll;proxy_run;gpl_barrier;train;main"), 16},
  };
  int cand[4] = {0, 1, 1, 1};
  assert_int_equal(hang_silent_pick(r, 4, cand, 0, f, sizeof f), 2);
  assert_string_equal(f, "next_batch > stuck_in_data_loader > nap");
  /* only rank 2 is still running (Python: its own frames only) */
  hang_rank_t py[3] = {{0, "h0", NULL, 1}, {1, "h0", NULL, 1},
                       {2, "h1", text_of(12, "stuck_in_data_loader;main;<module>"), 16}};
  int c1[3] = {0, 0, 1};
  assert_int_equal(hang_silent_pick(py, 3, c1, 1, f, sizeof f), 2);
  assert_string_equal(f, "stuck_in_data_loader");
  /* ... when the failure was a timeout: else it may be busy on its own (an evaluation) */
  assert_int_equal(hang_silent_pick(py, 3, c1, 0, f, sizeof f), -1);
  /* ... stuck in a queue's wait too; but one in a collective is no cause; nor are ranks all alike */
  py[2].text = text_of(12, "Condition.wait;Queue.get;next_batch;main;<module>");
  assert_int_equal(hang_silent_pick(py, 3, c1, 1, f, sizeof f), 2);
  assert_string_equal(f, "next_batch");
  py[2].text = text_of(12, "all_reduce;main;<module>");
  assert_int_equal(hang_silent_pick(py, 3, c1, 1, f, sizeof f), -1);
  r[2].text = r[1].text;
  assert_int_equal(hang_silent_pick(r, 4, cand, 0, f, sizeof f), -1);
  /* a silent rank whose stack could not be read, the others waiting: named without a function */
  r[2].text = "@@pid 12\n@@tool none\n@@frames \n";
  assert_int_equal(hang_silent_pick(r, 4, cand, 0, f, sizeof f), 2);
  assert_string_equal(f, "");
  /* a busy rank not silent is never named, odd or not */
  r[2].text = text_of(12, "compute;train;main");
  cand[2] = 0;
  assert_int_equal(hang_silent_pick(r, 4, cand, 0, f, sizeof f), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_majority),  cmocka_unit_test(test_noise_inside_wait), cmocka_unit_test(test_two_and_alike),
      cmocka_unit_test(test_garbage),   cmocka_unit_test(test_straggler),          cmocka_unit_test(test_step_regex),
      cmocka_unit_test(test_silent_pick), cmocka_unit_test(test_tools_alike), cmocka_unit_test(test_live_never_named),
      cmocka_unit_test(test_starting), cmocka_unit_test(test_one_verdict), cmocka_unit_test(test_too_early),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
