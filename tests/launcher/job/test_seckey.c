/* launcher/job/seckey.c: the job key from [security] key_file (0600, the user's, long enough;
 * per run id) and made for the job by gpulaunch-run (handed over the environment, by name). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/envvar.h"
#include "gpulaunch/error.h"
#include "launcher/conf/conf.h"
#include "launcher/job/seckey.h"

static char g_dir[] = "/tmp/gpl_seckey_XXXXXX";

static void write_file(const char *path, const char *text, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  assert_int_equal(chmod(path, mode), 0);
}

static void test_key_file(void **st) {
  (void)st;
  char good[128], loose[128], shorty[128];
  snprintf(good, sizeof good, "%s/good.key", g_dir);
  snprintf(loose, sizeof loose, "%s/loose.key", g_dir);
  snprintf(shorty, sizeof shorty, "%s/short.key", g_dir);
  write_file(good, "0123456789abcdef0123456789abcdef", 0600);
  write_file(loose, "0123456789abcdef0123456789abcdef", 0644);
  write_file(shorty, "short", 0600);
  uint8_t a[TLS_KEY_LEN], b[TLS_KEY_LEN], c[TLS_KEY_LEN];
  assert_int_equal(seckey_from_file(good, "run-1", a), 0);
  assert_int_equal(seckey_from_file(good, "run-1", b), 0);
  assert_memory_equal(a, b, sizeof a); /* every host derives the same */
  assert_int_equal(seckey_from_file(good, "run-2", c), 0);
  assert_memory_not_equal(a, c, sizeof a); /* another job, another key */
  assert_int_equal(seckey_from_file(loose, "run-1", a), GPL_ECONFIG);
  assert_int_equal(seckey_from_file(shorty, "run-1", a), GPL_ECONFIG);
  assert_int_equal(seckey_from_file(g_dir, "run-1", a), GPL_ECONFIG); /* a folder */
  char missing[160];
  snprintf(missing, sizeof missing, "%s/none.key", g_dir);
  assert_int_equal(seckey_from_file(missing, "run-1", a), GPL_ECONFIG);
}

static void test_front_sources(void **st) {
  (void)st;
  conf_t *c = NULL;
  assert_int_equal(conf_load(&c, NULL), 0);
  unsetenv("GPULAUNCH_JOB_KEY");
  setenv("GPULAUNCH_RUN_ID", "run-front", 1);
  seckey_t k;
  /* No key_file: a key made for the job, handed over by name (the value in the environment). */
  assert_int_equal(seckey_front(&k, &c->security), 0);
  assert_int_equal(k.src, SECKEY_HANDED);
  assert_string_equal(envvar_get(ENVVAR_KEY_SOURCE), "handed");
  const char *hex = envvar_get(ENVVAR_JOB_KEY);
  assert_non_null(hex);
  uint8_t back[TLS_KEY_LEN];
  assert_int_equal(tls_unhex(hex, back, sizeof back), 0);
  assert_memory_equal(back, k.tls.key, sizeof back);
  assert_false(k.tls.off);
  /* key_file: the same key as the ranks derive, nothing in the environment. */
  char good[128];
  snprintf(good, sizeof good, "%s/good.key", g_dir);
  unsetenv("GPULAUNCH_JOB_KEY");
  c->security.key_file = good;
  c->security.tls = "off";
  c->security.require = "strict";
  assert_int_equal(seckey_front(&k, &c->security), 0);
  assert_int_equal(k.src, SECKEY_FILE);
  assert_true(k.tls.off);
  assert_true(k.strict);
  assert_null(envvar_get(ENVVAR_JOB_KEY));
  assert_string_equal(envvar_get(ENVVAR_KEY_SOURCE), "file");
  uint8_t want[TLS_KEY_LEN];
  assert_int_equal(seckey_from_file(good, "run-front", want), 0);
  assert_memory_equal(want, k.tls.key, sizeof want);
  /* Uses of one key differ from each other. */
  uint8_t t1[16], t2[16];
  assert_int_equal(seckey_derive(&k, "live token", t1, sizeof t1), 0);
  assert_int_equal(seckey_derive(&k, "front token", t2, sizeof t2), 0);
  assert_memory_not_equal(t1, t2, sizeof t1);
  assert_int_equal(seckey_src_of("file"), SECKEY_FILE);
  assert_int_equal(seckey_src_of("bogus"), SECKEY_NONE);
  c->security.key_file = "";
  c->security.tls = "on";
  c->security.require = "any";
  conf_free(c);
}

static int setup(void **st) {
  (void)st;
  return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **st) {
  (void)st;
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key_file),
      cmocka_unit_test(test_front_sources),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
