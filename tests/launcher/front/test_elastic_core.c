/* The elastic controller (launcher/front/elastic_core.c) in simulated seconds: each case feeds host
 * lists, launch ends, probe answers and ticks, and checks the actions out (cmocka). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "launcher/exitcode.h"
#include "launcher/front/elastic_claims.h"
#include "launcher/front/elastic_core.h"

typedef struct sim_s {
  ecore_t c;
  ecore_acts_t a;
  double now;
} sim_t;

static sim_t *sim_new(int min, int max) {
  sim_t *s = calloc(1, sizeof *s);
  assert_non_null(s);
  ecore_opts_t o = {.min = min, .max = max, .cooldown = 300, .scale_up_every = 60, .min_wait = 600,
                    .max_restarts = -1, .wall_offset = 1000000};
  assert_int_equal(ecore_init(&s->c, &o), 0);
  return s;
}

static void sim_free(sim_t *s) {
  ecore_acts_free(&s->a);
  ecore_free(&s->c);
  free(s);
}

/* "h0:2,h1:2" -> the host list read now. */
static void list(sim_t *s, const char *hosts) {
  front_host_t h[16];
  int n = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", hosts);
  char *save = NULL;
  for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(w, ':');
    h[n].slots = colon ? atoi(colon + 1) : 1;
    if (colon) *colon = 0;
    snprintf(h[n].name, sizeof h[n].name, "%s", w);
    n++;
  }
  ecore_hosts(&s->c, h, n, NULL, s->now, &s->a);
}

static void tick(sim_t *s, double t) {
  s->now = t;
  ecore_tick(&s->c, t, &s->a);
}

/* The action of that type (the first), or NULL. */
static ecore_act_t *find(sim_t *s, ecore_act_type_t type) {
  for (int i = 0; i < s->a.n; i++)
    if (s->a.v[i].type == type) return &s->a.v[i];
  return NULL;
}

static int count(sim_t *s, ecore_act_type_t type) {
  int n = 0;
  for (int i = 0; i < s->a.n; i++) n += s->a.v[i].type == type;
  return n;
}

/* A line said containing text. */
static int said(sim_t *s, const char *text) {
  for (int i = 0; i < s->a.n; i++)
    if (s->a.v[i].type == ECORE_SAY && strstr(s->a.v[i].text, text)) return 1;
  return 0;
}

static void dump(sim_t *s) {
  for (int i = 0; i < s->a.n; i++)
    fprintf(stderr, "  act %d: %s\n", s->a.v[i].type, s->a.v[i].text ? s->a.v[i].text : "");
}

#define SAID(s, text)                                                          \
  do {                                                                         \
    if (!said(s, text)) {                                                      \
      dump(s);                                                                 \
      fail_msg("not said: %s", text);                                          \
    }                                                                          \
  } while (0)

/* The hosts of the last ECORE_LAUNCH, "h0:2,h1:2" ("" none). */
static const char *launched(sim_t *s) {
  static char buf[512];
  ecore_act_t *x = NULL;
  for (int i = 0; i < s->a.n; i++)
    if (s->a.v[i].type == ECORE_LAUNCH) x = &s->a.v[i];
  buf[0] = 0;
  if (x) ecore_host_list(x->hosts, x->nhosts, buf, sizeof buf);
  return buf;
}

static void clear(sim_t *s) { ecore_acts_clear(&s->a); }

typedef struct end_s {
  ecore_end_t e;
  ecore_claim_t claims[16];
  char notice[4][ECORE_NAME];
} end_t;

/* Claims "by>lost,...": "*h1>h2" said by rank 0 (on h1), "!h0>h1" the launcher's (mpirun on h0
 * lost its daemon on h1), ">h3" a claimant that did not say its host. */
static void parse_claims(end_t *x, const char *claims) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", claims ? claims : "");
  char *save = NULL;
  for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    ecore_claim_t *c = &x->claims[x->e.nclaims++];
    c->rank0 = *w == '*';
    c->launcher = *w == '!';
    if (c->rank0 || c->launcher) w++;
    char *gt = strchr(w, '>');
    if (gt) {
      *gt = 0;
      snprintf(c->by, sizeof c->by, "%s", w);
      w = gt + 1;
    }
    snprintf(c->lost, sizeof c->lost, "%s", w);
  }
  x->e.claims = x->claims;
}

/* A launch that ended with code after rank 0 said it; claims "by>lost,by>lost" (by "*" rank 0's
 * host h, written "*h0"), notices "h3". */
static void ended(sim_t *s, double t, int code, const char *claims, const char *notices, int asked_stop) {
  end_t x = {.e = {.code = code, .rank0_seen = 1, .verdict_said = 1, .asked_stop = asked_stop}};
  parse_claims(&x, claims);
  char buf[256], *save = NULL;
  snprintf(buf, sizeof buf, "%s", notices ? notices : "");
  for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
    snprintf(x.notice[x.e.nnotice++], ECORE_NAME, "%s", w);
  x.e.claims = x.claims;
  x.e.notice = (const char(*)[ECORE_NAME])x.notice;
  if (asked_stop) x.e.stop_asked_at = t - 2;
  s->now = t;
  ecore_launch_ended(&s->c, &x.e, t, &s->a);
}

/* The last ECORE_RECORD's restarts, parsed (the caller deletes it). */
static cJSON *history(sim_t *s) {
  ecore_act_t *x = NULL;
  for (int i = 0; i < s->a.n; i++)
    if (s->a.v[i].type == ECORE_RECORD) x = &s->a.v[i];
  assert_non_null(x);
  cJSON *h = cJSON_Parse(x->text);
  assert_true(cJSON_IsArray(h));
  return h;
}

static const char *str_of(cJSON *o, const char *key) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  assert_true(cJSON_IsString(v));
  return v->valuestring;
}

/* A job started on 4 hosts x 2 slots at t = 0. */
static sim_t *running4(int min) {
  sim_t *s = sim_new(min, 4);
  list(s, "h0:2,h1:2,h2:2,h3:2");
  assert_string_equal(launched(s), "h0:2,h1:2,h2:2,h3:2");
  clear(s);
  return s;
}

/* ---- start, and what the time alone does ---- */

static void test_first_read_then_launch(void **state) {
  (void)state;
  sim_t *s = sim_new(2, 3);
  tick(s, 0.1); /* no read yet: nothing decided */
  assert_int_equal(s->a.n, 0);
  list(s, "h0:2,h1:2,h2:2,h3:2");
  SAID(s, "elastic job on 3 hosts (2 to 3): h0:2,h1:2,h2:2");
  assert_string_equal(launched(s), "h0:2,h1:2,h2:2");
  assert_int_equal(find(s, ECORE_LAUNCH)->code, 0); /* GPULAUNCH_RESTART_BASE */
  clear(s);
  tick(s, 1000); /* the job runs: no host to add (MAX), nothing to do */
  assert_int_equal(s->a.n, 0);
  sim_free(s);
}

static void test_read_error_said_once(void **state) {
  (void)state;
  sim_t *s = sim_new(1, 2);
  ecore_hosts(&s->c, NULL, -1, "hosts:3: bad line", 0, &s->a);
  SAID(s, "hosts:3: bad line (the host list stays as it was)");
  SAID(s, "0 usable hosts, 1 needed: waiting up to 600 s for more");
  clear(s);
  ecore_hosts(&s->c, NULL, -1, "hosts:3: bad line", 1, &s->a);
  assert_int_equal(s->a.n, 0); /* the same error, and the wait, said once */
  ecore_hosts(&s->c, NULL, -1, "hosts: cannot read", 2, &s->a);
  SAID(s, "hosts: cannot read (the host list stays as it was)");
  clear(s);
  list(s, "h0:1");
  assert_string_equal(launched(s), "h0:1");
  sim_free(s);
}

/* ---- a lost host, the cool-down, growing back ---- */

static void test_lost_host_cooldown_and_scale_up(void **state) {
  (void)state;
  sim_t *s = running4(2);
  ended(s, 100, GPL_EXIT_TIMEOUT, "*h0>h2", NULL, 0);
  SAID(s, "restart 1: host h2 lost; going on with 3 hosts: h0:2,h1:2,h3:2 (relaunched 0.0 s after the change)");
  assert_int_equal(count(s, ECORE_PROBE), 0); /* a named loss needs no probe */
  assert_int_equal(find(s, ECORE_LAUNCH)->code, 1);
  cJSON *h = history(s);
  assert_int_equal(cJSON_GetArraySize(h), 1);
  cJSON *r = cJSON_GetArrayItem(h, 0);
  assert_string_equal(str_of(r, "cause"), "host h2 lost");
  assert_string_equal(str_of(r, "hosts_before"), "h0:2,h1:2,h2:2,h3:2");
  assert_string_equal(str_of(r, "hosts_after"), "h0:2,h1:2,h3:2");
  assert_int_equal(cJSON_GetObjectItem(r, "time")->valuedouble, 1000100);
  assert_null(cJSON_GetObjectItem(r, "partition"));
  cJSON_Delete(h);
  clear(s);
  /* h2 is still listed but cools down for 300 s: no scale-up before t = 400 */
  list(s, "h0:2,h1:2,h2:2,h3:2");
  tick(s, 399);
  assert_int_equal(count(s, ECORE_STOP), 0);
  tick(s, 400.5);
  assert_non_null(find(s, ECORE_STOP));
  SAID(s, "scale-up: h2 joined: stopping the job with the grace to start again on more hosts");
  clear(s);
  tick(s, 401); /* asked once */
  assert_int_equal(count(s, ECORE_STOP), 0);
  ended(s, 410, GPL_EXIT_PREEMPTED, NULL, NULL, 1);
  SAID(s, "restart 2: scale-up: h2 joined; going on with 4 hosts");
  assert_string_equal(launched(s), "h0:2,h1:2,h3:2,h2:2"); /* the ranks stay where they were */
  sim_free(s);
}

static void test_scale_up_interval(void **state) {
  (void)state;
  sim_t *s = sim_new(2, 4);
  list(s, "h0:2,h1:2");
  clear(s);
  tick(s, 10);
  list(s, "h0:2,h1:2,h2:2"); /* joins at t = 10: not before the launch ran 60 s */
  tick(s, 59.9);
  assert_int_equal(count(s, ECORE_STOP), 0);
  tick(s, 60);
  SAID(s, "scale-up: h2 joined");
  clear(s);
  ended(s, 65, GPL_EXIT_PREEMPTED, NULL, NULL, 1);
  assert_string_equal(launched(s), "h0:2,h1:2,h2:2");
  clear(s);
  list(s, "h0:2,h1:2,h2:2,h3:2"); /* the next one: 60 s after this launch */
  tick(s, 124);
  assert_int_equal(count(s, ECORE_STOP), 0);
  tick(s, 125);
  SAID(s, "scale-up: h3 joined");
  sim_free(s);
}

static void test_host_leaves_list(void **state) {
  (void)state;
  sim_t *s = running4(2);
  s->now = 30;
  list(s, "h0:2,h2:2,h3:2");
  SAID(s, "h1 left the host list: stopping the job with the grace to go on without it");
  assert_non_null(find(s, ECORE_STOP));
  clear(s);
  ended(s, 40, GPL_EXIT_PREEMPTED, NULL, NULL, 1);
  SAID(s, "restart 1: h1 left the host list; going on with 3 hosts: h0:2,h2:2,h3:2 (relaunched 2.0 s after");
  sim_free(s);
}

/* ---- below MIN ---- */

static void test_below_min_then_78(void **state) {
  (void)state;
  sim_t *s = sim_new(3, 4);
  s->c.o.min_wait = 3;
  list(s, "h0:2,h1:2");
  SAID(s, "2 usable hosts, 3 needed: waiting up to 3 s for more");
  clear(s);
  tick(s, 2.9);
  assert_int_equal(s->a.n, 0); /* said once */
  tick(s, 3);
  SAID(s, "fewer than 3 usable hosts for 3 s: 2 usable (h0:2,h1:2); ending (exit status 78)");
  assert_int_equal(find(s, ECORE_EXIT)->code, GPL_EXIT_BELOW_MIN);
  assert_int_equal(count(s, ECORE_LAUNCH), 0);
  clear(s);
  tick(s, 10); /* done */
  assert_int_equal(s->a.n, 0);
  sim_free(s);
}

static void test_below_min_after_loss_names_left_out(void **state) {
  (void)state;
  sim_t *s = running4(4);
  s->c.o.cooldown = 1000;
  ended(s, 100, GPL_EXIT_TIMEOUT, "*h0>h2", NULL, 0);
  SAID(s, "3 usable hosts, 4 needed: waiting up to 600 s for more; left out: h2 (for 1000 s more)");
  clear(s);
  tick(s, 700);
  SAID(s, "fewer than 4 usable hosts for 600 s: 3 usable (h0:2,h1:2,h3:2); left out after a loss or notice: "
          "h2 (for 400 s more); ending (exit status 78)");
  assert_int_equal(find(s, ECORE_EXIT)->code, GPL_EXIT_BELOW_MIN);
  sim_free(s);
}

static void test_min_reached_while_waiting(void **state) {
  (void)state;
  sim_t *s = running4(4);
  ended(s, 100, GPL_EXIT_TIMEOUT, "*h0>h2", NULL, 0);
  clear(s);
  tick(s, 150);
  s->now = 160;
  list(s, "h0:2,h1:2,h2:2,h3:2,h4:2"); /* a new host: 4 usable again */
  SAID(s, "restart 1: host h2 lost; going on with 4 hosts: h0:2,h1:2,h3:2,h4:2 (relaunched 60.0 s after");
  clear(s);
  /* and the cooled host itself, once its cool-down is over */
  ended(s, 200, GPL_EXIT_TIMEOUT, "*h0>h4", NULL, 0);
  SAID(s, "3 usable hosts, 4 needed");
  clear(s);
  tick(s, 399.9);
  assert_int_equal(count(s, ECORE_LAUNCH), 0);
  tick(s, 400.1);
  assert_string_equal(launched(s), "h0:2,h1:2,h3:2,h2:2");
  sim_free(s);
}

/* ---- ends that are no membership change ---- */

static void test_program_failure_on_healthy_host(void **state) {
  (void)state;
  sim_t *s = running4(2);
  ended(s, 20, 5, NULL, NULL, 0);
  assert_int_equal(s->a.n, 1);
  assert_int_equal(find(s, ECORE_EXIT)->code, 5); /* no probe, no restart */
  clear(s);
  s = (sim_free(s), running4(2));
  ended(s, 20, GPL_EXIT_CONFIG, NULL, NULL, 0); /* gpulaunch's own error */
  assert_int_equal(find(s, ECORE_EXIT)->code, GPL_EXIT_CONFIG);
  assert_int_equal(count(s, ECORE_PROBE), 0);
  sim_free(s);
}

static void test_success_and_user_stop(void **state) {
  (void)state;
  sim_t *s = running4(2);
  ended(s, 20, 0, NULL, NULL, 0);
  assert_int_equal(find(s, ECORE_EXIT)->code, 0);
  sim_free(s);
  s = running4(2);
  end_t x = {.e = {.code = GPL_EXIT_PREEMPTED, .user_stop = 1, .rank0_seen = 1, .verdict_said = 1}};
  ecore_launch_ended(&s->c, &x.e, 20, &s->a);
  assert_int_equal(find(s, ECORE_EXIT)->code, GPL_EXIT_PREEMPTED);
  assert_int_equal(count(s, ECORE_LAUNCH), 0);
  sim_free(s);
}

/* ---- unnamed losses, the probe, --max-restarts ---- */

static void test_two_unnamed_losses(void **state) {
  (void)state;
  sim_t *s = running4(2);
  ended(s, 50, GPL_EXIT_TIMEOUT, NULL, NULL, 0);
  ecore_act_t *p = find(s, ECORE_PROBE);
  assert_non_null(p);
  assert_int_equal(p->nhosts, 4);
  assert_int_equal(count(s, ECORE_LAUNCH), 0);
  clear(s);
  int ok[4] = {1, 1, 1, 1};
  ecore_probe_result(&s->c, ok, 80, &s->a);
  SAID(s, "restart 1: a rank was lost (exit status 68) and no host was named; going on with 4 hosts");
  clear(s);
  ended(s, 120, GPL_EXIT_TIMEOUT, NULL, NULL, 0);
  assert_non_null(find(s, ECORE_PROBE));
  clear(s);
  ecore_probe_result(&s->c, ok, 140, &s->a);
  SAID(s, "a rank was lost (exit status 68) and no host was named again: ending (exit status 68)");
  assert_int_equal(find(s, ECORE_EXIT)->code, GPL_EXIT_TIMEOUT);
  sim_free(s);
}

static void test_probe_leaves_out_unreachable(void **state) {
  (void)state;
  sim_t *s = running4(2);
  end_t x = {.e = {.code = 137, .start_timed_out = 1}}; /* rank 0 never connected */
  ecore_launch_ended(&s->c, &x.e, 120, &s->a);
  assert_non_null(find(s, ECORE_PROBE));
  clear(s);
  int ok[4] = {1, 0, 1, 0};
  ecore_probe_result(&s->c, ok, 150, &s->a);
  SAID(s, "restart 1: host h1 unreachable, host h3 unreachable; going on with 2 hosts: h0:2,h2:2");
  clear(s);
  /* mpirun ended the job itself (rank 0 up, no status): probed too */
  end_t y = {.e = {.code = 1, .rank0_seen = 1}};
  ecore_launch_ended(&s->c, &y.e, 200, &s->a);
  assert_non_null(find(s, ECORE_PROBE));
  clear(s);
  ecore_probe_result(&s->c, NULL, 230, &s->a); /* the probe could not run: nobody to leave out */
  assert_int_equal(find(s, ECORE_EXIT)->code, 1);
  sim_free(s);
}

static void test_network_check_failure_probed(void **state) {
  (void)state;
  sim_t *s = running4(2);
  ended(s, 10, GPL_EXIT_NETWORK, NULL, NULL, 0);
  assert_non_null(find(s, ECORE_PROBE));
  clear(s);
  int ok[4] = {1, 1, 1, 1}; /* every host answers: a 67 of its own, the job ends */
  ecore_probe_result(&s->c, ok, 30, &s->a);
  assert_int_equal(find(s, ECORE_EXIT)->code, GPL_EXIT_NETWORK);
  sim_free(s);
}

static void test_max_restarts(void **state) {
  (void)state;
  sim_t *s = running4(1);
  s->c.o.max_restarts = 1;
  ended(s, 10, GPL_EXIT_TIMEOUT, "*h0>h3", NULL, 0);
  assert_string_equal(launched(s), "h0:2,h1:2,h2:2");
  clear(s);
  ended(s, 20, GPL_EXIT_TIMEOUT, "*h0>h2", NULL, 0);
  SAID(s, "host h2 lost, but 1 membership restart were allowed (--max-restarts): ending (exit status 68)");
  assert_int_equal(find(s, ECORE_EXIT)->code, GPL_EXIT_TIMEOUT);
  assert_int_equal(count(s, ECORE_LAUNCH), 0);
  sim_free(s);
}

/* ---- notices ---- */

static void test_notice_during_scale_up(void **state) {
  (void)state;
  sim_t *s = sim_new(2, 4);
  list(s, "h0:2,h1:2,h2:2");
  clear(s);
  list(s, "h0:2,h1:2,h2:2,h3:2");
  tick(s, 61);
  SAID(s, "scale-up: h3 joined");
  clear(s);
  /* h1's cloud announced its interruption while the scale-up's stop ran */
  ended(s, 70, GPL_EXIT_PREEMPTED, NULL, "h1", 1);
  SAID(s, "restart 1: host h1 announced its interruption; going on with 3 hosts: h0:2,h2:2,h3:2");
  cJSON *h = history(s);
  assert_string_equal(str_of(cJSON_GetArrayItem(h, 0), "cause"), "host h1 announced its interruption");
  cJSON_Delete(h);
  clear(s);
  tick(s, 500); /* h1 back after its cool-down: a scale-up again */
  SAID(s, "scale-up: h1 joined");
  sim_free(s);
}

static void test_history_keeps_the_last(void **state) {
  (void)state;
  sim_t *s = running4(1);
  for (int i = 0; i < ECORE_HISTORY_MAX + 3; i++) {
    ended(s, 10.0 * (i + 1), GPL_EXIT_TIMEOUT, i % 2 ? "*h0>h1" : "*h0>h2", NULL, 0);
    assert_int_equal(count(s, ECORE_LAUNCH), 1);
    s->c.ncool = 0; /* (every host usable again at once) */
    clear(s);
  }
  ended(s, 1000, GPL_EXIT_TIMEOUT, "*h0>h3", NULL, 0);
  cJSON *h = history(s);
  assert_int_equal(cJSON_GetArraySize(h), ECORE_HISTORY_MAX);
  cJSON *last = cJSON_GetArrayItem(h, ECORE_HISTORY_MAX - 1);
  assert_int_equal(cJSON_GetObjectItem(last, "restart")->valueint, ECORE_HISTORY_MAX + 4);
  cJSON_Delete(h);
  sim_free(s);
}

/* ---- partitions ---- */

static int resolve(const char *hosts, const char *claims, char *kept, size_t len) {
  sim_t *s = sim_new(1, 8);
  list(s, hosts);
  end_t x = {0};
  parse_claims(&x, claims);
  int keep[8];
  int rc = ecore_resolve(s->c.cur, s->c.ncur, x.claims, x.e.nclaims, keep);
  kept[0] = 0;
  for (int i = 0; i < s->c.ncur; i++)
    if (keep[i]) snprintf(kept + strlen(kept), len - strlen(kept), "%s%s", *kept ? "," : "", s->c.cur[i].name);
  sim_free(s);
  return rc;
}

static void test_resolve_shapes(void **state) {
  (void)state;
  char kept[128];
  /* rank 0's host alone (the smaller side): the other three go on */
  assert_int_equal(resolve("h1,h2,h3,h4", "*h1>h2,*h1>h3,*h1>h4,h2>h1", kept, sizeof kept), 1);
  assert_string_equal(kept, "h2,h3,h4");
  /* the same, the other side's claim first */
  assert_int_equal(resolve("h1,h2,h3,h4", "h3>h1,*h1>h2,*h1>h3,*h1>h4", kept, sizeof kept), 1);
  assert_string_equal(kept, "h2,h3,h4");
  /* rank 0's side the larger: one host alone against three */
  assert_int_equal(resolve("h1,h2,h3,h4", "*h1>h4,h4>h1,h4>h2,h4>h3", kept, sizeof kept), 1);
  assert_string_equal(kept, "h1,h2,h3");
  /* 2 against 2: the tie goes to rank 0's side, whoever spoke first */
  assert_int_equal(resolve("h1,h2,h3,h4", "h3>h1,h3>h2,*h1>h3,*h1>h4", kept, sizeof kept), 1);
  assert_string_equal(kept, "h1,h2");
  assert_int_equal(resolve("h1,h2,h3,h4", "*h1>h3,*h1>h4,h4>h1,h4>h2", kept, sizeof kept), 1);
  assert_string_equal(kept, "h1,h2");
  /* rank 0's side smaller, 2 against 3 */
  assert_int_equal(resolve("h1,h2,h3,h4,h5", "*h1>h3,*h1>h4,*h1>h5,h3>h1,h3>h2", kept, sizeof kept), 1);
  assert_string_equal(kept, "h3,h4,h5");
  /* claims that agree (a host really lost, named from both sides of nothing): believed */
  assert_int_equal(resolve("h1,h2,h3,h4", "*h1>h3,h2>h3", kept, sizeof kept), 0);
  assert_string_equal(kept, "h1,h2,h4");
  /* rank 0's host lost, named by the survivor alone (rank 0 could not speak) */
  assert_int_equal(resolve("h1,h2,h3", "h2>h1", kept, sizeof kept), 0);
  assert_string_equal(kept, "h2,h3");
  /* a claimant that did not say its host: believed as before */
  assert_int_equal(resolve("h1,h2,h3", ">h3", kept, sizeof kept), 0);
  assert_string_equal(kept, "h1,h2");
  /* rank 0 names a rank of its own host (its gpulaunch died) and another host: no partition */
  assert_int_equal(resolve("h1,h2,h3", "*h1>h1,*h1>h3", kept, sizeof kept), 0);
  assert_string_equal(kept, "h2");
  /* a partition, and a claimant that also lost a rank of its own host */
  assert_int_equal(resolve("h1,h2,h3,h4", "*h1>h2,*h1>h3,*h1>h4,h2>h1,h2>h2", kept, sizeof kept), 1);
  assert_string_equal(kept, "h3,h4");
  /* three groups: h1 | h2 | h3,h4,h5 (h2 hears only itself) */
  assert_int_equal(resolve("h1,h2,h3,h4,h5", "*h1>h2,*h1>h3,*h1>h4,*h1>h5,h2>h1,h2>h3,h2>h4,h2>h5,h3>h1,h3>h2",
                           kept, sizeof kept),
                   1);
  assert_string_equal(kept, "h3,h4,h5");
}

/* mpirun's own word (its keepalive gave up on a daemon) with or without the hosts' claims */
static void test_resolve_launcher(void **state) {
  (void)state;
  char kept[128];
  /* rank 0's host cut off, every claim came: mpirun's side */
  assert_int_equal(resolve("h1,h2,h3,h4", "*h1>h2,*h1>h3,*h1>h4,h2>h1,!h0>h1", kept, sizeof kept), 1);
  assert_string_equal(kept, "h2,h3,h4");
  /* the other side's claims missing: rank 0's and mpirun's disagree, the host mpirun lost is out */
  assert_int_equal(resolve("h1,h2,h3,h4", "*h1>h2,*h1>h3,*h1>h4,!h0>h1", kept, sizeof kept), 1);
  assert_string_equal(kept, "h2,h3,h4");
  /* rank 0's claims missing (mpirun ended the job first): its word alone, no partition seen */
  assert_int_equal(resolve("h1,h2,h3,h4", "!h0>h1", kept, sizeof kept), 0);
  assert_string_equal(kept, "h2,h3,h4");
  assert_int_equal(resolve("h1,h2,h3,h4", "h2>h1,!h0>h1", kept, sizeof kept), 0);
  assert_string_equal(kept, "h2,h3,h4");
  /* rank 0's side the larger (h4 alone), claims from one side only and mpirun's */
  assert_int_equal(resolve("h1,h2,h3,h4", "h4>h1,h4>h2,h4>h3,!h0>h4", kept, sizeof kept), 1);
  assert_string_equal(kept, "h1,h2,h3");
  assert_int_equal(resolve("h1,h2,h3,h4", "*h1>h4,h4>h1,h4>h2,h4>h3,!h0>h4", kept, sizeof kept), 1);
  assert_string_equal(kept, "h1,h2,h3");
  /* 2 against 2 with mpirun on the side without rank 0: rank 0's side cannot be launched on */
  assert_int_equal(resolve("h1,h2,h3,h4", "*h1>h3,*h1>h4,h3>h1,h3>h2,!h0>h1,!h0>h2", kept, sizeof kept), 1);
  assert_string_equal(kept, "h3,h4");
  /* 2 against 2, mpirun reaching every host: the tie to rank 0's side */
  assert_int_equal(resolve("h1,h2,h3,h4", "h4>h1,h4>h2,*h1>h3,*h1>h4", kept, sizeof kept), 1);
  assert_string_equal(kept, "h1,h2");
  /* mpirun on a job host (h1): its word is that host's view */
  assert_int_equal(resolve("h1,h2,h3", "!h1>h3", kept, sizeof kept), 0);
  assert_string_equal(kept, "h1,h2");
}

/* mpirun's stderr, line by line: its word that it lost a daemon names the daemon's host. */
static void test_launcher_line(void **state) {
  (void)state;
  const char *orte[] = {"--------------------------------------------------------------------------",
                        "ORTE has lost communication with a remote daemon.", "",
                        "  HNP daemon   : [[64397,0],0] on node h0", "  Remote daemon: [[64397,0],1] on node h1",
                        "", "This is usually due to either a failure of the TCP network"};
  int st = 0, named = 0;
  char host[ECORE_NAME] = "";
  for (size_t i = 0; i < sizeof orte / sizeof *orte; i++)
    named += ecore_launcher_line(&st, orte[i], host, sizeof host);
  assert_int_equal(named, 1);
  assert_string_equal(host, "h1");
  /* PRRTE's (Open MPI 5) words */
  assert_int_equal(ecore_launcher_line(&st, "PRTE has lost communication with a remote daemon.", host, sizeof host), 0);
  const char *prte = "  Remote daemon: [prterun-h0-1@0,2] on node node-7";
  assert_int_equal(ecore_launcher_line(&st, prte, host, sizeof host), 1);
  assert_string_equal(host, "node-7");
  /* a "Remote daemon" line elsewhere (a rank's own output) names nobody */
  assert_int_equal(ecore_launcher_line(&st, "  Remote daemon: [[1,0],1] on node h3", host, sizeof host), 0);
  /* the block ends after a few lines */
  ecore_launcher_line(&st, "ORTE has lost communication with a remote daemon.", host, sizeof host);
  for (int i = 0; i < 6; i++) ecore_launcher_line(&st, "other", host, sizeof host);
  assert_int_equal(ecore_launcher_line(&st, "  Remote daemon: [[1,0],1] on node h3", host, sizeof host), 0);
}

/* mpirun ended the launch before any rank's claim: the host it lost is out, the others probed. */
static void test_launcher_word_then_probe(void **state) {
  (void)state;
  sim_t *s = sim_new(3, 4);
  list(s, "h1:2,h2:2,h3:2,h4:2");
  clear(s);
  ended(s, 100, GPL_EXIT_TIMEOUT, "!h0>h1", NULL, 0);
  ecore_act_t *p = find(s, ECORE_PROBE);
  assert_non_null(p);
  char hosts[128];
  ecore_host_list(p->hosts, p->nhosts, hosts, sizeof hosts);
  assert_string_equal(hosts, "h2:2,h3:2,h4:2");
  assert_int_equal(count(s, ECORE_LAUNCH), 0);
  clear(s);
  int ok[3] = {1, 1, 1};
  ecore_probe_result(&s->c, ok, 102, &s->a);
  SAID(s, "restart 1: host h1 lost (mpirun on h0 lost its daemon there); going on with 3 hosts: h2:2,h3:2,h4:2");
  cJSON *h = history(s);
  cJSON *r = cJSON_GetArrayItem(h, 0);
  assert_null(cJSON_GetObjectItem(r, "partition"));
  cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "claims"), 0);
  assert_string_equal(str_of(c, "by"), "h0");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(c, "launcher")));
  cJSON_Delete(h);
  clear(s);
  /* a second host mpirun did not name (its word counts the others): found by the probe */
  ended(s, 200, GPL_EXIT_TIMEOUT, "!h0>h2", NULL, 0);
  clear(s);
  int ok2[2] = {1, 0};
  ecore_probe_result(&s->c, ok2, 203, &s->a);
  assert_int_equal(count(s, ECORE_LAUNCH), 0); /* 1 host of 3 needed: waiting, h2 and h4 left out */
  SAID(s, "1 usable host, 3 needed: waiting up to 600 s for more; left out: h1 (for 197 s more), h2 (for 297 s "
          "more), h4 (for 300 s more)");
  sim_free(s);
}

/* A partition with mpirun's word and both sides' claims: the restart line and the record. */
static void test_partition_with_launcher(void **state) {
  (void)state;
  sim_t *s = sim_new(3, 4);
  list(s, "h1:2,h2:2,h3:2,h4:2");
  clear(s);
  ended(s, 100, GPL_EXIT_TIMEOUT, "*h1>h2,*h1>h3,*h1>h4,!h0>h1", NULL, 0);
  SAID(s, "restart 1: network partition (host h1 named h2, h3, h4 lost; mpirun on h0 lost its daemon on h1): kept "
          "h2, h3, h4 (the side mpirun still reaches), left out h1; going on with 3 hosts: h2:2,h3:2,h4:2");
  cJSON *h = history(s);
  cJSON *p = cJSON_GetObjectItem(cJSON_GetArrayItem(h, 0), "partition");
  assert_string_equal(str_of(p, "rule"), "mpirun's side");
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p, "claims")), 2);
  cJSON_Delete(h);
  sim_free(s);
}

/* One host named every other lost and nobody else spoke: the probe says which side is cut off. */
static void test_alone_against_all_probed(void **state) {
  (void)state;
  sim_t *s = sim_new(3, 4);
  list(s, "h1:2,h2:2,h3:2,h4:2");
  clear(s);
  ended(s, 100, GPL_EXIT_TIMEOUT, "*h1>h2,*h1>h3,*h1>h4", NULL, 0);
  ecore_act_t *p = find(s, ECORE_PROBE);
  assert_non_null(p);
  assert_int_equal(p->nhosts, 4);
  clear(s);
  int ok[4] = {0, 1, 1, 1};
  ecore_probe_result(&s->c, ok, 115, &s->a);
  SAID(s, "restart 1: host h1 named h2, h3, h4 lost, every other host (nobody else named a host): probed; host h1 "
          "unreachable; going on with 3 hosts: h2:2,h3:2,h4:2");
  clear(s);
  /* a host that is not rank 0's alone against the others (h2 now rank 0's): probed too */
  ended(s, 200, GPL_EXIT_TIMEOUT, "h4>h2,h4>h3", NULL, 0);
  assert_int_equal(find(s, ECORE_PROBE)->nhosts, 3);
  clear(s);
  int ok3[3] = {1, 1, 0};
  ecore_probe_result(&s->c, ok3, 215, &s->a);
  SAID(s, "2 usable hosts, 3 needed: waiting up to 600 s for more; left out: h1 (for 200 s more), h4 (for 300 s more)");
  clear(s);
  sim_free(s);
  /* two of three other hosts named: believed, no probe */
  s = sim_new(2, 4);
  list(s, "h1:2,h2:2,h3:2,h4:2");
  clear(s);
  ended(s, 100, GPL_EXIT_TIMEOUT, "*h1>h3,*h1>h4", NULL, 0);
  assert_null(find(s, ECORE_PROBE));
  assert_string_equal(launched(s), "h1:2,h2:2");
  sim_free(s);
}

static void test_partition_restart(void **state) {
  (void)state;
  sim_t *s = sim_new(3, 4);
  list(s, "h1:2,h2:2,h3:2,h4:2");
  clear(s);
  ended(s, 100, GPL_EXIT_TIMEOUT, "*h1>h2,*h1>h3,*h1>h4,h2>h1", NULL, 0);
  SAID(s, "restart 1: network partition (host h1 named h2, h3, h4 lost; host h2 named h1 lost): kept h2, h3, h4 "
          "(the larger side), left out h1; going on with 3 hosts: h2:2,h3:2,h4:2");
  assert_string_equal(launched(s), "h2:2,h3:2,h4:2");
  cJSON *h = history(s);
  cJSON *p = cJSON_GetObjectItem(cJSON_GetArrayItem(h, 0), "partition");
  assert_non_null(p);
  char *kept = cJSON_PrintUnformatted(cJSON_GetObjectItem(p, "kept"));
  char *out = cJSON_PrintUnformatted(cJSON_GetObjectItem(p, "left_out"));
  assert_string_equal(kept, "[\"h2\",\"h3\",\"h4\"]");
  assert_string_equal(out, "[\"h1\"]");
  free(kept);
  free(out);
  cJSON *claims = cJSON_GetObjectItem(p, "claims");
  assert_int_equal(cJSON_GetArraySize(claims), 2);
  assert_string_equal(str_of(cJSON_GetArrayItem(claims, 0), "by"), "h1");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(claims, 0), "rank0")));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(claims, 0), "lost")), 3);
  assert_string_equal(str_of(p, "rule"), "larger side");
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(p, "rank0_side_kept")));
  cJSON_Delete(h);
  clear(s);
  /* h1 cools down like a lost host */
  list(s, "h1:2,h2:2,h3:2,h4:2");
  tick(s, 399);
  assert_int_equal(count(s, ECORE_STOP), 0);
  tick(s, 401);
  SAID(s, "scale-up: h1 joined");
  sim_free(s);
}

static void test_partition_tie_restart(void **state) {
  (void)state;
  sim_t *s = sim_new(2, 4);
  list(s, "h1:2,h2:2,h3:2,h4:2");
  clear(s);
  ended(s, 100, GPL_EXIT_TIMEOUT, "h3>h1,h3>h2,*h1>h3,*h1>h4", NULL, 0);
  SAID(s, "kept h1, h2 (a tie: rank 0's side), left out h3, h4; going on with 2 hosts: h1:2,h2:2");
  cJSON *h = history(s);
  cJSON *p = cJSON_GetObjectItem(cJSON_GetArrayItem(h, 0), "partition");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(p, "rank0_side_kept")));
  cJSON_Delete(h);
  sim_free(s);
}

static void test_partition_note(void **state) {
  (void)state;
  ecore_claim_t c[] = {{"h1", "h2", 1, 0}, {"h1", "h3", 1, 0}, {"h1", "h4", 1, 0}, {"h2", "h1", 0, 0}};
  char out[512];
  assert_int_equal(ecore_partition_note(c, 4, out, sizeof out), 1);
  assert_string_equal(out, "a network partition (host h1 named h2, h3, h4 lost; host h2 named h1 lost): h1 cannot "
                           "reach h2, h3, h4");
  /* one side only (a host really lost): no partition */
  assert_int_equal(ecore_partition_note(c, 3, out, sizeof out), 0);
  assert_int_equal(ecore_partition_note(c + 3, 1, out, sizeof out), 0);
  /* 2 against 2, the tie to rank 0's side */
  ecore_claim_t t[] = {{"h3", "h1", 0, 0}, {"h3", "h2", 0, 0}, {"h1", "h3", 1, 0}, {"h1", "h4", 1, 0}};
  assert_int_equal(ecore_partition_note(t, 4, out, sizeof out), 1);
  assert_non_null(strstr(out, ": h3, h4 cannot reach h1, h2"));
  /* claims without their claimant (an older gpulaunch): no partition is found */
  ecore_claim_t u[] = {{"", "h2", 1, 0}, {"", "h1", 0, 0}};
  assert_int_equal(ecore_partition_note(u, 2, out, sizeof out), 0);
  /* mpirun ended the job first: its word alone names the host cut off, not every host */
  ecore_claim_t m[] = {{"h0", "h1", 0, 1}};
  assert_int_equal(ecore_partition_note(m, 1, out, sizeof out), 1);
  assert_string_equal(out, "h1 lost or cut off from the launcher (mpirun on h0 lost its daemon on h1); no other host "
                           "named");
  /* rank 0's side cut off, mpirun's word with its claims: the cut, not every host */
  ecore_claim_t r[] = {{"h1", "h2", 1, 0}, {"h1", "h3", 1, 0}, {"h1", "h4", 1, 0}, {"h0", "h1", 0, 1}};
  assert_int_equal(ecore_partition_note(r, 4, out, sizeof out), 1);
  assert_string_equal(out, "a network partition (host h1 named h2, h3, h4 lost; mpirun on h0 lost its daemon on h1): "
                           "h1 cannot reach h2, h3, h4");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_read_then_launch),
      cmocka_unit_test(test_read_error_said_once),
      cmocka_unit_test(test_lost_host_cooldown_and_scale_up),
      cmocka_unit_test(test_scale_up_interval),
      cmocka_unit_test(test_host_leaves_list),
      cmocka_unit_test(test_below_min_then_78),
      cmocka_unit_test(test_below_min_after_loss_names_left_out),
      cmocka_unit_test(test_min_reached_while_waiting),
      cmocka_unit_test(test_program_failure_on_healthy_host),
      cmocka_unit_test(test_success_and_user_stop),
      cmocka_unit_test(test_two_unnamed_losses),
      cmocka_unit_test(test_probe_leaves_out_unreachable),
      cmocka_unit_test(test_network_check_failure_probed),
      cmocka_unit_test(test_max_restarts),
      cmocka_unit_test(test_notice_during_scale_up),
      cmocka_unit_test(test_history_keeps_the_last),
      cmocka_unit_test(test_resolve_shapes),
      cmocka_unit_test(test_launcher_line),
      cmocka_unit_test(test_resolve_launcher),
      cmocka_unit_test(test_launcher_word_then_probe),
      cmocka_unit_test(test_partition_with_launcher),
      cmocka_unit_test(test_alone_against_all_probed),
      cmocka_unit_test(test_partition_restart),
      cmocka_unit_test(test_partition_tie_restart),
      cmocka_unit_test(test_partition_note),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
