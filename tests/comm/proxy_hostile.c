/* A hostile wrapped program: speaks the proxy's wire protocol by hand and sends what gpl_init
 * never would (a region larger than its memfd, an unsealed memfd shrunk after mapping, what[]
 * without a NUL, sizes that wrap, garbage), then a real allreduce. Every lie must be refused
 * with an error and the supervisor must live: the job then ends with this program's status (0). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "comm/hostop.h"
#include "comm/proxy_proto.h"

static int g_fd;
static uint64_t g_seq;
static int g_fails;

static void check(int ok, const char *what) {
  printf("proxy_hostile: %s: %s\n", what, ok ? "ok" : "FAILED");
  if (!ok) g_fails++;
}

/* Send q (with fd) and return the reply's rc; -1000 when the connection is gone. */
static int call(proxy_req_t *q, int fd) {
  q->magic = PROXY_MAGIC;
  q->seq = ++g_seq;
  if (proxy_send(g_fd, q, sizeof *q, fd, 0) != (ssize_t)sizeof *q) return -1000;
  struct pollfd p = {g_fd, POLLIN, 0};
  if (poll(&p, 1, 30000) <= 0) return -1001;
  proxy_rep_t rep;
  int rfd;
  ssize_t n = proxy_recv(g_fd, &rep, sizeof rep, &rfd, 0);
  if (rfd >= 0) close(rfd);
  if (n != (ssize_t)sizeof rep || rep.seq != q->seq) return -1000;
  return rep.rc;
}

static int memfd(size_t size, int seal) {
  int fd = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, (off_t)size) < 0) return -1;
  if (seal && fcntl(fd, F_ADD_SEALS, PROXY_REGION_SEALS) < 0) return -1;
  return fd;
}

static int map(int id, uint64_t size, int fd) {
  proxy_req_t q;
  memset(&q, 0, sizeof q);
  q.type = PROXY_MAP;
  q.region = id;
  q.size = size;
  return call(&q, fd);
}

static int op(int kind, int region, uint64_t off, uint64_t count, const char *what40) {
  proxy_req_t q;
  memset(&q, 0, sizeof q);
  q.type = PROXY_OP;
  q.kind = kind;
  q.dtype = GPL_FLOAT;
  q.op = GPL_OP_SUM;
  q.count = count;
  q.timeout = 30;
  q.send = (proxy_ref_t){region, 0, off};
  q.recv = (proxy_ref_t){region, 0, off};
  q.answered.region = -1;
  memcpy(q.what, what40, sizeof q.what); /* all 40 bytes, no NUL */
  return call(&q, -1);
}

int main(void) {
  const char *path = getenv("GPULAUNCH_PROXY");
  if (!path) {
    fprintf(stderr, "proxy_hostile: no GPULAUNCH_PROXY (run it under gpulaunch)\n");
    return 2;
  }
  struct sockaddr_un sa;
  unsigned salen = proxy_sockaddr(path, &sa);
  g_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (!salen || g_fd < 0 || connect(g_fd, (struct sockaddr *)&sa, salen) < 0) {
    perror("proxy_hostile: connect");
    return 2;
  }
  proxy_req_t q;
  memset(&q, 0, sizeof q);
  q.type = PROXY_HELLO;
  q.version = PROXY_VERSION;
  q.timeout = 30;
  check(call(&q, -1) == 0, "hello");
  char what[40];
  memset(what, 'W', sizeof what);

  /* 1. a region said to be 1 GiB in a memfd of 4 KiB: touching it would be SIGBUS */
  int fd = memfd(4096, 1);
  check(map(1, 1u << 30, fd) < 0, "a region larger than its memfd is refused");
  close(fd);
  /* 2. an unsealed memfd: it could shrink under the mapping later */
  fd = memfd(1 << 20, 0);
  int rc = map(2, 1 << 20, fd);
  check(rc < 0, "an unsealed memfd is refused");
  if (rc == 0) { /* the old hole: shrink it, then make gpulaunch touch it */
    ftruncate(fd, 0);
    op(HOP_ALLREDUCE, 2, 0, 1024, what);
  }
  close(fd);
  /* 3. a sealed region of the right size: accepted */
  fd = memfd(1 << 16, 1);
  check(map(3, 1 << 16, fd) == 0, "a sealed region is mapped");
  float *buf = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  check(buf != MAP_FAILED, "the region maps here too");
  /* 4. sizes that wrap, places outside, kinds that do not exist */
  check(op(HOP_ALLREDUCE, 3, 0, (uint64_t)1 << 62, what) < 0, "a count that would wrap is refused");
  check(op(HOP_ALLREDUCE, 3, (uint64_t)-8, 4, what) < 0, "an offset outside the region is refused");
  check(op(HOP_ALLREDUCE, 3, 0, (1 << 16) / 4 + 1, what) < 0, "one element too many is refused");
  check(op(99, 3, 0, 1, what) < 0, "an unknown collective is refused");
  check(op(HOP_ALLREDUCE, 77, 0, 1, what) < 0, "an unknown region is refused");
  memset(&q, 0, sizeof q);
  q.type = 1234;
  check(call(&q, -1) < 0 && call(&q, -1) != -1000, "an unknown request type is answered with an error");
  /* 5. a real allreduce whose what[] has no NUL: every rank's program takes part */
  for (int i = 0; i < 1024; i++) buf[i] = 1.0f;
  rc = op(HOP_ALLREDUCE, 3, 0, 1024, what);
  check(rc == 0, "an allreduce still works");
  const char *ws = getenv("WORLD_SIZE");
  check(rc == 0 && buf[0] == (float)(ws ? atoi(ws) : 1) && buf[1023] == buf[0], "its result is right");
  /* 6. a short message: the proxy closes this connection, the supervisor stays */
  char junk[7] = "garbage";
  (void)!send(g_fd, junk, sizeof junk, MSG_NOSIGNAL);
  char b[8];
  struct pollfd p = {g_fd, POLLIN, 0};
  int closed = poll(&p, 1, 10000) == 1 && recv(g_fd, b, sizeof b, 0) <= 0;
  check(closed, "a malformed message closes the connection");
  printf("proxy_hostile: %s\n", g_fails ? "some lie was accepted" : "every lie refused, gpulaunch alive");
  return g_fails ? 1 : 0;
}
