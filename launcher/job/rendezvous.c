/* MASTER_ADDR/MASTER_PORT/run id: chosen on rank 0 (a free port on its node), broadcast with a
 * deadline, identical on every attempt. */
#include "launcher/job/rendezvous.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/envvar.h"
#include "common/mpix.h"
#include "common/netport.h"
#include "common/util.h"

/* First IPv4 address that is up, not loopback and not link-local. */
static int first_routable_ipv4(char *out, size_t len) {
  struct ifaddrs *ifs, *i;
  if (getifaddrs(&ifs) < 0) return GPL_ESYS;
  int rc = GPL_ENOENT;
  for (i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    struct in_addr a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
    uint32_t h = ntohl(a.s_addr);
    if ((h >> 16) == 0xA9FE) continue; /* 169.254/16 */
    inet_ntop(AF_INET, &a, out, (socklen_t)len);
    rc = GPL_OK;
    break;
  }
  freeifaddrs(ifs);
  return rc;
}

/* A port that is free on this node now (the kernel's choice, or one of [net] port_range), as
 * torchrun does. */
static int free_port(const char *addr) {
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  if (!addr || inet_pton(AF_INET, addr, &sa.sin_addr) != 1) sa.sin_addr.s_addr = htonl(INADDR_ANY);
  int fd = netport_listen((struct sockaddr *)&sa, sizeof sa, 0, 1, "MASTER_PORT");
  if (fd < 0) return -1;
  close(fd);
  return ntohs(sa.sin_port);
}

int rdv_agree(const job_t *job, const char *addr, int port, rdv_t *out) {
  memset(out, 0, sizeof *out);
  if (job->rank == 0) {
    /* One node: loopback works whatever the interfaces do. */
    if (job->nnodes == 1) util_strlcpy(out->master_addr, "127.0.0.1", sizeof out->master_addr);
    else if (addr && *addr) util_strlcpy(out->master_addr, addr, sizeof out->master_addr);
    else if (first_routable_ipv4(out->master_addr, sizeof out->master_addr) != GPL_OK)
      util_strlcpy(out->master_addr, job->host, sizeof out->master_addr);
    out->master_port = port > 0 ? port : free_port(NULL);
    const netport_range_t *pr = netport_get();
    if (port > 0 && pr->lo > 0 && (port < pr->lo || port > pr->hi))
      LOG_WARN("[job] master_port = %d is outside the port range %s: open it too", port, netport_text());
    if (out->master_port <= 0 && pr->lo > 0) {
      out->master_port = 0; /* said by netport: every rank fails below */
    } else if (out->master_port <= 0) {
      LOG_ERROR("cannot find a free TCP port on %s for MASTER_PORT", job->host);
      out->master_port = 29500;
    }
    /* An elastic gpulaunch-run keeps one run id across its launches. */
    const char *id = envvar_get(ENVVAR_RUN_ID);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (id && *id && strlen(id) < sizeof out->run_id && strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(id))
      util_strlcpy(out->run_id, id, sizeof out->run_id);
    else
      snprintf(out->run_id, sizeof out->run_id, "gpl-%lx-%x", (unsigned long)ts.tv_sec,
             (unsigned)(ts.tv_nsec ^ (unsigned)getpid()) & 0xffffffu);
  }
  CHECK(mpix_bcast(out, (int)sizeof *out, 0, job->world, job->timeout, "start-up (MASTER_ADDR/PORT)"));
  if (out->master_port <= 0) return GPL_ENET; /* no port free in the range on rank 0's host */
  netport_avoid(out->master_port); /* the program's: no listener of ours takes it */
  return GPL_OK;
}
