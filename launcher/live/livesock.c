/* The liveness tree's sockets: the listener a parent's children connect to, this host's address
 * on the route to rank 0's, and the start-up exchange of every parent's address and port. */
#include "launcher/live/livesock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "common/log.h"
#include "common/mpix.h"
#include "common/netport.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/job/job.h"

/* A listener on addr (the agreed one, not every address), its port chosen by the kernel or in
 * [net] port_range. */
int livesock_listen(const char *addr, int *port) {
  int v6 = strchr(addr, ':') != NULL;
  struct sockaddr_storage sa;
  socklen_t len = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  memset(&sa, 0, sizeof sa);
  if ((v6 ? uv_ip6_addr(addr, 0, (struct sockaddr_in6 *)&sa) : uv_ip4_addr(addr, 0, (struct sockaddr_in *)&sa)) < 0)
    return -1;
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

/* What each rank shares at start: where its children reach it. */
typedef struct share_s {
  int32_t port; /* 0: no listener (no children, or it could not open one) */
  int32_t need; /* it has children */
  char addr[48];
} share_t;

int livesock_exchange(job_t *job, const char *addr, int nkids, int parent, int keyed, int *listen_fd,
                      char *parent_addr, size_t len, int *parent_port, int *ok) {
  int v6 = strchr(addr, ':') != NULL;
  share_t me;
  memset(&me, 0, sizeof me);
  *listen_fd = -1;
  *ok = 0;
  me.need = nkids > 0;
  if (nkids > 0) {
    /* One descriptor per child: raise the soft limit where a big fan-in needs it. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)nkids + 256 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (job->nnodes == 1) util_strlcpy(me.addr, v6 ? "::1" : "127.0.0.1", sizeof me.addr);
    else if (job->rank == 0) util_strlcpy(me.addr, addr, sizeof me.addr);
    else if (livesock_route_addr(addr, me.addr, sizeof me.addr) < 0)
      LOG_WARN("liveness: no address of this host on the route to %s; its children cannot reach it", addr);
    /* The agreed address only, not every address of the host. */
    *listen_fd = me.addr[0] && keyed ? livesock_listen(me.addr, &me.port) : -1;
    if (*listen_fd < 0 && keyed)
      LOG_WARN("liveness: cannot listen for the other supervisors on %s (%s); a lost host will not be noticed",
               me.addr, strerror(errno));
  }
  share_t *all = calloc((size_t)job->size, sizeof *all);
  int rc = !all ? GPL_ENOMEM
                : mpix_allgather(&me, (int)sizeof me, all, job->world, job->timeout, "start-up (supervisor liveness)");
  if (rc < 0) {
    free(all);
    return rc;
  }
  /* Every rank decides the same from the same table: a parent without a listener or address
   * means no liveness for anyone. */
  *ok = 1;
  for (int r = 0; r < job->size; r++)
    if (all[r].need && (all[r].port == 0 || !all[r].addr[0])) *ok = 0;
  if (parent >= 0) {
    *parent_port = all[parent].port;
    util_strlcpy(parent_addr, all[parent].addr, len); /* where it listens (also on our host) */
  }
  free(all);
  return 0;
}
