/* Open MPI's own TCP interfaces from every host's inventory: the subnets every host has (the NCCL agreement's rule), with what was left out and why. */
#include "topology/mpinet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/strbuf.h"
#include "common/util.h"
#include "topology/net.h"

/* ---- the choice ------------------------------------------------------------------------------ */

static int onboard(const char *n) { return strncmp(n, "eno", 3) == 0 && n[3] >= '0' && n[3] <= '9'; }

/* Why host node's interface f is not among the chosen: its tier, a link-local address, an address
 * other hosts have too, or a subnet not every host has. */
static void left_out(strbuf_t *b, const net_inv_t *inv, int nnodes, int node, const iface_t *f) {
  char why[96], sn[64];
  const iface_addr_t *a = mpinet__shown_addr(f);
  strbuf_printf(b, "%s%s", b->len ? ", " : "", f->name);
  if (a) strbuf_printf(b, " %s", a->text);
  if (iface_tier(f, why, sizeof why) == IFACE_TIER_NEVER) {
    int dup = 0;
    for (int m = 0; a && m < nnodes; m++)
      if (m != node) net_inv_has_subnet(&inv[m], a, &dup);
    strbuf_printf(b, " (%s%s)", why, dup ? "; the same address on other hosts" : "");
    return;
  }
  int dup = 0, miss = 0;
  strbuf_t who = STRBUF_INIT;
  for (int m = 0; m < nnodes; m++) {
    if (m == node || net_inv_has_subnet(&inv[m], a, &dup)) continue;
    if (miss++ < 4) strbuf_printf(&who, "%s%s", who.len ? "," : "", inv[m].host);
  }
  if (miss > 4) strbuf_printf(&who, "+%d", miss - 4);
  if (dup && miss) strbuf_printf(b, " (the same address on other hosts)");
  else if (miss) strbuf_printf(b, " (%s not on %s)", iface_subnet_text(a, sn, sizeof sn), strbuf_str(&who));
  else strbuf_append(b, onboard(f->name) ? " (an onboard port: the management network)" : " (reaches every host, but slower or virtual)");
  strbuf_free(&who);
}

/* Every other host has an address in a's subnet (the agreement's reach test). */
static int reaches_all(const net_inv_t *inv, int nnodes, int node, const iface_addr_t *a) {
  for (int m = 0; m < nnodes; m++)
    if (m != node && !net_inv_has_subnet(&inv[m], a, NULL)) return 0;
  return 1;
}

#define MPINET_MAX_NETS 32
#define MPINET_ALL_HOSTS 256 /* up to this many hosts each rank weighs every host's choice */

/* The subnets NCCL's rule picks on host h (net_eval_node's equally good interfaces; an onboard
 * eno* port, on GPU servers the management network, only when nothing else is as good), added
 * to nets. */
static void host_nets(const net_inv_t *inv, int nnodes, int h, net_eval_t *ev, iface_addr_t *nets, int *n) {
  memset(ev, 0, sizeof *ev);
  if (net_eval_node(inv, nnodes, h, ev, NULL) < 0) return;
  int other = 0;
  for (int c = 0; c < ev->ncand; c++) other |= !onboard(ev->cand[c].iface.name);
  for (int c = 0; c < ev->ncand && *n < MPINET_MAX_NETS; c++) {
    if (other && onboard(ev->cand[c].iface.name)) continue;
    int dup = 0;
    for (int k = 0; k < *n && !dup; k++) dup = iface_addr_in_subnet(&nets[k], &ev->cand[c].addr);
    if (!dup) nets[(*n)++] = ev->cand[c].addr;
  }
}

int mpinet_from_job(const net_inv_t *inv, int nnodes, int node, mpinet_choice_t *out) {
  memset(out, 0, sizeof *out);
  if (nnodes <= 1) {
    out->how = MPINET_NONE;
    util_strlcpy(out->why, "one host: MPI's ranks talk over shared memory", sizeof out->why);
    return 0;
  }
  /* NCCL's rule (automatic: whatever NCCL_SOCKET_IFNAME says) on this host, and on every other
   * host where there are not too many: this host's transport takes its interfaces in any subnet
   * some host's rule picked that reaches every host, so that two hosts whose best interfaces
   * differ (speeds read differently) still share the networks their transports use. */
  net_inv_t *all = malloc(sizeof *all * (size_t)nnodes);
  net_eval_t *ev = malloc(sizeof *ev);
  if (!all || !ev) {
    free(all);
    free(ev);
    return GPL_ENOMEM;
  }
  memcpy(all, inv, sizeof *all * (size_t)nnodes);
  for (int h = 0; h < nnodes; h++) all[h].user[0] = 0;
  iface_addr_t nets[MPINET_MAX_NETS];
  int nn = 0;
  host_nets(all, nnodes, node, ev, nets, &nn);
  for (int h = 0; nn && nnodes <= MPINET_ALL_HOSTS && h < nnodes; h++)
    if (h != node) host_nets(all, nnodes, h, ev, nets, &nn);
  const net_inv_t *me = &all[node];
  strbuf_t b = STRBUF_INIT, lo = STRBUF_INIT;
  int n = 0;
  for (int i = 0; i < me->n; i++) {
    const iface_t *f = &me->v[i];
    if (f->loopback || !mpinet__shown_addr(f)) continue; /* IPv6 link-local alone: not worth naming */
    const iface_addr_t *a = iface_usable_addr(f, 0);
    int picked = 0;
    for (int k = 0; a && k < nn && !picked; k++) picked = iface_addr_in_subnet(&nets[k], a) || iface_addr_in_subnet(a, &nets[k]);
    if (picked && iface_tier(f, NULL, 0) != IFACE_TIER_NEVER && reaches_all(all, nnodes, node, a)) {
      char sn[64];
      mpinet__list_add(out->value, sizeof out->value, iface_subnet_text(a, sn, sizeof sn));
      mpinet__list_add(out->ifnames, sizeof out->ifnames, f->name);
      n++;
    } else {
      left_out(&lo, all, nnodes, node, f);
    }
  }
  if (n == 0) {
    out->how = MPINET_NONE;
    strbuf_printf(&b, "no interface shares a subnet with all %d other hosts (%s)", nnodes - 1, strbuf_str(&lo));
  } else {
    out->how = MPINET_JOB;
    strbuf_printf(&b, "the subnet%s every host has", n > 1 ? "s" : "");
    if (lo.len) strbuf_printf(&b, "; left out: %s", strbuf_str(&lo));
  }
  util_strlcpy(out->why, strbuf_str(&b), sizeof out->why);
  strbuf_free(&b);
  strbuf_free(&lo);
  free(ev);
  free(all);
  return n ? 0 : GPL_ENET;
}
