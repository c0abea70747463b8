/* mpirun's own out-of-band channel (oob_tcp_if_include): the subnets of this host's interfaces that route to the job's hosts, without container plumbing and link-local; the user's own setting kept. */
#ifndef GPL_LAUNCHER_FRONT_OOB_H
#define GPL_LAUNCHER_FRONT_OOB_H

#include <netinet/in.h>
#include <stddef.h>

#include "launcher/front/front_hosts.h"

/* The value gpulaunch-run gives mpirun as --mca oob_tcp_if_include, from the hosts named in
 * mpirun's words (argv: --host/-H lists, --hostfile/--machinefile files) or \p hostfile (an
 * elastic job's): each host's address resolved, the local interface that routes to it (not a
 * bridge, bridge port, container name, link-local or loopback) adds its subnet, and a host
 * outside every such subnet adds its own address (/32), so every host's daemon finds its
 * interface in the list. No host resolved: this host's usable subnets (topology/mpinet.h's local
 * rule). \return 1 and value/why, or 0 when nothing is to be given: the user set
 * oob_tcp_if_include/exclude (why says where), or no usable interface. */
int front_oob_choose(int argc, char *const *argv, const char *hostfile, char *value, size_t len, char *why,
                     size_t wlen);

/* The hosts named in mpirun's words ("--host a:2,b" lists, --hostfile/--machinefile files) and in
 * \p hostfile (may be NULL), at most max of them into h; their count. */
int front_oob_hosts(int argc, char *const *argv, const char *hostfile, front_host_t *h, int max);

/* The local address the kernel would use towards dst (a UDP connect: nothing is sent). 0 or -1. */
int front_oob_route_src(const struct sockaddr_in *dst, struct in_addr *src);

#endif
