/* common/util_*.c: word splitting and quoting, the first of each value, the parsers (sizes,
 * durations, numbers, signals), nearest names, secret names, small string helpers and median. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "gpulaunch/error.h"

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

/* Booleans in the spellings the config file takes; anything else refused; numbers out of range. */
static void test_parse_bool(void **st) {
  (void)st;
  int b = -1;
  assert_int_equal(util_parse_bool("yes", &b), 0);
  assert_int_equal(b, 1);
  assert_int_equal(util_parse_bool("off", &b), 0);
  assert_int_equal(b, 0);
  assert_int_equal(util_parse_bool("1", &b), 0);
  assert_int_equal(b, 1);
  assert_int_equal(util_parse_bool("maybe", &b), GPL_EINVAL);
  assert_int_equal(util_parse_long("101", 0, 100, &(long){0}), GPL_ERANGE);
  assert_int_equal(util_parse_long("-1", 0, 100, &(long){0}), GPL_ERANGE);
}

/* Edit distance, the median (sorts in place), bounded copies, trimming. */
static void test_strings_and_numbers(void **st) {
  (void)st;
  assert_int_equal(util_levenshtein("kitten", "sitting"), 3);
  assert_int_equal(util_levenshtein("", "abc"), 3);
  assert_int_equal(util_levenshtein("same", "same"), 0);
  double v[] = {5, 1, 4, 2, 3};
  assert_true(util_median(v, 5) == 3);
  assert_true(v[0] == 1 && v[4] == 5);
  double w[] = {4, 1, 3, 2};
  assert_true(util_median(w, 4) == 2.5);
  char dst[4];
  assert_int_equal(util_strlcpy(dst, "abcdef", sizeof dst), 6);
  assert_string_equal(dst, "abc");
  char t[] = "  \t padded \n";
  assert_string_equal(util_trim(t), "padded");
  char f[8];
  util_fmt(f, sizeof f, "%s-%d", "long", 12345);
  assert_string_equal(f, "long-12");
  assert_int_equal(util_parse_signal("SIGNOPE", &(int){0}), GPL_EINVAL);
  assert_string_equal(util_signal_name(SIGTERM), "SIGTERM");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_words), cmocka_unit_test(test_first_of_each),
      cmocka_unit_test(test_parsers),     cmocka_unit_test(test_parse_bool),
      cmocka_unit_test(test_strings_and_numbers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
