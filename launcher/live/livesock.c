/* The liveness tree's sockets: the listener a parent's children connect to, and this host's
 * address on the route to rank 0's. Libc and libuv's address helpers. */
#include "launcher/live/livesock.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "common/netport.h"

/* A listener on every address of the family, port chosen by the kernel or in [net] port_range. */
int livesock_listen(int v6, int *port) {
  struct sockaddr_storage sa;
  socklen_t len = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  memset(&sa, 0, sizeof sa);
  sa.ss_family = (sa_family_t)(v6 ? AF_INET6 : AF_INET);
  int fd = netport_listen((struct sockaddr *)&sa, len, 0, SOMAXCONN, "liveness listener");
  if (fd < 0) return -1;
  *port = ntohs(v6 ? ((struct sockaddr_in6 *)&sa)->sin6_port : ((struct sockaddr_in *)&sa)->sin_port);
  return fd;
}

/* This host's address on the route to rank 0's (addr): the interface the job agreed on, whose
 * subnet every node shares (a UDP connect sends nothing; it only picks the source). */
int livesock_route_addr(const char *addr, char *out, size_t len) {
  int v6 = strchr(addr, ':') != NULL;
  struct sockaddr_storage sa;
  memset(&sa, 0, sizeof sa);
  socklen_t sl = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  if ((v6 ? uv_ip6_addr(addr, 9, (struct sockaddr_in6 *)&sa) : uv_ip4_addr(addr, 9, (struct sockaddr_in *)&sa)) < 0)
    return -1;
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int rc = connect(fd, (struct sockaddr *)&sa, sl) == 0 && getsockname(fd, (struct sockaddr *)&sa, &sl) == 0 ? 0 : -1;
  close(fd);
  if (rc == 0)
    rc = uv_ip_name((struct sockaddr *)&sa, out, len) == 0 ? 0 : -1;
  return rc;
}
