/* The bad-node search's decisions on simulated clusters: each node has a capacity, some links a
 * cap of their own, measurements get a little noise; the search must name exactly the culprits
 * (ring + pairs, halving, the fallback) and keep groups that share a machine apart. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "launcher/accept.h"

#define MAXN 64

typedef struct sim_s {
  int n;
  double cap[MAXN];           /* node capacity, GB/s */
  double link[MAXN][MAXN];    /* pair cap (0: none) */
  double noise;               /* +- relative noise */
  double jitter;              /* what each measurement reports as its noise (0: none) */
  unsigned seed;
  int rounds, groups, max_groups_per_round;
  int machine[MAXN];
  int machine_clash;          /* two groups of one round shared a machine */
} sim_t;

static double rnd(sim_t *s) {
  s->seed = s->seed * 1103515245u + 12345u;
  return ((s->seed >> 8) & 0xffff) / 65535.0;
}

/* A group's bandwidth: its slowest node or pair, times noise. */
static double measure(sim_t *s, const int *color, int g) {
  double bw = 1e9;
  for (int i = 0; i < s->n; i++) {
    if (color[i] != g) continue;
    if (s->cap[i] < bw) bw = s->cap[i];
    for (int j = 0; j < s->n; j++)
      if (j != i && color[j] == g && s->link[i][j] > 0 && s->link[i][j] < bw) bw = s->link[i][j];
  }
  return bw * (1 + s->noise * (2 * rnd(s) - 1));
}

static void sim_init(sim_t *s, int n, double cap) {
  memset(s, 0, sizeof *s);
  s->n = n;
  s->seed = 12345;
  for (int i = 0; i < n; i++) {
    s->cap[i] = cap;
    s->machine[i] = i;
  }
}

static const char *g_hosts[MAXN];

/* Run the whole search as mode_accept does; returns the report (caller frees). */
static void run(sim_t *sim, accept_search_mode_t mode, double fraction, int busbw_failed,
                accept_report_t *rep, accept_search_t *keep) {
  accept_search_t s;
  assert_int_equal(accept_search_init(&s, sim->n, fraction, mode), 0);
  accept_search_set_machines(&s, sim->machine);
  accept_report_init(rep);
  int color[MAXN];
  double bw[MAXN], jit[MAXN];
  for (int g = 0; g < MAXN; g++) jit[g] = sim->jitter;
  int fell = 0;
  for (int guard = 0; guard < 500; guard++) {
    int ng = accept_search_next(&s, color, NULL);
    assert_true(ng >= 0);
    if (ng == 0) {
      if (!fell && busbw_failed && mode == ACCEPT_SEARCH_RING && !s.na) {
        fell = 1;
        accept_search_fallback_halving(&s);
        if (s.mode == ACCEPT_SEARCH_HALVING) continue;
      }
      break;
    }
    sim->rounds++;
    sim->groups += ng;
    if (ng > sim->max_groups_per_round) sim->max_groups_per_round = ng;
    /* Groups are disjoint, and no two share a machine. */
    for (int a = 0; a < sim->n; a++)
      for (int b = 0; b < sim->n; b++)
        if (a != b && color[a] >= 0 && color[b] >= 0 && color[a] != color[b] && sim->machine[a] == sim->machine[b])
          sim->machine_clash = 1;
    for (int g = 0; g < ng; g++) bw[g] = measure(sim, color, g);
    accept_search_feed(&s, bw, sim->jitter > 0 ? jit : NULL, rep, g_hosts);
  }
  accept_search_report(&s, g_hosts, rep);
  if (keep) *keep = s;
  else accept_search_free(&s);
}

static int named(const accept_report_t *r, const char *host) {
  for (int i = 0; i < r->nbad; i++)
    if (strcmp(r->bad_hosts[i], host) == 0) return 1;
  return 0;
}

static const accept_check_t *find_check(const accept_report_t *r, const char *name) {
  for (int i = 0; i < r->nchecks; i++)
    if (strcmp(r->checks[i].name, name) == 0) return &r->checks[i];
  return NULL;
}

static int setup_hosts(void **state) {
  (void)state;
  static char buf[MAXN][16];
  for (int i = 0; i < MAXN; i++) {
    snprintf(buf[i], sizeof buf[i], "n%02d", i);
    g_hosts[i] = buf[i];
  }
  return 0;
}

static void test_ring_names_one_slow_node(void **state) {
  (void)state;
  for (int n = 3; n <= 17; n++) {
    for (int bad = 0; bad < n; bad += n / 3 + 1) {
      sim_t sim;
      sim_init(&sim, n, 10.0);
      sim.noise = 0.02;
      sim.cap[bad] = 1.0;
      accept_report_t rep;
      run(&sim, ACCEPT_SEARCH_RING, 0.93, 1, &rep, NULL);
      assert_int_equal(rep.nbad, 1);
      assert_true(named(&rep, g_hosts[bad]));
      const accept_check_t *c = find_check(&rep, "pair_search");
      assert_non_null(c);
      assert_int_equal(c->status, ACCEPT_FAIL);
      assert_non_null(strstr(c->detail, g_hosts[bad]));
      /* The bad_node check sits in the culprit's own suite. */
      const accept_check_t *b = find_check(&rep, "bad_node");
      assert_non_null(b);
      assert_int_equal(b->node, bad);
      assert_int_equal(b->status, ACCEPT_FAIL);
      /* Ring: 2 rounds (even) or 3 (odd), then the confirmation. */
      assert_true(sim.rounds <= (n % 2 ? 3 : 2) + 2);
      accept_report_free(&rep);
    }
  }
}

static void test_ring_two_adjacent_bad_nodes(void **state) {
  (void)state;
  sim_t sim;
  sim_init(&sim, 8, 10.0);
  sim.noise = 0.02;
  sim.cap[3] = 2.0;
  sim.cap[4] = 2.0;
  accept_report_t rep;
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 1, &rep, NULL);
  assert_int_equal(rep.nbad, 2);
  assert_true(named(&rep, "n03"));
  assert_true(named(&rep, "n04"));
  accept_report_free(&rep);
}

static void test_ring_bad_link_not_a_node(void **state) {
  (void)state;
  sim_t sim;
  sim_init(&sim, 6, 10.0);
  sim.noise = 0.01;
  sim.link[1][2] = sim.link[2][1] = 3.0; /* a slow cable between n01 and n02 */
  accept_report_t rep;
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 0, &rep, NULL);
  assert_int_equal(rep.nbad, 0);
  assert_int_equal(rep.nbadlinks, 1);
  assert_string_equal(rep.bad_links[0], "n01 + n02");
  const accept_check_t *c = find_check(&rep, "bad_link");
  assert_non_null(c);
  assert_int_equal(c->status, ACCEPT_FAIL);
  accept_report_free(&rep);
}

static void test_healthy_cluster_names_nobody(void **state) {
  (void)state;
  for (int n = 2; n <= 32; n += 3) {
    sim_t sim;
    sim_init(&sim, n, 10.0);
    sim.noise = 0.02; /* within the 7% the fraction allows */
    sim.seed = 77u + (unsigned)n;
    accept_report_t rep;
    run(&sim, ACCEPT_SEARCH_RING, 0.93, 0, &rep, NULL);
    assert_int_equal(rep.nbad, 0);
    assert_int_equal(rep.nbadlinks, 0);
    const accept_check_t *c = find_check(&rep, "pair_search");
    assert_non_null(c);
    /* Two nodes: one pair and nothing to compare it with. */
    assert_int_equal(c->status, n == 2 ? ACCEPT_SKIP : ACCEPT_PASS);
    accept_report_free(&rep);
  }
}

static void test_one_node_and_off(void **state) {
  (void)state;
  sim_t sim;
  sim_init(&sim, 1, 10.0);
  accept_report_t rep;
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 1, &rep, NULL);
  assert_int_equal(sim.rounds, 0);
  assert_int_equal(find_check(&rep, "pair_search")->status, ACCEPT_SKIP);
  accept_report_free(&rep);
  sim_init(&sim, 8, 10.0);
  sim.cap[2] = 1;
  run(&sim, ACCEPT_SEARCH_OFF, 0.93, 1, &rep, NULL);
  assert_int_equal(sim.rounds, 0);
  assert_int_equal(rep.nbad, 0);
  assert_int_equal(find_check(&rep, "pair_search")->status, ACCEPT_SKIP);
  accept_report_free(&rep);
}

static void test_halving_names_the_culprit(void **state) {
  (void)state;
  for (int n = 4; n <= 33; n += 5) {
    for (int bad = 0; bad < n; bad += 3) {
      sim_t sim;
      sim_init(&sim, n, 10.0);
      sim.noise = 0.02;
      sim.cap[bad] = 0.5;
      accept_report_t rep;
      run(&sim, ACCEPT_SEARCH_HALVING, 0.93, 1, &rep, NULL);
      assert_int_equal(rep.nbad, 1);
      assert_true(named(&rep, g_hosts[bad]));
      /* log2(n) halving rounds, then at most 3 pairs. */
      int levels = (int)ceil(log2(n));
      assert_true(sim.rounds <= levels + 3);
      accept_report_free(&rep);
    }
  }
}

static void test_shared_machine_is_sequential(void **state) {
  (void)state;
  sim_t sim;
  sim_init(&sim, 4, 10.0);
  for (int i = 0; i < 4; i++) sim.machine[i] = 0; /* four namespaces on one machine */
  sim.cap[2] = 0.05;
  accept_report_t rep;
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 1, &rep, NULL);
  assert_int_equal(sim.machine_clash, 0);
  assert_int_equal(sim.max_groups_per_round, 1);
  assert_int_equal(sim.rounds, 5); /* 4 ring links, 1 confirmation */
  assert_int_equal(rep.nbad, 1);
  assert_true(named(&rep, "n02"));
  accept_report_free(&rep);
  /* Halving on one machine: the halves one after the other, same answer. */
  sim_init(&sim, 8, 10.0);
  for (int i = 0; i < 8; i++) sim.machine[i] = i / 4; /* two machines of four */
  sim.cap[6] = 0.05;
  run(&sim, ACCEPT_SEARCH_HALVING, 0.93, 1, &rep, NULL);
  assert_int_equal(sim.machine_clash, 0);
  assert_int_equal(rep.nbad, 1);
  assert_true(named(&rep, "n06"));
  accept_report_free(&rep);
  /* Different machines: groups run at the same time. */
  sim_init(&sim, 8, 10.0);
  sim.cap[1] = 0.05;
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 1, &rep, NULL);
  assert_int_equal(sim.max_groups_per_round, 4);
  assert_int_equal(rep.nbad, 1);
  accept_report_free(&rep);
}

static void test_fallback_halving_when_ring_is_clean(void **state) {
  (void)state;
  /* Every pair is fast, yet the job's busbw failed: halving runs and finds no slow half. */
  sim_t sim;
  sim_init(&sim, 8, 10.0);
  sim.noise = 0.01;
  accept_report_t rep;
  accept_search_t s;
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 1, &rep, &s);
  assert_int_equal(s.mode, ACCEPT_SEARCH_HALVING);
  assert_int_equal(s.fallback, 1);
  assert_int_equal(s.inconclusive, 1);
  assert_non_null(strstr(s.note, "no single node to blame"));
  assert_int_equal(find_check(&rep, "pair_search")->status, ACCEPT_WARN);
  int halving = 0;
  for (int i = 0; i < rep.nmeas; i++) halving += strcmp(rep.meas[i].phase, "halving") == 0;
  assert_int_equal(halving, 2);
  accept_search_free(&s);
  accept_report_free(&rep);
  /* Without a failed busbw the clean ring is the end. */
  sim_init(&sim, 8, 10.0);
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 0, &rep, &s);
  assert_int_equal(s.mode, ACCEPT_SEARCH_RING);
  assert_int_equal(find_check(&rep, "pair_search")->status, ACCEPT_PASS);
  accept_search_free(&s);
  accept_report_free(&rep);
}

static void test_noise_passing_problem_is_a_warning(void **state) {
  (void)state;
  /* A node slow in the ring only (a passing problem): warned, not named. */
  sim_t sim;
  sim_init(&sim, 6, 10.0);
  sim.cap[4] = 2.0;
  accept_search_t s;
  accept_report_t rep;
  assert_int_equal(accept_search_init(&s, 6, 0.93, ACCEPT_SEARCH_RING), 0);
  accept_report_init(&rep);
  int color[MAXN];
  double bw[MAXN];
  int ng, round = 0;
  while ((ng = accept_search_next(&s, color, NULL)) > 0) {
    if (++round == 3) sim.cap[4] = 10.0; /* recovered before the confirmation */
    for (int g = 0; g < ng; g++) bw[g] = measure(&sim, color, g);
    accept_search_feed(&s, bw, NULL, &rep, g_hosts);
  }
  accept_search_report(&s, g_hosts, &rep);
  assert_int_equal(rep.nbad, 0);
  const accept_check_t *b = find_check(&rep, "bad_node");
  assert_non_null(b);
  assert_int_equal(b->status, ACCEPT_WARN);
  assert_string_equal(b->subject, "n04");
  accept_search_free(&s);
  accept_report_free(&rep);
}

/* Busy shared nodes: +-25% noise, measurements that say so (jitter 0.45): 0.93 would flag healthy
 * nodes, the applied fraction drops to 0.55; a node at 5% is still named, one at 70% is not. */
static void test_noise_lowers_the_fraction(void **state) {
  (void)state;
  for (unsigned seed = 1; seed < 40; seed++) {
    sim_t sim;
    sim_init(&sim, 6, 1.0);
    sim.seed = seed;
    sim.noise = 0.25;
    sim.jitter = 0.45;
    sim.cap[1] = 0.05;
    sim.cap[4] = 0.7;
    accept_report_t rep;
    accept_search_t s;
    run(&sim, ACCEPT_SEARCH_RING, 0.93, 1, &rep, &s);
    assert_true(s.eff > 0.54 && s.eff < 0.56);
    assert_true(s.noise > 0.44 && s.noise < 0.46);
    assert_int_equal(rep.nbad, 1);
    assert_true(named(&rep, "n01"));
    assert_non_null(strstr(s.note, "lowered to 0.55"));
    accept_search_free(&s);
    accept_report_free(&rep);
  }
  /* Quiet measurements keep the fraction. */
  sim_t sim;
  sim_init(&sim, 6, 1.0);
  sim.jitter = 0.01;
  sim.cap[4] = 0.7;
  accept_report_t rep;
  accept_search_t s;
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 0, &rep, &s);
  assert_true(s.eff > 0.929 && s.eff < 0.931);
  assert_true(named(&rep, "n04"));
  accept_search_free(&s);
  accept_report_free(&rep);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ring_names_one_slow_node),
      cmocka_unit_test(test_ring_two_adjacent_bad_nodes),
      cmocka_unit_test(test_ring_bad_link_not_a_node),
      cmocka_unit_test(test_healthy_cluster_names_nobody),
      cmocka_unit_test(test_one_node_and_off),
      cmocka_unit_test(test_halving_names_the_culprit),
      cmocka_unit_test(test_shared_machine_is_sequential),
      cmocka_unit_test(test_fallback_halving_when_ring_is_clean),
      cmocka_unit_test(test_noise_passing_problem_is_a_warning),
      cmocka_unit_test(test_noise_lowers_the_fraction),
  };
  return cmocka_run_group_tests(tests, setup_hosts, NULL);
}
