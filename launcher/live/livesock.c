/* The liveness tree's sockets: the listener a parent's children connect to, and this host's
 * address on the route to rank 0's. Libc and libuv's address helpers. */
#include "launcher/live/livesock.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

/* A listener on addr (the agreed one, not every address), port chosen by the kernel. */
int livesock_listen(const char *addr, int *port) {
  int v6 = strchr(addr, ':') != NULL;
  struct sockaddr_storage sa;
  socklen_t len = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  memset(&sa, 0, sizeof sa);
  if ((v6 ? uv_ip6_addr(addr, 0, (struct sockaddr_in6 *)&sa) : uv_ip4_addr(addr, 0, (struct sockaddr_in *)&sa)) < 0)
    return -1;
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, SOMAXCONN) < 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
    close(fd);
    return -1;
  }
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
