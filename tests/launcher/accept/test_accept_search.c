/* The bad-node search's decisions on simulated clusters: each node has a capacity, some links a
 * cap of their own; measurements get noise -- symmetric and small (a quiet fabric), one-sided
 * and large (busy shared cores: interference only slows a transfer down), and time-correlated
 * (a node, or the whole machine, slow for a window of rounds). The search must name exactly the
 * culprits (ring + pairs, halving, the fallback), keep groups that share a machine apart, keep
 * pair_fraction on a quiet fabric and lower it, saying so, on a noisy one. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "launcher/accept/accept.h"

#define MAXN 64
#define MAXR 512

typedef struct sim_s {
  int n;
  double cap[MAXN];           /* node capacity, GB/s */
  double link[MAXN][MAXN];    /* pair cap (0: none) */
  double noise;               /* +- relative noise (a quiet fabric) */
  double busy;                /* one-sided noise: each measurement x U(1 - busy, 1] */
  double global[MAXR];        /* machine-wide factor of a round (0: 1) */
  double slow[MAXN][MAXR];    /* factor of a node in a round (0: 1): a node stuck on a busy core */
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

/* A group's bandwidth in the current round: its slowest node or pair, times the round's load and
 * noise. */
static double measure(sim_t *s, const int *color, int g) {
  double bw = 1e9;
  int r = s->rounds < MAXR ? s->rounds : MAXR - 1;
  for (int i = 0; i < s->n; i++) {
    if (color[i] != g) continue;
    double c = s->cap[i] * (s->slow[i][r] > 0 ? s->slow[i][r] : 1);
    if (c < bw) bw = c;
    for (int j = 0; j < s->n; j++)
      if (j != i && color[j] == g && s->link[i][j] > 0 && s->link[i][j] < bw) bw = s->link[i][j];
  }
  if (s->global[r] > 0) bw *= s->global[r];
  if (s->busy > 0) bw *= 1 - s->busy * rnd(s);
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

/* Node x runs at factor f in rounds [from, to]. */
static void sim_slow_node(sim_t *s, int x, int from, int to, double f) {
  for (int r = from; r <= to && r < MAXR; r++) s->slow[x][r] = f;
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
      /* Ring: 2 rounds (even) or 3 (odd) per pass, then the confirmation and its control
       * (apart when they share a node), every group once per pass. */
      assert_true(sim.rounds <= ACCEPT_SEARCH_PASSES * ((n % 2 ? 3 : 2) + 2));
      /* Every group judged was measured once per pass, and the report keeps each try. */
      for (int i = 0; i < rep.nmeas; i++) assert_int_equal(rep.meas[i].nsamples, ACCEPT_SEARCH_PASSES);
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
      /* log2(n) halving levels, then at most 3 pairs and a control, each once per pass. */
      int levels = (int)ceil(log2(n));
      assert_true(sim.rounds <= ACCEPT_SEARCH_PASSES * (levels + 2));
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
  /* Per pass: 4 ring links; then per pass the confirmation and its control. */
  assert_int_equal(sim.rounds, ACCEPT_SEARCH_PASSES * 4 + ACCEPT_SEARCH_PASSES * 2);
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
    /* Recovered before the confirmation (the ring: 2 rounds per pass). */
    if (++round == 2 * ACCEPT_SEARCH_PASSES + 1) sim.cap[4] = 10.0;
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

/* The rule: pair_fraction while the noise is within what it tolerates, lower beyond, never
 * below the floor, never above a pair_fraction asked for; the text says which and why. */
static void test_rule(void **state) {
  (void)state;
  char why[ACCEPT_DETAIL_LEN];
  assert_true(fabs(accept_search_rule(0.93, 0.0, why, sizeof why) - 0.93) < 1e-9);
  assert_non_null(strstr(why, "pair_fraction 0.93"));
  assert_true(fabs(accept_search_rule(0.93, 0.02, why, sizeof why) - 0.93) < 1e-9);
  assert_true(fabs(accept_search_rule(0.93, 0.10, why, sizeof why) - 0.70) < 1e-9);
  assert_non_null(strstr(why, "noise 10%: flagging below 0.70 of the reference instead of 0.93"));
  assert_true(fabs(accept_search_rule(0.93, 0.5, why, sizeof why) - ACCEPT_SEARCH_FLOOR) < 1e-9);
  assert_non_null(strstr(why, "several times slower"));
  assert_true(fabs(accept_search_rule(0.3, 0.1, why, sizeof why) - 0.3) < 1e-9);
  /* Monotonic: more noise never raises the limit. */
  double last = 1;
  for (double nz = 0; nz < 1; nz += 0.01) {
    double e = accept_search_rule(0.93, nz, NULL, 0);
    assert_true(e <= last + 1e-12);
    last = e;
  }
}

/* A quiet dedicated fabric (tries within +-1%): ClusterKit's 93% holds, so a node or a link at
 * 85% of the others is named. */
static void test_quiet_fabric_keeps_the_fraction(void **state) {
  (void)state;
  for (unsigned seed = 1; seed < 20; seed++) {
    sim_t sim;
    sim_init(&sim, 8, 10.0);
    sim.seed = seed;
    sim.noise = 0.01;
    sim.cap[5] = 8.5;
    accept_report_t rep;
    accept_search_t s;
    run(&sim, ACCEPT_SEARCH_RING, 0.93, 0, &rep, &s);
    assert_true(fabs(s.eff - 0.93) < 1e-9);
    assert_true(s.noise < 0.03);
    assert_int_equal(rep.nbad, 1);
    assert_true(named(&rep, "n05"));
    assert_non_null(strstr(rep.search_rule, "pair_fraction 0.93"));
    accept_search_free(&s);
    accept_report_free(&rep);
    sim_init(&sim, 6, 10.0);
    sim.seed = seed;
    sim.noise = 0.01;
    sim.link[2][3] = sim.link[3][2] = 8.5;
    run(&sim, ACCEPT_SEARCH_RING, 0.93, 0, &rep, &s);
    assert_true(fabs(s.eff - 0.93) < 1e-9);
    assert_int_equal(rep.nbad, 0);
    assert_int_equal(rep.nbadlinks, 1);
    assert_string_equal(rep.bad_links[0], "n02 + n03");
    accept_search_free(&s);
    accept_report_free(&rep);
  }
}

/* Busy shared cores, as measured on a 2-core machine running four namespaces and a busy loop:
 * each try loses up to 60% at random, and a healthy node may stay ~3x slow for a stretch of
 * rounds or the whole search (stuck on the busy core: within the noise, so not evidence). At the default pair_fraction nobody healthy is named, a node
 * at 1% always is (alone), and the rule says the fraction was lowered because of the noise. */
static void test_busy_machine_names_only_the_culprit(void **state) {
  (void)state;
  int named_ok = 0, clean_ok = 0, runs = 0;
  for (int n = 3; n <= 8; n++) {
    for (unsigned seed = 1; seed <= 40; seed++) {
      for (int culprit = 0; culprit < 2; culprit++) {
        sim_t sim;
        sim_init(&sim, n, 1.0);
        for (int i = 0; i < n; i++) sim.machine[i] = 0; /* one machine: groups one at a time */
        sim.seed = seed * 7919u + (unsigned)n;
        sim.busy = 0.6;
        int bad = (int)(seed % (unsigned)n), stuck = (bad + 1 + (int)(seed % 2)) % n;
        /* Stuck for a stretch of rounds, or (every other seed) for the whole search. */
        int from = 1 + (int)(rnd(&sim) * 3 * n);
        if (seed % 4 < 2) sim_slow_node(&sim, stuck, 0, MAXR - 1, 0.33);
        else sim_slow_node(&sim, stuck, from, from + n + 2, 0.33);
        if (culprit) sim.cap[bad] = 0.01;
        accept_report_t rep;
        accept_search_t s;
        run(&sim, ACCEPT_SEARCH_RING, 0.93, 0, &rep, &s);
        runs++;
        assert_true(s.eff < 0.93);
        assert_non_null(strstr(rep.search_rule, "noise"));
        if (culprit) {
          assert_int_equal(rep.nbad, 1);
          assert_true(named(&rep, g_hosts[bad]));
          named_ok++;
        } else {
          assert_int_equal(rep.nbad, 0);
          assert_int_equal(rep.nbadlinks, 0);
          clean_ok++;
        }
        accept_search_free(&s);
        accept_report_free(&rep);
      }
    }
  }
  assert_int_equal(named_ok + clean_ok, runs);
}

/* The same noise through halving (and the fallback after a clean ring): the culprit alone. */
static void test_busy_machine_halving(void **state) {
  (void)state;
  for (int n = 4; n <= 9; n++) {
    for (unsigned seed = 1; seed <= 30; seed++) {
      sim_t sim;
      sim_init(&sim, n, 1.0);
      for (int i = 0; i < n; i++) sim.machine[i] = 0;
      sim.seed = seed * 31u + (unsigned)n;
      sim.busy = 0.6;
      int bad = (int)(seed % (unsigned)n);
      sim.cap[bad] = 0.01;
      accept_report_t rep;
      run(&sim, ACCEPT_SEARCH_HALVING, 0.93, 1, &rep, NULL);
      assert_int_equal(rep.nbad, 1);
      assert_true(named(&rep, g_hosts[bad]));
      accept_report_free(&rep);
      /* Healthy, but the job's bandwidth failed: the ring and the halving blame nobody. */
      sim_init(&sim, n, 1.0);
      for (int i = 0; i < n; i++) sim.machine[i] = 0;
      sim.seed = seed * 131u + (unsigned)n;
      sim.busy = 0.6;
      run(&sim, ACCEPT_SEARCH_RING, 0.93, 1, &rep, NULL);
      assert_int_equal(rep.nbad, 0);
      accept_report_free(&rep);
    }
  }
}

/* The machine gets twice as slow after the ring (another job started): a node whose ring pairs
 * were slow only because of its own passing trouble is judged against the control pair measured
 * alongside, so it is not named; a node really at 30% still is. */
static void test_control_pair_follows_the_load(void **state) {
  (void)state;
  sim_t sim;
  sim_init(&sim, 6, 10.0);
  sim.noise = 0.005;
  int ring_rounds = 2 * ACCEPT_SEARCH_PASSES;
  sim_slow_node(&sim, 1, 1, ring_rounds, 0.6);               /* n01: slow during the ring only */
  for (int r = ring_rounds + 1; r < MAXR; r++) sim.global[r] = 0.5; /* then everything halves */
  accept_report_t rep;
  accept_search_t s;
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 0, &rep, &s);
  assert_int_equal(rep.nbad, 0);
  const accept_check_t *b = find_check(&rep, "bad_node");
  assert_non_null(b);
  assert_int_equal(b->status, ACCEPT_WARN); /* not reproduced */
  assert_true(s.ctl_ref < 0.6 * s.reference);
  int control = 0;
  for (int i = 0; i < rep.nmeas; i++) control += strcmp(rep.meas[i].phase, "control") == 0;
  assert_int_equal(control, 1);
  accept_search_free(&s);
  accept_report_free(&rep);
  /* A real culprit under the same load change. */
  sim_init(&sim, 6, 10.0);
  sim.noise = 0.005;
  sim.cap[4] = 3.0;
  for (int r = ring_rounds + 1; r < MAXR; r++) sim.global[r] = 0.5;
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 0, &rep, NULL);
  assert_int_equal(rep.nbad, 1);
  assert_true(named(&rep, "n04"));
  accept_report_free(&rep);
}

/* The confirmation pairs a suspect with a third node (not a ring neighbour) when there is one,
 * and the control with two good nodes that are nobody's partner. */
static void test_confirmation_partners(void **state) {
  (void)state;
  sim_t sim;
  sim_init(&sim, 4, 10.0);
  sim.cap[2] = 0.1;
  accept_report_t rep;
  accept_search_t s;
  run(&sim, ACCEPT_SEARCH_RING, 0.93, 0, &rep, &s);
  assert_int_equal(s.partner[2], 0); /* n01 and n03 are its ring neighbours */
  assert_true((s.ctl_a == 1 && s.ctl_b == 3) || (s.ctl_a == 3 && s.ctl_b == 1));
  assert_true(named(&rep, "n02"));
  accept_search_free(&s);
  accept_report_free(&rep);
}

/* One pass (accept_search_set_passes): the old single-try search, judged on the jitter inside
 * each measurement since nothing was repeated. */
static void test_one_pass_uses_the_jitter(void **state) {
  (void)state;
  sim_t sim;
  sim_init(&sim, 6, 1.0);
  sim.jitter = 0.2;
  sim.cap[3] = 0.05;
  accept_search_t s;
  assert_int_equal(accept_search_init(&s, 6, 0.93, ACCEPT_SEARCH_RING), 0);
  accept_search_set_passes(&s, 1);
  accept_report_t rep;
  accept_report_init(&rep);
  int color[MAXN];
  double bw[MAXN], jit[MAXN];
  for (int g = 0; g < MAXN; g++) jit[g] = sim.jitter;
  int ng, rounds = 0;
  while ((ng = accept_search_next(&s, color, NULL)) > 0) {
    rounds++;
    for (int g = 0; g < ng; g++) bw[g] = measure(&sim, color, g);
    accept_search_feed(&s, bw, jit, &rep, g_hosts);
  }
  accept_search_report(&s, g_hosts, &rep);
  assert_int_equal(rounds, 2 + 1); /* ring, then confirmation and control at once */
  assert_true(fabs(s.noise - 0.2) < 1e-9);
  assert_true(fabs(s.eff - 0.4) < 1e-9);
  assert_true(named(&rep, "n03"));
  assert_true(fabs(rep.fraction - 0.4) < 1e-9);
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
      cmocka_unit_test(test_rule),
      cmocka_unit_test(test_quiet_fabric_keeps_the_fraction),
      cmocka_unit_test(test_busy_machine_names_only_the_culprit),
      cmocka_unit_test(test_busy_machine_halving),
      cmocka_unit_test(test_control_pair_follows_the_load),
      cmocka_unit_test(test_confirmation_partners),
      cmocka_unit_test(test_one_pass_uses_the_jitter),
  };
  return cmocka_run_group_tests(tests, setup_hosts, NULL);
}
