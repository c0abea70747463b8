/* Audit tests: start/end lines are JSON with the promised fields, file mode 0600 kept, the
 * command redacted, the config hashed (SHA-256 checked against a known digest). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/log.h"
#include "common/safefile.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/ops/audit.h"

static char g_tmp[64];

static cJSON *line_json(const char *txt, int idx) {
  const char *p = txt;
  for (int i = 0; i < idx; i++) {
    p = strchr(p, '\n');
    assert_non_null(p);
    p++;
  }
  const char *e = strchr(p, '\n');
  assert_non_null(e);
  char *one = strndup(p, (size_t)(e - p));
  cJSON *o = cJSON_Parse(one);
  if (!o) fail_msg("not JSON: %s", one);
  free(one);
  return o;
}

static void test_start_end_lines(void **state) {
  (void)state;
  char log[128], conf[128];
  snprintf(log, sizeof log, "%s/audit.log", g_tmp);
  snprintf(conf, sizeof conf, "%s/train.conf", g_tmp);
  FILE *f = fopen(conf, "w");
  fputs("abc", f); /* SHA-256("abc") is a published test vector */
  fclose(f);
  setenv("MY_API_TOKEN", "s3cr3t-audit-7f3a", 1);
  audit_info_t info;
  audit_info_init(&info);
  assert_true(info.job_id[0] != 0);
  assert_true(info.user[0] != 0);
  char *argv[] = {"python", "train.py", "--api-token", "tok-123456", "--lr=0.1",
                  "--password=hunter22", "MY_TOKEN=s3cr3t-audit-7f3a", NULL};
  const char *hosts[] = {"h1", "h2"};
  info.argv = argv;
  info.argc = 7;
  info.ranks = 8;
  info.nodes = 2;
  info.hosts = hosts;
  info.mode = "run";
  info.conf_path = conf;
  umask(022);
  assert_int_equal(audit_job_start(log, &info), 0);
  assert_int_equal(audit_job_end(log, &info, 75, "preempted: SIGTERM from the scheduler"), 0);
  struct stat st;
  assert_int_equal(stat(log, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);

  char *txt = NULL;
  size_t n;
  assert_int_equal(safefile_read_text(log, &txt, &n), 0);
  assert_null(strstr(txt, "s3cr3t-audit-7f3a"));
  assert_null(strstr(txt, "tok-123456"));
  assert_null(strstr(txt, "hunter22"));
  cJSON *a = line_json(txt, 0), *b = line_json(txt, 1);
  assert_string_equal(cJSON_GetObjectItem(a, "event")->valuestring, "start");
  assert_string_equal(cJSON_GetObjectItem(b, "event")->valuestring, "end");
  assert_string_equal(cJSON_GetObjectItem(a, "job")->valuestring, cJSON_GetObjectItem(b, "job")->valuestring);
  assert_int_equal(cJSON_GetObjectItem(a, "ranks")->valueint, 8);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(a, "hosts")), 2);
  assert_int_equal((int)cJSON_GetObjectItem(a, "uid")->valuedouble, (int)getuid());
  const char *time = cJSON_GetObjectItem(a, "time")->valuestring;
  assert_int_equal(strlen(time), 24); /* 2026-01-02T03:04:05.678Z */
  assert_true(time[10] == 'T' && time[23] == 'Z');
  cJSON *cmd = cJSON_GetObjectItem(a, "command");
  assert_int_equal(cJSON_GetArraySize(cmd), 7);
  assert_string_equal(cJSON_GetArrayItem(cmd, 1)->valuestring, "train.py");
  assert_string_equal(cJSON_GetArrayItem(cmd, 3)->valuestring, "<redacted>");
  assert_string_equal(cJSON_GetArrayItem(cmd, 4)->valuestring, "--lr=0.1");
  assert_string_equal(cJSON_GetArrayItem(cmd, 5)->valuestring, "--password=<redacted>");
  cJSON *cf = cJSON_GetObjectItem(a, "config");
  assert_string_equal(cJSON_GetObjectItem(cf, "path")->valuestring, conf);
  assert_string_equal(cJSON_GetObjectItem(cf, "sha256")->valuestring,
                      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert_int_equal(cJSON_GetObjectItem(b, "exit_status")->valueint, 75);
  assert_string_equal(cJSON_GetObjectItem(b, "root_cause")->valuestring,
                      "preempted: SIGTERM from the scheduler");
  assert_true(cJSON_GetObjectItem(b, "duration_s")->valuedouble >= 0);
  cJSON_Delete(a);
  cJSON_Delete(b);
  free(txt);
  unsetenv("MY_API_TOKEN");
}

static void test_mode_never_loosened(void **state) {
  (void)state;
  char log[128];
  snprintf(log, sizeof log, "%s/tight.log", g_tmp);
  umask(0); /* even with no umask, the file is created 0600 */
  audit_info_t info;
  audit_info_init(&info);
  assert_int_equal(audit_job_start(log, &info), 0);
  struct stat st;
  assert_int_equal(stat(log, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  /* an existing file that an admin made tighter stays so */
  assert_int_equal(chmod(log, 0200), 0);
  assert_int_equal(audit_job_end(log, &info, 0, NULL), 0);
  assert_int_equal(stat(log, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0200);
  umask(022);
}

static void test_unwritable_path_is_an_error_not_a_crash(void **state) {
  (void)state;
  audit_info_t info;
  audit_info_init(&info);
  assert_int_equal(audit_job_start("/nonexistent-dir/audit.log", &info), GPL_ESYS);
  assert_int_equal(audit_job_start(NULL, &info), 0); /* no [audit] log: nothing to do */
  char hex[65];
  assert_int_equal(audit_file_sha256("/nonexistent-file", hex), GPL_ENOENT);
}

int main(void) {
  snprintf(g_tmp, sizeof g_tmp, "/tmp/gpl-ops-audit-XXXXXX");
  if (!mkdtemp(g_tmp)) return 1;
  log_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_start_end_lines),
      cmocka_unit_test(test_mode_never_loosened),
      cmocka_unit_test(test_unwritable_path_is_an_error_not_a_crash),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (system(cmd) != 0) return 1;
  return rc;
}
