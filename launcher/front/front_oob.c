/* mpirun's out-of-band channel: the local interfaces that route to the job's hosts, by subnet, for --mca oob_tcp_if_include (libc only, with topology's inventory). */
#include "launcher/front/front_oob.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/front/front_hosts.h"
#include "topology/mpinet.h"

#define OOB_MAX_HOSTS 64 /* resolved at most (a name service that answers slowly costs each) */

int front_oob_hosts(int argc, char *const *argv, const char *hostfile, front_host_t *h, int max) {
  int n = 0;
  char err[256];
  for (int i = 1; i + 1 < argc && n < max; i++) {
    const char *o = argv[i], *v = argv[i + 1];
    if (strcmp(o, "--host") == 0 || strcmp(o, "-host") == 0 || strcmp(o, "-H") == 0 || strcmp(o, "--hosts") == 0) {
      char buf[4096], *save = NULL;
      util_strlcpy(buf, v, sizeof buf);
      for (char *t = strtok_r(buf, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save)) {
        t[strcspn(t, ":")] = 0;
        if (*t) util_strlcpy(h[n++].name, t, sizeof h[0].name);
      }
    } else if (strcmp(o, "--hostfile") == 0 || strcmp(o, "-hostfile") == 0 || strcmp(o, "--machinefile") == 0 ||
               strcmp(o, "-machinefile") == 0 || strcmp(o, "--default-hostfile") == 0) {
      int k = front_hosts_read(v, NULL, 5.0, h + n, max - n, err, sizeof err);
      if (k > 0) n += k;
    }
  }
  if (hostfile && n < max) {
    int k = front_hosts_read(hostfile, NULL, 5.0, h + n, max - n, err, sizeof err);
    if (k > 0) n += k;
  }
  return n;
}

int front_oob_route_src(const struct sockaddr_in *dst, struct in_addr *src) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in d = *dst, s;
  socklen_t sl = sizeof s;
  d.sin_port = htons(9);
  int rc = connect(fd, (struct sockaddr *)&d, sizeof d) == 0 && getsockname(fd, (struct sockaddr *)&s, &sl) == 0 ? 0 : -1;
  close(fd);
  if (rc == 0) *src = s.sin_addr;
  return rc;
}

/* The interface (and its address) holding local address a. */
static const iface_t *iface_of(const iface_list_t *l, struct in_addr a, const iface_addr_t **addr) {
  for (int i = 0; i < l->n; i++)
    for (int k = 0; k < l->v[i].naddrs; k++)
      if (l->v[i].addrs[k].family == AF_INET && memcmp(l->v[i].addrs[k].bytes, &a, 4) == 0) {
        *addr = &l->v[i].addrs[k];
        return &l->v[i];
      }
  return NULL;
}

int front_oob_choose(int argc, char *const *argv, const char *hostfile, char *value, size_t len, char *why,
                     size_t wlen) {
  value[0] = why[0] = 0;
  char src[256];
  if (mpinet_user_oob(argc, argv, src, sizeof src)) {
    util_fmt(why, wlen, "yours, kept (%s)", src);
    return 0;
  }
  iface_list_t l;
  if (iface_list(&l) < 0) return 0;
  front_host_t *h = calloc(OOB_MAX_HOSTS, sizeof *h);
  int nh = h ? front_oob_hosts(argc, argv, hostfile, h, OOB_MAX_HOSTS) : 0, resolved = 0, used = 0;
  strbuf_t out = STRBUF_INIT, ifs = STRBUF_INIT, skipped = STRBUF_INIT;
  char list[1024] = "", names[256] = "";
  for (int i = 0; i < nh; i++) {
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(h[i].name, NULL, &hints, &ai) != 0 || !ai) continue;
    struct sockaddr_in dst = *(struct sockaddr_in *)(void *)ai->ai_addr;
    freeaddrinfo(ai);
    resolved++;
    struct in_addr s;
    const iface_addr_t *a = NULL;
    const iface_t *f = front_oob_route_src(&dst, &s) == 0 ? iface_of(&l, s, &a) : NULL;
    if (!f || f->loopback || a->loopback) continue; /* this host itself */
    char whyf[96], sn[64];
    if (iface_tier(f, whyf, sizeof whyf) == IFACE_TIER_NEVER || a->link_local) {
      strbuf_printf(&skipped, "%s%s via %s (%s)", skipped.len ? ", " : "", h[i].name, f->name,
                    a->link_local ? "link-local" : whyf);
      continue;
    }
    mpinet__list_add(list, sizeof list, iface_subnet_text(a, sn, sizeof sn));
    mpinet__list_add(names, sizeof names, f->name);
    iface_addr_t d = {.family = AF_INET, .prefix = 32};
    memcpy(d.bytes, &dst.sin_addr, 4);
    if (!iface_addr_in_subnet(a, &d)) { /* routed: the host's own address, for its daemon */
      inet_ntop(AF_INET, &dst.sin_addr, d.text, sizeof d.text);
      char one[64];
      util_fmt(one, sizeof one, "%s/32", d.text);
      mpinet__list_add(list, sizeof list, one);
    }
    used++;
  }
  int ok = 0;
  if (used) {
    util_strlcpy(value, list, len);
    util_fmt(why, wlen, "%s: the way to %d of the %d hosts named%s%s", names, used, nh, skipped.len ? "; not used: " : "",
             strbuf_str(&skipped));
    ok = 1;
  } else {
    mpinet_choice_t c;
    if (mpinet_from_local(&l, &c) == 0) {
      util_strlcpy(value, c.value, len);
      util_fmt(why, wlen, "%s: %s (%s)", c.ifnames, c.why,
               nh ? (resolved ? "no host named is reached through them" : "no host named resolves here")
                  : "no host named in mpirun's words");
      ok = 1;
    }
  }
  strbuf_free(&out);
  strbuf_free(&ifs);
  strbuf_free(&skipped);
  free(h);
  iface_list_free(&l);
  return ok;
}
