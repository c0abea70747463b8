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
  else strbuf_printf(b, " (%s not on %s)", iface_subnet_text(a, sn, sizeof sn), strbuf_str(&who));
  strbuf_free(&who);
}

/* Every other host has an address in a's subnet (the agreement's reach test). */
static int reaches_all(const net_inv_t *inv, int nnodes, int node, const iface_addr_t *a) {
  for (int m = 0; m < nnodes; m++)
    if (m != node && !net_inv_has_subnet(&inv[m], a, NULL)) return 0;
  return 1;
}

int mpinet_from_job(const net_inv_t *inv, int nnodes, int node, mpinet_choice_t *out) {
  memset(out, 0, sizeof *out);
  if (nnodes <= 1) {
    out->how = MPINET_NONE;
    util_strlcpy(out->why, "one host: MPI's ranks talk over shared memory", sizeof out->why);
    return 0;
  }
  /* Every interface whose subnet reaches every host, whatever its tier or speed (unlike NCCL's
   * one best interface): each host then lists every subnet the others list too (a subnet that
   * reaches all from one host reaches all from each), so no two hosts' transports end up on
   * different networks; Open MPI stripes over them. */
  const net_inv_t *me = &inv[node];
  strbuf_t b = STRBUF_INIT, lo = STRBUF_INIT;
  int n = 0;
  for (int i = 0; i < me->n; i++) {
    const iface_t *f = &me->v[i];
    if (f->loopback || !mpinet__shown_addr(f)) continue; /* IPv6 link-local alone: not worth naming */
    const iface_addr_t *a = iface_usable_addr(f, 0);
    if (iface_tier(f, NULL, 0) != IFACE_TIER_NEVER && a && reaches_all(inv, nnodes, node, a)) {
      char sn[64];
      mpinet__list_add(out->value, sizeof out->value, iface_subnet_text(a, sn, sizeof sn));
      mpinet__list_add(out->ifnames, sizeof out->ifnames, f->name);
      n++;
    } else {
      left_out(&lo, inv, nnodes, node, f);
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
  return n ? 0 : GPL_ENET;
}
