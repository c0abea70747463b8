/* accept's latency verdicts (accept_lat_judge.c) on the numbers of 4-node runs: one host delayed
 * by 5 ms (as tc netem makes it) named alone and its three round trips failing; a slow link
 * between healthy hosts a warning (a failure and a bad link above max_latency_us); the absolute
 * bound on the 8-byte allreduce; two nodes and compare = off without a majority; the numbers in
 * the table, the JSON (and back), the JUnit file and the HTML page. */
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
#include "launcher/accept/accept.h"
#include "launcher/exitcode.h"

static const char *const g_hosts[] = {"h0", "h1", "h2", "h3"};

/* A 4-node measurement: every pair 30 us (p99 90 us), the allreduces 40 us .. 400 us. */
static void lat4(accept_lat_t *l, int nn) {
  memset(l, 0, sizeof *l);
  l->nnodes = nn;
  l->nranks = nn * 2;
  l->rtt_p50 = malloc(sizeof(double) * nn * nn);
  l->rtt_p99 = malloc(sizeof(double) * nn * nn);
  l->rtt_n = calloc((size_t)nn * nn, sizeof(int));
  for (int i = 0; i < nn * nn; i++) l->rtt_p50[i] = l->rtt_p99[i] = -1;
  for (int a = 0; a < nn; a++)
    for (int b = a + 1; b < nn; b++) {
      l->rtt_p50[a * nn + b] = 30;
      l->rtt_p99[a * nn + b] = 90;
      l->rtt_n[a * nn + b] = 200;
    }
  for (int s = 0; s < ACCEPT_LAT_NSIZES; s++) {
    l->ar_p50[s] = 40 + 60 * s;
    l->ar_p99[s] = 2 * l->ar_p50[s];
    l->ar_iters[s] = 200;
  }
}

static void set_rtt(accept_lat_t *l, int a, int b, double p50) {
  l->rtt_p50[a * l->nnodes + b] = p50;
  l->rtt_p99[a * l->nnodes + b] = p50 * 1.5;
}

static void report(accept_report_t *r, int nn) {
  accept_report_init(r);
  r->nnodes = nn;
  r->nranks = nn * 2;
  r->hosts = calloc((size_t)nn, sizeof *r->hosts);
  for (int i = 0; i < nn; i++) r->hosts[i] = strdup(g_hosts[i]);
}

static const accept_check_t *find(const accept_report_t *r, const char *name, const char *who) {
  for (int i = 0; i < r->nchecks; i++)
    if (strcmp(r->checks[i].name, name) == 0 &&
        (strcmp(r->checks[i].host, who) == 0 || strcmp(r->checks[i].subject, who) == 0))
      return &r->checks[i];
  return NULL;
}

static int count_status(const accept_report_t *r, const char *name, accept_status_t st) {
  int n = 0;
  for (int i = 0; i < r->nchecks; i++) n += strcmp(r->checks[i].name, name) == 0 && r->checks[i].status == st;
  return n;
}

static char *slurp(const char *path) {
  char *t = NULL;
  size_t n = 0;
  assert_int_equal(safefile_read_text(path, &t, &n), 0);
  return t;
}

/* h2 behind a 5 ms delay: its three round trips ~10 ms, the others 30 us. */
static void test_delayed_host(void **state) {
  (void)state;
  accept_lat_t l;
  lat4(&l, 4);
  set_rtt(&l, 0, 2, 10040);
  set_rtt(&l, 1, 2, 10025);
  set_rtt(&l, 2, 3, 10060);
  accept_report_t r;
  report(&r, 4);
  accept_opts_t o;
  accept_opts_default(&o);
  assert_int_equal(accept_latency_judge(&l, g_hosts, &o, &r), 0);
  const accept_check_t *c = find(&r, "latency", "h2");
  assert_non_null(c);
  assert_int_equal(c->status, ACCEPT_FAIL);
  assert_int_equal(c->node, 2);
  assert_non_null(strstr(c->detail, "slow with every partner"));
  assert_non_null(strstr(c->detail, "(most nodes' fastest: 30 us)"));
  assert_int_equal(count_status(&r, "latency", ACCEPT_FAIL), 1);
  assert_int_equal(count_status(&r, "latency", ACCEPT_PASS), 3);
  assert_int_equal(count_status(&r, "rtt", ACCEPT_FAIL), 3);
  assert_int_equal(count_status(&r, "rtt", ACCEPT_PASS), 3);
  c = find(&r, "rtt", "h1+h2");
  assert_int_equal(c->status, ACCEPT_FAIL);
  assert_non_null(strstr(c->detail, "h2 slow with every partner"));
  assert_string_equal(c->value_text, "p50 10.0 ms, p99 15.0 ms");
  assert_int_equal(r.nbadlinks, 0); /* the host, not a link */
  assert_int_equal(count_status(&r, "allreduce_latency", ACCEPT_PASS), ACCEPT_LAT_NSIZES);
  accept_report_collect_bad_hosts(&r);
  assert_int_equal(r.nbad, 1);
  assert_string_equal(r.bad_hosts[0], "h2");
  r.exit_code = accept_exit_code(&r);
  assert_int_equal(r.exit_code, GPL_EXIT_ACCEPT_FAIL);

  /* The numbers in every report form. */
  char dir[] = "/tmp/accept_lat.XXXXXX", path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/a.json", dir);
  assert_int_equal(accept_write_json(&r, path), 0);
  char *text = slurp(path);
  cJSON *doc = cJSON_Parse(text);
  const cJSON *lat = cJSON_GetObjectItemCaseSensitive(doc, "latency");
  assert_non_null(lat);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(lat, "allreduce")), ACCEPT_LAT_NSIZES);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(lat, "pairs")), 6);
  assert_true(cJSON_GetObjectItemCaseSensitive(lat, "majority_rtt_us")->valuedouble == 30);
  assert_true(cJSON_GetObjectItemCaseSensitive(lat, "slow_above_us")->valuedouble ==
              ACCEPT_LAT_FACTOR * 30 + ACCEPT_LAT_SLACK_US);
  accept_report_t back;
  accept_report_init(&back);
  assert_int_equal(accept_report_from_json(doc, &back), 0);
  assert_non_null(back.latency);
  assert_int_equal(back.nchecks, r.nchecks);
  accept_report_free(&back);
  cJSON_Delete(doc);
  free(text);
  snprintf(path, sizeof path, "%s/a.xml", dir);
  assert_int_equal(accept_write_junit(&r, path), 0);
  text = slurp(path);
  assert_non_null(strstr(text, "latency"));
  assert_non_null(strstr(text, "h2&#39;s link is slow: its round trips take 10.0 ms at best (to h1), beyond the "
                               "majority&#39;s limit 590 us"));
  free(text);
  snprintf(path, sizeof path, "%s/a.html", dir);
  assert_int_equal(accept_write_html(&r, path), 0);
  text = slurp(path);
  assert_non_null(strstr(text, "<h2>Latency</h2>"));
  int slow_cells = 0;
  for (const char *p = text; (p = strstr(p, "<td class=\"fail\" title=\"p50")); p++) slow_cells++;
  assert_int_equal(slow_cells, 6); /* h2's three pairs, both halves of the matrix */
  free(text);
  snprintf(path, sizeof path, "%s/table.txt", dir);
  FILE *f = fopen(path, "w");
  accept_print_table(&r, f);
  fclose(f);
  text = slurp(path);
  assert_non_null(strstr(text, "Latency (us, p50 / p99)"));
  assert_non_null(strstr(text, "rtt h1 + h2"));
  assert_non_null(strstr(text, "<< slow"));
  free(text);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
  accept_report_free(&r);
  accept_lat_free(&l);
}

/* h0 + h1 slow together, each fast with the others: a warning naming the link; above the
 * configured bound, a failure and a bad link; the 8-byte allreduce above it fails. */
static void test_slow_link_and_bound(void **state) {
  (void)state;
  accept_lat_t l;
  lat4(&l, 4);
  set_rtt(&l, 0, 1, 2000);
  accept_report_t r;
  report(&r, 4);
  accept_opts_t o;
  accept_opts_default(&o);
  assert_int_equal(accept_latency_judge(&l, g_hosts, &o, &r), 0);
  const accept_check_t *c = find(&r, "rtt", "h0+h1");
  assert_int_equal(c->status, ACCEPT_WARN);
  assert_non_null(strstr(c->detail, "slow link h0 + h1"));
  assert_int_equal(count_status(&r, "latency", ACCEPT_FAIL), 0);
  assert_int_equal(r.nbadlinks, 0);
  accept_report_free(&r);

  report(&r, 4);
  o.max_latency_us = 1000;
  l.ar_p50[0] = 1500;
  assert_int_equal(accept_latency_judge(&l, g_hosts, &o, &r), 0);
  c = find(&r, "rtt", "h0+h1");
  assert_int_equal(c->status, ACCEPT_FAIL);
  assert_non_null(strstr(c->detail, "above [accept] max_latency_us"));
  assert_int_equal(r.nbadlinks, 1);
  assert_string_equal(r.bad_links[0], "h0 + h1");
  c = find(&r, "allreduce_latency", "allreduce 8 B");
  assert_int_equal(c->status, ACCEPT_FAIL);
  assert_string_equal(c->threshold, "p50 <= 1000 us (config)");
  /* the other sizes are measured, not bounded */
  assert_int_equal(find(&r, "allreduce_latency", "allreduce 64 KiB")->status, ACCEPT_PASS);
  accept_report_free(&r);
  accept_lat_free(&l);
}

/* Two nodes, or compare = off: no majority; only the bound judges. One node: no pairs. */
static void test_no_majority(void **state) {
  (void)state;
  accept_lat_t l;
  lat4(&l, 2);
  set_rtt(&l, 0, 1, 9000);
  accept_report_t r;
  report(&r, 2);
  accept_opts_t o;
  accept_opts_default(&o);
  assert_int_equal(accept_latency_judge(&l, g_hosts, &o, &r), 0);
  assert_int_equal(count_status(&r, "latency", ACCEPT_PASS), 2);
  assert_non_null(strstr(find(&r, "latency", "h0")->detail, "two nodes: no majority"));
  assert_int_equal(find(&r, "rtt", "h0+h1")->status, ACCEPT_PASS);
  accept_report_free(&r);
  report(&r, 2);
  o.max_latency_us = 5000;
  assert_int_equal(accept_latency_judge(&l, g_hosts, &o, &r), 0);
  assert_int_equal(count_status(&r, "latency", ACCEPT_FAIL), 2);
  assert_int_equal(find(&r, "rtt", "h0+h1")->status, ACCEPT_FAIL);
  accept_report_free(&r);
  accept_lat_free(&l);

  lat4(&l, 4);
  set_rtt(&l, 0, 2, 10040);
  set_rtt(&l, 1, 2, 10025);
  set_rtt(&l, 2, 3, 10060);
  report(&r, 4);
  accept_opts_default(&o);
  o.compare = 0;
  assert_int_equal(accept_latency_judge(&l, g_hosts, &o, &r), 0);
  assert_int_equal(count_status(&r, "latency", ACCEPT_FAIL), 0);
  assert_non_null(strstr(find(&r, "latency", "h2")->detail, "compare = off"));
  accept_report_free(&r);
  accept_lat_free(&l);

  lat4(&l, 1);
  l.nranks = 1;
  for (int s = 0; s < ACCEPT_LAT_NSIZES; s++) l.ar_p50[s] = -1;
  report(&r, 1);
  assert_int_equal(accept_latency_judge(&l, g_hosts, &o, &r), 0);
  assert_int_equal(find(&r, "rtt", "")->status, ACCEPT_SKIP);
  assert_int_equal(count_status(&r, "allreduce_latency", ACCEPT_SKIP), ACCEPT_LAT_NSIZES);
  accept_report_free(&r);
  accept_lat_free(&l);
}

static void test_percentile(void **state) {
  (void)state;
  double v[100];
  for (int i = 0; i < 100; i++) v[i] = 100 - i;
  assert_true(accept_percentile(v, 100, 50) == 50);
  assert_true(accept_percentile(v, 100, 99) == 99);
  double one = 7;
  assert_true(accept_percentile(&one, 1, 99) == 7);
  assert_true(accept_percentile(v, 0, 50) == -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_delayed_host),
      cmocka_unit_test(test_slow_link_and_bound),
      cmocka_unit_test(test_no_majority),
      cmocka_unit_test(test_percentile),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
