/* common/log.c: the host:rank prefix, levels and subsystems from the environment (read once,
 * before the first test), warnings with file:line, user messages as written, one line per call
 * however long the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

static char g_path[64];
static char g_text[16384];
static int g_saved = -1, g_fd = -1;

/* Everything written on stderr between capture_start and capture_end lands in g_text. */
static void capture_start(void) {
  g_fd = open(g_path, O_CREAT | O_TRUNC | O_RDWR, 0600);
  assert_true(g_fd >= 0);
  g_saved = dup(2);
  dup2(g_fd, 2);
}
static const char *capture_end(void) {
  dup2(g_saved, 2);
  close(g_saved);
  lseek(g_fd, 0, SEEK_SET);
  ssize_t n = read(g_fd, g_text, sizeof g_text - 1);
  g_text[n > 0 ? n : 0] = 0;
  close(g_fd);
  return g_text;
}

/* GPULAUNCH_LOG=info, GPULAUNCH_LOG_SUBSYS=comm (set in main): info of comm only; warnings of all. */
static void test_level_and_subsystem(void **st) {
  (void)st;
  log_set_identity("node1", 3);
  assert_true(log_enabled(LOG_LVL_INFO, LOG_COMM));
  assert_false(log_enabled(LOG_LVL_INFO, LOG_TOPO));
  assert_false(log_enabled(LOG_LVL_DEBUG, LOG_COMM));
  assert_true(log_enabled(LOG_LVL_WARN, LOG_TOPO));
  capture_start();
  LOG_INFO(COMM, "ring of %d", 4);
  LOG_INFO(TOPO, "not shown");
  LOG_DEBUG(COMM, "not shown either");
  const char *out = capture_end();
  assert_string_equal(out, "gpulaunch node1:3 [INFO comm] ring of 4\n");
  capture_start();
  int line = __LINE__ + 1;
  LOG_WARN("slow link %s", "eth0");
  out = capture_end();
  char want[128];
  snprintf(want, sizeof want, "gpulaunch node1:3 [WARN] test_log.c:%d slow link eth0\n", line);
  assert_string_equal(out, want);
  assert_string_equal(log_identity(), "node1:3");
}

static void test_forced_level_and_print(void **st) {
  (void)st;
  log_set_identity(NULL, -1);
  assert_string_equal(log_identity(), "-:-");
  log_set_level(LOG_LVL_ERROR);
  capture_start();
  LOG_WARN("hidden");
  LOG_INFO(COMM, "hidden");
  LOG_ERROR("shown");
  log_print("gpulaunch: as written %d\n", 7); /* at every level */
  const char *out = capture_end();
  assert_non_null(strstr(out, "gpulaunch -:- [ERROR] test_log.c:"));
  assert_non_null(strstr(out, " shown\ngpulaunch: as written 7\n"));
  assert_null(strstr(out, "hidden"));
  log_set_level(LOG_LVL_INFO);
}

/* A message longer than the line buffer is cut, still one line; a long user message is whole. */
static void test_long_lines(void **st) {
  (void)st;
  static char big[10000];
  memset(big, 'x', sizeof big - 1);
  capture_start();
  LOG_INFO(COMM, "%s", big);
  const char *out = capture_end();
  size_t n = strlen(out);
  assert_true(n > 4000 && n < 4097);
  assert_int_equal(out[n - 1], '\n');
  assert_ptr_equal(strchr(out, '\n'), out + n - 1); /* one line */
  capture_start();
  log_print("%s\n", big);
  out = capture_end();
  assert_int_equal(strlen(out), sizeof big);
}

int main(void) {
  setenv("GPULAUNCH_LOG", "info", 1);
  setenv("GPULAUNCH_LOG_SUBSYS", "comm", 1);
  log_init();
  snprintf(g_path, sizeof g_path, "/tmp/gpl-log.XXXXXX");
  int fd = mkstemp(g_path);
  if (fd < 0) return 1;
  close(fd);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_level_and_subsystem),
      cmocka_unit_test(test_forced_level_and_print),
      cmocka_unit_test(test_long_lines),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  unlink(g_path);
  return rc;
}
