/* common/watchdog.c: a call still inside at its deadline ends the process with the given status
 * and one line naming the call, the wait and the hint; a disarmed deadline ends nothing, and the
 * watchdog can be armed again. Each case runs in a child process (the watchdog exits it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "common/watchdog.h"

/* Runs body in a child with stderr into a pipe; its exit status and what it wrote. */
static int run_child(void (*body)(void), char *err, size_t len) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(p[1], 2);
    close(p[0]);
    body();
    _exit(0);
  }
  close(p[1]);
  size_t n = 0;
  ssize_t r;
  while (n < len - 1 && (r = read(p[0], err + n, len - 1 - n)) > 0) n += (size_t)r;
  err[n] = 0;
  close(p[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

static void stuck(void) {
  log_set_identity("h", 3);
  wdog_arm(1.0, "the stuck call", "a hint", 42);
  util_sleep(10); /* never returns in time */
}

static void test_deadline_ends_the_process(void **st) {
  (void)st;
  char err[1024];
  double t0 = util_now();
  assert_int_equal(run_child(stuck, err, sizeof err), 42);
  double took = util_now() - t0;
  assert_true(took >= 0.9 && took < 8);
  assert_string_equal(err, "gpulaunch: h:3: the stuck call did not return within 1 s; a hint; "
                           "ending this rank (exit status 42)\n");
}

static void in_time(void) {
  wdog_arm(0.3, "the first call", NULL, 42);
  wdog_disarm();
  util_sleep(0.6);
  wdog_arm(0.3, "the second call", NULL, WDOG_EXIT_TIMEOUT);
  wdog_disarm();
  util_sleep(0.6);
}

static void test_disarmed_ends_nothing(void **st) {
  (void)st;
  char err[1024];
  assert_int_equal(run_child(in_time, err, sizeof err), 0);
  assert_string_equal(err, "");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_deadline_ends_the_process),
      cmocka_unit_test(test_disarmed_ends_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
