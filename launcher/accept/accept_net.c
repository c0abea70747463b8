/* Reachability check of `gpulaunch accept`: the job's interface on each rank, and a bounded TCP
 * ring (or all-pairs) test in which every rank listens and connects to its peers.
 *
 * The topology module's job-wide interface agreement and preflight (topology/net.c) replace
 * this once they land; until then this is the check, over the interface Open MPI was told to
 * use (btl_tcp_if_include), NCCL_SOCKET_IFNAME, [accept] iface, or the best one by tier. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/check.h"
#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/accept/accept.h"
#include "launcher/core/job.h"
#include "topology/iface.h"

/* The first name of a comma list, without NCCL's '=' (exact) prefix; NULL for an exclude list
 * ('^eth0') or an empty one. */
static const char *first_word(const char *list, char *buf, size_t len) {
  if (!list || !*list || list[0] == '^') return NULL;
  if (list[0] == '=') list++;
  size_t n = strcspn(list, ",");
  snprintf(buf, len, "%.*s", (int)n, list);
  util_trim(buf);
  return buf[0] ? buf : NULL;
}

/* An interface of l by name, or the one with an address in a CIDR subnet ("10.9.0.0/24"). */
static const iface_t *find_iface(const iface_list_t *l, const char *want) {
  if (!strchr(want, '/')) {
    const iface_t *i = iface_find(l, want);
    if (i) return i;
    /* NCCL matches prefixes: "eth" is eth0, eth1, ... */
    for (int k = 0; k < l->n; k++)
      if (strncmp(l->v[k].name, want, strlen(want)) == 0 && iface_usable_addr(&l->v[k], AF_INET))
        return &l->v[k];
    return NULL;
  }
  iface_addr_t net;
  if (iface_addr_parse(want, &net) < 0) return NULL;
  for (int k = 0; k < l->n; k++)
    for (int a = 0; a < l->v[k].naddrs; a++)
      if (iface_addr_in_subnet(&net, &l->v[k].addrs[a])) return &l->v[k];
  return NULL;
}

int accept_pick_iface(const char *want, accept_if_t *out) {
  memset(out, 0, sizeof *out);
  out->speed_mbps = -1;
  iface_list_t l;
  CHECK(iface_list(&l));
  char buf[128];
  const char *name = NULL, *from = NULL;
  if (want && *want) {
    name = want;
    from = "[accept] iface";
  } else if ((name = first_word(getenv("NCCL_SOCKET_IFNAME"), buf, sizeof buf))) {
    from = "NCCL_SOCKET_IFNAME";
  } else if ((name = first_word(getenv("OMPI_MCA_btl_tcp_if_include"), buf, sizeof buf))) {
    from = "Open MPI btl_tcp_if_include";
  }
  const iface_t *ifc = NULL;
  if (name) {
    ifc = find_iface(&l, name);
    if (!ifc) {
      snprintf(out->why, sizeof out->why, "%s = %s: no such interface with an IPv4 address here", from, name);
      iface_list_free(&l);
      return GPL_ENET;
    }
  } else {
    /* The best tier with a usable IPv4 address: what Open MPI's TCP transport would use too. */
    iface_tier_t best = IFACE_TIER_NEVER;
    for (int k = 0; k < l.n; k++) {
      iface_tier_t t = iface_tier(&l.v[k], NULL, 0);
      if (t < best && iface_usable_addr(&l.v[k], AF_INET)) {
        best = t;
        ifc = &l.v[k];
      }
    }
    from = "the best interface by kind";
    if (!ifc) {
      snprintf(out->why, sizeof out->why, "no interface with a routable IPv4 address");
      iface_list_free(&l);
      return GPL_ENET;
    }
  }
  const iface_addr_t *a = iface_usable_addr(ifc, AF_INET);
  if (!a) {
    snprintf(out->why, sizeof out->why, "%s has no usable IPv4 address", ifc->name);
    iface_list_free(&l);
    return GPL_ENET;
  }
  util_strlcpy(out->name, ifc->name, sizeof out->name);
  util_strlcpy(out->addr, a->text, sizeof out->addr);
  /* The speed of a veth, bridge or tunnel (veth says 10000) is a number its driver made up, not a
   * link: min_busbw = auto must not derive a threshold from it (a bond's or vlan's is real). */
  int nominal = ifc->kind == IFACE_VETH || ifc->kind == IFACE_BRIDGE || ifc->kind == IFACE_TUNNEL ||
                ifc->kind == IFACE_LOOPBACK;
  out->speed_mbps = nominal ? -1 : ifc->speed_mbps;
  snprintf(out->why, sizeof out->why, "%s (%s)", ifc->name, from);
  iface_list_free(&l);
  return GPL_OK;
}

/* ---- the TCP test ---- */

#define REACH_MAGIC 0x67706c61u /* "gpla" */

/* What a rank tells the others: where it listens. Plain bytes for mpix_allgather. */
typedef struct reach_addr_s {
  char addr[48];
  int32_t port; /* 0: not listening (it says why in the results) */
} reach_addr_t;

/* What a rank found: per peer it connected to, 0 ok or an errno; and how many peers reached it. */
typedef struct reach_res_s {
  int32_t target;   /* ring: the peer it tried; all: -1 */
  int32_t ok;       /* peers reached */
  int32_t tried;
  int32_t first_bad;/* a peer it could not reach, -1 none */
  int32_t err;      /* errno for first_bad (ETIMEDOUT for a peer that did not answer) */
  int32_t inbound;  /* peers that reached it */
} reach_res_t;

typedef struct conn_s {
  int fd, peer, state; /* state: 0 connecting, 1 sent hello, 2 done ok, 3 failed */
  int err;
  unsigned char buf[8];
  int got;
} conn_t;

static int nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void put32(unsigned char *p, uint32_t v) {
  v = htonl(v);
  memcpy(p, &v, 4);
}
static uint32_t get32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return ntohl(v);
}

/* Connect to the targets and answer whoever connects to us, until every connection of ours is
 * decided and `expect_in` peers have said hello, or the deadline. */
static void reach_run(int lfd, const reach_addr_t *all, const int *targets, int nt, int me,
                      int expect_in, double timeout, reach_res_t *res) {
  conn_t *c = calloc((size_t)nt, sizeof *c);
  conn_t *in = calloc((size_t)(expect_in + 8), sizeof *in);
  struct pollfd *pf = calloc((size_t)(nt + expect_in + 9), sizeof *pf);
  int nin = 0;
  if (!c || !in || !pf) goto out;
  for (int i = 0; i < nt; i++) {
    c[i].peer = targets[i];
    c[i].fd = -1;
    const reach_addr_t *a = &all[targets[i]];
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)a->port);
    if (a->port <= 0 || inet_pton(AF_INET, a->addr, &sa.sin_addr) != 1) {
      c[i].state = 3;
      c[i].err = EADDRNOTAVAIL;
      continue;
    }
    c[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c[i].fd < 0 || nonblock(c[i].fd) < 0) {
      c[i].state = 3;
      c[i].err = errno;
      continue;
    }
    if (connect(c[i].fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS) {
      c[i].state = 3;
      c[i].err = errno;
    }
  }
  double deadline = util_now() + timeout;
  int inbound = 0;
  for (;;) {
    int open_out = 0, n = 0;
    for (int i = 0; i < nt; i++) {
      if (c[i].state >= 2) continue;
      open_out++;
      pf[n].fd = c[i].fd;
      pf[n].events = c[i].state == 0 ? POLLOUT : POLLIN;
      pf[n++].revents = 0;
    }
    if (open_out == 0 && inbound >= expect_in) break;
    double left = deadline - util_now();
    if (left <= 0) break;
    int base_in = n;
    for (int k = 0; k < nin; k++) {
      pf[n].fd = in[k].state < 2 ? in[k].fd : -1;
      pf[n].events = POLLIN;
      pf[n++].revents = 0;
    }
    pf[n].fd = lfd;
    pf[n].events = POLLIN;
    pf[n++].revents = 0;
    int ms = (int)(left * 1000) + 1;
    if (poll(pf, (nfds_t)n, ms > 50 ? 50 : ms) < 0 && errno != EINTR) break;
    /* Outgoing: connected -> send hello (magic, my rank) -> read the peer's rank back. */
    int k = 0;
    for (int i = 0; i < nt; i++) {
      if (c[i].state >= 2) continue;
      short ev = pf[k++].revents;
      if (!ev) continue;
      if (c[i].state == 0) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c[i].fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
          c[i].state = 3;
          c[i].err = err;
          continue;
        }
        unsigned char hello[8];
        put32(hello, REACH_MAGIC);
        put32(hello + 4, (uint32_t)me);
        if (send(c[i].fd, hello, 8, MSG_NOSIGNAL) != 8) {
          c[i].state = 3;
          c[i].err = errno ? errno : EPROTO;
          continue;
        }
        c[i].state = 1;
      } else {
        ssize_t r = recv(c[i].fd, c[i].buf + c[i].got, (size_t)(8 - c[i].got), 0);
        if (r <= 0) {
          c[i].state = 3;
          c[i].err = r == 0 ? ECONNRESET : errno;
          continue;
        }
        c[i].got += (int)r;
        if (c[i].got == 8) {
          int good = get32(c[i].buf) == REACH_MAGIC && (int)get32(c[i].buf + 4) == c[i].peer;
          c[i].state = good ? 2 : 3;
          c[i].err = good ? 0 : EPROTO; /* someone else listens there */
        }
      }
    }
    /* Incoming hellos: answer with my rank. */
    for (int i = 0; i < nin; i++) {
      if (in[i].state >= 2 || !pf[base_in + i].revents) continue;
      ssize_t r = recv(in[i].fd, in[i].buf + in[i].got, (size_t)(8 - in[i].got), 0);
      if (r <= 0) {
        in[i].state = 3;
        continue;
      }
      in[i].got += (int)r;
      if (in[i].got == 8) {
        unsigned char reply[8];
        put32(reply, REACH_MAGIC);
        put32(reply + 4, (uint32_t)me);
        int good = get32(in[i].buf) == REACH_MAGIC;
        if (good && send(in[i].fd, reply, 8, MSG_NOSIGNAL) == 8) inbound++;
        in[i].state = 2;
      }
    }
    if (pf[n - 1].revents & POLLIN) {
      int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0 && nin < expect_in + 8) {
        in[nin].fd = fd;
        in[nin++].state = 0;
      } else if (fd >= 0) {
        close(fd);
      }
    }
  }
  res->ok = 0;
  res->tried = nt;
  res->first_bad = -1;
  for (int i = 0; i < nt; i++) {
    if (c[i].state == 2) {
      res->ok++;
    } else if (res->first_bad < 0) {
      res->first_bad = c[i].peer;
      res->err = c[i].state == 3 ? c[i].err : ETIMEDOUT;
    }
  }
  res->inbound = inbound;
out:
  for (int i = 0; c && i < nt; i++)
    if (c[i].fd >= 0) close(c[i].fd);
  for (int i = 0; in && i < nin; i++) close(in[i].fd);
  free(c);
  free(in);
  free(pf);
}

int accept_reach(const job_t *job, const accept_opts_t *o, const accept_if_t *ifc, accept_list_t *out) {
  int n = job->size, me = job->rank, rc = GPL_OK;
  reach_addr_t mine;
  memset(&mine, 0, sizeof mine);
  accept_check_t c;
  int lfd = -1;
  if (ifc && ifc->addr[0]) {
    util_strlcpy(mine.addr, ifc->addr, sizeof mine.addr);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    socklen_t sl = sizeof sa;
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (lfd >= 0 && inet_pton(AF_INET, ifc->addr, &sa.sin_addr) == 1 &&
        bind(lfd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(lfd, 64) == 0 &&
        getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0) {
      mine.port = ntohs(sa.sin_port);
    } else {
      LOG_WARN("accept: cannot listen on %s: %s", ifc->addr, strerror(errno));
    }
  }
  reach_addr_t *all = calloc((size_t)n, sizeof *all);
  reach_res_t *res = calloc((size_t)n, sizeof *res);
  int *targets = calloc((size_t)n, sizeof *targets);
  if (!all || !res || !targets) {
    rc = GPL_ENOMEM;
    goto done;
  }
  /* Every rank calls the same exchanges, whatever happened locally. */
  CHECKGOTO(mpix_allgather(&mine, sizeof mine, all, job->world, job->timeout,
                           "accept: reachability addresses"), rc, done);
  int nt = 0, expect_in = 0;
  if (o->probe == 2) {
    for (int r = 0; r < n; r++)
      if (r != me) targets[nt++] = r;
    expect_in = n - 1;
  } else if (n > 1) {
    targets[nt++] = (me + 1) % n;
    expect_in = 1;
  }
  reach_res_t my;
  memset(&my, 0, sizeof my);
  my.target = o->probe == 2 ? -1 : nt ? targets[0] : -1;
  if (lfd >= 0 && mine.port > 0) {
    reach_run(lfd, all, targets, nt, me, expect_in, o->probe_timeout, &my);
  } else {
    my.tried = nt;
    my.first_bad = nt ? targets[0] : -1;
    my.err = EADDRNOTAVAIL;
  }
  CHECKGOTO(mpix_allgather(&my, sizeof my, res, job->world, job->timeout + o->probe_timeout,
                           "accept: reachability results"), rc, done);
  if (me != 0) goto done;
  int bad = 0, links = 0;
  for (int r = 0; r < n; r++) {
    links += res[r].tried;
    if (res[r].ok == res[r].tried) continue;
    bad++;
    int t = res[r].first_bad;
    char subj[ACCEPT_SUBJECT_LEN];
    snprintf(subj, sizeof subj, "rank %d -> rank %d", r, t);
    accept_check_init(&c, "reach", "", -1, -1, subj);
    accept_check_text(&c, "%d of %d peers", res[r].ok, res[r].tried);
    accept_check_threshold(&c, "all peers");
    if (t >= 0 && all[t].port <= 0)
      accept_check_set(&c, ACCEPT_FAIL, "rank %d (host %s) could not listen on its interface", t, job->hosts[t]);
    else if (t >= 0)
      accept_check_set(&c, ACCEPT_FAIL, "rank %d (host %s) could not reach rank %d (host %s) at %s:%d: %s",
                       r, job->hosts[r], t, job->hosts[t], all[t].addr, all[t].port, strerror(res[r].err));
    CHECKGOTO(accept_list_add(out, &c), rc, done);
  }
  accept_check_init(&c, "reachability", "", -1, -1, ifc && ifc->name[0] ? ifc->name : "");
  accept_check_value(&c, n - bad, "", "%d of %d ranks reached their peers", n - bad, n);
  accept_check_threshold(&c, "%d of %d", n, n);
  if (n < 2)
    accept_check_set(&c, ACCEPT_SKIP, "one rank: no peer to reach");
  else if (bad)
    accept_check_set(&c, ACCEPT_FAIL, "%d rank(s) could not reach their peers over TCP on %s (probe %s, "
                     "%.1f s each); see the reach rows", bad, ifc && ifc->why[0] ? ifc->why : "?",
                     o->probe == 2 ? "all" : "ring", o->probe_timeout);
  else
    accept_check_set(&c, ACCEPT_PASS, "%d TCP connection(s) with a handshake over %s (probe %s)", links,
                     ifc && ifc->why[0] ? ifc->why : "?", o->probe == 2 ? "all" : "ring");
  CHECKGOTO(accept_list_add(out, &c), rc, done);
done:
  if (lfd >= 0) close(lfd);
  free(all);
  free(res);
  free(targets);
  return rc;
}
