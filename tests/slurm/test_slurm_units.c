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
#include <sys/stat.h>
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

/* ---- the scontrol query, tried again while it fails ----
 * A stand-in scontrol first in PATH fails its first FAILS runs as a loaded slurmctld makes the real
 * one fail (exit 1, "Socket timed out"), then answers k_cancel; HANG makes it never answer. What is
 * tested is the query's own retry and bound: the real scontrol cannot be made to fail on demand. */
static char g_bin[64];

static void stand_in(const char *body) {
  snprintf(g_bin, sizeof g_bin, "/tmp/gpl-scontrol.XXXXXX");
  assert_non_null(mkdtemp(g_bin));
  char path[128];
  snprintf(path, sizeof path, "%s/scontrol", g_bin);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\nn=$(cat %s/n 2>/dev/null || echo 0); echo $((n + 1)) > %s/n\n%s\n", g_bin, g_bin, body);
  fclose(f);
  assert_int_equal(chmod(path, 0755), 0);
}

static int tries(void) {
  char p[128];
  snprintf(p, sizeof p, "%s/n", g_bin);
  FILE *f = fopen(p, "r");
  int n = -1;
  if (f) {
    if (fscanf(f, "%d", &n) != 1) n = -1;
    fclose(f);
  }
  return n;
}

/* Run the query on a loop of its own until it is done; its answer, and the seconds it took. */
static slurm_end_t query(double bound, double *took) {
  char *old = getenv("PATH") ? strdup(getenv("PATH")) : strdup("/usr/bin:/bin");
  char path[4096];
  snprintf(path, sizeof path, "%s:%s", g_bin, old);
  setenv("PATH", path, 1);
  setenv("SLURM_JOB_ID", "17", 1);
  uv_loop_t loop;
  uv_loop_init(&loop);
  slurm_end_query_reset();
  uint64_t t0 = uv_hrtime();
  assert_int_equal(slurm_end_query_start(&loop, bound), GPL_OK);
  slurm_end_t end = SLURM_END_UNKNOWN;
  while (!slurm_end_query_done(&end)) uv_run(&loop, UV_RUN_ONCE);
  *took = (double)(uv_hrtime() - t0) / 1e9;
  uv_run(&loop, UV_RUN_DEFAULT); /* the handles' closes */
  assert_int_equal(uv_loop_close(&loop), 0);
  slurm_end_query_reset();
  setenv("PATH", old, 1);
  free(old);
  unsetenv("SLURM_JOB_ID");
  return end;
}

static void rm_stand_in(void) {
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_bin);
  assert_int_equal(system(cmd), 0);
}

static void test_query_again(void **state) {
  (void)state;
  double took;
  char body[1024];
  /* fails twice, then answers: a cancel, on the third try */
  snprintf(body, sizeof body, "if [ $n -lt 2 ]; then echo 'slurm_load_jobs error: Socket timed out on send/recv "
           "operation' >&2; exit 1; fi\necho '%s'", k_cancel);
  stand_in(body);
  assert_int_equal(query(10, &took), SLURM_END_CANCELLED);
  assert_int_equal(tries(), 3);
  assert_true(took >= 0.9 && took < 5);
  rm_stand_in();
  /* always fails: unknown once the bound is over, after several tries */
  stand_in("echo 'Unable to contact slurm controller (connect failure)' >&2; exit 1");
  assert_int_equal(query(1.6, &took), SLURM_END_UNKNOWN);
  assert_true(tries() >= 2);
  assert_true(took < 3);
  rm_stand_in();
  /* never answers: unknown at the bound, the hung scontrol killed */
  stand_in("exec sleep 30");
  assert_int_equal(query(1.0, &took), SLURM_END_UNKNOWN);
  assert_int_equal(tries(), 1);
  assert_true(took >= 0.9 && took < 3);
  rm_stand_in();
  /* no scontrol at all: unknown at once, and nothing else is killed (a spawn that failed has no
   * pid: killing "it" would be kill(0), this process group). In a child of its own group. */
  stand_in("exit 0");
  char none[80];
  snprintf(none, sizeof none, "%s/scontrol", g_bin);
  unlink(none);
  pid_t c = fork();
  assert_true(c >= 0);
  if (c == 0) {
    setpgid(0, 0);
    const char *keep = getenv("PATH");
    setenv("PATH", "/nonexistent", 1); /* query() puts the empty stand-in folder first */
    slurm_end_t e = query(5, &took);
    if (keep) setenv("PATH", keep, 1);
    _exit(e == SLURM_END_UNKNOWN && took < 1 ? 0 : 1);
  }
  int st = -1;
  waitpid(c, &st, 0);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  rm_stand_in();
  /* answers at once: one try */
  snprintf(body, sizeof body, "echo '%s'", k_running);
  stand_in(body);
  assert_int_equal(query(10, &took), SLURM_END_SIGNALLED);
  assert_int_equal(tries(), 1);
  assert_true(took < 2);
  rm_stand_in();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_classify),   cmocka_unit_test(test_compress),
      cmocka_unit_test(test_task_vars),  cmocka_unit_test(test_child_env),
      cmocka_unit_test(test_proctrack_pgid), cmocka_unit_test(test_sigorigin),
      cmocka_unit_test(test_query_again),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
