/* The preflight's listener in the port range: a socket from netport_listen, handed to libuv. */
#include "topology/preflight_port.h"

#include <errno.h>
#include <netinet/in.h>
#include <unistd.h>

#include "common/log.h"
#include "common/netport.h"

int preflight_port_listen(uv_tcp_t *tcp, struct sockaddr_storage *addr, int backlog, uv_connection_cb cb) {
  socklen_t len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  int fd = netport_listen((struct sockaddr *)addr, len, SOCK_NONBLOCK, backlog, "preflight listener");
  if (fd < 0) return uv_translate_sys_error(errno);
  int rc = uv_tcp_open(tcp, fd);
  if (rc < 0) {
    close(fd);
    return rc;
  }
  rc = uv_listen((uv_stream_t *)tcp, backlog, cb);
  if (rc == 0)
    LOG_DEBUG(NET, "preflight: listening at port %d", ntohs(addr->ss_family == AF_INET6
              ? ((struct sockaddr_in6 *)addr)->sin6_port : ((struct sockaddr_in *)addr)->sin_port));
  return rc;
}
