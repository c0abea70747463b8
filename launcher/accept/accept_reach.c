/* Reachability rows of `gpulaunch accept`: what the start-up's interface agreement decided and its TCP preflight proved (topology/net.c, topology/preflight.c, run by place_rank) -- reported, never probed a second time. */
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/accept/accept.h"
#include "launcher/job/job.h"
#include "launcher/job/place.h"

/* A veth's, bridge's or tunnel's speed (veth says 10000) is a number its driver made up, not a
 * link: min_busbw = auto must not derive a threshold from it (a bond's or vlan's is real). */
static int nominal_speed(iface_kind_t k) {
  return k == IFACE_VETH || k == IFACE_BRIDGE || k == IFACE_TUNNEL || k == IFACE_LOOPBACK;
}

int accept_job_iface(const place_t *pl, accept_if_t *out) {
  memset(out, 0, sizeof *out);
  out->speed_mbps = -1;
  const net_result_t *net = &pl->net;
  if (!pl->net_done || pl->net_rc < 0 || !net->ifname[0]) {
    snprintf(out->why, sizeof out->why, "the start-up's interface agreement gave this rank none (%s)",
             !pl->net_done ? "it did not run" : gpl_strerror(pl->net_rc < 0 ? pl->net_rc : GPL_ENET));
    return GPL_ENET;
  }
  util_strlcpy(out->name, net->ifname, sizeof out->name);
  util_strlcpy(out->addr, net->addr, sizeof out->addr);
  if (net->pick >= 0 && net->pick < net->eval.ncand) {
    const iface_t *i = &net->eval.cand[net->pick].iface;
    out->speed_mbps = nominal_speed(i->kind) ? -1 : i->speed_mbps;
  }
  snprintf(out->why, sizeof out->why, "%s (the start-up's interface agreement: %.80s)", net->ifname,
           net->value[0] ? net->value : "?");
  return GPL_OK;
}

/* The interface agreement: every node's choice, and [accept] iface as an expectation. */
static int agreement_row(const job_t *job, const place_t *pl, const accept_opts_t *o, accept_list_t *out) {
  accept_check_t c;
  accept_check_init(&c, "reachability", "", -1, -1, "interface agreement");
  accept_check_threshold(&c, o->iface[0] ? "every node on %s" : "an interface on every node", o->iface);
  const net_result_t *net = &pl->net;
  if (!pl->net_done) {
    accept_check_set(&c, ACCEPT_ERROR, "not checked: the start-up stopped before the interface agreement "
                     "(the placement row says why)");
    return accept_list_add(out, &c);
  }
  if (pl->net_rc < 0) {
    accept_check_set(&c, pl->net_rc == GPL_ENET ? ACCEPT_FAIL : ACCEPT_ERROR, "the start-up's interface "
                     "agreement failed: %s (its message above names the node, its NCCL_SOCKET_IFNAME and its "
                     "interfaces)", gpl_strerror(pl->net_rc));
    return accept_list_add(out, &c);
  }
  /* "h0 eth0 10.0.0.1, h1 eth0 10.0.0.2", and the first rank that is not on [accept] iface. */
  strbuf_t b = STRBUF_INIT;
  int other = -1;
  for (int n = 0; n < job->nnodes && net->nodes; n++) {
    const net_choice_t *ch = &net->nodes[n];
    strbuf_printf(&b, "%s%s %s %s", n ? ", " : "", job->hosts[job->leader_of_node[n]], ch->ifname, ch->addr);
  }
  for (int r = 0; o->iface[0] && net->ranks && r < job->size && other < 0; r++)
    if (strcmp(net->ranks[r].ifname, o->iface) != 0) other = r;
  accept_check_text(&c, "%s", b.s ? strbuf_str(&b) : "");
  strbuf_free(&b);
  if (other >= 0)
    accept_check_set(&c, ACCEPT_FAIL, "rank %d (host %s) uses %s, not %s as [accept] iface expects: set "
                     "NCCL_SOCKET_IFNAME to =%s ([nccl] SOCKET_IFNAME) to make the job use it", other,
                     job->hosts[other], net->ranks[other].ifname[0] ? net->ranks[other].ifname : "nothing",
                     o->iface, o->iface);
  else if (pl->net_rc > 0)
    accept_check_set(&c, ACCEPT_WARN, "the start-up's NCCL_SOCKET_IFNAME works with warnings (in the log "
                     "above): %s", net->reason);
  else if (job->nnodes < 2)
    accept_check_set(&c, ACCEPT_PASS, "one node: the start-up's NCCL_SOCKET_IFNAME for its ranks (%s)", net->reason);
  else
    accept_check_set(&c, ACCEPT_PASS, "NCCL_SOCKET_IFNAME as the job's programs get it, chosen by the start-up "
                     "in a subnet every other node has an address in (on this node: %s)", net->reason);
  return accept_list_add(out, &c);
}

/* The preflight's verdict, then one row per path that did not work. */
static int preflight_rows(const job_t *job, const place_t *pl, accept_list_t *out) {
  accept_check_t c;
  accept_check_init(&c, "reachability", "", -1, -1, "preflight");
  const preflight_stats_t *st = &pl->preflight;
  const char *mode = preflight_mode_name(pl->preflight_mode);
  accept_check_threshold(&c, "every node reached");
  if (!pl->preflight_done) {
    accept_check_set(&c, pl->net_done ? ACCEPT_SKIP : ACCEPT_ERROR, "not run: %s",
                     pl->net_done ? "the interface agreement failed" : "the start-up stopped before it");
    return accept_list_add(out, &c);
  }
  if (pl->preflight_mode == PREFLIGHT_OFF) {
    accept_check_set(&c, ACCEPT_SKIP, "[topology] probe = off");
    return accept_list_add(out, &c);
  }
  if (job->nnodes < 2) {
    accept_check_set(&c, ACCEPT_SKIP, "one node: no path between nodes to prove (the preflight probes "
                     "from node to node)");
    return accept_list_add(out, &c);
  }
  if (pl->preflight_rc == GPL_OK) {
    accept_check_value(&c, st->job_probes, "", "%d connection(s), every one accepted", st->job_probes);
    accept_check_set(&c, ACCEPT_PASS, "the start-up's TCP preflight (probe %s, %.1f s per connection): each "
                     "node connected to %s with the job's token and got the answer back", mode,
                     pl->preflight_timeout, pl->preflight_mode == PREFLIGHT_ALL ? "every other node" :
                     "the next node's chosen address");
    return accept_list_add(out, &c);
  }
  if (pl->preflight_rc != GPL_EUNREACH) {
    accept_check_set(&c, ACCEPT_ERROR, "the preflight did not complete: %s (the log names the node "
                     "leaders that did not answer)", gpl_strerror(pl->preflight_rc));
    return accept_list_add(out, &c);
  }
  accept_check_value(&c, st->job_probes - st->job_failed, "", "%d of %d connections", st->job_probes -
                     st->job_failed, st->job_probes);
  accept_check_set(&c, ACCEPT_FAIL, "%d connection(s) between nodes failed in the start-up's TCP preflight "
                   "(probe %s, %.1f s each): NCCL would hang on them; see the reach rows", st->job_failed, mode,
                   pl->preflight_timeout);
  CHECK(accept_list_add(out, &c));
  for (int i = 0; i < st->nfail; i++) {
    const preflight_fail_t *f = &st->fail[i];
    int a = job->leader_of_node[f->from];
    char subj[ACCEPT_SUBJECT_LEN];
    accept_check_t p;
    if (f->to < 0) {
      snprintf(subj, sizeof subj, "rank %d", a);
      accept_check_init(&p, "reach", "", -1, -1, subj);
      accept_check_threshold(&p, "listens");
      accept_check_text(&p, "%s (%s)", f->src, f->src_if);
      accept_check_set(&p, ACCEPT_FAIL, "rank %d (host %s) could not listen on its own address %s (%s): %s", a,
                       job->hosts[a], f->src, f->src_if, f->err);
    } else {
      int b = job->leader_of_node[f->to];
      snprintf(subj, sizeof subj, "rank %d -> rank %d", a, b);
      accept_check_init(&p, "reach", "", -1, -1, subj);
      accept_check_threshold(&p, "connects");
      accept_check_text(&p, "%s -> %s:%d", f->src[0] ? f->src : "?", f->dst, f->port);
      char from[96] = "";
      if (f->src[0]) snprintf(from, sizeof from, ", from %s (%s)", f->src, f->src_if);
      accept_check_set(&p, ACCEPT_FAIL, "rank %d (host %s) could not reach rank %d (host %s) at %s:%d (%s)%s: %s", a,
                       job->hosts[a], b, job->hosts[b], f->dst, f->port, f->dst_if, from, f->err);
    }
    CHECK(accept_list_add(out, &p));
  }
  return GPL_OK;
}

int accept_reach_checks(const job_t *job, const place_t *pl, const accept_opts_t *o, accept_list_t *out) {
  if (job->rank != 0) return GPL_OK;
  CHECK(agreement_row(job, pl, o, out));
  return preflight_rows(job, pl, out);
}
