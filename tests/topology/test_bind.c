/* plan_bind on this machine: an inherited binding that excludes the rank's cores is reported and replaced, for all threads and children. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "gpulaunch/error.h"
#include "topology/plan.h"
#include "topology/topo.h"

static cpu_set_t g_saved;

static int setup(void **state) {
  (void)state;
  return sched_getaffinity(0, sizeof g_saved, &g_saved);
}
static int teardown(void **state) {
  (void)state;
  return sched_setaffinity(0, sizeof g_saved, &g_saved);
}

static void to_cpuset(hwloc_const_bitmap_t b, cpu_set_t *s) {
  CPU_ZERO(s);
  for (int i = hwloc_bitmap_first(b); i >= 0; i = hwloc_bitmap_next(b, i)) CPU_SET(i, s);
}

static int g_pipe[2];
static void *idle_thread(void *arg) {
  (void)arg;
  char c;
  if (read(g_pipe[0], &c, 1) < 0) return NULL;
  return NULL;
}

static void test_bind_replaces_inherited(void **state) {
  (void)state;
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, NULL), 0);
  int npu = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PU);
  if (npu < 2) {
    print_message("one CPU only: nothing to exclude; binding checked without it\n");
  }
  plan_opts_t o;
  plan_opts_default(&o);
  o.local_size = npu >= 2 ? 2 : 1;
  o.no_gpus = 1;
  plan_t *p = NULL;
  assert_int_equal(plan_make(t, &o, &p), 0);
  const plan_rank_t *r0 = &p->ranks[0];
  if (npu >= 2) {
    /* As mpirun's bind-to-package would: bound elsewhere (rank 1's cores). */
    assert_false(hwloc_bitmap_intersects(r0->cpuset, p->ranks[1].cpuset));
    cpu_set_t other;
    to_cpuset(p->ranks[1].cpuset, &other);
    assert_int_equal(sched_setaffinity(0, sizeof other, &other), 0);
  }
  /* A thread started before the binding must be moved too (process-wide binding). */
  assert_int_equal(pipe(g_pipe), 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, idle_thread, NULL), 0);

  char msg[512];
  assert_int_equal(plan_bind(t, r0, msg, sizeof msg), 0);
  print_message("%s\n", msg);
  if (npu >= 2) {
    assert_non_null(strstr(msg, "excludes"));
    assert_non_null(strstr(msg, "replaced by"));
    assert_non_null(strstr(msg, r0->cpus));
  }
  cpu_set_t want, got;
  to_cpuset(r0->cpuset, &want);
  assert_int_equal(sched_getaffinity(0, sizeof got, &got), 0);
  assert_true(CPU_EQUAL(&want, &got));
  assert_int_equal(pthread_getaffinity_np(th, sizeof got, &got), 0);
  assert_true(CPU_EQUAL(&want, &got));
  assert_int_equal(write(g_pipe[1], "x", 1), 1);
  pthread_join(th, NULL);
  close(g_pipe[0]);
  close(g_pipe[1]);

  /* A child started afterwards inherits it. */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    cpu_set_t c;
    _exit(sched_getaffinity(0, sizeof c, &c) == 0 && CPU_EQUAL(&c, &want) ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  /* Binding again to the same set: nothing inherited to complain about. */
  assert_int_equal(plan_bind(t, r0, msg, sizeof msg), 0);
  assert_null(strstr(msg, "excludes"));
  plan_free(p);

  /* bind = none leaves the binding alone. */
  o.bind = PLAN_BIND_NONE;
  o.local_size = 1;
  assert_int_equal(plan_make(t, &o, &p), 0);
  assert_int_equal(plan_bind(t, &p->ranks[0], msg, sizeof msg), 0);
  assert_non_null(strstr(msg, "not bound"));
  assert_int_equal(sched_getaffinity(0, sizeof got, &got), 0);
  assert_true(CPU_EQUAL(&want, &got));
  plan_free(p);
  topo_free(t);
}

static void test_bind_refuses_a_file(void **state) {
  (void)state;
  char path[1024];
  const char *dir = getenv("GPULAUNCH_TOPOLOGY_DIR");
  snprintf(path, sizeof path, "%s/hwloc-jureca-dc-gpu-jrc0386.xml", dir ? dir : "tests/data/topologies");
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, path), 0);
  assert_false(t->live);
  plan_t *p = NULL;
  assert_int_equal(plan_make(t, NULL, &p), 0);
  char msg[512];
  cpu_set_t before, after;
  sched_getaffinity(0, sizeof before, &before);
  assert_int_equal(plan_bind(t, &p->ranks[0], msg, sizeof msg), GPL_ENOTSUP);
  print_message("%s\n", msg);
  assert_non_null(strstr(msg, "not from this machine"));
  sched_getaffinity(0, sizeof after, &after);
  assert_true(CPU_EQUAL(&before, &after));
  plan_free(p);
  topo_free(t);
}

int main(void) {
  log_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_bind_replaces_inherited, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bind_refuses_a_file, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
