/* The interface agreement over MPI: leaders allgather inventories, decide per node, ranks pick by GPU, all choices shared. */
#include "topology/net.h"

#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/check.h"
#include "common/log.h"
#include "common/mpix.h"
#include "common/util.h"

/* What a leader sends: this header, then n iface_t as raw bytes (iface.h keeps them flat). */
#define NET_WIRE_MAGIC 0x4e4c5047u /* "GPLN" */
#define NET_WIRE_VERSION ((3u << 16) | IFACE_WIRE_VERSION)
/* On the wire an interface is its fixed part (iface_t up to its addresses) and then only the
 * addresses it has: a third of the whole struct, which carries 8 address slots, for the usual
 * one or two (every leader receives every node's inventory). */
#define IFACE_FIXED offsetof(iface_t, addrs)
/* Nodes explained in full in one message; the rest are only named. */
#define NET_MSG_NODES 8

typedef struct wire_head_s {
  uint32_t magic;
  uint32_t version;
  int32_t node, status, family, n, omitted, pad;
  char host[NET_HOST_LEN];
  char user[NET_VALUE_LEN];
  char source[NET_SOURCE_LEN];
} wire_head_t;

int net_family_parse(const char *s) {
  if (!s) return 0;
  if (strcmp(s, "AF_INET") == 0) return AF_INET;
  if (strcmp(s, "AF_INET6") == 0) return AF_INET6;
  return 0;
}

int net_inv_local(net_inv_t *inv, int node, const char *host, const char *user, const char *source, int family) {
  memset(inv, 0, sizeof *inv);
  inv->node = node;
  inv->family = family;
  util_strlcpy(inv->host, host ? host : util_hostname(), sizeof inv->host);
  util_strlcpy(inv->user, user && *user ? user : "", sizeof inv->user);
  util_strlcpy(inv->user_source, source ? source : "", sizeof inv->user_source);
  iface_list_t l;
  int rc = iface_list(&l);
  if (rc < 0) {
    inv->status = rc;
    return rc;
  }
  inv->v = calloc((size_t)(l.n ? l.n : 1), sizeof *inv->v);
  if (!inv->v) {
    iface_list_free(&l);
    return inv->status = GPL_ENOMEM;
  }
  /* Interfaces with an address, the usable ones first when there are more than the cap (a
   * Kubernetes node can have hundreds of veths); kept in name order. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < l.n; i++) {
      const iface_t *f = &l.v[i];
      int usable = iface_tier(f, NULL, 0) != IFACE_TIER_NEVER;
      if (f->naddrs == 0 || usable != (pass == 0)) continue;
      if (inv->n < NET_WIRE_IFACES) inv->v[inv->n++] = *f;
      else inv->omitted++;
    }
  for (int i = 0; i < l.n; i++) inv->omitted += l.v[i].naddrs == 0;
  /* Back to name order (pass 0 and 1 were each in name order). */
  for (int i = 1; i < inv->n; i++)
    for (int k = i; k > 0 && strcmp(inv->v[k - 1].name, inv->v[k].name) > 0; k--) {
      iface_t tmp = inv->v[k];
      inv->v[k] = inv->v[k - 1];
      inv->v[k - 1] = tmp;
    }
  iface_list_free(&l);
  return 0;
}

void net_inv_free(net_inv_t *inv) {
  free(inv->v);
  inv->v = NULL;
  inv->n = 0;
}

void net_result_free(net_result_t *r) {
  if (r->node_addrs)
    for (int n = 0; n < r->nnodes; n++) free(r->node_addrs[n]);
  free(r->node_addrs);
  free(r->nodes);
  free(r->ranks);
  r->nodes = r->ranks = NULL;
  r->node_addrs = NULL;
}

/* Each node's own addresses (those no other node has: docker0's 172.17.0.1 is everywhere), for
 * what needs to recognise a node's connections later (launcher/live/lostpeer.c). Sorted once,
 * so that thousands of nodes cost n log n, not n squared. */
typedef struct addr_ref_s {
  const char *text;
  int node;
} addr_ref_t;

static int addr_ref_cmp(const void *x, const void *y) {
  const addr_ref_t *a = x, *b = y;
  int c = strcmp(a->text, b->text);
  return c ? c : (a->node > b->node) - (a->node < b->node);
}

static void keep_addrs(const net_inv_t *inv, int nnodes, net_result_t *out) {
  size_t total = 0, k = 0;
  for (int n = 0; n < nnodes; n++)
    for (int i = 0; i < inv[n].n; i++) total += (size_t)inv[n].v[i].naddrs;
  addr_ref_t *all = calloc(total + 1, sizeof *all);
  strbuf_t *per = calloc((size_t)nnodes, sizeof *per);
  out->node_addrs = calloc((size_t)nnodes, sizeof *out->node_addrs);
  if (!all || !per || !out->node_addrs) {
    free(all), free(per), free(out->node_addrs);
    out->node_addrs = NULL;
    return;
  }
  for (int n = 0; n < nnodes; n++)
    for (int i = 0; i < inv[n].n; i++)
      for (int q = 0; q < inv[n].v[i].naddrs; q++) {
        const iface_addr_t *a = &inv[n].v[i].addrs[q];
        if (!a->loopback && !a->link_local && a->text[0]) all[k++] = (addr_ref_t){a->text, n};
      }
  qsort(all, k, sizeof *all, addr_ref_cmp);
  for (size_t i = 0; i < k;) {
    size_t j = i + 1;
    int other = 0;
    while (j < k && strcmp(all[j].text, all[i].text) == 0) other |= all[j++].node != all[i].node;
    if (!other) strbuf_printf(&per[all[i].node], "%s%s", per[all[i].node].len ? " " : "", all[i].text);
    i = j;
  }
  for (int n = 0; n < nnodes; n++) {
    out->node_addrs[n] = strbuf_take(&per[n]);
    strbuf_free(&per[n]);
  }
  free(all);
  free(per);
}

/* ---- leaders: inventories of every node ----------------------------------------------------- */

char *net_inv_encode(const net_inv_t *inv, int *len) {
  size_t bytes = sizeof(wire_head_t);
  for (int i = 0; i < inv->n; i++) bytes += IFACE_FIXED + (size_t)inv->v[i].naddrs * sizeof(iface_addr_t);
  char *buf = calloc(1, bytes);
  if (!buf) return NULL;
  wire_head_t h;
  memset(&h, 0, sizeof h);
  h.magic = NET_WIRE_MAGIC;
  h.version = NET_WIRE_VERSION;
  h.node = inv->node;
  h.status = inv->status;
  h.family = inv->family;
  h.n = inv->n;
  h.omitted = inv->omitted;
  util_strlcpy(h.host, inv->host, sizeof h.host);
  util_strlcpy(h.user, inv->user, sizeof h.user);
  util_strlcpy(h.source, inv->user_source, sizeof h.source);
  memcpy(buf, &h, sizeof h);
  size_t off = sizeof h;
  for (int i = 0; i < inv->n; i++) {
    const iface_t *f = &inv->v[i];
    memcpy(buf + off, f, IFACE_FIXED);
    off += IFACE_FIXED;
    memcpy(buf + off, f->addrs, (size_t)f->naddrs * sizeof(iface_addr_t));
    off += (size_t)f->naddrs * sizeof(iface_addr_t);
  }
  *len = (int)bytes;
  return buf;
}

int net_inv_decode(const char *buf, int len, net_inv_t *inv) {
  wire_head_t h;
  memset(inv, 0, sizeof *inv);
  if (len < (int)sizeof h) return GPL_EPROTO;
  memcpy(&h, buf, sizeof h);
  if (h.magic != NET_WIRE_MAGIC || h.version != NET_WIRE_VERSION) {
    LOG_WARN("interface inventory of another node has magic %08x version %08x, expected %08x %08x (different gpulaunch builds?)",
             h.magic, h.version, NET_WIRE_MAGIC, NET_WIRE_VERSION);
    return GPL_EPROTO;
  }
  if (h.n < 0 || h.n > NET_WIRE_IFACES) return GPL_EPROTO;
  inv->node = h.node;
  inv->status = h.status;
  inv->family = h.family;
  inv->omitted = h.omitted;
  h.host[NET_HOST_LEN - 1] = h.user[NET_VALUE_LEN - 1] = h.source[NET_SOURCE_LEN - 1] = 0;
  util_strlcpy(inv->host, h.host, sizeof inv->host);
  util_strlcpy(inv->user, h.user, sizeof inv->user);
  util_strlcpy(inv->user_source, h.source, sizeof inv->user_source);
  inv->v = calloc((size_t)(h.n ? h.n : 1), sizeof *inv->v);
  if (!inv->v) return GPL_ENOMEM;
  size_t off = sizeof h, total = (size_t)len;
  for (int i = 0; i < h.n; i++) {
    iface_t *f = &inv->v[i];
    if (total - off < IFACE_FIXED) goto bad;
    memcpy(f, buf + off, IFACE_FIXED);
    off += IFACE_FIXED;
    if (f->naddrs < 0 || f->naddrs > IFACE_MAX_ADDRS || total - off < (size_t)f->naddrs * sizeof(iface_addr_t)) goto bad;
    memcpy(f->addrs, buf + off, (size_t)f->naddrs * sizeof(iface_addr_t));
    off += (size_t)f->naddrs * sizeof(iface_addr_t);
    /* strings from the wire: terminate them */
    f->name[IFACE_NAME_LEN - 1] = f->master[IFACE_NAME_LEN - 1] = f->pci[sizeof f->pci - 1] = f->driver[sizeof f->driver - 1] = 0;
    for (int k = 0; k < f->naddrs; k++) f->addrs[k].text[sizeof f->addrs[k].text - 1] = 0;
  }
  inv->n = h.n;
  return 0;
bad:
  free(inv->v);
  inv->v = NULL;
  return GPL_EPROTO;
}

/* Allgather of the leaders' inventories (variable size: lengths first, then padded blocks).
 * *all gets nnodes entries indexed by node. */
static int gather_invs(const net_job_t *job, const net_inv_t *mine, net_inv_t **all) {
  int len = 0, rc = 0, nl = 0;
  nl = job->leaders.n;
  if (nl != job->nnodes) {
    LOG_WARN("%d node leaders for %d nodes", nl, job->nnodes);
    return GPL_EINVAL;
  }
  char *blob = net_inv_encode(mine, &len);
  ALLOCCHECK(blob);
  int *lens = calloc((size_t)nl, sizeof *lens);
  char *pad = NULL, *blocks = NULL;
  net_inv_t *inv = calloc((size_t)nl, sizeof *inv);
  if (!lens || !inv) {
    rc = GPL_ENOMEM;
    goto out;
  }
  CHECKGOTO(mpix_gallgather(&job->leaders, &len, (int)sizeof len, lens, job->timeout, "network agreement (interface sizes)"), rc, out);
  int max = 0;
  for (int i = 0; i < nl; i++) max = lens[i] > max ? lens[i] : max;
  pad = calloc(1, (size_t)max);
  blocks = malloc((size_t)max * (size_t)nl);
  if (!pad || !blocks) {
    rc = GPL_ENOMEM;
    goto out;
  }
  memcpy(pad, blob, (size_t)len);
  CHECKGOTO(mpix_gallgather(&job->leaders, pad, max, blocks, job->timeout, "network agreement (interfaces)"), rc, out);
  for (int i = 0; i < nl && rc == 0; i++) {
    net_inv_t one;
    rc = net_inv_decode(blocks + (size_t)i * (size_t)max, lens[i], &one);
    if (rc < 0) break;
    if (one.node < 0 || one.node >= nl || inv[one.node].host[0]) {
      LOG_WARN("leader %d sent the inventory of node %d (of %d), already had it: %d", i, one.node, nl,
               one.node >= 0 && one.node < nl && inv[one.node].host[0]);
      net_inv_free(&one);
      rc = GPL_EPROTO;
      break;
    }
    inv[one.node] = one;
  }
out:
  if (rc < 0 && inv) {
    for (int i = 0; i < nl; i++) net_inv_free(&inv[i]);
    free(inv);
    inv = NULL;
  }
  *all = inv;
  free(blob);
  free(lens);
  free(pad);
  free(blocks);
  return rc;
}

/* ---- rank 0: one message for the whole job -------------------------------------------------- */

static void report(const net_inv_t *inv, int nnodes, const net_result_t *out) {
  strbuf_t errs = STRBUF_INIT, warns = STRBUF_INIT;
  char **seen = calloc((size_t)nnodes, sizeof *seen);
  int nseen = 0, nerr = 0, nwarn = 0, more_err = 0, more_warn = 0;
  strbuf_t more = STRBUF_INIT;
  for (int n = 0; n < nnodes; n++) {
    int st = out->nodes[n].status;
    if (st == 0) continue;
    int is_err = st < 0;
    if ((is_err ? nerr : nwarn) >= NET_MSG_NODES) {
      (is_err ? more_err++ : more_warn++);
      strbuf_printf(&more, "%s%s", more.len ? ", " : "", inv[n].host);
      continue;
    }
    net_eval_t ev;
    strbuf_t m = STRBUF_INIT;
    net_eval_node(inv, nnodes, n, &ev, &m);
    if (!m.len) strbuf_printf(&m, "node %d (%s): %s", n, inv[n].host, ev.reason);
    int dup = 0; /* the same user value with a syntax error fails alike on every node */
    for (int k = 0; k < nseen && !dup; k++) dup = strcmp(seen[k], strbuf_str(&m)) == 0;
    if (!dup && seen) seen[nseen++] = strbuf_take(&m);
    strbuf_free(&m);
    if (dup) continue;
    strbuf_printf(is_err ? &errs : &warns, "\n  %s", seen[nseen - 1]);
    (is_err ? nerr++ : nwarn++);
  }
  if (nerr)
    LOG_ERROR("network interface agreement failed for %s:%s%s%s%s", nnodes > 1 ? "the job" : "this node", strbuf_str(&errs),
              more_err ? "\n  (more nodes failed: " : "", more_err ? strbuf_str(&more) : "", more_err ? ")" : "");
  if (nwarn)
    LOG_WARN("network interface agreement:%s%s%s%s", strbuf_str(&warns), more_warn ? "\n  (more warnings: " : "",
             more_warn ? strbuf_str(&more) : "", more_warn ? ")" : "");
  for (int k = 0; k < nseen; k++) free(seen[k]);
  free(seen);
  strbuf_free(&errs);
  strbuf_free(&warns);
  strbuf_free(&more);
}

static void log_summary(const net_job_t *job, const net_result_t *out) {
  if (!log_enabled(LOG_LVL_INFO, LOG_NET)) return;
  strbuf_t b = STRBUF_INIT;
  for (int n = 0; n < out->nnodes && n < 16; n++) {
    const net_choice_t *c = &out->nodes[n];
    const char *host = job->hosts ? job->hosts[job->leader_of_node[n]] : "?";
    strbuf_printf(&b, "%s%s=%s %s", n ? ", " : "", host, c->ifname, c->addr);
  }
  if (out->nnodes > 16) strbuf_printf(&b, ", ... (%d nodes)", out->nnodes);
  LOG_INFO(NET, "interfaces: %s; MASTER_ADDR=%s (%.1f ms)", strbuf_str(&b), out->master_addr, out->seconds * 1e3);
  strbuf_free(&b);
}

/* ---- the agreement -------------------------------------------------------------------------- */

int net_agree(const net_job_t *job, const topo_t *t, plan_rank_t *me, const char *user_ifname, const char *user_source,
              net_result_t *out) {
  memset(out, 0, sizeof *out);
  double t0 = util_now();
  if (!job || job->size < 1 || job->nnodes < 1 || !job->node_of || !job->leader_of_node) return GPL_EINVAL;
  int node = job->node_of[job->rank], leader = job->local_rank == 0, rc = 0;
  out->nnodes = job->nnodes;
  out->size = job->size;
  out->nodes = calloc((size_t)job->nnodes, sizeof *out->nodes);
  out->ranks = calloc((size_t)job->size, sizeof *out->ranks);
  ALLOCCHECK(out->nodes);
  ALLOCCHECK(out->ranks);
  const char *host = job->hosts ? job->hosts[job->rank] : util_hostname();

  /* 1. Node leaders: inventories of every node, and the node's decision. */
  net_eval_t *ev = &out->eval;
  net_inv_t *inv = NULL;
  if (leader) {
    net_inv_t mine;
    net_inv_local(&mine, node, host, user_ifname, user_source, job->family); /* a failure travels in mine.status */
    if (job->nnodes == 1) {
      inv = calloc(1, sizeof *inv);
      if (inv) inv[0] = mine;
      else net_inv_free(&mine), rc = GPL_ENOMEM;
    } else {
      rc = gather_invs(job, &mine, &inv);
      net_inv_free(&mine);
    }
    if (rc == 0) net_eval_node(inv, job->nnodes, node, ev, NULL);
    else ev->status = rc, util_fmt(ev->reason, sizeof ev->reason, "exchange failed: %s", gpl_strerror(rc));
  }
  /* 2. The leader hands the decision to its node's ranks (they wait as long as it may). */
  int brc = mpix_gbcast(&job->node, ev, (int)sizeof *ev, 0, 2 * job->timeout + 2, "network agreement (node decision)");
  if (brc < 0) ev->status = brc;

  /* 3. This rank's pick among the equally good interfaces, and its environment. */
  net_choice_t mine;
  memset(&mine, 0, sizeof mine);
  mine.status = ev->status;
  if (ev->status >= 0 && ev->ncand > 0) {
    char why[160] = "";
    out->pick = net_pick(ev, t, me, why, sizeof why);
    const net_cand_t *c = &ev->cand[out->pick];
    util_strlcpy(mine.ifname, c->iface.name, sizeof mine.ifname);
    util_strlcpy(mine.addr, c->addr.text, sizeof mine.addr);
    mine.family = c->addr.family;
    util_strlcpy(out->ifname, mine.ifname, sizeof out->ifname);
    util_strlcpy(out->addr, mine.addr, sizeof out->addr);
    if (ev->user) util_strlcpy(out->value, ev->value, sizeof out->value);
    else util_fmt(out->value, sizeof out->value, "=%s", c->iface.name);
    if (ev->user) util_strlcpy(out->reason, ev->reason, sizeof out->reason);
    else util_fmt(out->reason, sizeof out->reason, "%s %s/%d: %s%s%s", c->iface.name, c->addr.text, c->addr.prefix, why,
             why[0] ? "; " : "", ev->reason);
    if (me) {
      int erc = net_apply(ev, t, me);
      if (erc < 0) mine.status = erc;
    }
  } else if (ev->status >= 0) {
    util_strlcpy(out->reason, ev->reason, sizeof out->reason);
  }

  /* 4. Everyone learns every choice: node interfaces (preflight, reports) and MASTER_ADDR. */
  if (job->size > 1)
    rc = mpix_allgather(&mine, (int)sizeof mine, out->ranks, job->comm, 2 * job->timeout + 4, "network agreement (choices)");
  else
    out->ranks[0] = mine, rc = 0;
  if (rc == 0) {
    for (int n = 0; n < job->nnodes; n++) out->nodes[n] = out->ranks[job->leader_of_node[n]];
    util_strlcpy(out->master_addr, out->ranks[0].addr, sizeof out->master_addr);
    util_strlcpy(out->master_ifname, out->ranks[0].ifname, sizeof out->master_ifname);
    for (int r = 0; r < job->size && rc == 0; r++)
      if (out->ranks[r].status < 0) rc = out->ranks[r].status;
  }
  out->seconds = util_now() - t0;
  /* 5. Rank 0 (a leader: the lowest rank of its node) explains failures and warnings once. */
  if (job->rank == 0 && inv) {
    int any = 0;
    for (int n = 0; n < job->nnodes; n++) any |= out->nodes[n].status != 0;
    if (any) report(inv, job->nnodes, out);
  }
  if (job->rank == 0 && rc == 0) log_summary(job, out);
  if (inv) {
    if (job->nnodes > 1) keep_addrs(inv, job->nnodes, out);
    for (int n = 0; n < job->nnodes; n++) net_inv_free(&inv[n]);
    free(inv);
  }
  out->status = rc < 0 ? rc : 0;
  if (rc < 0) out->ifname[0] = out->addr[0] = out->value[0] = 0; /* nothing to use: the job failed */
  return out->status;
}
