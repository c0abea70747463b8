/* Unit tests of the launcher's pieces: config loading and errors, output line handling, the
 * program's environment (common/ has its own: tests/common). */
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

#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/job/childenv.h"
#include "launcher/conf/conf.h"
#include "launcher/conf/envset.h"
#include "launcher/output/output.h"

static char g_dir[64];

static const char *write_conf(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* Run conf_load with stderr captured; returns the rc and the messages. */
static int load_capture(const char *path, conf_t **c, char *msg, size_t len) {
  fflush(stderr);
  int saved = dup(2);
  char tmp[128];
  snprintf(tmp, sizeof tmp, "%s/stderr.txt", g_dir);
  int fd = open(tmp, O_CREAT | O_TRUNC | O_RDWR, 0600);
  dup2(fd, 2);
  int rc = conf_load(c, path);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  ssize_t n = read(fd, msg, len - 1);
  msg[n > 0 ? n : 0] = 0;
  close(fd);
  return rc;
}

static void test_conf_defaults(void **st) {
  (void)st;
  conf_t *c;
  assert_int_equal(conf_load(&c, NULL), GPL_OK);
  assert_int_equal(c->job.restarts, 0);
  assert_true(c->job.grace == 10.0);
  assert_string_equal(c->topology.bind, "cores");
  assert_int_equal(c->job.preempt_signal, 15);
  assert_true(c->comm.bucket_mb == 25.0);
  assert_false(conf_is_set(c, &c->job.restarts));
  assert_string_equal(conf_origin(c, &c->job.restarts), "default");
  /* Overrides are validated like the file. */
  assert_int_equal(conf_set(c, &c->bench.maxbytes, "16M", "-e"), GPL_OK);
  assert_int_equal(c->bench.maxbytes, 16u << 20);
  assert_string_equal(conf_origin(c, &c->bench.maxbytes), "-e");
  assert_int_equal(conf_set(c, &c->bench.maxbytes, "lots", "-e"), GPL_ECONFIG);
  assert_int_equal(c->bench.maxbytes, 16u << 20);
  conf_free(c);
}

static void test_conf_values(void **st) {
  (void)st;
  const char *p = write_conf("ok.conf",
                             "; comment\n"
                             "[job]\n"
                             "command = python3 train.py --lr 0.1 \"a b\" 'c d'\n"
                             "    --epochs 3\n"
                             "restarts = 4\n"
                             "grace = 1500ms\n"
                             "preempt_signal = USR1\n"
                             "[env]\n"
                             "FOO = 1\n"
                             "BAR = two words\n"
                             "[nccl]\n"
                             "DEBUG = INFO\n"
                             "NCCL_ALGO = Ring\n"
                             "[bench]\n"
                             "maxbytes = 1G\n");
  conf_t *c;
  char msg[4096];
  assert_int_equal(load_capture(p, &c, msg, sizeof msg), GPL_OK);
  int argc = c->job.command.argc;
  char *const *argv = c->job.command.argv;
  assert_int_equal(argc, 8);
  assert_string_equal(argv[0], "python3");
  assert_string_equal(argv[4], "a b");
  assert_string_equal(argv[5], "c d");
  assert_string_equal(argv[6], "--epochs");
  assert_string_equal(argv[7], "3");
  assert_null(argv[8]);
  assert_int_equal(c->job.restarts, 4);
  assert_true(c->job.grace == 1.5);
  assert_int_equal(c->job.preempt_signal, 10);
  assert_int_equal(c->bench.maxbytes, 1ull << 30);
  assert_int_equal(conf_vars_count(c, CONF_VARS_ENV), 2);
  assert_int_equal(conf_vars_count(c, CONF_VARS_NCCL), 2);
  const char *k, *v;
  conf_vars_entry(c, CONF_VARS_NCCL, 0, &k, &v);
  assert_string_equal(k, "NCCL_DEBUG");
  assert_string_equal(v, "INFO");
  conf_vars_entry(c, CONF_VARS_ENV, 1, &k, &v);
  assert_string_equal(k, "BAR");
  assert_string_equal(v, "two words");
  char want[300];
  snprintf(want, sizeof want, "%s:5", p);
  assert_string_equal(conf_origin(c, &c->job.restarts), want);
  conf_free(c);
}

static void expect_error(const char *name, const char *text, const char *needle) {
  const char *p = write_conf(name, text);
  conf_t *c = (conf_t *)1;
  char msg[4096];
  assert_int_equal(load_capture(p, &c, msg, sizeof msg), GPL_ECONFIG);
  assert_null(c);
  if (!strstr(msg, needle)) fail_msg("expected '%s' in:\n%s", needle, msg);
}

static void test_conf_errors(void **st) {
  (void)st;
  expect_error("typo.conf", "[job]\ncommand = x\ngrce = 2s\n", "typo.conf:3: [job] unknown key 'grce' (did you mean 'grace'?)");
  expect_error("sec.conf", "[job]\ncommand = x\n[benhc]\nop = allreduce\n", "sec.conf:3: unknown section [benhc] (did you mean [bench]?)");
  expect_error("other.conf", "[job]\ncommand = x\nxml = a.xml\n", "[job] unknown key 'xml' (it belongs in [topology])");
  expect_error("num.conf", "[job]\ncommand = x\nrestarts = 1.5\n", "num.conf:3: [job] restarts: '1.5' is not a whole number");
  expect_error("dur.conf", "[job]\ncommand = x\ngrace = soon\n", "dur.conf:3: [job] grace: 'soon' is not a duration");
  expect_error("sig.conf", "[job]\ncommand = x\npreempt_signal = SIGFOO\n", "[job] preempt_signal: 'SIGFOO' is not a signal name");
  expect_error("bool.conf", "[bench]\ncheck = maybe\n", "bool.conf:2: [bench] check: 'maybe' is not a boolean");
  expect_error("env.conf", "[env]\n1BAD = x\n", "env.conf:2: [env] '1BAD' is not a valid environment variable name");
  expect_error("noeq.conf", "[job]\ncommand = x\njust words\n", "noeq.conf:3: expected 'name = value' or '[section]', found 'just words'");
  expect_error("both.conf", "[job]\ncommand = x\nbuiltin = mlp\n", "[job] has both 'command' and 'builtin'");
  expect_error("outside.conf", "command = x\n[job]\n", "outside.conf:1: 'command' is outside any section");
  char longline[400];
  memset(longline, 'a', sizeof longline);
  snprintf(longline, sizeof longline, "[job]\ncommand = %0300d\n", 7);
  expect_error("long.conf", longline, "long.conf:2: line longer than");
  /* Every error is reported, not only the first. */
  expect_error("many.conf", "[job]\ncommand = x\nrestarts = x\ngrace = y\n", "many.conf:4: [job] grace");
}

/* Feed output in awkward pieces and check what reaches stdout/stderr. */
static void test_output_lines(void **st) {
  (void)st;
  char path[128];
  snprintf(path, sizeof path, "%s/out.txt", g_dir);
  fflush(stdout);
  int saved = dup(1);
  int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
  dup2(fd, 1);
  output_t o;
  assert_int_equal(output_init(&o, "host:rank", "h", 3, 2, NULL, NULL), 0);
  const char *chunks[] = {"al", "pha\nbe", "ta\n\ngam", "ma"};
  for (int i = 0; i < 4; i++) output_feed(&o, 0, chunks[i], strlen(chunks[i]));
  output_flush(&o, 0);
  output_feed(&o, 1, "e1\ne2\ne3\n", 9);
  dup2(saved, 1);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = 0;
  close(fd);
  assert_string_equal(buf, "[h:3] alpha\n[h:3] beta\n[h:3] \n[h:3] gamma\n");
  char tail[64];
  output_tail(&o, tail, sizeof tail);
  assert_string_equal(tail, "e2\ne3\n"); /* only the last 2 are kept */
  output_tail(&o, tail, 5);
  assert_string_equal(tail, "e3\n"); /* the newest that fit */
  output_free(&o);
}

/* envset: each key once, at its first place, with its last value; built in linear time. */
static void test_envset(void **st) {
  (void)st;
  envset_t e = {0};
  assert_int_equal(envset_add(&e, "A", 1, "1"), 0);
  assert_int_equal(envset_add_kv(&e, "B=2"), 0);
  assert_int_equal(envset_add(&e, "A", 1, "3"), 0);
  assert_int_equal(envset_add(&e, "AB", 2, "4"), 0);
  assert_int_equal(envset_add(&e, "B", 1, "5"), 0);
  assert_string_equal(envset_get(&e, "A"), "3");
  assert_int_equal(envset_finish(&e), 0);
  assert_int_equal(e.n, 3);
  assert_string_equal(e.v[0], "A=3");
  assert_string_equal(e.v[1], "B=5");
  assert_string_equal(e.v[2], "AB=4");
  assert_null(e.v[3]);
  envset_free(&e);
  /* 200k entries, 100k keys: well under a second (a search per entry took minutes) */
  double t0 = util_now();
  char k[32];
  for (int i = 0; i < 200000; i++) {
    snprintf(k, sizeof k, "K%d", i % 100000);
    assert_int_equal(envset_add(&e, k, strlen(k), "v"), 0);
  }
  assert_int_equal(envset_finish(&e), 0);
  assert_int_equal(e.n, 100000);
  assert_true(util_now() - t0 < 5.0);
  envset_free(&e);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/gpl-units.XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conf_defaults), cmocka_unit_test(test_conf_values),
      cmocka_unit_test(test_conf_errors),   cmocka_unit_test(test_output_lines),
      cmocka_unit_test(test_envset),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd) != 0) rc = rc ? rc : 1;
  return rc;
}
