/* Open MPI's own TCP interfaces (btl_tcp_if_include, oob_tcp_if_include): chosen by the NCCL agreement's rule from every host's inventory, or from this host's facts alone; the user's own setting found wherever Open MPI reads it. */
#ifndef GPL_TOPOLOGY_MPINET_H
#define GPL_TOPOLOGY_MPINET_H

#include <stddef.h>

#include "topology/iface.h"

struct net_inv_s; /* topology/net.h */

#define MPINET_VALUE_LEN 256
#define MPINET_WHY_LEN 768

typedef enum mpinet_how_e {
  MPINET_NONE = 0, /* nothing set: Open MPI's default (one host, or nothing usable found) */
  MPINET_USER,     /* the user's btl_tcp_if_include/exclude: kept as it is */
  MPINET_JOB,      /* from every host's inventory: the subnets every host has */
  MPINET_LOCAL     /* from this host's facts alone (no exchange before MPI_Init was possible) */
} mpinet_how_t;

typedef struct mpinet_choice_s {
  mpinet_how_t how;
  char value[MPINET_VALUE_LEN];  /* btl_tcp_if_include: "10.77.0.0/24" (CIDR list), "" = none */
  char ifnames[MPINET_VALUE_LEN]; /* the local interfaces it selects, "eth1" or "eth1,ib0" */
  char why[MPINET_WHY_LEN];      /* one line: why these, what was left out and why */
} mpinet_choice_t;

/** Where the user set Open MPI's TCP interfaces for the ranks (btl_tcp_if_include or
 * btl_tcp_if_exclude): OMPI_MCA_ variables (mpirun --mca passes these), the files named by
 * OMPI_MCA_mca_base_param_files (mpirun -am / --tune), ~/.openmpi/mca-params.conf and
 * \p sysconf_file (Open MPI's $sysconfdir/openmpi-mca-params.conf; NULL: the default).
 * \return 1 and a description in \p src ("OMPI_MCA_btl_tcp_if_include=10.0.0.0/8"), else 0. */
int mpinet_user(const char *sysconf_file, char *src, size_t len);
/** The same for mpirun's out-of-band channel (oob_tcp_if_include/exclude) in argv words
 * ("--mca oob_tcp_if_include X", "-mca", "--prtemca") and the same variables and files.
 * \return 1 and src, else 0. */
int mpinet_user_oob(int argc, char *const *argv, char *src, size_t len);

/** The choice for host \p node of \p nnodes from every host's inventory (inv[i].node == i):
 * the NCCL agreement's automatic rule (net_eval_node: interfaces that can carry traffic, whose
 * subnet every other host has an address in, not a copy of the same address; the best tier, the
 * fastest; an onboard eno* port only when nothing else is as good), applied to every host (up to
 * 256) so that the hosts' transports share their networks; as CIDR subnets. why names what was
 * left out (bridges, link-local, addresses other hosts share, subnets only some hosts have).
 * One host: MPINET_NONE (MPI uses shared memory).
 * \return 0, or GPL_ENET (nothing shared by all hosts: out->how MPINET_NONE, why says). */
int mpinet_from_job(const struct net_inv_s *inv, int nnodes, int node, mpinet_choice_t *out);

/** The choice from this host's interfaces alone: every address that is not loopback or
 * link-local on an interface that can carry traffic (iface_tier: no bridges, bridge ports,
 * container names, tunnels, down links), as host-length CIDRs of their subnets.
 * \return 0, or GPL_ENET (none: MPINET_NONE). */
int mpinet_from_local(const iface_list_t *l, mpinet_choice_t *out);

/** "ens5 (btl_tcp_if_include=10.77.0.0/24, chosen by gpulaunch)", "as you set it
 * (OMPI_MCA_btl_tcp_if_include=...)", "Open MPI's own choice (every interface but loopback)":
 * what MPI's TCP transport uses, for messages. \return buf. */
const char *mpinet_describe(const mpinet_choice_t *c, char *buf, size_t len);

/** Is MPI's TCP transport on NCCL's interface \p nccl (this host's, as agreed for
 * NCCL_SOCKET_IFNAME; \p nccl_user: the user's NCCL_SOCKET_IFNAME)? why: one sentence, "the same
 * interface (ens5)" or how they differ and why. \return 1 same, 0 differ. */
int mpinet_compare(const mpinet_choice_t *c, const iface_t *nccl, int nccl_user, char *why, size_t len);

/** 1 when the local interface \p name has an address in one of the CIDR subnets (or is named)
 * in \p value, a btl_tcp_if_include list. */
int mpinet_selects(const char *value, const iface_t *f);

/* Shared by mpinet.c and mpinet_local.c. */
void mpinet__list_add(char *list, size_t len, const char *item);
const iface_addr_t *mpinet__shown_addr(const iface_t *f);

#endif
