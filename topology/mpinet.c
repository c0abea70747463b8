/* Open MPI's own TCP interfaces from every host's inventory: the subnets every host has (the NCCL agreement's rule), with what was left out and why. */
#include "topology/mpinet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/check.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "topology/net.h"

/* ---- the choice ------------------------------------------------------------------------------ */




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
  else strbuf_append(b, " (reaches every host, but a lower tier or slower)");
  strbuf_free(&who);
}

int mpinet_from_job(const net_inv_t *inv, int nnodes, int node, mpinet_choice_t *out) {
  memset(out, 0, sizeof *out);
  if (nnodes <= 1) {
    out->how = MPINET_NONE;
    util_strlcpy(out->why, "one host: MPI's ranks talk over shared memory", sizeof out->why);
    return 0;
  }
  net_inv_t me = inv[node];
  me.user[0] = 0; /* the automatic rule, whatever NCCL_SOCKET_IFNAME says */
  net_inv_t *all = malloc(sizeof *all * (size_t)nnodes);
  ALLOCCHECK(all);
  memcpy(all, inv, sizeof *all * (size_t)nnodes);
  all[node] = me;
  net_eval_t *ev = calloc(1, sizeof *ev);
  if (!ev) {
    free(all);
    return GPL_ENOMEM;
  }
  int rc = net_eval_node(all, nnodes, node, ev, NULL);
  strbuf_t b = STRBUF_INIT, lo = STRBUF_INIT;
  for (int i = 0; i < me.n; i++) {
    const iface_t *f = &me.v[i];
    int chosen = 0;
    for (int c = 0; rc >= 0 && c < ev->ncand; c++) chosen |= strcmp(ev->cand[c].iface.name, f->name) == 0;
    if (!chosen && !f->loopback && mpinet__shown_addr(f)) left_out(&lo, all, nnodes, node, f); /* not IPv6 link-local alone */
  }
  if (rc < 0) {
    out->how = MPINET_NONE;
    strbuf_printf(&b, "no interface shares a subnet with all %d other hosts (%s)", nnodes - 1, strbuf_str(&lo));
  } else {
    out->how = MPINET_JOB;
    for (int c = 0; c < ev->ncand; c++) {
      char sn[64];
      mpinet__list_add(out->value, sizeof out->value, iface_subnet_text(&ev->cand[c].addr, sn, sizeof sn));
      mpinet__list_add(out->ifnames, sizeof out->ifnames, ev->cand[c].iface.name);
    }
    strbuf_printf(&b, "the subnet%s every host has", ev->ncand > 1 ? "s" : "");
    if (lo.len) strbuf_printf(&b, "; left out: %s", strbuf_str(&lo));
  }
  util_strlcpy(out->why, strbuf_str(&b), sizeof out->why);
  strbuf_free(&b);
  strbuf_free(&lo);
  free(ev);
  free(all);
  return rc < 0 ? GPL_ENET : 0;
}

