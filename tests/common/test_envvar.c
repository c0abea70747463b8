/* Unit tests of common/envvar.c (the GPULAUNCH_* table) and of log_subsys_of (the subsystem
 * common/check.h's error chains are logged under). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/envvar.h"
#include "common/log.h"

/* Every row is a GPULAUNCH_ name, once, with help. */
static void test_table(void **state) {
  (void)state;
  for (int i = 0; i < ENVVAR_COUNT; i++) {
    const char *n = envvar_name((envvar_id_t)i);
    assert_int_equal(strncmp(n, "GPULAUNCH_", 10), 0);
    for (int j = 0; j < i; j++) assert_string_not_equal(n, envvar_name((envvar_id_t)j));
  }
  assert_string_equal(envvar_name(ENVVAR_LOG), "GPULAUNCH_LOG");
  /* every name is GPULAUNCH_ and its ID: ENVVAR_LITERAL(ID) is the row's name */
#define LITERAL_(id, name, def, kind, help) assert_string_equal(name, ENVVAR_LITERAL(id));
  ENVVAR_LIST(LITERAL_)
#undef LITERAL_
  assert_string_equal(envvar_name(ENVVAR_COUNT), "?");
  assert_null(envvar_get(ENVVAR_COUNT));
}

/* Run fn with stderr in a file; return what was written (static buffer). */
static const char *stderr_of(void (*fn)(void)) {
  static char buf[8192];
  FILE *tmp = tmpfile();
  assert_non_null(tmp);
  int saved = dup(2);
  dup2(fileno(tmp), 2);
  fn();
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(buf, 1, sizeof buf - 1, tmp);
  buf[n] = 0;
  fclose(tmp);
  return buf;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

static void read_three_times(void) {
  envvar_get(ENVVAR_TEST_STALL);
  envvar_get(ENVVAR_TEST_STALL);
  envvar_get(ENVVAR_TEST_STALL);
}

/* The environment is read at each call; a value is logged once at debug level, a new one again. */
static void test_get_and_log_once(void **state) {
  (void)state;
  log_init(); /* the logger takes each value read (envvar_set_note) */
  unsetenv("GPULAUNCH_TEST_STALL");
  assert_null(envvar_get(ENVVAR_TEST_STALL));
  setenv("GPULAUNCH_TEST_STALL", "1:2", 1);
  assert_string_equal(envvar_get(ENVVAR_TEST_STALL), "1:2");

  log_set_level(LOG_LVL_WARN); /* not logged below debug, and not remembered as logged */
  assert_int_equal(count(stderr_of(read_three_times), "GPULAUNCH_TEST_STALL"), 0);
  log_set_level(LOG_LVL_DEBUG);
  assert_int_equal(count(stderr_of(read_three_times), "environment: GPULAUNCH_TEST_STALL=1:2"), 1);
  assert_int_equal(count(stderr_of(read_three_times), "GPULAUNCH_TEST_STALL"), 0);
  setenv("GPULAUNCH_TEST_STALL", "0:5", 1);
  assert_string_equal(envvar_get(ENVVAR_TEST_STALL), "0:5");
  assert_int_equal(count(stderr_of(read_three_times), "GPULAUNCH_TEST_STALL"), 0); /* logged by the get above */
  unsetenv("GPULAUNCH_TEST_STALL");
  assert_null(envvar_get(ENVVAR_TEST_STALL));
  log_set_level(LOG_LVL_WARN);
}

/* --help's section and the README's table name every variable; '|' is escaped in the table. */
static void test_print(void **state) {
  (void)state;
  char *text = NULL, *md = NULL;
  size_t n;
  FILE *f = open_memstream(&text, &n);
  envvar_print(f, 0);
  fclose(f);
  f = open_memstream(&md, &n);
  envvar_print(f, 1);
  fclose(f);
  assert_int_equal(strncmp(text, "Environment", 11), 0);
  assert_non_null(strstr(text, "  GPULAUNCH_LOG=warn "));
  assert_non_null(strstr(text, "Test hooks"));
  /* what the wrapped program gets (README "What the wrapped program gets") */
  const char *prog = strstr(text, "Set by gpulaunch for the program it wraps");
  assert_non_null(prog);
  assert_non_null(strstr(prog, "  GPULAUNCH_NODE "));
  assert_non_null(strstr(prog, "  GPULAUNCH_HOST "));
  assert_non_null(strstr(md, "| `GPULAUNCH_HOST` |  | given to the program: "));
  int lines = count(md, "\n");
  assert_int_equal(lines, ENVVAR_COUNT + 2);
  for (int i = 0; i < ENVVAR_COUNT; i++) {
    char cell[80];
    snprintf(cell, sizeof cell, "| `%s` |", envvar_name((envvar_id_t)i));
    assert_int_equal(count(md, cell), 1);
    snprintf(cell, sizeof cell, "  %s", envvar_name((envvar_id_t)i));
    assert_non_null(strstr(text, cell));
  }
  assert_non_null(strstr(md, "error\\|warn\\|info\\|debug"));
  /* GPULAUNCH_LOG_SUBSYS's help names log.h's subsystems, in their order. */
  char subs[256] = "| ";
#define SUBSYS_NAME_(e, name) strcat(strcat(subs, name), ",");
  LOG_SUBSYS_MAP(SUBSYS_NAME_)
#undef SUBSYS_NAME_
  subs[strlen(subs) - 1] = ' ';
  strcat(subs, "(^x excludes) |");
  assert_non_null(strstr(md, subs));
  free(text);
  free(md);
}

/* A file's error chains go under its folder's subsystem. */
static void test_subsys_of(void **state) {
  (void)state;
  assert_int_equal(log_subsys_of("/src/gpulaunch/comm/nccl.c"), LOG_COMM);
  assert_int_equal(log_subsys_of("comm/api.c"), LOG_COMM);
  assert_int_equal(log_subsys_of("/src/common/mpix.c"), LOG_JOB);
  assert_int_equal(log_subsys_of("/src/topology/net_eval.c"), LOG_NET);
  assert_int_equal(log_subsys_of("/src/topology/plan.c"), LOG_TOPO);
  assert_int_equal(log_subsys_of("/src/kernels/fused_ref.c"), LOG_KERN);
  assert_int_equal(log_subsys_of("/src/launcher/sup/ctl.c"), LOG_SUP);
  assert_int_equal(log_subsys_of("/src/launcher/conf/conf.c"), LOG_CONF);
  assert_int_equal(log_subsys_of("/src/launcher/bench/bench_run.c"), LOG_BENCH);
  assert_int_equal(log_subsys_of("/src/launcher/accept/accept_node.c"), LOG_ACCEPT);
  assert_int_equal(log_subsys_of("/src/launcher/ops/diag_bundle.c"), LOG_DIAG);
  assert_int_equal(log_subsys_of("/src/launcher/monitor/monitor.c"), LOG_MON);
  assert_int_equal(log_subsys_of("/src/launcher/modes/trainer.c"), LOG_TRAIN);
  assert_int_equal(log_subsys_of("/src/launcher/main.c"), LOG_JOB);
  assert_int_equal(log_subsys_of("main.c"), LOG_JOB);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_get_and_log_once),
      cmocka_unit_test(test_print),
      cmocka_unit_test(test_subsys_of),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
