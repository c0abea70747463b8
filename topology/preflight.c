/* The job's preflight: node leaders exchange token and ports over MPI, probe ring or all pairs, and agree on one verdict. */
#include "topology/preflight.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <uv.h>

#include "common/check.h"
#include "common/log.h"
#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/tls.h"
#include "common/util.h"

#define PF_ADDRS 8  /* distinct addresses of one node (ranks may pick different equal NICs) */
#define PF_FAILS 8  /* failures one node reports in full */
#define PF_LINES 16 /* failures rank 0 prints in full */

typedef struct pf_addrs_s {
  int32_t node, n;
  int32_t port[PF_ADDRS]; /* 0: could not listen */
  char addr[PF_ADDRS][48];
  char ifname[PF_ADDRS][IFACE_NAME_LEN];
} pf_addrs_t;

typedef struct pf_fail_s {
  int32_t to, port;       /* to = -1: this node could not listen on src */
  char src[48], dst[48];
  char src_if[IFACE_NAME_LEN], dst_if[IFACE_NAME_LEN];
  char err[160];
  double seconds;
} pf_fail_t;

typedef struct pf_report_s {
  int32_t node, probes, failed, accepted, refused, nfail;
  pf_fail_t fail[PF_FAILS];
} pf_report_t;

int preflight_mode_parse(const char *s, preflight_mode_t *out) {
  if (!s) return GPL_EINVAL;
  if (strcasecmp(s, "ring") == 0) *out = PREFLIGHT_RING;
  else if (strcasecmp(s, "all") == 0) *out = PREFLIGHT_ALL;
  else if (strcasecmp(s, "off") == 0 || strcasecmp(s, "none") == 0) *out = PREFLIGHT_OFF;
  else return GPL_EINVAL;
  return 0;
}

const char *preflight_mode_name(preflight_mode_t m) {
  return m == PREFLIGHT_RING ? "ring" : m == PREFLIGHT_ALL ? "all" : "off";
}

/* ---- the report exchange, driven from the probe loop ---------------------------------------- */

/* The reports' exchange, driven from the probes' loop (a leader keeps answering the others'
 * probes until the verdict comes, which is after every report, so after every probe): the
 * leaders' tree of common/mpix.h gathers the reports to rank 0, which decides the verdict, and
 * the verdict comes down the same tree. No leader waits on more than the tree's fan-out. */
typedef struct xchg_s {
  const net_job_t *job;
  const net_result_t *net;
  preflight_t *pf;
  pf_report_t *mine;
  pf_report_t *all;  /* root: every leader's report */
  mpix_tx_t *tx;
  int verdict, started;
  void (*fill)(struct xchg_s *);
  const pf_addrs_t *addrs;
  int *probe_to;     /* node, address index of each probe */
  int *probe_ai;
} xchg_t;

/* Rank 0, every report in: any failed path fails the job. */
static int xchg_decide(void *arg, const void *table, int n) {
  xchg_t *x = arg;
  memcpy(x->all, table, (size_t)n * sizeof *x->all);
  for (int i = 0; i < n; i++)
    if (x->all[i].failed > 0 || x->all[i].nfail > 0) return GPL_EUNREACH;
  return 0;
}

static int xchg_more(void *arg) {
  xchg_t *x = arg;
  if (!x->started) { /* our probes are done: report */
    x->fill(x);
    x->started = 1;
    int rc = mpix_tx_start(&x->tx, &x->job->leaders, MPIX_TX_GATHER, x->mine, (int)sizeof *x->mine, x->job->timeout,
                           "preflight (reports)");
    if (rc < 0) {
      x->verdict = rc;
      return 0;
    }
    mpix_tx_set_decide(x->tx, xchg_decide, x);
  }
  int rc = mpix_tx_poll(x->tx);
  if (rc == 1) return 1;
  x->verdict = rc < 0 ? rc : mpix_tx_result(x->tx, NULL);
  return 0;
}

/* ---- one leader ----------------------------------------------------------------------------- */

static int subnet_contains(const net_result_t *net, const char *mine, const char *other) {
  iface_addr_t a, b;
  if (iface_addr_parse(other, &b) < 0) return 0;
  for (int c = 0; c < net->eval.ncand; c++) {
    a = net->eval.cand[c].addr;
    if (strcmp(a.text, mine) == 0) return iface_addr_in_subnet(&a, &b);
  }
  return 0;
}

static int same_family(const char *a, const char *b) { return (strchr(a, ':') != NULL) == (strchr(b, ':') != NULL); }

/* Our source address for dst: the one of ours in dst's subnet, else one of the same family. */
static int pick_src(const net_result_t *net, const pf_addrs_t *mine, const char *dst) {
  for (int k = 0; k < mine->n; k++)
    if (subnet_contains(net, mine->addr[k], dst)) return k;
  for (int k = 0; k < mine->n; k++)
    if (same_family(mine->addr[k], dst)) return k;
  return -1;
}

static void fill_report(xchg_t *x) {
  pf_report_t *r = x->mine;
  if (!x->pf) return;
  preflight_counts(x->pf, &r->accepted, &r->refused);
  const pf_addrs_t *me = &x->addrs[r->node];
  for (int i = 0; i < r->probes; i++) {
    char err[160];
    if (preflight_result(x->pf, i, err, sizeof err) == 0) continue;
    r->failed++;
    if (r->nfail == PF_FAILS) continue;
    pf_fail_t *f = &r->fail[r->nfail++];
    const pf_addrs_t *to = &x->addrs[x->probe_to[i]];
    int ai = x->probe_ai[i];
    int si = pick_src(x->net, me, to->addr[ai]);
    f->to = x->probe_to[i];
    f->port = to->port[ai];
    util_strlcpy(f->dst, to->addr[ai], sizeof f->dst);
    util_strlcpy(f->dst_if, to->ifname[ai], sizeof f->dst_if);
    if (si >= 0) {
      util_strlcpy(f->src, me->addr[si], sizeof f->src);
      util_strlcpy(f->src_if, me->ifname[si], sizeof f->src_if);
    }
    util_strlcpy(f->err, err, sizeof f->err);
    f->seconds = preflight_seconds(x->pf, i);
  }
}

static const char *host_of(const net_job_t *job, int node) {
  return job->hosts ? job->hosts[job->leader_of_node[node]] : "?";
}

static void print_failures(const net_job_t *job, preflight_mode_t mode, const pf_report_t *all, int n) {
  strbuf_t b = STRBUF_INIT;
  int total = 0, probes = 0, lines = 0;
  for (int i = 0; i < n; i++) {
    total += all[i].failed;
    probes += all[i].probes;
    for (int k = 0; k < all[i].nfail; k++) {
      const pf_fail_t *f = &all[i].fail[k];
      if (f->to < 0) total++;
      if (lines++ >= PF_LINES) continue;
      if (f->to < 0) {
        strbuf_printf(&b, "\n  %s (node %d) cannot listen on its own address %s (%s): %s", host_of(job, i), i, f->src, f->src_if, f->err);
        continue;
      }
      strbuf_printf(&b, "\n  %s (node %d) -> %s (node %d): %s port %d on %s's %s", host_of(job, i), i, host_of(job, f->to), f->to,
                    f->dst, f->port, host_of(job, f->to), f->dst_if);
      if (f->src[0]) strbuf_printf(&b, ", from %s (%s's %s)", f->src, host_of(job, i), f->src_if);
      strbuf_printf(&b, ": %s", f->err);
    }
  }
  if (lines > PF_LINES) strbuf_printf(&b, "\n  ... and %d more", lines - PF_LINES);
  LOG_ERROR("preflight (%s) failed: %d of %d connections between nodes did not work:%s\n"
            "NCCL would hang on these paths. Check the links and firewalls, or choose another interface "
            "(NCCL_SOCKET_IFNAME; `gpulaunch topo` shows the choice)",
            preflight_mode_name(mode), total, probes, strbuf_str(&b));
  strbuf_free(&b);
}

static int leader_run(const net_job_t *job, const net_result_t *net, preflight_mode_t mode, double timeout_s,
                      preflight_stats_t *st) {
  double t0 = util_now();
  int n = job->nnodes, node = job->node_of[job->rank], rc = 0, me_l = 0;
  me_l = job->leaders.me;
  /* 1. The token: from the job key (inside TLS), else made by rank 0 (the first leader) and shared
   * over MPI only. */
  uint8_t token[PREFLIGHT_TOKEN_LEN];
  memset(token, 0, sizeof token);
  if (job->tls) {
    rc = tls_hkdf(job->tls->key, TLS_KEY_LEN, "gpulaunch use v1", "preflight token", token, sizeof token);
  } else if (me_l == 0) {
    int urc = uv_random(NULL, NULL, token, sizeof token, 0, NULL);
    if (urc < 0) LOG_WARN("preflight: no random token (%s)", uv_strerror(urc));
    rc = urc < 0 ? GPL_EUV : 0;
  }
  int brc = job->tls ? 0 : mpix_gbcast(&job->leaders, token, (int)sizeof token, 0, job->timeout, "preflight (token)");
  if (brc < 0) return brc;

  /* 2. Listen on this node's distinct chosen addresses. */
  pf_addrs_t mine;
  memset(&mine, 0, sizeof mine);
  mine.node = node;
  for (int r = 0; r < job->size; r++) {
    const net_choice_t *c = &net->ranks[r];
    if (job->node_of[r] != node || c->status < 0 || !c->addr[0]) continue;
    int dup = 0;
    for (int k = 0; k < mine.n && !dup; k++) dup = strcmp(mine.addr[k], c->addr) == 0;
    if (dup || mine.n == PF_ADDRS) continue;
    util_strlcpy(mine.addr[mine.n], c->addr, sizeof mine.addr[0]);
    util_strlcpy(mine.ifname[mine.n], c->ifname, sizeof mine.ifname[0]);
    mine.n++;
  }
  preflight_t *pf = NULL;
  pf_addrs_t *addrs = calloc((size_t)n, sizeof *addrs);
  pf_report_t *report = calloc(1, sizeof *report), *all = NULL;
  int *probe_to = NULL, *probe_ai = NULL;
  if (!addrs || !report) {
    rc = GPL_ENOMEM;
    goto out;
  }
  report->node = node;
  int irc = preflight_init(&pf, token, node);
  memset(token, 0, sizeof token);
  if (irc == 0 && job->tls) irc = preflight_set_tls(pf, job->tls);
  if (irc < 0 && rc == 0) rc = irc;
  for (int k = 0; pf && k < mine.n; k++) {
    int port = 0;
    if (preflight_listen(pf, mine.addr[k], &port) == 0) {
      mine.port[k] = port;
    } else if (report->nfail < PF_FAILS) {
      pf_fail_t *f = &report->fail[report->nfail++];
      f->to = -1;
      util_strlcpy(f->src, mine.addr[k], sizeof f->src);
      util_strlcpy(f->src_if, mine.ifname[k], sizeof f->src_if);
      util_strlcpy(f->err, "the address is not usable here (see the warning above)", sizeof f->err);
    }
  }
  /* 3. Everyone's addresses and ports (a failed leader still takes part, with no ports). */
  int grc = mpix_gallgather(&job->leaders, &mine, (int)sizeof mine, addrs, job->timeout, "preflight (ports)");
  if (grc < 0) {
    rc = grc;
    goto out;
  }
  for (int i = 0; i < n; i++)
    if (addrs[i].node != i) { /* net.h: the leaders communicator is in node order */
      LOG_WARN("preflight: leader %d of the leaders communicator is node %d, not node %d", i, addrs[i].node, i);
      rc = GPL_EINVAL;
      goto out;
    }
  if (rc < 0) goto verdict; /* no loop of our own: report the failure and go on */

  /* 4. The probes: ring (the next node) or all the other nodes, each of their addresses. */
  probe_to = calloc((size_t)n * PF_ADDRS, sizeof *probe_to);
  probe_ai = calloc((size_t)n * PF_ADDRS, sizeof *probe_ai);
  if (!probe_to || !probe_ai) {
    rc = GPL_ENOMEM;
    goto out;
  }
  for (int d = 1; d < n; d++) {
    if (mode == PREFLIGHT_RING && d > 1) break;
    int to = (node + d) % n;
    const pf_addrs_t *t = &addrs[to];
    for (int k = 0; k < t->n; k++) {
      int si = pick_src(net, &mine, t->addr[k]);
      if (t->port[k] <= 0) { /* the peer could not listen there: its own report says why */
        report->failed++;
        continue;
      }
      int i = preflight_probe(pf, si >= 0 ? mine.addr[si] : NULL, t->addr[k], t->port[k], to, timeout_s, NULL);
      if (i < 0) {
        rc = i;
        goto out;
      }
      probe_to[i] = to;
      probe_ai[i] = k;
      report->probes++;
    }
  }
  st->probes = report->probes;

verdict:;
  /* 5. Probe, keep answering, exchange reports; rank 0 decides. */
  xchg_t x;
  memset(&x, 0, sizeof x);
  x.job = job;
  x.net = net;
  x.pf = pf;
  x.mine = report;
  x.fill = fill_report;
  x.addrs = addrs;
  x.probe_to = probe_to;
  x.probe_ai = probe_ai;
  if (me_l == 0) {
    all = calloc((size_t)n, sizeof *all);
    if (!all) {
      rc = GPL_ENOMEM;
      goto out;
    }
    x.all = all;
  }
  /* The exchange ends on its own deadlines (job->timeout after the probes, a little more for
   * the levels of the tree); the loop's is a backstop. */
  double deadline = util_now() + timeout_s + job->timeout + 10;
  int lrc;
  if (pf) {
    lrc = preflight_loop(pf, xchg_more, &x, deadline);
  } else { /* could not make a loop: still report, bounded */
    lrc = 0;
    while (xchg_more(&x) && (lrc = util_now() >= deadline ? GPL_ETIMEDOUT : 0) == 0) util_sleep(1e-3);
  }
  if (lrc < 0 && x.verdict == 0) x.verdict = lrc;
  if (x.tx && x.verdict < 0 && x.verdict != GPL_EUNREACH) {
    /* The exchange failed (its missing leaders are named): MPI may still use its buffers. */
    report = NULL;
    all = NULL;
    rc = x.verdict;
    goto out;
  }
  mpix_tx_free(x.tx);
  st->failed = report->failed;
  preflight_counts(pf, &st->accepted, &st->refused); /* final: every prober has its answer now */
  if (me_l == 0) {
    for (int i = 0; i < n; i++) {
      st->job_probes += all[i].probes;
      st->job_failed += all[i].failed;
      for (int k = 0; k < all[i].nfail; k++) {
        const pf_fail_t *f = &all[i].fail[k];
        st->job_failed += f->to < 0;
        if (st->nfail == PREFLIGHT_FAILS_MAX) continue;
        preflight_fail_t *o = &st->fail[st->nfail++];
        o->from = i, o->to = f->to, o->port = f->port;
        util_strlcpy(o->src, f->src, sizeof o->src);
        util_strlcpy(o->dst, f->dst, sizeof o->dst);
        util_strlcpy(o->src_if, f->src_if, sizeof o->src_if);
        util_strlcpy(o->dst_if, f->dst_if, sizeof o->dst_if);
        util_strlcpy(o->err, f->err, sizeof o->err);
      }
    }
    if (x.verdict < 0) print_failures(job, mode, all, n);
    else LOG_INFO(NET, "preflight (%s): %d nodes reach each other (%.1f ms)", preflight_mode_name(mode), n, (util_now() - t0) * 1e3);
  }
  if (rc == 0) rc = x.verdict;
out:
  preflight_free(pf);
  free(addrs);
  free(report);
  free(all);
  free(probe_to);
  free(probe_ai);
  return rc;
}

int preflight_run(const net_job_t *job, const net_result_t *net, preflight_mode_t mode, double timeout_s, preflight_stats_t *stats) {
  preflight_stats_t local;
  preflight_stats_t *st = stats ? stats : &local;
  memset(st, 0, sizeof *st);
  double t0 = util_now();
  if (mode == PREFLIGHT_OFF || !job || job->nnodes < 2) return 0;
  if (!net || !net->ranks || net->size != job->size) return GPL_EINVAL;
  int leader = job->local_rank == 0, verdict = 0;
  if (timeout_s <= 0) timeout_s = 5;
  if (leader) verdict = leader_run(job, net, mode, timeout_s, st);
  /* The node's ranks wait for their leader (which waits for MPI twice and the probes once). */
  int v = verdict;
  int rc = mpix_gbcast(&job->node, &v, (int)sizeof v, 0, leader ? job->timeout : 2 * job->timeout + timeout_s + 6,
                      "preflight (verdict)");
  st->seconds = util_now() - t0;
  return rc < 0 ? rc : v;
}
