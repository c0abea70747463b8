/* The accept report: the exit status rule (warnings, strict, errors), the exclude list, the JSON
 * round trip, and what the JUnit and HTML writers put where (xmllint validation is in
 * test_accept_reports.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/safefile.h"
#include "common/util.h"
#include "launcher/accept/accept.h"
#include "launcher/exitcode.h"

static void add(accept_report_t *r, const char *name, const char *host, int node, accept_status_t st,
                const char *detail) {
  accept_check_t c;
  accept_check_init(&c, name, host, node, -1, "");
  accept_check_set(&c, st, "%s", detail);
  assert_int_equal(accept_report_add(r, &c), 0);
}

static void two_nodes(accept_report_t *r) {
  accept_report_init(r);
  r->nnodes = 2;
  r->nranks = 4;
  r->hosts = calloc(2, sizeof *r->hosts);
  r->hosts[0] = strdup("n0");
  r->hosts[1] = strdup("n1");
  snprintf(r->started, sizeof r->started, "2026-12-02T09:00:00.000Z");
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* Does the <testsuites> start tag hold attr? */
__attribute__((noinline)) static int root_has(const char *doc, const char *attr) {
  const char *start = strstr(doc, "<testsuites");
  if (!start) return 0;
  const char *end = strchr(start, '>');
  const char *a = strstr(start, attr);
  return a != NULL && (end == NULL || a < end);
}

static char *slurp(const char *path) {
  char *t = NULL;
  size_t n = 0;
  assert_int_equal(safefile_read_text(path, &t, &n), 0);
  return t;
}

static void test_exit_code_rule(void **state) {
  (void)state;
  accept_report_t r;
  two_nodes(&r);
  add(&r, "gpu_count", "n0", 0, ACCEPT_PASS, "");
  add(&r, "ecc", "n0", 0, ACCEPT_SKIP, "NVML not available");
  assert_int_equal(accept_exit_code(&r), GPL_EXIT_OK); /* skipped does not fail */
  add(&r, "gpu_nic_path", "n1", 1, ACCEPT_WARN, "SYS");
  assert_int_equal(accept_exit_code(&r), GPL_EXIT_OK); /* nor does a warning */
  r.strict = 1;
  assert_int_equal(accept_exit_code(&r), GPL_EXIT_ACCEPT_FAIL); /* unless strict */
  r.strict = 0;
  add(&r, "busbw", "", -1, ACCEPT_ERROR, "timed out");
  assert_int_equal(accept_exit_code(&r), GPL_EXIT_ACCEPT_ERROR); /* could not run */
  add(&r, "nic", "n0", 0, ACCEPT_FAIL, "down");
  assert_int_equal(accept_exit_code(&r), GPL_EXIT_ACCEPT_FAIL); /* a failure wins */
  assert_int_equal(GPL_EXIT_ACCEPT_FAIL, 73);
  assert_int_equal(GPL_EXIT_ACCEPT_ERROR, 74);
  accept_report_free(&r);
}

static void test_bad_hosts(void **state) {
  (void)state;
  accept_report_t r;
  two_nodes(&r);
  add(&r, "gpu_nic_path", "n0", 0, ACCEPT_WARN, "SYS");
  add(&r, "busbw", "", -1, ACCEPT_FAIL, "slow job"); /* a job check names no host */
  accept_report_collect_bad_hosts(&r);
  assert_int_equal(r.nbad, 0);
  add(&r, "nic", "n1", 1, ACCEPT_FAIL, "down");
  add(&r, "gpu_count", "n1", 1, ACCEPT_FAIL, "7 of 8");
  accept_report_collect_bad_hosts(&r);
  assert_int_equal(r.nbad, 1); /* once */
  assert_string_equal(r.bad_hosts[0], "n1");
  r.strict = 1;
  accept_report_collect_bad_hosts(&r);
  assert_int_equal(r.nbad, 2);
  char path[] = "/tmp/accept-excl-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  assert_int_equal(accept_write_exclude(&r, path), 0);
  char *t = slurp(path);
  unlink(path);
  /* Host names only, one per line: what scripts/hostfile --exclude and `wc -l` read. */
  assert_string_equal(t, "n1\nn0\n");
  free(t);
  accept_report_free(&r);
}

static void test_json_round_trip(void **state) {
  (void)state;
  accept_report_t r, back;
  two_nodes(&r);
  r.ar_busbw = 1.5;
  r.ar_threshold = 1.0;
  snprintf(r.backend, sizeof r.backend, "cpu");
  snprintf(r.threshold_source, sizeof r.threshold_source, "config: 1 GB/s");
  accept_check_t c;
  accept_check_init(&c, "busbw", "", -1, -1, "allreduce");
  accept_check_value(&c, 1.5, "GB/s", NULL);
  accept_check_threshold(&c, ">= 1 GB/s");
  accept_check_set(&c, ACCEPT_PASS, "quote \" backslash \\ newline\n<tag>");
  accept_report_add(&r, &c);
  accept_meas_t m;
  memset(&m, 0, sizeof m);
  int nodes[2] = {0, 1};
  snprintf(m.phase, sizeof m.phase, "ring");
  m.nnodes = 2;
  m.nodes = nodes;
  m.busbw = 0.9;
  m.nsamples = 3;
  m.samples[0] = 0.5;
  m.samples[1] = 0.9;
  m.samples[2] = 0.75;
  m.reference = 1.0;
  m.flagged = 1;
  snprintf(m.label, sizeof m.label, "n0 + n1");
  accept_report_add_meas(&r, &m);
  snprintf(r.search_rule, sizeof r.search_rule, "noise 35%%: flagging below 0.13 of the reference instead of 0.93");
  r.search_jitter = 0.35;
  accept_report_add_bad_host(&r, "n1");
  r.exit_code = accept_exit_code(&r);
  cJSON *doc = accept_report_json(&r);
  assert_non_null(doc);
  assert_int_equal(accept_report_from_json(doc, &back), 0);
  cJSON *doc2 = accept_report_json(&back);
  char *a = cJSON_PrintUnformatted(doc), *b = cJSON_PrintUnformatted(doc2);
  assert_string_equal(a, b);
  assert_int_equal(back.nchecks, 1);
  assert_string_equal(back.checks[0].detail, "quote \" backslash \\ newline\n<tag>");
  assert_int_equal(back.meas[0].flagged, 1);
  /* Every try of a measurement, and the rule the search applied. */
  assert_int_equal(back.meas[0].nsamples, 3);
  assert_true(back.meas[0].samples[1] == 0.9 && back.meas[0].samples[2] == 0.75);
  assert_string_equal(back.search_rule, r.search_rule);
  assert_true(back.search_jitter == 0.35);
  assert_non_null(strstr(a, "\"samples_GBps\":[0.5,0.9,0.75]"));
  /* What a reader of --json finds. */
  assert_non_null(strstr(a, "\"verdict\":\"pass\""));
  assert_non_null(strstr(a, "\"hosts\":[\"n0\",\"n1\"]"));
  assert_non_null(strstr(a, "\"min_busbw_GBps\":1"));
  assert_non_null(strstr(a, "\"threshold\":\">= 1 GB/s\""));
  free(a);
  free(b);
  cJSON_Delete(doc);
  cJSON_Delete(doc2);
  accept_report_free(&back);
  accept_report_free(&r);
}

static void test_junit_and_html_shape(void **state) {
  (void)state;
  accept_report_t r;
  two_nodes(&r);
  add(&r, "gpu_count", "n0", 0, ACCEPT_PASS, "8");
  add(&r, "gpu_nic_path", "n0", 0, ACCEPT_WARN, "SYS <far>");
  add(&r, "ecc", "n1", 1, ACCEPT_SKIP, "NVML not available: x");
  add(&r, "nic", "n1", 1, ACCEPT_FAIL, "mlx5_0 & co down");
  add(&r, "busbw", "", -1, ACCEPT_ERROR, "timed out");
  r.exit_code = accept_exit_code(&r);
  char dir[] = "/tmp/accept-out-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char junit[256], html[256];
  snprintf(junit, sizeof junit, "%s/j.xml", dir);
  snprintf(html, sizeof html, "%s/r.html", dir);
  assert_int_equal(accept_write_junit(&r, junit), 0);
  assert_int_equal(accept_write_html(&r, html), 0);
  char *j = slurp(junit), *h = slurp(html);
  /* One suite per node plus the job's; failures, errors and skips where they belong. */
  assert_int_equal(count(j, "<testsuite "), 3);
  assert_non_null(strstr(j, "<testsuite name=\"node n1\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"1\""));
  assert_non_null(strstr(j, "<testsuite name=\"job\" tests=\"1\" failures=\"0\" errors=\"1\""));
  assert_int_equal(count(j, "<failure "), 1);
  assert_int_equal(count(j, "<skipped "), 1);
  assert_int_equal(count(j, "<error "), 1);
  assert_non_null(strstr(j, "message=\"mlx5_0 &amp; co down\""));
  assert_non_null(strstr(j, "<system-out>warning: SYS &lt;far&gt;"));
  /* the root: totals, and only the attributes every common schema allows there (Jenkins'
   * junit-10.xsd has no skipped or timestamp on <testsuites>) */
  assert_non_null(strstr(j, "<testsuites name=\"gpulaunch accept\" tests=\"5\" failures=\"1\" errors=\"1\" time=\""));
  assert_false(root_has(j, " skipped="));
  assert_false(root_has(j, " timestamp="));
  free(j);
  /* Strict: the warning is a failure of type warn. */
  r.strict = 1;
  assert_int_equal(accept_write_junit(&r, junit), 0);
  j = slurp(junit);
  assert_int_equal(count(j, "<failure "), 2);
  assert_non_null(strstr(j, "type=\"warn\""));
  free(j);
  /* HTML: verdict, the reasons, no external resources. */
  assert_non_null(strstr(h, "Cluster acceptance: FAILED"));
  assert_non_null(strstr(h, "mlx5_0 &amp; co down"));
  assert_null(strstr(h, "http://") == NULL ? NULL : strstr(h, "src=\"http"));
  assert_null(strstr(h, "<script"));
  assert_null(strstr(h, "<link "));
  assert_non_null(strstr(h, "No bandwidth was measured."));
  free(h);
  unlink(junit);
  unlink(html);
  rmdir(dir);
  accept_report_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exit_code_rule),
      cmocka_unit_test(test_bad_hosts),
      cmocka_unit_test(test_json_round_trip),
      cmocka_unit_test(test_junit_and_html_shape),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
