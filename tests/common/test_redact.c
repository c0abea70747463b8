/* common/redact.c: secrets by name in the usual NAME=VALUE spellings, URL passwords, secret
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

/* Issue 14: names and argument forms that leaked. */
static void test_more_names_and_forms(void **state) {
  (void)state;
  check("MYSQL_PWD=hunter22", "MYSQL_PWD=<redacted>");
  check("DOCKER_PASS=dp1 GITLAB_PAT=glpat-x SENTRY_DSN=https://k@o.ingest/1",
        "DOCKER_PASS=<redacted> GITLAB_PAT=<redacted> SENTRY_DSN=<redacted>");
  check("PWD=/home/alice OLDPWD=/tmp PATH=/bin", "PWD=/home/alice OLDPWD=/tmp PATH=/bin");
  check("python t.py --hf_token hf_abcdef --lr 3", "python t.py --hf_token <redacted> --lr 3");
  check("run --pw=x1 --jwt eyJhbGciOi.x.y --db-pass 'a b' --pass-word=z",
        "run --pw=<redacted> --jwt <redacted> --db-pass '<redacted>' --pass-word=<redacted>");
  check("mysql --user root -p s3cret db", "mysql --user root -p <redacted> db");
  check("mysql -u root -ps3cret db", "mysql -u root -p<redacted> db");
  check("ssh -p 2222 host", "ssh -p 2222 host"); /* a port */
  check("curl -H 'Authorization: Bearer abc.def.ghi' x", "curl -H 'Authorization: <redacted> <redacted>' x");
  check("Authorization: Bearer abc.def", "Authorization: <redacted> <redacted>");
  assert_true(util_is_secret_name("MYSQL_PWD"));
  assert_true(util_is_secret_name("GITLAB_PAT"));
  assert_true(util_is_secret_name("SENTRY_DSN"));
  assert_true(util_is_secret_name("DOCKER_PASS"));
  assert_false(util_is_secret_name("PWD"));
  assert_false(util_is_secret_name("PATH"));
  assert_false(util_is_secret_name("BYPASS_CACHE"));
  char *a1[] = {"mysql", "-u", "root", "-p", "pw1", "-pAttached", NULL};
  char **r = redact_argv(a1, 6);
  assert_non_null(r);
  assert_string_equal(r[4], "<redacted>");
  assert_string_equal(r[5], "-p<redacted>");
  util_free_argv(r);
  char *a2[] = {"train", "--user=bob", "-p", "pw2", "--hf_token", "hf_x", "--jwt", "j", NULL};
  r = redact_argv(a2, 8);
  assert_non_null(r);
  assert_string_equal(r[3], "<redacted>");
  assert_string_equal(r[5], "<redacted>");
  assert_string_equal(r[7], "<redacted>");
  util_free_argv(r);
  char *a3[] = {"ssh", "-p", "22", "host", NULL};
  r = redact_argv(a3, 4);
  assert_non_null(r);
  assert_string_equal(r[2], "22");
  util_free_argv(r);
}

/* Issue 19: a token as a URL's user name, webhook URLs, bare keys by their shape. */
static void test_shapes(void **state) {
  (void)state;
  check("git clone https://ghp_abcDEF123@github.com/o/r.git", "git clone https://<redacted>@github.com/o/r.git");
  check("https://x-token-123@example.com/p", "https://<redacted>@example.com/p");
  check("ssh://git@github.com/o/r.git", "ssh://git@github.com/o/r.git");
  check("postgres://bob@db/x", "postgres://bob@db/x");
  check("curl -d x https://hooks.slack.com/services/T000/B000/XXXXyyyy",
        "curl -d x https://hooks.slack.com/services/<redacted>");
  check("\"https://discord.com/api/webhooks/123456/abcDEF-gh\" ok",
        "\"https://discord.com/api/webhooks/<redacted>\" ok");
  check("https://acme.webhook.office.com/webhookb2/abc@def/IncomingWebhook/x/y",
        "https://acme.webhook.office.com/webhookb2/<redacted>");
  check("see https://example.com/docs/webhooks", "see https://example.com/docs/webhooks");
  check("key sk-proj-AbC123dEf456 used", "key <redacted> used");
  check("OPENAI=sk-ant-api03-abcdefghij", "OPENAI=<redacted>");
  check("push with ghp_16C7e42F292c6912E7710c838347Ae178B4a now", "push with <redacted> now");
  check("github_pat_11ABCDEFG_xyz gho_abcd ghs_abcd", "<redacted> <redacted> <redacted>");
  check("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "<redacted>");
  check("slack xoxb-123-456-abcdef and xoxp-abcdefgh", "slack <redacted> and <redacted>");
  check("id AKIAIOSFODNN7EXAMPLE.", "id <redacted>.");
  check("stripe sk_live_abcdefgh12", "stripe <redacted>");
  /* words that only look like the start of a key */
  check("pip install hf_transfer sk-learn scikit-learn", "pip install hf_transfer sk-learn scikit-learn");
  check("task-abcdefgh123 AKIA123 xghp_abcdef", "task-abcdefgh123 AKIA123 xghp_abcdef");
  check("SLACK_WEBHOOK_URL=https://x.example/y", "SLACK_WEBHOOK_URL=<redacted>");
  char *argv[] = {"git", "push", "https://ghp_abcd1234@github.com/o/r", "sk-abcdefgh1234", NULL};
  char **r = redact_argv(argv, 4);
  assert_non_null(r);
  assert_string_equal(r[2], "https://<redacted>@github.com/o/r");
  assert_string_equal(r[3], "<redacted>");
  util_free_argv(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_by_name),       cmocka_unit_test(test_keeps_the_rest),
      cmocka_unit_test(test_url_password),  cmocka_unit_test(test_env_values_anywhere),
      cmocka_unit_test(test_argv),          cmocka_unit_test(test_more_names_and_forms),
      cmocka_unit_test(test_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
