/* Live network interface inventory (getifaddrs + /sys/class/net): addresses, state, kind, speed, PCI device. */
#ifndef GPL_TOPOLOGY_IFACE_H
#define GPL_TOPOLOGY_IFACE_H

#include <stddef.h>
#include <stdint.h>

/* Pure data, and deliberately flat: iface_t has fixed-size fields and no pointers, so a node's
 * inventory (an array of iface_t) can be sent as bytes to the other ranks (MPI allgather) and
 * read there without decoding. IFACE_WIRE_VERSION changes whenever the layout does; put it in
 * front of what you send. All strings are NUL-terminated. */
#define IFACE_WIRE_VERSION 1
#define IFACE_NAME_LEN 32
#define IFACE_MAX_ADDRS 8

typedef struct iface_addr_s {
  int family;          /* AF_INET or AF_INET6 */
  int prefix;          /* prefix length (netmask bits) */
  int link_local;      /* 169.254.0.0/16 or fe80::/10 */
  int loopback;        /* 127.0.0.0/8 or ::1 */
  uint8_t bytes[16];   /* network byte order; IPv4 uses the first 4 */
  char text[48];       /* "10.0.0.1" / "fe80::1" (no scope, no prefix) */
} iface_addr_t;

/* What kind of interface, decided from sysfs first and the name second. */
typedef enum iface_kind_e {
  IFACE_PHYSICAL = 0, /* has a device (PCI, virtio, ...) */
  IFACE_LOOPBACK,
  IFACE_BRIDGE,       /* /sys/class/net/X/bridge, or docker0/br-.../virbr... */
  IFACE_VETH,         /* veth pair end (container plumbing) */
  IFACE_TUNNEL,       /* tun/tap, vxlan, gre, wireguard, ipip... */
  IFACE_VIRTUAL       /* other software interfaces (bond, vlan, macvlan, dummy, ifb, ...) */
} iface_kind_t;

typedef struct iface_s {
  char name[IFACE_NAME_LEN];
  int index;               /* if_nametoindex */
  int up;                  /* IFF_UP */
  int running;             /* IFF_RUNNING (carrier) */
  int loopback;            /* IFF_LOOPBACK */
  int is_virtual;          /* /sys/devices/virtual/net/<name> exists */
  int container;           /* bridge, tunnel or a container-ish name (docker*, br-*, veth*, cni*, ...) */
  iface_kind_t kind;
  int speed_mbps;          /* /sys/class/net/X/speed, -1 unknown */
  int mtu;                 /* -1 unknown */
  char pci[20];            /* "0000:00:03.0": the PCI function under it, "" when none */
  char driver[32];         /* "mlx5_core", "virtio_net", "" */
  char master[IFACE_NAME_LEN]; /* bridge or bond it is enslaved to, "" */
  int naddrs;
  iface_addr_t addrs[IFACE_MAX_ADDRS];
} iface_t;

typedef struct iface_list_s {
  int n;
  iface_t *v;              /* sorted by name */
} iface_list_t;

/** Every interface of this network namespace with its addresses (IPv4 and IPv6) and sysfs facts.
 * \return 0 or a negative GPL_E* code; free with iface_list_free. */
int iface_list(iface_list_t *out);
void iface_list_free(iface_list_t *l);

/** The interface called \p name, or NULL. */
const iface_t *iface_find(const iface_list_t *l, const char *name);

/** "physical", "loopback", "bridge", "veth", "tunnel", "virtual". */
const char *iface_kind_name(iface_kind_t k);

/* How acceptable an interface is for NCCL_SOCKET_IFNAME and the bootstrap, best first. A job
 * should use the best tier that connects all its nodes: PHYSICAL on real clusters; VIRTUAL
 * only where nothing physical exists (a container whose eth0 is a veth, test namespaces);
 * never NEVER (docker0 has the same address on every host and reaches none of them). */
typedef enum iface_tier_e {
  IFACE_TIER_PHYSICAL = 0, /* a device of its own (PCI, virtio, ...) with a routable address */
  IFACE_TIER_VIRTUAL = 1,  /* software, yet possibly the way out: bond, vlan, macvlan, a veth
                            * that is not a bridge port */
  IFACE_TIER_NEVER = 2     /* down, no carrier, loopback, bridge or bridge port, tunnel,
                            * container name (docker0, veth*, cni0, ...), no routable address */
} iface_tier_t;

/** The interface's tier; why (optional) says why in a few words ("physical", "down", "bridge
 * (container/VM plumbing)", "only link-local addresses", ...). */
iface_tier_t iface_tier(const iface_t *i, char *why, size_t len);

/** 1 when the tier is not IFACE_TIER_NEVER (why as for iface_tier). */
int iface_usable(const iface_t *i, char *why, size_t len);

/** The interface's first usable (not link-local, not loopback) address of \p family (AF_INET,
 * AF_INET6, or 0 = IPv4 first, then IPv6), or NULL. */
const iface_addr_t *iface_usable_addr(const iface_t *i, int family);

/** 1 when \p addr lies in the subnet of \p net (net's address and prefix length, same family). */
int iface_addr_in_subnet(const iface_addr_t *net, const iface_addr_t *addr);

/** The subnet of \p a as text, "10.77.0.0/24" (host bits cleared). \return buf. */
const char *iface_subnet_text(const iface_addr_t *a, char *buf, size_t len);

/** Parse "10.1.2.3/24" or "fe80::1/64" (prefix optional: full length) into a. \return 0 or
 * GPL_EINVAL. For tests and for addresses that came over the wire as text. */
int iface_addr_parse(const char *s, iface_addr_t *a);

/** Classify by name alone, for interfaces of other nodes whose sysfs we cannot see: 1 when the
 * name is a container/virtual one (docker0, br-*, veth*, virbr*, cni*, flannel*, cali*, ...). */
int iface_name_is_container(const char *name);

#endif
