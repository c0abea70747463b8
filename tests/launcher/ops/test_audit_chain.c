/* The audit log's hash chain (launcher/audit/audit_chain.c): lines appended by the events API
 * chain; verify names the first line that breaks after an edit, a removal, an insertion, a
 * reordering, a cut last line, a removed first line; appending after a cut line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/log.h"
#include "common/safefile.h"
#include "gpulaunch/error.h"
#include "launcher/audit/audit_chain.h"
#include "launcher/audit/audit_event.h"

static char g_tmp[64];

/* The log's lines (malloc'd array of malloc'd strings, without newlines). */
typedef struct lines_s {
  char *l[64];
  int n;
} lines_t;

static void read_lines(const char *path, lines_t *ls) {
  char *txt = NULL;
  size_t len;
  assert_int_equal(safefile_read_text(path, &txt, &len), 0);
  ls->n = 0;
  for (char *p = txt, *nl; (nl = strchr(p, '\n')); p = nl + 1) ls->l[ls->n++] = strndup(p, (size_t)(nl - p));
  free(txt);
}

static char *join(const lines_t *ls, int cut_last) {
  size_t len = 1;
  for (int i = 0; i < ls->n; i++) len += strlen(ls->l[i]) + 1;
  char *s = calloc(len, 1);
  for (int i = 0; i < ls->n; i++) {
    strcat(s, ls->l[i]);
    if (!(cut_last && i == ls->n - 1)) strcat(s, "\n");
  }
  return s;
}

static void free_lines(lines_t *ls) {
  for (int i = 0; i < ls->n; i++) free(ls->l[i]);
  ls->n = 0;
}

/* A log of 6 lines: the events API's five kinds and a start line through audit_event_line. */
static void make_log(const char *path, lines_t *ls) {
  unlink(path);
  char err[256];
  assert_int_equal(audit_event_open(path, err, sizeof err), 0);
  audit_event_identity("job-42", 3);
  assert_int_equal(audit_event_line(path, "{\"event\":\"start\",\"job\":\"job-42\"}"), 0);
  audit_note_stop(SIGTERM, "signal", "slurmstepd", 1234);
  audit_note_lost("h2,h3", "ranks 4-7 on h2 and h3 lost");
  audit_note_notice("h1", "aws spot interruption", 118.5);
  audit_note_restart(2, "lost", "h1 h2 h3", "h1");
  audit_note_auth_failure("front", "10.0.0.9:5555", 17);
  assert_int_equal(audit_event_open(NULL, err, sizeof err), 0);
  read_lines(path, ls);
  assert_int_equal(ls->n, 6);
}

static long verify(const char *text, audit_verify_t *v) {
  int rc = audit_chain_verify_buf(text, strlen(text), v);
  /* the stream parser agrees with the buffer's */
  audit_verify_t vs;
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  int rs = strlen(text) ? audit_chain_verify_stream(f, &vs) : 0;
  if (f) fclose(f);
  if (strlen(text)) {
    assert_int_equal(rs, rc);
    assert_int_equal(vs.bad_line, v->bad_line);
  }
  return rc ? v->bad_line : 0;
}

static void test_events_chain(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/chain.log", g_tmp);
  lines_t ls;
  make_log(path, &ls);
  /* the first line chains to zeros, each next one to the SHA-256 of the one before */
  assert_memory_equal(ls.l[0], "{\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\",", 75);
  for (int i = 1; i < ls.n; i++) {
    char hex[65];
    assert_int_equal(audit_chain_hash(ls.l[i - 1], strlen(ls.l[i - 1]), hex), 0);
    assert_memory_equal(ls.l[i] + strlen(AUDIT_CHAIN_PREFIX), hex, 64);
  }
  /* the events say what happened */
  cJSON *o = cJSON_Parse(ls.l[1]);
  assert_string_equal(cJSON_GetObjectItem(o, "event")->valuestring, "stop");
  assert_string_equal(cJSON_GetObjectItem(o, "signal")->valuestring, "SIGTERM");
  assert_string_equal(cJSON_GetObjectItem(o, "channel")->valuestring, "signal");
  assert_string_equal(cJSON_GetObjectItem(o, "peer")->valuestring, "slurmstepd");
  assert_int_equal(cJSON_GetObjectItem(o, "peer_pid")->valueint, 1234);
  assert_int_equal(cJSON_GetObjectItem(o, "rank")->valueint, 3);
  assert_string_equal(cJSON_GetObjectItem(o, "job")->valuestring, "job-42");
  cJSON_Delete(o);
  o = cJSON_Parse(ls.l[5]);
  assert_string_equal(cJSON_GetObjectItem(o, "event")->valuestring, "auth_failure");
  assert_string_equal(cJSON_GetObjectItem(o, "peer")->valuestring, "10.0.0.9:5555");
  assert_int_equal(cJSON_GetObjectItem(o, "count")->valueint, 17);
  cJSON_Delete(o);
  o = cJSON_Parse(ls.l[4]);
  assert_string_equal(cJSON_GetObjectItem(o, "hosts_after")->valuestring, "h1");
  cJSON_Delete(o);
  char *all = join(&ls, 0);
  audit_verify_t v;
  assert_int_equal(verify(all, &v), 0);
  assert_int_equal(v.lines, 6);
  free(all);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  free_lines(&ls);
}

static void test_edit_delete_insert_reorder(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/tamper.log", g_tmp);
  lines_t ls;
  make_log(path, &ls);
  audit_verify_t v;
  char *t;

  /* an edited line (still JSON, its own "prev" kept): the next line no longer chains to it */
  char *keep = ls.l[2];
  ls.l[2] = strdup(keep);
  char *h = strstr(ls.l[2], "h2,h3");
  assert_non_null(h);
  h[1] = '9';
  t = join(&ls, 0);
  assert_int_equal(verify(t, &v), 4);
  assert_int_equal(v.lines, 3);
  assert_non_null(strstr(v.why, "line 3 was edited"));
  free(t);
  free(ls.l[2]);
  ls.l[2] = keep;

  /* a removed line */
  lines_t d = ls;
  memmove(&d.l[2], &d.l[3], (size_t)(d.n - 3) * sizeof d.l[0]);
  d.n--;
  t = join(&d, 0);
  assert_int_equal(verify(t, &v), 3);
  free(t);

  /* an inserted line, with a correct "prev" of its own: the line after it breaks */
  char ins[512], hex[65];
  assert_int_equal(audit_chain_hash(ls.l[2], strlen(ls.l[2]), hex), 0);
  snprintf(ins, sizeof ins, "{\"prev\":\"%s\",\"event\":\"stop\",\"signal\":\"SIGKILL\"}", hex);
  lines_t in = {.n = 0};
  for (int i = 0; i < ls.n; i++) {
    in.l[in.n++] = ls.l[i];
    if (i == 2) in.l[in.n++] = ins;
  }
  t = join(&in, 0);
  assert_int_equal(verify(t, &v), 5);
  free(t);

  /* two lines swapped */
  lines_t r = ls;
  r.l[3] = ls.l[4];
  r.l[4] = ls.l[3];
  t = join(&r, 0);
  assert_int_equal(verify(t, &v), 4);
  free(t);

  /* the first line removed */
  lines_t f = ls;
  memmove(&f.l[0], &f.l[1], (size_t)(f.n - 1) * sizeof f.l[0]);
  f.n--;
  t = join(&f, 0);
  assert_int_equal(verify(t, &v), 1);
  assert_non_null(strstr(v.why, "removed from its start"));
  free(t);

  /* the last line cut short: no newline */
  t = join(&ls, 1);
  t[strlen(t) - 5] = 0;
  assert_int_equal(verify(t, &v), 6);
  assert_non_null(strstr(v.why, "no newline"));
  free(t);

  /* a line without the chain, an empty line, a line that is not JSON */
  assert_int_equal(verify("{\"event\":\"start\"}\n", &v), 1);
  assert_int_equal(verify("\n", &v), 1);
  t = join(&ls, 0);
  char *p = strstr(t, "\"event\":\"notice\"");
  assert_non_null(p);
  p[0] = '[';
  assert_int_equal(verify(t, &v), 4);
  assert_non_null(strstr(v.why, "not a JSON object"));
  free(t);
  assert_int_equal(verify("", &v), 0); /* an empty log holds */
  free_lines(&ls);
}

/* A write cut short (a full disk, a kill) leaves a line without its newline: the next append
 * starts on a line of its own, and verify names the cut line, not a merged one. */
static void test_append_after_cut_line(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/cut.log", g_tmp);
  lines_t ls;
  make_log(path, &ls);
  char *t = join(&ls, 1);
  t[strlen(t) - 3] = 0;
  FILE *f = fopen(path, "w");
  fputs(t, f);
  fclose(f);
  free(t);
  assert_int_equal(audit_event_line(path, "{\"event\":\"end\"}"), 0);
  char *txt;
  size_t len;
  assert_int_equal(safefile_read_text(path, &txt, &len), 0);
  audit_verify_t v;
  assert_int_equal(audit_chain_verify_buf(txt, len, &v), 1);
  assert_int_equal(v.bad_line, 6);
  assert_non_null(strstr(v.why, "line 6 is not a JSON object"));
  free(txt);
  free_lines(&ls);
}

static void test_refuses_non_objects(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/bad.log", g_tmp);
  assert_int_equal(audit_chain_append(path, "not json", NULL), GPL_EINVAL);
  assert_int_equal(audit_chain_append(path, "{\"a\":1}\n{\"b\":2}", NULL), GPL_EINVAL);
  assert_int_equal(audit_chain_append(path, "{}", NULL), 0);
  char *line = NULL;
  assert_int_equal(audit_chain_append(path, "{}", &line), 0);
  assert_non_null(line);
  assert_int_equal(strlen(line), strlen(AUDIT_CHAIN_PREFIX) + 64 + 2);
  free(line);
  assert_int_equal(audit_chain_append("/nonexistent-dir/a.log", "{}", NULL), GPL_ESYS);
}

int main(void) {
  snprintf(g_tmp, sizeof g_tmp, "/tmp/gpl-ops-chain-XXXXXX");
  if (!mkdtemp(g_tmp)) return 1;
  log_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_events_chain),
      cmocka_unit_test(test_edit_delete_insert_reorder),
      cmocka_unit_test(test_append_after_cut_line),
      cmocka_unit_test(test_refuses_non_objects),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_tmp);
  if (system(cmd) != 0) rc = 1;
  return rc;
}
