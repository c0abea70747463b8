/* Which addresses gpulaunch-run's channel for rank 0 binds (docs/security.md, "Which address each
 * listener binds"): the address this host reaches the job's hosts from (and its other real
 * networks), loopback when every host is this one, every address only where that cannot be known
 * or the operator says so (--listen). */
#ifndef GPL_LAUNCHER_FRONT_LISTEN_H
#define GPL_LAUNCHER_FRONT_LISTEN_H

#include <netinet/in.h>
#include <stddef.h>

#define FRONT_LISTEN_MAX 8 /* addresses bound at most */

typedef struct front_listen_s {
  struct in_addr addr[FRONT_LISTEN_MAX]; /* the addresses to bind, the one rank 0 tries first first
                                          * (one INADDR_ANY: every address) */
  int n;
  char why[768];                         /* the rule that chose them, for the info line */
} front_listen_t;

/* The address from --listen ADDR (\p given: an IPv4 address or a name of this host, or "any"),
 * else from the hosts named in mpirun's words (argv, front_oob_hosts) or \p hostfile (an elastic
 * job's), else, where \p alloc_script is given, the hosts it prints (a batch allocation's:
 * front_hosts_slurm_addr_script, run once, 15 s at most): every host this one -> 127.0.0.1; else the
 * one local address that routes to all the others -> it; several, a host that does not resolve,
 * hosts not known (srun outside an allocation, a discovery script \p unknown_hosts, an allocation
 * with no script to list it, a default hostfile or Open MPI's own one with hosts in it) -> every
 * address. No host named and none of those: mpirun runs every rank here -> 127.0.0.1. Where one
 * routed address is chosen, the addresses of this host's other real networks follow it (not
 * loopback, link-local, a bridge, a tunnel or a container's interface): rank 0 cut off the fabric
 * may still reach this host over a management network (issue 34's partition). 0, or -1 with why
 * set (a --listen that is not an address of this host). */
int front_listen_choose(int argc, char *const *argv, const char *hostfile, const char *alloc_script, int unknown_hosts,
                        const char *given, front_listen_t *out);

/* What rank 0 is told (GPULAUNCH_FRONTEND): "ADDR:PORT,..." for the addresses bound, in the order
 * of this host's interfaces (getifaddrs, as before there was a choice); for every address,
 * loopback first and then each up IPv4 address of this host. */
void front_listen_addresses(const front_listen_t *l, int port, char *out, size_t len);

#endif
