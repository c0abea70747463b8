/* One port range for every TCP listener of gpulaunch ([net] port_range, gpulaunch-run
 * --port-range): parse it, keep it for the process, bind a socket at a free port inside it. */
#ifndef GPL_COMMON_NETPORT_H
#define GPL_COMMON_NETPORT_H

#include <stddef.h>
#include <sys/socket.h>

/* [lo, hi]; lo == 0: no range, the kernel picks the port. */
typedef struct netport_range_s {
  int lo, hi;
} netport_range_t;

/* "LO-HI" (1 <= LO <= HI <= 65535) or "" (no range). 0, or GPL_EINVAL with one line in err. */
int netport_parse(const char *text, netport_range_t *r, char *err, size_t errlen);

/* The process's range, set once at start-up (from the config, or GPULAUNCH_PORT_RANGE, which an
 * option of gpulaunch-run sets and which wins); every listener reads it. */
void netport_set(const netport_range_t *r);
const netport_range_t *netport_get(void);
/* The range as text ("40000-40099", or "" when none). */
const char *netport_text(void);
/* A port no listener of this process takes (MASTER_PORT, which the program binds later). */
void netport_avoid(int port);

/* Try the ports of the process's range in an order of this process's own (random, so that the
 * ranks of a host do not all race for the same port), calling try_port(arg, port) for each:
 * it returns 0 (taken: done), -EADDRINUSE (next port) or another negative errno (stop). With no
 * range, one call with port 0. The port taken or a negative errno: -EADDRINUSE when every port of
 * the range is in use, said once with `what` and the range. */
int netport_try(const char *what, int (*try_port)(void *arg, int port), void *arg);

/* A TCP listener (SOCK_STREAM | SOCK_CLOEXEC | flags, SO_REUSEADDR) at addr (its port ignored:
 * set to the port taken) on a port of the range, bound and listening (bind and listen are tried
 * together: two processes may bind one port with SO_REUSEADDR, only one may listen). The fd, or
 * -1 with errno set (EADDRINUSE: the range is full, said with `what`). */
int netport_listen(struct sockaddr *addr, socklen_t len, int flags, int backlog, const char *what);

#endif
