/* The preflight's listener at a port of [net] port_range (common/netport.h), as a libuv handle. */
#ifndef GPL_TOPOLOGY_PREFLIGHT_PORT_H
#define GPL_TOPOLOGY_PREFLIGHT_PORT_H

#include <sys/socket.h>
#include <uv.h>

/* tcp (initialised, not yet bound) listens at addr (its port ignored) on a port of the process's
 * range (the kernel's choice without one): the libuv equivalent of netport_listen. 0 or a
 * negative libuv error (UV_EADDRINUSE: the range is full, said once with the range). */
int preflight_port_listen(uv_tcp_t *tcp, struct sockaddr_storage *addr, int backlog, uv_connection_cb cb);

#endif
