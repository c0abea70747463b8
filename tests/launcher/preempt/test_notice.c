/* Notice unit tests: the three clouds' answers in their real shapes (parsers), the cloud from DMI
 * ids, kind names, and a watcher that is off. The HTTP side is test_notice_http.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpulaunch/error.h"
#include "launcher/preempt/notice.h"

/* AWS's documented answer; Azure's documented event (one Preempt for this VM). */
#define AWS_TERMINATE "{\"action\": \"terminate\", \"time\": \"2026-12-06T08:22:00Z\"}"
#define AWS_T 1796545320.0
#define AZURE_EVENT(type, vm, status, nb)                                                         \
  "{\"DocumentIncarnation\":2,\"Events\":[{\"EventId\":\"602d9444-d2cd-49c7-8624-8643e7171297\","  \
  "\"EventType\":\"" type "\",\"ResourceType\":\"VirtualMachine\",\"Resources\":[\"" vm "\"],"    \
  "\"EventStatus\":\"" status "\",\"NotBefore\":\"" nb "\",\"Description\":\"Spot eviction\","    \
  "\"EventSource\":\"Platform\",\"DurationInSeconds\":-1}]}"
#define AZURE_NB "Mon, 19 Sep 2016 18:29:47 GMT"
#define AZURE_T 1474309787.0

static int aws(const char *body, notice_t *n, char *why) {
  memset(n, 0, sizeof *n);
  why[0] = 0;
  return notice_aws_parse(body, strlen(body), n, why, 256);
}

static int azure(const char *body, const char *vm, double now, notice_t *n, char *why) {
  memset(n, 0, sizeof *n);
  why[0] = 0;
  return notice_azure_parse(body, strlen(body), vm, now, n, why, 256);
}

static void test_aws(void **state) {
  (void)state;
  notice_t n;
  char why[256];
  assert_int_equal(aws(AWS_TERMINATE, &n, why), 1);
  assert_int_equal(n.cloud, NOTICE_AWS);
  assert_string_equal(n.action, "terminate");
  assert_true(n.deadline == AWS_T);
  assert_string_equal(n.event_id, "aws:terminate:2026-12-06T08:22:00Z");
  assert_non_null(strstr(n.text, "terminate at 2026-12-06T08:22:00Z"));
  assert_int_equal(aws("{\"action\":\"stop\",\"time\":\"2026-12-06T08:22:00.5Z\"}\n", &n, why), 1);
  assert_true(n.deadline == AWS_T + 0.5);
  assert_int_equal(aws("{\"action\":\"hibernate\",\"time\":\"2026-12-06T08:22:00Z\"}", &n, why), 1);
  /* what is not AWS's answer: a reason each time */
  const char *bad[] = {"", "{not json", "[]", "{\"action\":\"terminate\"}", "{\"time\":\"2026-12-06T08:22:00Z\"}",
                       "{\"action\":\"reboot\",\"time\":\"2026-12-06T08:22:00Z\"}",
                       "{\"action\":\"stop\",\"time\":\"tomorrow\"}",
                       "{\"action\":\"stop\",\"time\":\"2026-13-06T08:22:00Z\"}",
                       "{\"action\":\"stop\",\"time\":\"2026-12-06T08:22:00+02:00\"}",
                       "{\"action\":1,\"time\":2}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(aws(bad[i], &n, why), GPL_EPROTO);
    assert_true(why[0] != 0);
  }
  /* the reason quotes the answer, unprintable bytes as '?' */
  assert_int_equal(aws("{\x01", &n, why), GPL_EPROTO);
  assert_non_null(strstr(why, "'{?'"));
}

static void test_gcp(void **state) {
  (void)state;
  notice_t n;
  char why[256] = "";
  memset(&n, 0, sizeof n);
  assert_int_equal(notice_gcp_parse("FALSE", 5, 1000, &n, why, sizeof why), 0);
  assert_int_equal(notice_gcp_parse("TRUE\n", 5, 1000, &n, why, sizeof why), 1);
  assert_int_equal(n.cloud, NOTICE_GCP);
  assert_true(n.deadline == 1000 + NOTICE_GRACE_DEFAULT);
  assert_string_equal(n.action, "preempted");
  assert_string_equal(n.event_id, "gcp:preempted");
  assert_int_equal(notice_gcp_parse("true", 4, 1000, &n, why, sizeof why), GPL_EPROTO);
  assert_non_null(strstr(why, "'true'"));
  assert_int_equal(notice_gcp_parse("", 0, 1000, &n, why, sizeof why), GPL_EPROTO);
  assert_int_equal(notice_gcp_parse("TRUEX", 5, 1000, &n, why, sizeof why), GPL_EPROTO);
}

static void test_azure(void **state) {
  (void)state;
  notice_t n;
  char why[256];
  assert_int_equal(azure(AZURE_EVENT("Preempt", "vmname", "Scheduled", AZURE_NB), "vmname", 5, &n, why), 1);
  assert_int_equal(n.cloud, NOTICE_AZURE);
  assert_string_equal(n.action, "preempt");
  assert_string_equal(n.event_id, "602d9444-d2cd-49c7-8624-8643e7171297");
  assert_true(n.deadline == AZURE_T);
  assert_non_null(strstr(n.text, "Preempt"));
  /* Azure's names ignore case; a started event has no NotBefore: now + 30 s */
  assert_int_equal(azure(AZURE_EVENT("Terminate", "VMNAME", "Started", ""), "vmname", 5, &n, why), 1);
  assert_string_equal(n.action, "terminate");
  assert_true(n.deadline == 5 + NOTICE_GRACE_DEFAULT);
  /* not for this VM, not an end, nothing scheduled */
  assert_int_equal(azure(AZURE_EVENT("Preempt", "other-vm", "Scheduled", AZURE_NB), "vmname", 5, &n, why), 0);
  assert_int_equal(azure(AZURE_EVENT("Freeze", "vmname", "Scheduled", AZURE_NB), "vmname", 5, &n, why), 0);
  assert_int_equal(azure(AZURE_EVENT("Reboot", "vmname", "Scheduled", AZURE_NB), "vmname", 5, &n, why), 0);
  assert_int_equal(azure(AZURE_EVENT("Preempt", "vmname", "Completed", AZURE_NB), "vmname", 5, &n, why), 0);
  assert_int_equal(azure("{\"DocumentIncarnation\":0,\"Events\":[]}", "vmname", 5, &n, why), 0);
  /* a second event for this VM after one for another */
  assert_int_equal(azure("{\"Events\":[{\"EventId\":\"a\",\"EventType\":\"Preempt\",\"Resources\":[\"x\"]},"
                         "{\"EventId\":\"b\",\"EventType\":\"Preempt\",\"Resources\":[\"x\",\"vmname\"],"
                         "\"EventStatus\":\"Scheduled\",\"NotBefore\":\"" AZURE_NB "\"}]}",
                         "vmname", 5, &n, why),
                   1);
  assert_string_equal(n.event_id, "b");
  /* malformed */
  const char *bad[] = {"", "{", "[]", "{\"Events\":5}", "{\"Events\":{}}",
                       "{\"Events\":[{\"EventType\":\"Preempt\",\"Resources\":[\"vmname\"]}]}",
                       AZURE_EVENT("Preempt", "vmname", "Scheduled", "19/09/2016")};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(azure(bad[i], "vmname", 5, &n, why), GPL_EPROTO);
    assert_true(why[0] != 0);
  }
  assert_int_equal(azure(AZURE_EVENT("Preempt", "vmname", "Scheduled", AZURE_NB), NULL, 5, &n, why), GPL_EINVAL);
}

/* AWS's rebalance recommendation: an advisory notice, posted at noticeTime. */
static void test_aws_rebalance(void **state) {
  (void)state;
  notice_t n;
  char why[256];
  const char *ok = "{\"noticeTime\": \"2026-12-06T08:17:00Z\"}";
  memset(&n, 0, sizeof n);
  assert_int_equal(notice_aws_rebalance_parse(ok, strlen(ok), &n, why, sizeof why), 1);
  assert_int_equal(n.cloud, NOTICE_AWS);
  assert_int_equal(n.advisory, 1);
  assert_string_equal(n.action, "rebalance");
  assert_string_equal(n.event_id, "aws:rebalance:2026-12-06T08:17:00Z");
  assert_true(n.deadline == 1796545020);
  const char *bad[] = {"", "{", "[]", "{\"noticeTime\": 5}", "{\"time\": \"2026-12-06T08:17:00Z\"}",
                       "{\"noticeTime\": \"yesterday\"}", "<html>404 - Not Found</html>"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why[0] = 0;
    assert_int_equal(notice_aws_rebalance_parse(bad[i], strlen(bad[i]), &n, why, sizeof why), GPL_EPROTO);
    assert_true(why[0] != 0);
  }
}

/* Alibaba's spot/termination-time: an ISO 8601 UTC time, a newline allowed after it. */
static void test_alibaba(void **state) {
  (void)state;
  notice_t n;
  char why[256];
  memset(&n, 0, sizeof n);
  assert_int_equal(notice_alibaba_parse("2026-12-06T08:22:00Z\n", 21, &n, why, sizeof why), 1);
  assert_int_equal(n.cloud, NOTICE_ALIBABA);
  assert_int_equal(n.advisory, 0);
  assert_string_equal(n.action, "terminate");
  assert_string_equal(n.event_id, "alibaba:terminate:2026-12-06T08:22:00Z");
  assert_true(n.deadline == 1796545320);
  assert_non_null(strstr(n.text, "Alibaba"));
  const char *bad[] = {"", "\n", "TRUE", "2026-12-06 08:22:00", "2026-12-06T08:22:00+08:00",
                       "{\"time\": \"2026-12-06T08:22:00Z\"}", "2026-12-06T08:22:00Zjunk",
                       "2026-12-06T08:22:00Z 2026-12-06T08:22:00Z 2026-12-06T08:22:00Z"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    why[0] = 0;
    assert_int_equal(notice_alibaba_parse(bad[i], strlen(bad[i]), &n, why, sizeof why), GPL_EPROTO);
    assert_true(why[0] != 0);
  }
  /* a NUL inside the answer is not a time */
  assert_int_equal(notice_alibaba_parse("2026-12-06T08:22:00Z\0x", 22, &n, why, sizeof why), GPL_EPROTO);
}

static void test_kind_names(void **state) {
  (void)state;
  const char *names[] = {"off", "auto", "aws", "gcp", "azure", "alibaba"};
  for (int i = 0; i < 6; i++) {
    notice_kind_t k;
    assert_int_equal(notice_kind_parse(names[i], &k), 0);
    assert_string_equal(notice_kind_name(k), names[i]);
  }
  notice_kind_t k;
  assert_int_equal(notice_kind_parse("AWS", &k), 0);
  assert_int_equal(k, NOTICE_AWS);
  assert_int_equal(notice_kind_parse("ibm", &k), GPL_EINVAL);
  assert_int_equal(notice_kind_parse(NULL, &k), GPL_EINVAL);
  notice_opts_t o;
  notice_opts_init(&o);
  assert_int_equal(o.kind, NOTICE_AUTO);
  assert_true(o.interval == NOTICE_INTERVAL_MIN && o.timeout == 3 && o.connect_timeout == 2);
}

/* A DMI folder with the given files (name, value; NULL ends), as sysfs writes them. */
static void dmi_dir(char *dir, const char *const *kv) {
  strcpy(dir, "/tmp/notice_dmi.XXXXXX");
  assert_non_null(mkdtemp(dir));
  for (; kv[0]; kv += 2) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, kv[0]);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", kv[1]);
    fclose(f);
  }
}

static void dmi_clean(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static void expect_kind(notice_kind_t want, const char *const *kv) {
  char dir[64];
  dmi_dir(dir, kv);
  assert_int_equal(notice_kind_detect(dir), want);
  dmi_clean(dir);
}

static void test_detect(void **state) {
  (void)state;
  /* real machines' ids: an EC2 Nitro instance, an older Xen one, a GCE VM, an Azure VM, Hyper-V
   * on premises, a workstation */
  expect_kind(NOTICE_AWS, (const char *const[]){"sys_vendor", "Amazon EC2", "product_name", "p4d.24xlarge",
                                                "bios_vendor", "Amazon EC2", NULL});
  expect_kind(NOTICE_AWS, (const char *const[]){"sys_vendor", "Xen", "bios_vendor", "Xen", "product_version",
                                                "4.11.amazon", NULL});
  expect_kind(NOTICE_GCP, (const char *const[]){"sys_vendor", "Google", "product_name", "Google Compute Engine",
                                                "bios_vendor", "Google", NULL});
  expect_kind(NOTICE_AZURE, (const char *const[]){"sys_vendor", "Microsoft Corporation", "product_name",
                                                  "Virtual Machine", "chassis_asset_tag",
                                                  "7783-7084-3265-9085-8269-3286-77", NULL});
  expect_kind(NOTICE_OFF, (const char *const[]){"sys_vendor", "Microsoft Corporation", "product_name",
                                                "Virtual Machine", "chassis_asset_tag", "None", NULL});
  expect_kind(NOTICE_OFF, (const char *const[]){"sys_vendor", "Xen", "bios_vendor", "Xen", "product_version",
                                                "4.2", NULL});
  expect_kind(NOTICE_OFF, (const char *const[]){"sys_vendor", "Dell Inc.", "product_name", "PowerEdge XE9680",
                                                NULL});
  expect_kind(NOTICE_ALIBABA, (const char *const[]){"sys_vendor", "Alibaba Cloud", "product_name",
                                                    "Alibaba Cloud ECS", NULL});
  expect_kind(NOTICE_ALIBABA, (const char *const[]){"sys_vendor", "", "product_name", "Alibaba Cloud ECS", NULL});
  expect_kind(NOTICE_OFF, (const char *const[]){NULL});
  assert_int_equal(notice_kind_detect("/nonexistent/dmi"), NOTICE_OFF);
}

static void never(const notice_t *n, void *arg) {
  (void)n;
  (void)arg;
  fail_msg("no notice expected");
}

static void test_off_starts_nothing(void **state) {
  (void)state;
  notice_opts_t o;
  notice_opts_init(&o);
  notice_watch_t *w = (notice_watch_t *)1;
  o.kind = NOTICE_OFF;
  assert_int_equal(notice_watch_start(&w, &o, never, NULL), 0);
  assert_null(w);
  /* auto on a machine of no known cloud */
  o.kind = NOTICE_AUTO;
  o.dmi_dir = "/nonexistent/dmi";
  assert_int_equal(notice_watch_start(&w, &o, never, NULL), 0);
  assert_null(w);
  assert_int_equal(notice_watch_kind(NULL), NOTICE_OFF);
  notice_watch_stop(NULL);
  o.kind = NOTICE_AWS;
  o.timeout = 0;
  assert_int_equal(notice_watch_start(&w, &o, never, NULL), GPL_EINVAL);
  assert_int_equal(notice_ack(NULL, "x"), GPL_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_aws),    cmocka_unit_test(test_gcp),    cmocka_unit_test(test_azure),
      cmocka_unit_test(test_aws_rebalance), cmocka_unit_test(test_alibaba),
      cmocka_unit_test(test_kind_names), cmocka_unit_test(test_detect), cmocka_unit_test(test_off_starts_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
