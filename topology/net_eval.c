/* One node's interface decision from every node's inventory: reach by subnet, tiers, speed; the user's NCCL_SOCKET_IFNAME checked. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/check.h"
#include "common/util.h"
#include "topology/net.h"
#include "topology/path.h"

/* The address NCCL takes on an interface: the first IPv4 one (getifaddrs lists all IPv4
 * addresses before any IPv6 one), else the first IPv6 one that is not ::1; family restricts. */
static const iface_addr_t *nccl_addr(const iface_t *i, int family) {
  for (int pass = 0; pass < 2; pass++) {
    int want = pass == 0 ? AF_INET : AF_INET6;
    if (family && family != want) continue;
    for (int k = 0; k < i->naddrs; k++) {
      const iface_addr_t *a = &i->addrs[k];
      if (a->family != want) continue;
      if (want == AF_INET6 && a->loopback) continue;
      return a;
    }
  }
  return NULL;
}

static int same_addr(const iface_addr_t *a, const iface_addr_t *b) {
  return a->family == b->family && memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16) == 0;
}

/* Does node m have an address in net's subnet, on an interface that could carry traffic (not
 * NEVER)? The very same address does not count: it is a copy (docker0), not a neighbour. */
static int node_in_subnet(const net_inv_t *m, const iface_addr_t *net, int *dup) {
  for (int i = 0; i < m->n; i++) {
    const iface_t *f = &m->v[i];
    for (int k = 0; k < f->naddrs; k++) {
      const iface_addr_t *a = &f->addrs[k];
      if (a->family != net->family || a->loopback || a->link_local) continue;
      if (same_addr(a, net)) {
        if (dup) *dup = 1;
        continue;
      }
      if (iface_tier(f, NULL, 0) == IFACE_TIER_NEVER) continue;
      if (iface_addr_in_subnet(net, a)) return 1;
    }
  }
  return 0;
}

int net_inv_has_subnet(const net_inv_t *m, const iface_addr_t *net, int *dup) { return node_in_subnet(m, net, dup); }

/* "10.77.0.0/24" for messages. */
static const char *subnet_str(const iface_addr_t *a, char *buf, size_t len) {
  iface_addr_t n = *a;
  int bits = a->prefix, nbytes = a->family == AF_INET ? 4 : 16;
  for (int i = 0; i < nbytes; i++, bits -= 8) {
    uint8_t mask = bits >= 8 ? 0xff : bits <= 0 ? 0 : (uint8_t)(0xff << (8 - bits));
    n.bytes[i] &= mask;
  }
  char t[64];
  inet_ntop(a->family, n.bytes, t, sizeof t);
  util_fmt(buf, len, "%s/%d", t, a->prefix);
  return buf;
}

static const char *node_name(const net_inv_t *inv, char *buf, size_t len) {
  if (inv->host[0]) util_fmt(buf, len, "node %d (%s)", inv->node, inv->host);
  else util_fmt(buf, len, "node %d", inv->node);
  return buf;
}

/* One interface for lists: "eth0 (veth, up, 10.77.0.3/24)". */
static void describe(strbuf_t *b, const iface_t *f) {
  char why[96];
  iface_tier(f, why, sizeof why);
  const char *state = !f->up ? "down" : !f->running ? "no carrier" : "up";
  strbuf_printf(b, "%s (%s, %s", f->name, iface_kind_name(f->kind), state);
  if (f->speed_mbps > 0) strbuf_printf(b, ", %d Mb/s", f->speed_mbps);
  /* IPv6 link-local addresses (every up interface has one) only where there is nothing else. */
  int other = 0;
  for (int k = 0; k < f->naddrs; k++) other |= !(f->addrs[k].family == AF_INET6 && f->addrs[k].link_local);
  for (int k = 0; k < f->naddrs; k++)
    if (!other || !(f->addrs[k].family == AF_INET6 && f->addrs[k].link_local))
      strbuf_printf(b, ", %s/%d", f->addrs[k].text, f->addrs[k].prefix);
  const char *kind = iface_kind_name(f->kind);
  if (strcmp(why, "physical") != 0 && strncmp(why, "veth", 4) != 0 && strncmp(why, "virtual", 7) != 0 &&
      strcmp(why, state) != 0 && strncmp(why, kind, strlen(kind)) != 0)
    strbuf_printf(b, "; %s", why);
  strbuf_append(b, ")");
}

static void list_ifaces(strbuf_t *b, const net_inv_t *inv) {
  strbuf_append(b, "its interfaces: ");
  for (int i = 0; i < inv->n; i++) {
    if (i) strbuf_append(b, ", ");
    describe(b, &inv->v[i]);
  }
  if (inv->n == 0) strbuf_append(b, "none with an address");
  if (inv->omitted) strbuf_printf(b, " (and %d without an address)", inv->omitted);
}

/* The other nodes that have no address in net's subnet, as "h1, h3" (at most 6 named). */
static int missing_nodes(const net_inv_t *inv, int nnodes, int node, const iface_addr_t *net, strbuf_t *b) {
  int miss = 0;
  for (int m = 0; m < nnodes; m++) {
    if (m == node || node_in_subnet(&inv[m], net, NULL)) continue;
    if (b && miss < 6) strbuf_printf(b, "%s%s", miss ? ", " : "", inv[m].host[0] ? inv[m].host : "?");
    miss++;
  }
  if (b && miss > 6) strbuf_printf(b, " and %d more", miss - 6);
  return miss;
}

static int reach_of(const net_inv_t *inv, int nnodes, int node, const iface_addr_t *a) {
  int r = 0;
  for (int m = 0; m < nnodes; m++)
    if (m != node && node_in_subnet(&inv[m], a, NULL)) r++;
  return r;
}

static int cand_cmp(const net_cand_t *a, const net_cand_t *b) {
  if (a->reach != b->reach) return b->reach - a->reach;
  if (a->tier != b->tier) return (int)a->tier - (int)b->tier;
  int sa = a->iface.speed_mbps > 0 ? a->iface.speed_mbps : 0, sb = b->iface.speed_mbps > 0 ? b->iface.speed_mbps : 0;
  if (sa != sb) return sa > sb ? -1 : 1;
  return 0;
}

static int cand_order(const void *x, const void *y) {
  const net_cand_t *a = x, *b = y;
  int c = cand_cmp(a, b);
  return c ? c : strcmp(a->iface.name, b->iface.name);
}

static void fill_cand(net_cand_t *c, const iface_t *f, const iface_addr_t *a) {
  memset(c, 0, sizeof *c);
  c->iface = *f;
  c->addr = *a;
  c->tier = iface_tier(f, NULL, 0);
}

/* ---- the automatic choice ------------------------------------------------------------------- */

/* Among equally good interfaces (same reach, tier and speed: a namespace's or VM's links all look
 * alike), hints of which one is the fabric: the one MPI's own TCP traffic was pinned to
 * (Open MPI's btl/oob_tcp_if_include, names or subnets, as mpirun --mca passes them to every
 * rank), and against an onboard port (eno<N>: on GPU servers the management network, the fabric
 * NICs sit on PCIe cards). 0 = pinned, 1 = no hint, 2 = onboard. */
static const char *const g_mpi_pin_vars[] = {"OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include"};

static int mpi_pinned(const iface_t *f, const char **var) {
  for (size_t v = 0; v < GPL_ARRAY_LEN(g_mpi_pin_vars); v++) {
    const char *val = getenv(g_mpi_pin_vars[v]);
    if (!val || !*val) continue;
    char buf[256], *save = NULL;
    util_strlcpy(buf, val, sizeof buf);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      iface_addr_t net;
      int hit = 0;
      if (strchr(tok, '/') && iface_addr_parse(tok, &net) == 0) {
        for (int k = 0; k < f->naddrs && !hit; k++) hit = iface_addr_in_subnet(&net, &f->addrs[k]);
      } else {
        hit = strcmp(tok, f->name) == 0;
      }
      if (hit) {
        if (var) *var = g_mpi_pin_vars[v];
        return 1;
      }
    }
  }
  return 0;
}

static int onboard_name(const char *n) { return strncmp(n, "eno", 3) == 0 && n[3] >= '0' && n[3] <= '9'; }

static int hint_rank(const iface_t *f) { return mpi_pinned(f, NULL) ? 0 : onboard_name(f->name) ? 2 : 1; }

/* Stable: by hint, name order kept within one hint. */
static void order_by_hint(net_cand_t *c, int n) {
  for (int i = 1; i < n; i++)
    for (int k = i; k > 0 && hint_rank(&c[k - 1].iface) > hint_rank(&c[k].iface); k--) {
      net_cand_t tmp = c[k];
      c[k] = c[k - 1];
      c[k - 1] = tmp;
    }
}

static int eval_auto(const net_inv_t *inv, int nnodes, int node, net_eval_t *out, strbuf_t *msg) {
  const net_inv_t *me = &inv[node];
  char nn[NET_HOST_LEN + 32];
  net_cand_t *all = calloc((size_t)(me->n ? me->n : 1), sizeof *all);
  ALLOCCHECK(all);
  int nall = 0;
  strbuf_t skipped = STRBUF_INIT;
  for (int i = 0; i < me->n; i++) {
    const iface_t *f = &me->v[i];
    char why[96];
    if (iface_tier(f, why, sizeof why) == IFACE_TIER_NEVER) {
      strbuf_printf(&skipped, "%s%s (%s)", skipped.len ? ", " : "", f->name, why);
      continue;
    }
    const iface_addr_t *a = nccl_addr(f, me->family);
    if (!a) {
      strbuf_printf(&skipped, "%s%s (no %s address)", skipped.len ? ", " : "", f->name, me->family == AF_INET6 ? "IPv6" : "IPv4");
      continue;
    }
    if (a->link_local || a->loopback) {
      strbuf_printf(&skipped, "%s%s (NCCL would use its %s address %s)", skipped.len ? ", " : "", f->name,
                    a->link_local ? "link-local" : "loopback", a->text);
      continue;
    }
    fill_cand(&all[nall], f, a);
    all[nall].reach = reach_of(inv, nnodes, node, a);
    nall++;
  }
  qsort(all, (size_t)nall, sizeof *all, cand_order);
  int others = nnodes - 1;
  int rc = 0;
  if (nall == 0 || all[0].reach < others) {
    if (nnodes == 1) {
      /* One node: every interface works for NCCL's bootstrap; loopback is the one that surely does. */
      const iface_t *lo = NULL;
      for (int i = 0; i < me->n && !lo; i++)
        if (me->v[i].loopback && nccl_addr(&me->v[i], me->family)) lo = &me->v[i];
      if (lo) {
        fill_cand(&out->cand[0], lo, nccl_addr(lo, me->family));
        out->ncand = 1;
        util_fmt(out->value, sizeof out->value, "=%s", lo->name);
        util_fmt(out->reason, sizeof out->reason, "a single node and no other usable interface (not usable: %s)",
                 strbuf_str(&skipped));
      } else {
        util_fmt(out->reason, sizeof out->reason, "no usable interface on this single node; NCCL picks its own");
      }
      goto done;
    }
    rc = GPL_ENET;
    if (msg) {
      strbuf_printf(msg, "%s: no interface shares a subnet with all %d other nodes", node_name(me, nn, sizeof nn), others);
      for (int c = 0; c < nall; c++) {
        char sn[64];
        strbuf_printf(msg, "; %s %s reaches %d of %d (no address in %s on ", c ? "" : "candidates:", all[c].iface.name,
                      all[c].reach, others, subnet_str(&all[c].addr, sn, sizeof sn));
        missing_nodes(inv, nnodes, node, &all[c].addr, msg);
        strbuf_append(msg, ")");
      }
      if (skipped.len) strbuf_printf(msg, "; not usable: %s", strbuf_str(&skipped));
      strbuf_append(msg, ". ");
      list_ifaces(msg, me);
      strbuf_append(msg, ". If the nodes reach each other through routers, set NCCL_SOCKET_IFNAME.");
    }
    util_fmt(out->reason, sizeof out->reason, "no interface shares a subnet with all %d other nodes", others);
    goto done;
  }
  /* The equally good ones (same reach, tier, speed): the rank's GPU decides among them. */
  for (int c = 0; c < nall && out->ncand < NET_MAX_CAND; c++)
    if (cand_cmp(&all[c], &all[0]) == 0) out->cand[out->ncand++] = all[c];
  order_by_hint(out->cand, out->ncand);
  const net_cand_t *b = &out->cand[0];
  util_fmt(out->value, sizeof out->value, "=%s", b->iface.name);
  char speed[32] = "speed unknown";
  if (b->iface.speed_mbps > 0) util_fmt(speed, sizeof speed, "%d Mb/s", b->iface.speed_mbps);
  strbuf_t r = STRBUF_INIT;
  strbuf_printf(&r, "%s, %s, ", iface_kind_name(b->iface.kind), speed);
  if (nnodes > 2) strbuf_printf(&r, "shares a subnet with all %d other nodes", others);
  else if (nnodes == 2) strbuf_append(&r, "shares a subnet with the other node");
  else strbuf_append(&r, "a single node");
  if (out->ncand > 1) {
    strbuf_printf(&r, "; %d equally good:", out->ncand);
    for (int c = 0; c < out->ncand; c++) strbuf_printf(&r, " %s", out->cand[c].iface.name);
    const char *var = NULL;
    if (mpi_pinned(&b->iface, &var) && hint_rank(&out->cand[out->ncand - 1].iface) > 0)
      strbuf_printf(&r, " (%s first: MPI's traffic is pinned to it, %s=%s)", b->iface.name, var, getenv(var));
    else if (onboard_name(out->cand[out->ncand - 1].iface.name) && !onboard_name(b->iface.name))
      strbuf_printf(&r, " (onboard eno* ports last: on GPU servers the management network)");
  }
  for (int c = out->ncand; c < nall; c++) {
    if (c == out->ncand) strbuf_append(&r, "; also possible:");
    char why[64];
    if (all[c].reach < others) util_fmt(why, sizeof why, "reaches %d of %d", all[c].reach, others);
    else if (all[c].tier != b->tier) util_fmt(why, sizeof why, "%s", all[c].tier == IFACE_TIER_VIRTUAL ? "virtual" : "tier");
    else util_fmt(why, sizeof why, "slower");
    strbuf_printf(&r, " %s (%s)", all[c].iface.name, why);
  }
  if (skipped.len) strbuf_printf(&r, "; not usable: %s", strbuf_str(&skipped));
  util_strlcpy(out->reason, strbuf_str(&r), sizeof out->reason);
  strbuf_free(&r);
done:
  strbuf_free(&skipped);
  free(all);
  return rc;
}

/* ---- the user's value ----------------------------------------------------------------------- */

/* Interfaces NCCL would select on node \p me for list l, in NCCL's order: those with an IPv4
 * address by interface index (getifaddrs lists addresses in the kernel's index order, IPv4
 * first), then those with only IPv6 ones. Returns the count. */
static int by_index(const void *x, const void *y) {
  const iface_t *a = *(const iface_t *const *)x, *b = *(const iface_t *const *)y;
  return a->index - b->index;
}

static int nccl_matches(const net_inv_t *me, const net_iflist_t *l, const iface_t **out, int max) {
  int n = 0;
  const iface_t **pass_v = calloc((size_t)(me->n ? me->n : 1), sizeof *pass_v);
  if (!pass_v) return 0;
  for (int pass = 0; pass < 2; pass++) {
    int want = pass == 0 ? AF_INET : AF_INET6, np = 0;
    if (me->family && me->family != want) continue;
    for (int i = 0; i < me->n; i++) {
      const iface_t *f = &me->v[i];
      const iface_addr_t *a = nccl_addr(f, want);
      if (!f->running || !a || !net_iflist_match(l, f->name)) continue;
      int seen = 0;
      for (int k = 0; k < n && !seen; k++) seen = out[k] == f;
      if (!seen) pass_v[np++] = f;
    }
    qsort(pass_v, (size_t)np, sizeof *pass_v, by_index);
    for (int k = 0; k < np && n < max; k++) out[n++] = pass_v[k];
  }
  free(pass_v);
  return n;
}

static int eval_user(const net_inv_t *inv, int nnodes, int node, net_eval_t *out, strbuf_t *msg) {
  const net_inv_t *me = &inv[node];
  char nn[NET_HOST_LEN + 32], err[512];
  out->user = 1;
  util_strlcpy(out->value, me->user, sizeof out->value);
  const char *src = me->user_source[0] ? me->user_source : "environment";
  net_iflist_t l;
  if (net_iflist_parse(me->user, &l, err, sizeof err) < 0) {
    if (msg) strbuf_printf(msg, "NCCL_SOCKET_IFNAME=%s (%s): %s", me->user, src, err);
    util_fmt(out->reason, sizeof out->reason, "NCCL_SOCKET_IFNAME=%s (%s): %s", me->user, src, err);
    return GPL_ENET;
  }
  const iface_t *m[NET_IFLIST_MAX * 4];
  int nm = nccl_matches(me, &l, m, (int)GPL_ARRAY_LEN(m));
  if (nm == 0) {
    if (msg) {
      strbuf_printf(msg, "NCCL_SOCKET_IFNAME=%s (%s) matches no running interface with an address on %s", me->user, src,
                    node_name(me, nn, sizeof nn));
      if (err[0]) strbuf_printf(msg, " (%s)", err);
      strbuf_append(msg, "; ");
      list_ifaces(msg, me);
    }
    util_fmt(out->reason, sizeof out->reason, "NCCL_SOCKET_IFNAME=%s (%s) matches nothing here", me->user, src);
    return GPL_ENET;
  }
  /* NCCL's bootstrap uses the first match; its socket transport uses them all. */
  const iface_t *first = m[0];
  const iface_addr_t *a = nccl_addr(first, me->family);
  fill_cand(&out->cand[0], first, a);
  out->ncand = 1;
  int others = nnodes - 1;
  char why[96];
  iface_tier_t tier = iface_tier(first, why, sizeof why);
  if (others > 0 && (first->loopback || a->loopback || a->link_local)) {
    if (msg) {
      strbuf_printf(msg, "NCCL_SOCKET_IFNAME=%s (%s) on %s: NCCL's bootstrap would use %s (%s, %s), which cannot reach the other %d nodes",
                    me->user, src, node_name(me, nn, sizeof nn), first->name, a->text,
                    first->loopback || a->loopback ? "loopback" : "link-local", others);
      if (nm > 1) strbuf_printf(msg, " (it comes first of the %d matches)", nm);
      if (l.exclude && first->loopback) strbuf_printf(msg, "; exclude it too: %s,%s", me->user, first->name);
      strbuf_append(msg, "; ");
      list_ifaces(msg, me);
    }
    util_fmt(out->reason, sizeof out->reason, "NCCL_SOCKET_IFNAME=%s: the first match %s is %s", me->user, first->name,
             a->link_local ? "link-local" : "loopback");
    return GPL_ENET;
  }
  /* The same address on other nodes (docker0's 172.17.0.1): NCCL's bootstrap cannot work. */
  if (others > 0) {
    strbuf_t dups = STRBUF_INIT;
    int ndup = 0;
    for (int o = 0; o < nnodes; o++) {
      int dup = 0;
      if (o == node) continue;
      node_in_subnet(&inv[o], a, &dup);
      if (dup && ndup++ < 6) strbuf_printf(&dups, "%s%s", ndup > 1 ? ", " : "", inv[o].host[0] ? inv[o].host : "?");
    }
    if (ndup > 6) strbuf_printf(&dups, " and %d more", ndup - 6);
    if (ndup > 0) {
      if (msg)
        strbuf_printf(msg, "NCCL_SOCKET_IFNAME=%s (%s) on %s: NCCL's bootstrap would use %s (%s), the same address as on %s: "
                      "it cannot tell the nodes apart (a container bridge?)",
                      me->user, src, node_name(me, nn, sizeof nn), first->name, a->text, strbuf_str(&dups));
      util_fmt(out->reason, sizeof out->reason, "NCCL_SOCKET_IFNAME=%s: %s has the same address %s as %d other nodes", me->user,
          first->name, a->text, ndup);
      strbuf_free(&dups);
      return GPL_ENET;
    }
    strbuf_free(&dups);
  }
  int rc = 0;
  strbuf_t r = STRBUF_INIT;
  strbuf_printf(&r, "NCCL_SOCKET_IFNAME=%s (%s) honoured: NCCL's bootstrap uses %s (%s/%d)", me->user, src, first->name, a->text,
                a->prefix);
  if (nm > 1) {
    strbuf_append(&r, ", its socket transport also");
    for (int k = 1; k < nm; k++) strbuf_printf(&r, " %s", m[k]->name);
  }
  if (others > 0) {
    strbuf_t miss = STRBUF_INIT;
    int nmiss = missing_nodes(inv, nnodes, node, a, &miss);
    if (nmiss > 0) {
      rc = 1;
      char sn[64];
      if (msg)
        strbuf_printf(msg, "NCCL_SOCKET_IFNAME=%s (%s) on %s: %s (%s) shares no subnet (%s) with %s; only a router can connect them (the preflight checks it)",
                      me->user, src, node_name(me, nn, sizeof nn), first->name, a->text, subnet_str(a, sn, sizeof sn),
                      strbuf_str(&miss));
      strbuf_printf(&r, "; routed to %d of %d other nodes", nmiss, others);
    }
    strbuf_free(&miss);
    for (int k = 0; k < nm; k++) {
      if (iface_tier(m[k], why, sizeof why) != IFACE_TIER_NEVER) continue;
      if (msg)
        strbuf_printf(msg, "%sNCCL_SOCKET_IFNAME=%s (%s) on %s also matches %s (%s), which NCCL %s", rc ? "\n" : "", me->user, src,
                      node_name(me, nn, sizeof nn), m[k]->name, why,
                      k == 0 ? "uses for its bootstrap" : "uses for its socket transport");
      rc = 1;
    }
  }
  (void)tier;
  util_strlcpy(out->reason, strbuf_str(&r), sizeof out->reason);
  strbuf_free(&r);
  return rc;
}

int net_eval_node(const net_inv_t *inv, int nnodes, int node, net_eval_t *out, strbuf_t *msg) {
  memset(out, 0, sizeof *out);
  const net_inv_t *me = &inv[node];
  if (me->status < 0) {
    char nn[NET_HOST_LEN + 32];
    if (msg) strbuf_printf(msg, "%s could not list its network interfaces (%s)", node_name(me, nn, sizeof nn), gpl_strerror(me->status));
    util_fmt(out->reason, sizeof out->reason, "interfaces unreadable: %s", gpl_strerror(me->status));
    return out->status = me->status;
  }
  out->status = me->user[0] ? eval_user(inv, nnodes, node, out, msg) : eval_auto(inv, nnodes, node, out, msg);
  return out->status;
}

/* ---- the rank's pick ------------------------------------------------------------------------ */

/* Path class etc. from the rank's GPU (or NUMA node) to the interface's PCI device; 0 when the
 * topology has no such device. */
static int iface_path(const topo_t *t, const plan_rank_t *r, const iface_t *f, path_t *p) {
  if (!t || !r || !f->pci[0]) return 0;
  const topo_nic_t *nic = topo_nic_by_pci(t, f->pci);
  if (!nic) return 0;
  if (r->gpu >= 0 && r->gpu < t->ngpus) {
    path_gpu_nic(t, &t->gpus[r->gpu], nic, p);
    return 1;
  }
  if (r->numa >= 0 && t->hw) {
    hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(t->hw, (unsigned)r->numa);
    if (numa && numa->nodeset) {
      path_nodeset_nic(t, numa->nodeset, nic, p);
      return 1;
    }
  }
  return 0;
}

static int path_cmp(const path_t *a, const path_t *b) {
  if (a->cls != b->cls) return (int)a->cls - (int)b->cls;
  if (a->numa_dist != b->numa_dist) return a->numa_dist < b->numa_dist ? -1 : 1;
  return a->hops - b->hops;
}

int net_pick(const net_eval_t *ev, const topo_t *t, const plan_rank_t *r, char *why, size_t len) {
  if (why && len) why[0] = 0;
  if (ev->ncand <= 1) return 0;
  int best = 0, have = 0;
  path_t bp;
  memset(&bp, 0, sizeof bp);
  for (int c = 0; c < ev->ncand; c++) {
    path_t p;
    if (!iface_path(t, r, &ev->cand[c].iface, &p)) continue;
    if (!have || path_cmp(&p, &bp) < 0) best = c, bp = p, have = 1;
  }
  if (why && len) {
    const char *who = r && r->gpu >= 0 ? "GPU" : "NUMA node";
    int idx = r ? (r->gpu >= 0 ? r->gpu : r->numa) : -1;
    if (have)
      util_fmt(why, len, "nearest %s%d of %d equal interfaces (%s, %s)", who, idx, ev->ncand, path_class_name(bp.cls),
               path_class_desc(bp.cls));
    else
      util_fmt(why, len, "the first of %d equal interfaces (none has a PCI device in the topology)", ev->ncand);
  }
  return best;
}

int net_apply(const net_eval_t *ev, const topo_t *t, plan_rank_t *r) {
  if (!r || !ev->value[0] || ev->status < 0) return 0;
  char why[160], reason[PLAN_REASON_LEN], value[NET_VALUE_LEN];
  if (ev->user || ev->ncand == 0) {
    util_strlcpy(value, ev->value, sizeof value);
    util_strlcpy(reason, ev->reason, sizeof reason);
  } else {
    int c = net_pick(ev, t, r, why, sizeof why);
    const net_cand_t *k = &ev->cand[c];
    util_fmt(value, sizeof value, "=%s", k->iface.name);
    util_fmt(reason, sizeof reason, "%s %s/%d: %s%s%s", k->iface.name, k->addr.text, k->addr.prefix, why, why[0] ? "; " : "",
             ev->reason);
  }
  return plan_env_set(r, "NCCL_SOCKET_IFNAME", value, reason);
}
