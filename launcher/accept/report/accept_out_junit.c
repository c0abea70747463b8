/* JUnit XML of `gpulaunch accept`: one testsuite per node and one for the job, one testcase per
 * check; fail -> <failure>, error -> <error>, skipped -> <skipped message=reason>; a warning is
 * a passing testcase with the warning in <system-out> (a <failure type="warn"> when strict).
 * The shape is the common one CI servers read (Jenkins, GitLab, GitHub test reporters); see
 * tests/launcher/accept/junit.xsd. */
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "launcher/accept/accept.h"

static void attr(strbuf_t *b, const char *name, const char *value) {
  strbuf_printf(b, " %s=\"", name);
  accept_xml_escape(b, value);
  strbuf_append(b, "\"");
}

static void counts_of(const accept_report_t *r, int node, int *tests, int *fail, int *err, int *skip) {
  *tests = *fail = *err = *skip = 0;
  for (int i = 0; i < r->nchecks; i++) {
    const accept_check_t *c = &r->checks[i];
    if (accept_check_suite(c) != node) continue;
    (*tests)++;
    if (c->status == ACCEPT_FAIL || (r->strict && c->status == ACCEPT_WARN)) (*fail)++;
    else if (c->status == ACCEPT_ERROR) (*err)++;
    else if (c->status == ACCEPT_SKIP) (*skip)++;
  }
}

static void body(strbuf_t *b, const accept_check_t *c) {
  if (c->value_text[0]) {
    strbuf_append(b, "value: ");
    accept_xml_escape(b, c->value_text);
    strbuf_append(b, "\n");
  }
  if (c->threshold[0]) {
    strbuf_append(b, "threshold: ");
    accept_xml_escape(b, c->threshold);
    strbuf_append(b, "\n");
  }
  if (c->detail[0]) {
    accept_xml_escape(b, c->detail);
    strbuf_append(b, "\n");
  }
}

static void testcase(strbuf_t *b, const accept_report_t *r, const accept_check_t *c, const char *cls) {
  char name[ACCEPT_NAME_LEN + ACCEPT_SUBJECT_LEN + 4];
  if (c->subject[0]) snprintf(name, sizeof name, "%s[%s]", c->name, c->subject);
  else snprintf(name, sizeof name, "%s", c->name);
  strbuf_append(b, "    <testcase");
  attr(b, "name", name);
  attr(b, "classname", cls);
  strbuf_append(b, " time=\"0\">\n");
  const char *msg = c->detail[0] ? c->detail : c->value_text;
  switch (c->status) {
    case ACCEPT_FAIL:
    case ACCEPT_WARN:
      if (c->status == ACCEPT_WARN && !r->strict) {
        strbuf_append(b, "      <system-out>warning: ");
        body(b, c);
        strbuf_append(b, "</system-out>\n");
        break;
      }
      strbuf_append(b, "      <failure");
      attr(b, "message", msg);
      attr(b, "type", c->status == ACCEPT_WARN ? "warn" : "fail");
      strbuf_append(b, ">");
      body(b, c);
      strbuf_append(b, "</failure>\n");
      break;
    case ACCEPT_ERROR:
      strbuf_append(b, "      <error");
      attr(b, "message", msg);
      attr(b, "type", "error");
      strbuf_append(b, ">");
      body(b, c);
      strbuf_append(b, "</error>\n");
      break;
    case ACCEPT_SKIP:
      strbuf_append(b, "      <skipped");
      attr(b, "message", c->detail);
      strbuf_append(b, "/>\n");
      break;
    default:
      if (c->value_text[0] || c->threshold[0]) {
        strbuf_append(b, "      <system-out>");
        body(b, c);
        strbuf_append(b, "</system-out>\n");
      }
      break;
  }
  strbuf_append(b, "    </testcase>\n");
}

static void suite(strbuf_t *b, const accept_report_t *r, int node) {
  int tests, fail, err, skip;
  counts_of(r, node, &tests, &fail, &err, &skip);
  char name[ACCEPT_HOST_LEN + 16], cls[ACCEPT_HOST_LEN + 32];
  const char *host = node >= 0 ? r->hosts[node] : "";
  if (node >= 0) {
    snprintf(name, sizeof name, "node %s", host);
    snprintf(cls, sizeof cls, "accept.node.%s", host);
  } else {
    snprintf(name, sizeof name, "job");
    snprintf(cls, sizeof cls, "accept.job");
  }
  strbuf_append(b, "  <testsuite");
  attr(b, "name", name);
  strbuf_printf(b, " tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\"", tests,
                fail, err, skip, node < 0 ? r->seconds : 0.0);
  attr(b, "timestamp", r->started);
  attr(b, "hostname", node >= 0 ? host : "job");
  strbuf_printf(b, " id=\"%d\"", node + 1);
  strbuf_append(b, ">\n    <properties>\n");
  strbuf_printf(b, "      <property name=\"node\" value=\"%d\"/>\n", node);
  if (node < 0) {
    strbuf_printf(b, "      <property name=\"nodes\" value=\"%d\"/>\n", r->nnodes);
    strbuf_printf(b, "      <property name=\"ranks\" value=\"%d\"/>\n", r->nranks);
    strbuf_append(b, "      <property name=\"min_busbw_source\"");
    attr(b, "value", r->threshold_source);
    strbuf_append(b, "/>\n");
  }
  strbuf_append(b, "    </properties>\n");
  for (int i = 0; i < r->nchecks; i++) {
    const accept_check_t *c = &r->checks[i];
    if (accept_check_suite(c) == node) testcase(b, r, c, cls);
  }
  strbuf_append(b, "  </testsuite>\n");
}

int accept_write_junit(const accept_report_t *r, const char *path) {
  strbuf_t b = STRBUF_INIT;
  int tests, fail, err, skip, t = 0, f = 0, e = 0, s = 0;
  for (int node = -1; node < r->nnodes; node++) {
    counts_of(r, node, &tests, &fail, &err, &skip);
    t += tests;
    f += fail;
    e += err;
    s += skip;
  }
  strbuf_append(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gpulaunch accept\"");
  /* The root holds only what every common schema allows there (Jenkins' junit-10.xsd has no
   * skipped or timestamp on <testsuites>); each <testsuite> carries its own. */
  (void)s;
  strbuf_printf(&b, " tests=\"%d\" failures=\"%d\" errors=\"%d\" time=\"%.3f\">\n", t, f, e, r->seconds);
  for (int node = 0; node < r->nnodes; node++) suite(&b, r, node);
  suite(&b, r, -1);
  strbuf_append(&b, "</testsuites>\n");
  return accept_write_strbuf(path, &b);
}
