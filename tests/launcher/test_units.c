/* Unit tests of the launcher's pieces: config loading and errors, word splitting, parsing,
 * output line handling, the program's environment. */
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
#include <time.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/job/childenv.h"
#include "launcher/conf/conf.h"
#include "launcher/conf/envset.h"
#include "launcher/sup/output.h"
#include "common/safefile.h"

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

static void test_split_words(void **st) {
  (void)st;
  char **argv;
  int argc;
  char err[128];
  assert_int_equal(util_split_words("  a  'b c' \"d \\\"e\\\" $f\" g\\ h 'i'\"j\"k ''", &argv, &argc, err, sizeof err), 0);
  assert_int_equal(argc, 6);
  assert_string_equal(argv[0], "a");
  assert_string_equal(argv[1], "b c");
  assert_string_equal(argv[2], "d \"e\" $f");
  assert_string_equal(argv[3], "g h");
  assert_string_equal(argv[4], "ijk");
  assert_string_equal(argv[5], "");
  util_free_argv(argv);
  assert_int_equal(util_split_words("a 'b", &argv, &argc, err, sizeof err), GPL_EINVAL);
  assert_non_null(strstr(err, "unterminated single quote"));
  assert_int_equal(util_split_words("a \\", &argv, &argc, err, sizeof err), GPL_EINVAL);
  /* Quoting for display gives the words back. */
  const char *words[] = {"plain", "two words", "it's", "", "$HOME"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    char *q = util_quote_word(words[i]);
    assert_int_equal(util_split_words(q, &argv, &argc, err, sizeof err), 0);
    assert_int_equal(argc, 1);
    assert_string_equal(argv[0], words[i]);
    util_free_argv(argv);
    free(q);
  }
}

/* The first of each value, against the quadratic definition, on random names with repeats. */
static void test_first_of_each(void **st) {
  (void)st;
  enum { N = 500 };
  static char names[N][8];
  const char *s[N];
  int first[N];
  unsigned seed = (unsigned)time(NULL);
  for (int i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "h%d", rand_r(&seed) % 37);
    s[i] = names[i];
  }
  assert_int_equal(util_first_of_each(s, N, first), GPL_OK);
  for (int i = 0; i < N; i++) {
    int want = i;
    for (int j = 0; j < i; j++)
      if (strcmp(s[j], s[i]) == 0) {
        want = j;
        break;
      }
    assert_int_equal(first[i], want);
  }
}

static void test_parsers(void **st) {
  (void)st;
  uint64_t sz;
  assert_int_equal(util_parse_size("1M", &sz), 0);
  assert_int_equal(sz, 1u << 20);
  assert_int_equal(util_parse_size("64K", &sz), 0);
  assert_int_equal(sz, 65536);
  assert_int_equal(util_parse_size("2GiB", &sz), 0);
  assert_int_equal(sz, 2ull << 30);
  assert_int_equal(util_parse_size("12", &sz), 0);
  assert_int_equal(sz, 12);
  assert_int_equal(util_parse_size("1X", &sz), GPL_EINVAL);
  assert_int_equal(util_parse_size("-1", &sz), GPL_EINVAL);
  double d;
  assert_int_equal(util_parse_duration("250ms", &d), 0);
  assert_true(d == 0.25);
  assert_int_equal(util_parse_duration("2m", &d), 0);
  assert_true(d == 120);
  assert_int_equal(util_parse_duration("3", &d), 0);
  assert_true(d == 3);
  assert_int_equal(util_parse_duration("3 days", &d), GPL_EINVAL);
  /* issue 19: decimal only, as documented (strtod took hex, hex floats, inf and nan) */
  assert_int_equal(util_parse_duration("0x10", &d), GPL_EINVAL);
  assert_int_equal(util_parse_duration("0x1p3s", &d), GPL_EINVAL);
  assert_int_equal(util_parse_duration("inf", &d), GPL_EINVAL);
  assert_int_equal(util_parse_duration(".5s", &d), 0);
  assert_true(d == 0.5);
  assert_int_equal(util_parse_size("0x10", &sz), GPL_EINVAL);
  assert_int_equal(util_parse_size("0x1p3M", &sz), GPL_EINVAL);
  assert_int_equal(util_parse_size("nan", &sz), GPL_EINVAL);
  assert_int_equal(util_parse_size("1.5K", &sz), 0);
  assert_int_equal(sz, 1536);
  assert_int_equal(util_parse_double("0x10", &d), GPL_EINVAL);
  assert_int_equal(util_parse_double("infinity", &d), GPL_EINVAL);
  assert_int_equal(util_parse_double(" 5", &d), GPL_EINVAL);
  assert_int_equal(util_parse_double("1e3", &d), 0);
  assert_true(d == 1000);
  assert_int_equal(util_parse_double("-2.5", &d), 0);
  assert_true(d == -2.5);
  long l;
  assert_int_equal(util_parse_long("0x10", 0, 100, &l), GPL_EINVAL);
  assert_int_equal(util_parse_long(" 7", 0, 100, &l), GPL_EINVAL);
  assert_int_equal(util_parse_long("010", 0, 100, &l), 0);
  assert_int_equal(l, 10);
  int s;
  assert_int_equal(util_parse_signal("SIGUSR2", &s), 0);
  assert_int_equal(s, 12);
  assert_int_equal(util_parse_signal("term", &s), 0);
  assert_int_equal(s, 15);
  assert_string_equal(util_signal_name(9), "SIGKILL");
  const char *cands[] = {"restarts", "command", "grace"};
  assert_string_equal(util_nearest("restart", cands, 3), "restarts");
  assert_null(util_nearest("bananas", cands, 3));
  assert_true(util_is_secret_name("WANDB_API_KEY"));
  assert_true(util_is_secret_name("HF_TOKEN"));
  assert_true(util_is_secret_name("AWS_REGION"));
  assert_true(util_is_secret_name("db_password"));
  assert_false(util_is_secret_name("NCCL_SOCKET_IFNAME"));
  assert_false(util_is_secret_name("KEYBOARD"));
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

/* safefile: no link followed, 0600, other kinds of files refused, reads capped. */
static void test_safefile(void **st) {
  (void)st;
  char path[256], link[256], err[512];
  snprintf(path, sizeof path, "%s/sf.txt", g_dir);
  snprintf(link, sizeof link, "%s/sf.link", g_dir);
  int fd;
  assert_int_equal(safefile_open_append(path, &fd, err, sizeof err), 0);
  assert_int_equal(write(fd, "abc", 3), 3);
  close(fd);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
  assert_int_equal(symlink(path, link), 0);
  assert_int_equal(safefile_open_append(link, &fd, err, sizeof err), GPL_ESYS);
  assert_non_null(strstr(err, "symbolic link"));
  assert_int_equal(safefile_open_write(link, &fd, err, sizeof err), GPL_ESYS);
  char *txt;
  size_t n;
  assert_int_equal(safefile_read(path, 100, &txt, &n, err, sizeof err), 0);
  assert_int_equal(n, 3);
  free(txt);
  assert_int_equal(safefile_read(path, 2, &txt, &n, err, sizeof err), GPL_ERANGE);
  assert_int_equal(safefile_read("/dev/zero", 100, &txt, &n, err, sizeof err), GPL_EINVAL);
  assert_non_null(strstr(err, "character device"));
  assert_int_equal(safefile_read(g_dir, 100, &txt, &n, err, sizeof err), GPL_EINVAL);
  /* /proc files say size 0 and have content */
  assert_int_equal(safefile_read("/proc/self/status", 1 << 20, &txt, &n, err, sizeof err), 0);
  assert_true(n > 0);
  free(txt);
  assert_int_equal(safefile_check_parent("/no/such/dir/x", err, sizeof err), GPL_ENOENT);
  unlink(link);
  unlink(path);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/gpl-units.XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conf_defaults), cmocka_unit_test(test_conf_values),
      cmocka_unit_test(test_conf_errors),   cmocka_unit_test(test_split_words),
      cmocka_unit_test(test_first_of_each),
      cmocka_unit_test(test_parsers),       cmocka_unit_test(test_output_lines),
      cmocka_unit_test(test_envset),        cmocka_unit_test(test_safefile),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd) != 0) rc = rc ? rc : 1;
  return rc;
}
