/* Redaction tests: secrets by name in the usual NAME=VALUE spellings, URL passwords, secret
 * values of the environment wherever they appear, command words; and what must stay. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "common/redact.h"

static void check(const char *in, const char *want) {
  char *out = redact_text(in, strlen(in));
  assert_non_null(out);
  if (strcmp(out, want) != 0) fail_msg("redact(%s)\n  got  %s\n  want %s", in, out, want);
  free(out);
}

static void test_by_name(void **state) {
  (void)state;
  check("MY_API_TOKEN=abc123", "MY_API_TOKEN=<redacted>");
  check("export AWS_SECRET_ACCESS_KEY=\"wJalr/XUtn\" # x", "export AWS_SECRET_ACCESS_KEY=\"<redacted>\" # x");
  check("env.HF_TOKEN = hf_xyz   # train.conf:7", "env.HF_TOKEN = <redacted>   # train.conf:7");
  check("{\"password\": \"p@ss w\", \"user\": \"bob\"}", "{\"password\": \"<redacted>\", \"user\": \"bob\"}");
  check("python train.py --api-key=K123 --lr=0.1", "python train.py --api-key=<redacted> --lr=0.1");
  check("Authorization: Bearer", "Authorization: <redacted>");
  check("a=1,DB_PASSWORD=pw,b=2", "a=1,DB_PASSWORD=<redacted>,b=2");
  check("\"cause\":\"SLURM_JOB_TOKEN=tt\"", "\"cause\":\"SLURM_JOB_TOKEN=<redacted>\"");
}

static void test_keeps_the_rest(void **state) {
  (void)state;
  check("NCCL_SOCKET_IFNAME=eth0\nCUDA_VISIBLE_DEVICES=0,1", "NCCL_SOCKET_IFNAME=eth0\nCUDA_VISIBLE_DEVICES=0,1");
  check("    Product Name : NVIDIA H100 80GB HBM3", "    Product Name : NVIDIA H100 80GB HBM3");
  check("std::vector<int> KEYBOARD=us", "std::vector<int> KEYBOARD=us");
  check("TOKEN_COUNT", "TOKEN_COUNT");
  check("http://example.com:8080/x", "http://example.com:8080/x");
  check("", "");
}

static void test_url_password(void **state) {
  (void)state;
  check("git clone https://alice:ghp_abc@github.com/x.git",
        "git clone https://alice:<redacted>@github.com/x.git");
  check("redis://:pw123@cache:6379/0", "redis://:<redacted>@cache:6379/0");
}

static void test_env_values_anywhere(void **state) {
  (void)state;
  setenv("MY_API_TOKEN", "s3cr3t-value-123", 1);
  setenv("SHORT_TOKEN", "abc", 1); /* under 4 characters: left to the name rules */
  check("curl -H 'X: s3cr3t-value-123' and again s3cr3t-value-123!",
        "curl -H 'X: <redacted>' and again <redacted>!");
  check("abc def", "abc def");
  unsetenv("MY_API_TOKEN");
  unsetenv("SHORT_TOKEN");
}

static void test_argv(void **state) {
  (void)state;
  char *argv[] = {"prog", "--token", "t-99", "--api-secret=zz", "-v", "--password", "--next", "x", NULL};
  char **r = redact_argv(argv, 8);
  assert_non_null(r);
  assert_string_equal(r[0], "prog");
  assert_string_equal(r[1], "--token");
  assert_string_equal(r[2], "<redacted>");
  assert_string_equal(r[3], "--api-secret=<redacted>");
  assert_string_equal(r[4], "-v");
  assert_string_equal(r[5], "--password");
  assert_string_equal(r[6], "--next"); /* an option, not the password's value */
  assert_string_equal(r[7], "x");
  assert_null(r[8]);
  util_free_argv(r);
  assert_string_equal(redact_env_value("GITHUB_TOKEN", "x"), "<redacted>");
  assert_string_equal(redact_env_value("PATH", "/bin"), "/bin");
  assert_string_equal(redact_env_value("AWS_KEY", ""), "");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_by_name),       cmocka_unit_test(test_keeps_the_rest),
      cmocka_unit_test(test_url_password),  cmocka_unit_test(test_env_values_anywhere),
      cmocka_unit_test(test_argv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
