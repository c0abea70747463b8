/* gpulaunch-run's channel for rank 0: the address it binds, from --listen or the job's hosts
 * (front_listen.h); libc only, with front_oob's host list and route lookup. */
#include "launcher/front/front_listen.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/util.h"
#include "launcher/front/front_hosts.h"
#include "launcher/front/front_oob.h"
#include "topology/iface.h"

#define LISTEN_MAX_HOSTS 256 /* resolved at most (beyond: every address) */
#define LISTEN_ALLOC_S 15.0  /* the allocation's node addresses (sinfo, scontrol) at most */

/* 1 when a is an address of one of this host's interfaces (loopback included). */
static int is_local(struct in_addr a) {
  if ((ntohl(a.s_addr) >> 24) == 127) return 1;
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs) < 0) return 0;
  int yes = 0;
  for (struct ifaddrs *i = ifs; i && !yes; i = i->ifa_next)
    yes = i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
          ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr == a.s_addr;
  freeifaddrs(ifs);
  return yes;
}

static int resolve(const char *name, struct in_addr *a) {
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  if (getaddrinfo(name, NULL, &hints, &ai) != 0 || !ai) return -1;
  *a = ((struct sockaddr_in *)(void *)ai->ai_addr)->sin_addr;
  freeaddrinfo(ai);
  return 0;
}

/* 1 when the file holds a line that is not blank or a comment (a host). */
static int has_hosts(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[512];
  int yes = 0;
  while (!yes && fgets(line, sizeof line, f)) {
    const char *p = line + strspn(line, " \t\r\n");
    yes = *p && *p != '#';
  }
  fclose(f);
  return yes;
}

/* A batch system's allocation or a default hostfile: mpirun finds hosts that its words do not name. */
static const char *hosts_elsewhere(int argc, char *const *argv) {
  static const char *const envs[] = {"SLURM_JOB_ID", "PBS_NODEFILE", "LSB_HOSTS", "LSB_MCPU_HOSTS", "PE_HOSTFILE",
                                     "OMPI_MCA_orte_default_hostfile", "OMPI_MCA_prte_default_hostfile",
                                     "PRTE_MCA_prte_default_hostfile", NULL};
  for (int i = 0; envs[i]; i++)
    if (getenv(envs[i])) return envs[i];
#ifdef GPL_OMPI_SYSCONFDIR /* Open MPI's own default hostfile, where a site filled it in */
  if (has_hosts(GPL_OMPI_SYSCONFDIR "/openmpi-default-hostfile")) return GPL_OMPI_SYSCONFDIR "/openmpi-default-hostfile";
#else
  (void)has_hosts;
#endif
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--rankfile") == 0 || strcmp(argv[i], "-rf") == 0 || strcmp(argv[i], "--app") == 0 ||
        strcmp(argv[i], "-app") == 0)
      return argv[i];
  return NULL;
}

static void one(front_listen_t *out, in_addr_t a) {
  out->addr[0].s_addr = a;
  out->n = 1;
}

static void any(front_listen_t *out, const char *fmt, const char *what) {
  one(out, htonl(INADDR_ANY));
  char w[400];
  snprintf(w, sizeof w, fmt, what);
  snprintf(out->why, sizeof out->why, "every address: %s (--listen ADDR to choose one)", w);
}

/* After the routed address: this host's other real networks (iface_tier not NEVER: no loopback,
 * bridge, tunnel or container interface; no link-local address), named in why from off. */
static void add_networks(front_listen_t *out, size_t off) {
  iface_list_t l;
  if (iface_list(&l) < 0) return;
  for (int i = 0; i < l.n && out->n < FRONT_LISTEN_MAX; i++) {
    char w[96];
    if (iface_tier(&l.v[i], w, sizeof w) == IFACE_TIER_NEVER) continue;
    for (int k = 0; k < l.v[i].naddrs && out->n < FRONT_LISTEN_MAX; k++) {
      const iface_addr_t *ad = &l.v[i].addrs[k];
      if (ad->family != AF_INET || ad->loopback || ad->link_local) continue;
      struct in_addr x;
      memcpy(&x, ad->bytes, 4);
      int dup = 0;
      for (int j = 0; j < out->n; j++) dup |= out->addr[j].s_addr == x.s_addr;
      if (dup) continue;
      out->addr[out->n++] = x;
      if (off < sizeof out->why)
        off += (size_t)snprintf(out->why + off, sizeof out->why - off, "%s %s (%s)", out->n == 2 ? "; then" : ",",
                                ad->text, l.v[i].name);
    }
  }
  if (out->n > 1 && off < sizeof out->why)
    snprintf(out->why + off, sizeof out->why - off, ": this host's other networks, for a rank 0 cut off the fabric");
  iface_list_free(&l);
}

int front_listen_choose(int argc, char *const *argv, const char *hostfile, const char *alloc_script, int unknown_hosts,
                        const char *given, front_listen_t *out) {
  char a[INET_ADDRSTRLEN];
  if (given) {
    if (strcmp(given, "any") == 0 || strcmp(given, "0.0.0.0") == 0) {
      one(out, htonl(INADDR_ANY));
      snprintf(out->why, sizeof out->why, "every address (--listen %s)", given);
      return 0;
    }
    out->n = 1;
    if ((inet_pton(AF_INET, given, &out->addr[0]) != 1 && resolve(given, &out->addr[0]) < 0) ||
        !is_local(out->addr[0])) {
      snprintf(out->why, sizeof out->why, "--listen %s: not an IPv4 address of this host (or any)", given);
      return -1;
    }
    inet_ntop(AF_INET, &out->addr[0], a, sizeof a);
    snprintf(out->why, sizeof out->why, "%s (--listen %s)", a, given);
    return 0;
  }
  if (unknown_hosts) return any(out, "%s", "the hosts are not known before the launch (srun's allocation, a discovery script)"), 0;
  front_host_t *h = calloc(LISTEN_MAX_HOSTS, sizeof *h);
  if (!h) return any(out, "%s", "out of memory"), 0;
  int nh = front_oob_hosts(argc, argv, hostfile, h, LISTEN_MAX_HOSTS);
  const char *named = "named";
  if (nh == 0 && alloc_script) { /* none named: the batch allocation's, which mpirun or srun takes */
    char err[256];
    nh = front_hosts_read(NULL, alloc_script, LISTEN_ALLOC_S, h, LISTEN_MAX_HOSTS, err, sizeof err);
    if (nh <= 0) {
      free(h);
      return any(out, "the allocation's hosts could not be listed: %s", nh < 0 ? err : "none listed"), 0;
    }
    named = "in the allocation";
  }
  const char *else_ = nh == 0 ? hosts_elsewhere(argc, argv) : NULL;
  if (nh == 0) {
    free(h);
    if (else_) return any(out, "mpirun takes its hosts from %s", else_), 0;
    one(out, htonl(INADDR_LOOPBACK));
    snprintf(out->why, sizeof out->why, "127.0.0.1: no host named, mpirun runs every rank on this host");
    return 0;
  }
  if (nh >= LISTEN_MAX_HOSTS) {
    free(h);
    return any(out, "%s", "too many hosts named to look each up"), 0;
  }
  struct in_addr src = {0};
  int nsrc = 0, remote = 0;
  char first[64] = "";
  for (int i = 0; i < nh; i++) {
    struct sockaddr_in dst = {.sin_family = AF_INET};
    if (resolve(h[i].name, &dst.sin_addr) < 0) {
      any(out, "host %s does not resolve here", h[i].name);
      free(h);
      return 0;
    }
    if (is_local(dst.sin_addr)) continue; /* this host */
    struct in_addr s;
    if (front_oob_route_src(&dst, &s) < 0) {
      any(out, "no route to host %s", h[i].name);
      free(h);
      return 0;
    }
    if (!remote++) util_strlcpy(first, h[i].name, sizeof first);
    if (nsrc == 0 || s.s_addr != src.s_addr) {
      if (nsrc == 1) {
        char b[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &src, a, sizeof a);
        inet_ntop(AF_INET, &s, b, sizeof b);
        char w[300];
        snprintf(w, sizeof w, "this host reaches %s from %s and %s from %s", first, a, h[i].name, b);
        any(out, "%s", w);
        free(h);
        return 0;
      }
      src = s;
      nsrc = 1;
    }
  }
  free(h);
  if (!remote) {
    one(out, htonl(INADDR_LOOPBACK));
    snprintf(out->why, sizeof out->why, "127.0.0.1: every host %s (%d) is this host", named, nh);
    return 0;
  }
  one(out, src.s_addr);
  inet_ntop(AF_INET, &src, a, sizeof a);
  size_t off = (size_t)snprintf(out->why, sizeof out->why,
                                "%s: the address this host reaches the %d other host(s) %s from", a, remote, named);
  add_networks(out, off);
  return 0;
}

void front_listen_addresses(const front_listen_t *l, int port, char *out, size_t len) {
  char a[INET_ADDRSTRLEN];
  if (l->addr[0].s_addr != htonl(INADDR_ANY)) {
    /* In the order of this host's interfaces, as rank 0 was always told them (it connects to the
     * first it reaches and keeps that connection; a management network listed before the fabric
     * then carries it through a cut of the fabric), then any not found there. */
    size_t off = 0;
    int told[FRONT_LISTEN_MAX] = {0};
    out[0] = 0;
    struct ifaddrs *ifs = NULL;
    if (l->n > 1 && getifaddrs(&ifs) == 0) {
      for (struct ifaddrs *i = ifs; i && off + 32 < len; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        struct in_addr x = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr;
        for (int k = 0; k < l->n; k++)
          if (!told[k] && l->addr[k].s_addr == x.s_addr) {
            told[k] = 1;
            inet_ntop(AF_INET, &x, a, sizeof a);
            off += (size_t)snprintf(out + off, len - off, "%s%s:%d", off ? "," : "", a, port);
          }
      }
      freeifaddrs(ifs);
    }
    for (int k = 0; k < l->n && off + 32 < len; k++) {
      if (told[k]) continue;
      inet_ntop(AF_INET, &l->addr[k], a, sizeof a);
      off += (size_t)snprintf(out + off, len - off, "%s%s:%d", off ? "," : "", a, port);
    }
    return;
  }
  size_t off = (size_t)snprintf(out, len, "127.0.0.1:%d", port);
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs) < 0) return;
  for (struct ifaddrs *i = ifs; i && off + 32 < len; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, a, sizeof a);
    off += (size_t)snprintf(out + off, len - off, ",%s:%d", a, port);
  }
  freeifaddrs(ifs);
}
