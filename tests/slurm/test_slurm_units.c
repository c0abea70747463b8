/* Unit tests of launcher/job/slurm.c and sigorigin.c: Slurm's reason for a signal from real
 * `scontrol show job -o` lines, the program's SLURM_* variables, who sent a signal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "gpulaunch/error.h"
#include "launcher/sup/sigorigin.h"
#include "launcher/job/slurm.h"

/* Lines as scontrol 22.05 prints them (shortened to the fields that matter and their neighbours). */
#define HEAD "JobId=17 JobName=low UserId=root(0) GroupId=root(0) Priority=1 Nice=0 "
#define MID " Dependency=(null) Requeue=1 "
#define TAIL " BatchFlag=1 ExitCode=0:0 TimeLimit=UNLIMITED PreemptEligibleTime=2026-12-03T14:16:10 "
static const char *const k_running = HEAD "JobState=RUNNING Reason=None" MID "Restarts=0" TAIL "PreemptTime=None SuspendTime=None";
static const char *const k_cancel = HEAD "JobState=COMPLETING Reason=None" MID "Restarts=0" TAIL "PreemptTime=None SuspendTime=None";
static const char *const k_requeue = HEAD "JobState=COMPLETING Reason=None" MID "Restarts=1" TAIL "PreemptTime=None SuspendTime=None";
static const char *const k_grace = HEAD "JobState=RUNNING Reason=None" MID "Restarts=0" TAIL "PreemptTime=2026-12-03T14:16:14 SuspendTime=None";
static const char *const k_timeout = HEAD "JobState=COMPLETING Reason=TimeLimit" MID "Restarts=0" TAIL "PreemptTime=None SuspendTime=None";
static const char *const k_cancelled = HEAD "JobState=CANCELLED Reason=None" MID "Restarts=2" TAIL "PreemptTime=None";

static void test_classify(void **state) {
  (void)state;
  assert_int_equal(slurm_end_classify(k_running, 0), SLURM_END_SIGNALLED);
  assert_int_equal(slurm_end_classify(k_cancel, 0), SLURM_END_CANCELLED);
  assert_int_equal(slurm_end_classify(k_requeue, 0), SLURM_END_REQUEUED);
  /* The same line in the run after that requeue (SLURM_RESTART_COUNT=1) is a cancel. */
  assert_int_equal(slurm_end_classify(k_requeue, 1), SLURM_END_CANCELLED);
  assert_int_equal(slurm_end_classify(k_grace, 0), SLURM_END_PREEMPTED);
  assert_int_equal(slurm_end_classify(k_timeout, 0), SLURM_END_TIMELIMIT);
  assert_int_equal(slurm_end_classify(k_cancelled, 2), SLURM_END_CANCELLED);
  assert_int_equal(slurm_end_classify("JobState=PREEMPTED Reason=None", 0), SLURM_END_PREEMPTED);
  assert_int_equal(slurm_end_classify("slurm_load_jobs error: Invalid job id specified", 0), SLURM_END_UNKNOWN);
  assert_int_equal(slurm_end_classify("", 0), SLURM_END_UNKNOWN);
  /* Only a cancel is not a preemption; not knowing keeps SIGTERM's old meaning. */
  assert_false(slurm_end_is_preemption(SLURM_END_CANCELLED));
  assert_true(slurm_end_is_preemption(SLURM_END_UNKNOWN));
  assert_true(slurm_end_is_preemption(SLURM_END_REQUEUED));
  assert_true(slurm_end_is_preemption(SLURM_END_TIMELIMIT));
  assert_true(slurm_end_is_preemption(SLURM_END_SIGNALLED));
  assert_non_null(strstr(slurm_end_describe(SLURM_END_CANCELLED), "scancel"));
}

static void test_compress(void **state) {
  (void)state;
  char b[64];
  int a[] = {2, 2, 1};
  slurm_compress_counts(a, 3, b, sizeof b);
  assert_string_equal(b, "2(x2),1");
  int c[] = {4};
  slurm_compress_counts(c, 1, b, sizeof b);
  assert_string_equal(b, "4");
  int d[] = {3, 1, 1, 1, 3};
  slurm_compress_counts(d, 5, b, sizeof b);
  assert_string_equal(b, "3,1(x3),3");
}

static void test_task_vars(void **state) {
  (void)state;
  assert_true(slurm_is_task_var("SLURM_TASK_PID=1234"));
  assert_true(slurm_is_task_var("SLURM_PMIXP_ABORT_AGENT_PORT=46805"));
  assert_true(slurm_is_task_var("SLURM_PMIX_MAPPING_SERV=(vector,(0,1,1))"));
  assert_false(slurm_is_task_var("SLURM_JOB_ID=12"));
  assert_false(slurm_is_task_var("SLURM_TASK_PIDX=1"));
  assert_false(slurm_is_task_var("SLURM_PROCID=0"));
}

typedef struct env_s {
  char keys[32][40], values[32][64];
  int n;
} env_t;

static int collect(void *arg, const char *k, const char *v) {
  env_t *e = arg;
  if (e->n == 32) return GPL_ENOMEM;
  snprintf(e->keys[e->n], sizeof e->keys[0], "%s", k);
  snprintf(e->values[e->n], sizeof e->values[0], "%s", v);
  e->n++;
  return GPL_OK;
}

static const char *get(const env_t *e, const char *k) {
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->keys[i], k) == 0) return e->values[i];
  return NULL;
}

static void test_child_env(void **state) {
  (void)state;
  /* Rank 3 of 5 on 3 nodes: ranks 0,1 on node 0, ranks 2,3 on node 1, rank 4 on node 2. */
  int node_of[] = {0, 0, 1, 1, 2};
  job_t job;
  memset(&job, 0, sizeof job);
  job.rank = 3;
  job.size = 5;
  job.local_rank = 1;
  job.local_size = 2;
  job.node = 1;
  job.nnodes = 3;
  job.node_of = node_of;
  env_t e = {0};
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_JOBID");
  assert_int_equal(slurm_child_env(&job, collect, &e), GPL_OK);
  assert_int_equal(e.n, 0); /* outside Slurm, nothing */
  setenv("SLURM_JOB_ID", "42", 1);
  assert_int_equal(slurm_child_env(&job, collect, &e), GPL_OK);
  assert_string_equal(get(&e, "SLURM_PROCID"), "3");
  assert_string_equal(get(&e, "SLURM_LOCALID"), "1");
  assert_string_equal(get(&e, "SLURM_NODEID"), "1");
  assert_string_equal(get(&e, "SLURM_NTASKS"), "5");
  assert_string_equal(get(&e, "SLURM_NPROCS"), "5");
  assert_string_equal(get(&e, "SLURM_NNODES"), "3");
  assert_string_equal(get(&e, "SLURM_STEP_NUM_TASKS"), "5");
  assert_string_equal(get(&e, "SLURM_STEP_NUM_NODES"), "3");
  assert_string_equal(get(&e, "SLURM_TASKS_PER_NODE"), "2(x2),1");
  assert_string_equal(get(&e, "SLURM_STEP_TASKS_PER_NODE"), "2(x2),1");
  assert_string_equal(get(&e, "SLURM_GTIDS"), "2,3");
  unsetenv("SLURM_JOB_ID");
}

static volatile int g_cb;
static void on_sig(uv_signal_t *h, int signum) {
  g_cb = signum;
  uv_signal_stop(h);
}

static void test_sigorigin(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  uv_signal_t h;
  uv_signal_init(&loop, &h);
  uv_signal_start(&h, on_sig, SIGUSR2);
  assert_int_equal(sigorigin_watch(SIGUSR2), GPL_OK);
  sigorigin_t o;
  sigorigin_get(SIGUSR2, &o);
  assert_int_equal(o.pid, 0); /* nothing seen yet */
  /* A child sends it: the recorded sender is the child, and libuv's watcher still runs. */
  pid_t me = getpid(), child = fork();
  if (child == 0) {
    kill(me, SIGUSR2);
    pause(); /* stay alive while the parent reads our /proc entry */
    _exit(0);
  }
  g_cb = 0;
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(g_cb, SIGUSR2);
  sigorigin_get(SIGUSR2, &o);
  assert_int_equal(o.pid, child);
  assert_int_equal(o.code, SI_USER);
  assert_string_equal(o.comm, "test_slurm_unit"); /* the child's name: our own (15 characters) */
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);

  /* Not from a slurmstepd, or not in a job, or proctrack/pgid: not delivered by Slurm. */
  char conf[] = "/tmp/gpl-slurm-unit-XXXXXX";
  int fd = mkstemp(conf);
  assert_true(fd >= 0);
  assert_true(write(fd, "ProctrackType=proctrack/linuxproc\n", 34) == 34);
  close(fd);
  setenv("SLURM_CONF", conf, 1);
  setenv("SLURM_JOB_ID", "42", 1);
  assert_false(slurm_signal_reached_program(&o));
  snprintf(o.comm, sizeof o.comm, "slurmstepd");
  assert_true(slurm_signal_reached_program(&o));
  unsetenv("SLURM_JOB_ID");
  assert_false(slurm_signal_reached_program(&o));
  unlink(conf);
  unsetenv("SLURM_CONF");

  uv_close((uv_handle_t *)&h, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  sigorigin_reset();
}

/* proctrack/pgid: Slurm's signals miss the program. slurm.c reads the setting once per process,
 * so this runs in a child, and before any other test made the parent read it. */
static void test_proctrack_pgid(void **state) {
  (void)state;
  char conf[] = "/tmp/gpl-slurm-unit-XXXXXX";
  int fd = mkstemp(conf);
  assert_true(fd >= 0);
  const char *text = "# site config\nproctracktype = proctrack/pgid\n";
  assert_true(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  pid_t c = fork();
  if (c == 0) {
    setenv("SLURM_CONF", conf, 1);
    setenv("SLURM_JOB_ID", "42", 1);
    sigorigin_t o = {.pid = 1};
    snprintf(o.comm, sizeof o.comm, "slurmstepd");
    _exit(slurm_signal_reached_program(&o) ? 1 : 0);
  }
  int st = -1;
  waitpid(c, &st, 0);
  unlink(conf);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_classify),   cmocka_unit_test(test_compress),
      cmocka_unit_test(test_task_vars),  cmocka_unit_test(test_child_env),
      cmocka_unit_test(test_proctrack_pgid), cmocka_unit_test(test_sigorigin),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
