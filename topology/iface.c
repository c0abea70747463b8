/* Network interface inventory of this namespace: getifaddrs for addresses and flags, sysfs/ethtool for the rest. */
#include "topology/iface.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/log.h"
#include "common/util.h"

static const char *const g_kind_names[] = {"physical", "loopback", "bridge", "veth", "tunnel", "virtual"};

const char *iface_kind_name(iface_kind_t k) {
  return k >= IFACE_PHYSICAL && k <= IFACE_VIRTUAL ? g_kind_names[k] : "?";
}

int iface_name_is_container(const char *name) {
  static const char *const prefixes[] = {"docker", "br-",    "veth",  "virbr", "cni",   "flannel", "cali",
                                         "weave",  "vxlan",  "tunl",  "lxcbr", "lxdbr", "podman",  "kube-",
                                         "cilium", "genev",  "vnet",  "tap",   "tun",   "zt",      "tailscale",
                                         "wg",     "nodelocaldns"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(prefixes); i++)
    if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  return 0;
}

/* ---- addresses ----------------------------------------------------------------------------- */

static int prefix_len(const uint8_t *mask, int nbytes) {
  int bits = 0;
  for (int i = 0; i < nbytes; i++) {
    uint8_t m = mask[i];
    while (m & 0x80) {
      bits++;
      m = (uint8_t)(m << 1);
    }
    if (mask[i] != 0xff) break;
  }
  return bits;
}

static void classify_addr(iface_addr_t *a) {
  const uint8_t *b = a->bytes;
  if (a->family == AF_INET) {
    a->link_local = b[0] == 169 && b[1] == 254;
    a->loopback = b[0] == 127;
  } else {
    static const uint8_t lo6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    a->link_local = b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
    a->loopback = memcmp(b, lo6, 16) == 0;
  }
}

int iface_addr_parse(const char *s, iface_addr_t *a) {
  memset(a, 0, sizeof *a);
  if (!s) return GPL_EINVAL;
  char buf[64];
  util_strlcpy(buf, s, sizeof buf);
  char *slash = strchr(buf, '/');
  long prefix = -1;
  if (slash) {
    *slash = 0;
    if (util_parse_long(slash + 1, 0, 128, &prefix) < 0) return GPL_EINVAL;
  }
  if (inet_pton(AF_INET, buf, a->bytes) == 1) {
    a->family = AF_INET;
    if (prefix > 32) return GPL_EINVAL;
    a->prefix = prefix < 0 ? 32 : (int)prefix;
  } else if (inet_pton(AF_INET6, buf, a->bytes) == 1) {
    a->family = AF_INET6;
    a->prefix = prefix < 0 ? 128 : (int)prefix;
  } else {
    return GPL_EINVAL;
  }
  inet_ntop(a->family, a->bytes, a->text, sizeof a->text);
  classify_addr(a);
  return 0;
}

int iface_addr_in_subnet(const iface_addr_t *net, const iface_addr_t *addr) {
  if (net->family != addr->family) return 0;
  int bits = net->prefix, nbytes = net->family == AF_INET ? 4 : 16;
  for (int i = 0; i < nbytes && bits > 0; i++, bits -= 8) {
    uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
    if ((net->bytes[i] & mask) != (addr->bytes[i] & mask)) return 0;
  }
  return 1;
}

const char *iface_subnet_text(const iface_addr_t *a, char *buf, size_t len) {
  uint8_t n[16] = {0};
  int bits = a->prefix, nbytes = a->family == AF_INET ? 4 : 16;
  for (int i = 0; i < nbytes; i++, bits -= 8)
    n[i] = a->bytes[i] & (bits >= 8 ? 0xff : bits <= 0 ? 0 : (uint8_t)(0xff << (8 - bits)));
  char t[64];
  if (!inet_ntop(a->family, n, t, sizeof t)) t[0] = 0;
  snprintf(buf, len, "%s/%d", t, a->prefix);
  return buf;
}

/* ---- sysfs --------------------------------------------------------------------------------- */

static int sys_read(const char *name, const char *attr, char *buf, size_t len) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "/sys/class/net/%s/%s", name, attr);
  return util_read_small(path, buf, len);
}

static int sys_exists(const char *name, const char *attr) {
  char path[PATH_MAX];
  struct stat st;
  snprintf(path, sizeof path, "/sys/class/net/%s/%s", name, attr);
  return stat(path, &st) == 0;
}

static void sys_link_base(const char *name, const char *attr, char *out, size_t len) {
  char path[PATH_MAX], target[PATH_MAX];
  out[0] = 0;
  snprintf(path, sizeof path, "/sys/class/net/%s/%s", name, attr);
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n <= 0) return;
  target[n] = 0;
  const char *base = strrchr(target, '/');
  util_strlcpy(out, base ? base + 1 : target, len);
}

static int looks_like_busid(const char *s) {
  unsigned d, b, v, f;
  char tail;
  return strlen(s) >= 12 && sscanf(s, "%x:%x:%x.%x%c", &d, &b, &v, &f, &tail) == 4;
}

/* The PCI function an interface sits on: the last bus-id component of its sysfs device path
 * (virtio NICs have the virtioN device between the PCI function and the netdev). */
static void sys_pci(const char *name, char *out, size_t len) {
  char path[PATH_MAX], real[PATH_MAX];
  out[0] = 0;
  snprintf(path, sizeof path, "/sys/class/net/%s", name);
  if (!realpath(path, real)) return;
  char *save = NULL;
  for (char *w = strtok_r(real, "/", &save); w; w = strtok_r(NULL, "/", &save))
    if (looks_like_busid(w)) util_strlcpy(out, w, len);
}

/* The kernel driver by ethtool (works for software devices: "veth", "bridge", "tun", ...). */
static void ethtool_driver(int fd, const char *name, char *out, size_t len) {
  struct ethtool_drvinfo info;
  struct ifreq ifr;
  memset(&info, 0, sizeof info);
  memset(&ifr, 0, sizeof ifr);
  info.cmd = ETHTOOL_GDRVINFO;
  util_strlcpy(ifr.ifr_name, name, sizeof ifr.ifr_name);
  ifr.ifr_data = (char *)&info;
  if (fd >= 0 && ioctl(fd, SIOCETHTOOL, &ifr) == 0) util_strlcpy(out, info.driver, len);
}

static void sys_facts(iface_t *i, int fd) {
  char buf[64], path[PATH_MAX];
  struct stat st;
  snprintf(path, sizeof path, "/sys/devices/virtual/net/%s", i->name);
  i->is_virtual = stat(path, &st) == 0;
  i->speed_mbps = -1;
  if (sys_read(i->name, "speed", buf, sizeof buf) > 0 && atoi(buf) > 0) i->speed_mbps = atoi(buf);
  i->mtu = sys_read(i->name, "mtu", buf, sizeof buf) > 0 ? atoi(buf) : -1;
  sys_pci(i->name, i->pci, sizeof i->pci);
  sys_link_base(i->name, "master", i->master, sizeof i->master);
  sys_link_base(i->name, "device/driver", i->driver, sizeof i->driver);
  if (!i->driver[0]) ethtool_driver(fd, i->name, i->driver, sizeof i->driver);
  int type = sys_read(i->name, "type", buf, sizeof buf) > 0 ? atoi(buf) : 1;

  static const char *const tunnels[] = {"tun", "vxlan", "gre", "ip_gre", "ip6_gre", "ipip", "sit", "ip6_tunnel",
                                        "wireguard", "geneve", "ip_vti", "ip6_vti"};
  int tunnel = sys_exists(i->name, "tun_flags") || type == 65534 || type == 768 || type == 776 || type == 778;
  for (size_t k = 0; k < GPL_ARRAY_LEN(tunnels); k++) tunnel |= strcmp(i->driver, tunnels[k]) == 0;
  if (i->loopback || type == 772) i->kind = IFACE_LOOPBACK;
  else if (sys_exists(i->name, "bridge") || strcmp(i->driver, "bridge") == 0) i->kind = IFACE_BRIDGE;
  else if (strcmp(i->driver, "veth") == 0) i->kind = IFACE_VETH;
  else if (tunnel) i->kind = IFACE_TUNNEL;
  else if (i->is_virtual) i->kind = IFACE_VIRTUAL;
  else i->kind = IFACE_PHYSICAL;
  i->container = i->kind == IFACE_BRIDGE || i->kind == IFACE_TUNNEL || iface_name_is_container(i->name);
}

/* ---- the list ------------------------------------------------------------------------------ */

static iface_t *get_or_add(iface_list_t *l, int *cap, const char *name) {
  for (int k = 0; k < l->n; k++)
    if (strcmp(l->v[k].name, name) == 0) return &l->v[k];
  if (l->n == *cap) {
    int ncap = *cap ? *cap * 2 : 16;
    iface_t *v = realloc(l->v, sizeof *v * (size_t)ncap);
    if (!v) return NULL;
    l->v = v, *cap = ncap;
  }
  iface_t *i = &l->v[l->n++];
  memset(i, 0, sizeof *i);
  util_strlcpy(i->name, name, sizeof i->name);
  return i;
}

static int cmp_iface(const void *a, const void *b) {
  return strcmp(((const iface_t *)a)->name, ((const iface_t *)b)->name);
}

int iface_list(iface_list_t *out) {
  memset(out, 0, sizeof *out);
  struct ifaddrs *ifa = NULL;
  SYSCHECK(getifaddrs(&ifa), "getifaddrs");
  int cap = 0, rc = 0;
  for (struct ifaddrs *p = ifa; p; p = p->ifa_next) {
    if (!p->ifa_name) continue;
    iface_t *i = get_or_add(out, &cap, p->ifa_name);
    if (!i) {
      rc = GPL_ENOMEM;
      break;
    }
    i->up = (p->ifa_flags & IFF_UP) != 0;
    i->running = (p->ifa_flags & IFF_RUNNING) != 0;
    i->loopback = (p->ifa_flags & IFF_LOOPBACK) != 0;
    if (!p->ifa_addr || (p->ifa_addr->sa_family != AF_INET && p->ifa_addr->sa_family != AF_INET6)) continue;
    if (i->naddrs == IFACE_MAX_ADDRS) {
      LOG_DEBUG(NET, "%s: more than %d addresses, the rest ignored", i->name, IFACE_MAX_ADDRS);
      continue;
    }
    iface_addr_t *a = &i->addrs[i->naddrs++];
    memset(a, 0, sizeof *a);
    a->family = p->ifa_addr->sa_family;
    if (a->family == AF_INET) {
      memcpy(a->bytes, &((struct sockaddr_in *)(void *)p->ifa_addr)->sin_addr, 4);
      a->prefix = p->ifa_netmask ? prefix_len((const uint8_t *)&((struct sockaddr_in *)(void *)p->ifa_netmask)->sin_addr, 4) : 32;
    } else {
      memcpy(a->bytes, &((struct sockaddr_in6 *)(void *)p->ifa_addr)->sin6_addr, 16);
      a->prefix = p->ifa_netmask ? prefix_len(((struct sockaddr_in6 *)(void *)p->ifa_netmask)->sin6_addr.s6_addr, 16) : 128;
    }
    inet_ntop(a->family, a->bytes, a->text, sizeof a->text);
    classify_addr(a);
  }
  freeifaddrs(ifa);
  if (rc < 0) {
    iface_list_free(out);
    return rc;
  }
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  for (int k = 0; k < out->n; k++) {
    out->v[k].index = (int)if_nametoindex(out->v[k].name);
    sys_facts(&out->v[k], fd);
  }
  if (fd >= 0) close(fd);
  if (out->n > 1) qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_iface);
  return 0;
}

void iface_list_free(iface_list_t *l) {
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

const iface_t *iface_find(const iface_list_t *l, const char *name) {
  for (int k = 0; name && k < l->n; k++)
    if (strcmp(l->v[k].name, name) == 0) return &l->v[k];
  return NULL;
}

const iface_addr_t *iface_usable_addr(const iface_t *i, int family) {
  for (int pass = 0; pass < 2; pass++) {
    int want = family ? family : pass == 0 ? AF_INET : AF_INET6;
    for (int k = 0; k < i->naddrs; k++) {
      const iface_addr_t *a = &i->addrs[k];
      if (a->family == want && !a->link_local && !a->loopback) return a;
    }
    if (family) break;
  }
  return NULL;
}

iface_tier_t iface_tier(const iface_t *i, char *why, size_t len) {
  const char *r = NULL;
  iface_tier_t tier = IFACE_TIER_NEVER;
  if (i->loopback || i->kind == IFACE_LOOPBACK) r = "loopback";
  else if (i->kind == IFACE_BRIDGE) r = "bridge (container/VM plumbing)";
  else if (i->kind == IFACE_TUNNEL) r = "tunnel";
  else if (i->master[0]) r = "port of a bridge or bond";
  else if (iface_name_is_container(i->name)) r = "container/virtual interface name";
  else if (!i->up) r = "down";
  else if (!i->running) r = "no carrier (up but not running)";
  else if (!iface_usable_addr(i, 0)) r = i->naddrs ? "only link-local addresses" : "no IP address";
  else if (i->kind == IFACE_PHYSICAL) tier = IFACE_TIER_PHYSICAL, r = "physical";
  else tier = IFACE_TIER_VIRTUAL, r = i->kind == IFACE_VETH ? "veth (a container's or namespace's link)" : "virtual (bond, vlan, macvlan, ...)";
  if (why && len) util_strlcpy(why, r, len);
  return tier;
}

int iface_usable(const iface_t *i, char *why, size_t len) { return iface_tier(i, why, len) != IFACE_TIER_NEVER; }
