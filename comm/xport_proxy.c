/* Host transport of a program gpulaunch wraps: every host collective is a request to the rank's
 * gpulaunch over its Unix socket, on shared memory (memfds mapped by both). Memory from
 * gpl_mem_alloc is shared already; other buffers are staged through a shared region. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "comm/proxy.h"
#include "comm/proxy_proto.h"
#include "common/log.h"
#include "common/util.h"

typedef struct pregion_s {
  int id;
  char *base;
  size_t size;
} pregion_t;

typedef struct xport_proxy_s {
  int fd;
  pregion_t regions[PROXY_MAX_REGIONS];
  int nregions;
  int next_id;
  char *stage; /* a region for buffers that are not shared */
  size_t stage_size;
  uint64_t seq;
} xport_proxy_t;

/* ---- messages ---- */

static int send_req(xport_proxy_t *x, proxy_req_t *q, int fd) {
  q->magic = PROXY_MAGIC;
  q->seq = ++x->seq;
  ssize_t n;
  do n = proxy_send(x->fd, q, sizeof *q, fd, 0);
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t)sizeof *q) {
    LOG_ERROR("comm proxy: cannot reach gpulaunch: %s", n < 0 ? strerror(errno) : "short write");
    return GPL_EPEER;
  }
  return GPL_OK;
}

/* The reply to request seq, within wait_s seconds; a passed fd goes to *fd_out. */
static int recv_rep(xport_proxy_t *x, uint64_t seq, double wait_s, proxy_rep_t *rep, int *fd_out) {
  double deadline = util_now() + wait_s;
  if (fd_out) *fd_out = -1;
  for (;;) {
    double left = deadline - util_now();
    if (left <= 0) {
      LOG_ERROR("comm proxy: no answer from gpulaunch within %.1f s", wait_s);
      return GPL_ETIMEDOUT;
    }
    struct pollfd pf = {x->fd, POLLIN, 0};
    int pr = poll(&pf, 1, left > 1e6 ? 1000000000 : (int)(left * 1000) + 1);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    int fd;
    ssize_t n = proxy_recv(x->fd, rep, sizeof *rep, &fd, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (fd >= 0) close(fd);
      LOG_ERROR("comm proxy: gpulaunch closed the connection%s%s", n < 0 ? ": " : "",
                n < 0 ? strerror(errno) : "");
      return GPL_EPEER;
    }
    if (n != (ssize_t)sizeof *rep || rep->magic != PROXY_MAGIC || rep->seq != seq) {
      if (fd >= 0) close(fd);
      LOG_ERROR("comm proxy: unexpected answer from gpulaunch");
      return GPL_EPROTO;
    }
    if (fd_out) *fd_out = fd;
    else if (fd >= 0) close(fd);
    return GPL_OK;
  }
}

/* A request and its reply's status (replies come at once except for collectives). */
static int call(xport_proxy_t *x, proxy_req_t *q, int fd, double wait_s) {
  CHECK(send_req(x, q, fd));
  proxy_rep_t rep;
  CHECK(recv_rep(x, q->seq, wait_s, &rep, NULL));
  return rep.rc;
}

/* ---- shared regions ---- */

static int region_new(xport_proxy_t *x, size_t bytes, pregion_t **out) {
  if (x->nregions == PROXY_MAX_REGIONS) {
    LOG_WARN("comm proxy: more than %d shared buffers at once", PROXY_MAX_REGIONS);
    return GPL_ENOMEM;
  }
  size_t size = (bytes + 4095) & ~(size_t)4095;
  int fd = memfd_create("gpulaunch-comm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  /* sealed: gpulaunch maps only a region that cannot shrink under it (proxy_proto.h) */
  if (fd < 0 || ftruncate(fd, (off_t)size) < 0 || fcntl(fd, F_ADD_SEALS, PROXY_REGION_SEALS) < 0) {
    LOG_WARN("comm proxy: shared memory of %zu bytes: %s", size, strerror(errno));
    if (fd >= 0) close(fd);
    return GPL_ESYS;
  }
  void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    LOG_WARN("comm proxy: mmap of %zu bytes: %s", size, strerror(errno));
    close(fd);
    return GPL_ENOMEM;
  }
  proxy_req_t q;
  memset(&q, 0, sizeof q);
  q.type = PROXY_MAP;
  q.region = x->next_id++;
  q.size = size;
  int rc = call(x, &q, fd, 30.0);
  close(fd);
  if (rc < 0) {
    munmap(base, size);
    return rc;
  }
  pregion_t *r = &x->regions[x->nregions++];
  *r = (pregion_t){q.region, base, size};
  *out = r;
  return GPL_OK;
}

static void region_free(xport_proxy_t *x, char *base) {
  for (int i = 0; i < x->nregions; i++) {
    if (x->regions[i].base != base) continue;
    proxy_req_t q;
    memset(&q, 0, sizeof q);
    q.type = PROXY_UNMAP;
    q.region = x->regions[i].id;
    if (x->fd >= 0) (void)call(x, &q, -1, 30.0);
    munmap(base, x->regions[i].size);
    x->regions[i] = x->regions[--x->nregions];
    return;
  }
}

/* The region holding [p, p+bytes), as a reference. */
static int find_ref(const xport_proxy_t *x, const void *p, size_t bytes, proxy_ref_t *ref) {
  const char *c = p;
  for (int i = 0; i < x->nregions; i++) {
    const pregion_t *r = &x->regions[i];
    if (c >= r->base && c <= r->base + r->size && bytes <= (size_t)(r->base + r->size - c)) {
      ref->region = r->id;
      ref->off = (uint64_t)(c - r->base);
      return 1;
    }
  }
  return 0;
}

static int stage_reserve(xport_proxy_t *x, size_t bytes) {
  if (bytes <= x->stage_size) return GPL_OK;
  if (x->stage) region_free(x, x->stage);
  x->stage = NULL;
  x->stage_size = 0;
  size_t want = bytes < (1u << 20) ? (1u << 20) : bytes + bytes / 4;
  pregion_t *r;
  CHECK(region_new(x, want, &r));
  x->stage = r->base;
  x->stage_size = r->size;
  return GPL_OK;
}

/* ---- the transport ---- */

static int proxy_run(gpl_comm_t *c, const hostop_t *op, double timeout, const char *what) {
  xport_proxy_t *x = c->xp_state;
  c->seq++;
  CHECK(hostop_validate(op, c->size));
  size_t sb = op->send ? hostop_send_bytes(op, c->size) : 0;
  size_t rb = hostop_recv_bytes(op, c->size);
  size_t ab = op->kind == HOP_FLAGS ? sizeof(int) * (size_t)c->size : 0;
  proxy_req_t q;
  memset(&q, 0, sizeof q);
  q.type = PROXY_OP;
  q.kind = op->kind;
  q.dtype = op->dtype;
  q.op = op->op;
  q.root = op->root;
  q.count = op->count;
  q.timeout = timeout;
  util_strlcpy(q.what, what ? what : "", sizeof q.what);
  q.send.region = q.recv.region = q.answered.region = -1;

  /* Buffers outside shared memory go through the staging region: the receive buffer (which, for
   * in-place calls, holds the input too) or the union of send and receive when they overlap, the
   * send buffer apart otherwise. */
  const char *s = op->send;
  char *r = op->recv;
  int s_shared = !sb || find_ref(x, s, sb, &q.send);
  int r_shared = !rb || find_ref(x, r, rb, &q.recv);
  int a_shared = !ab || find_ref(x, op->answered, ab, &q.answered);
  const char *lo = NULL;
  size_t span = 0, need = 0, s_off = 0, r_off = 0, a_off = 0;
  int overlap = sb && rb && s < r + rb && r < s + sb;
  if (!s_shared || !r_shared) {
    if (overlap) { /* one staged block covering both */
      lo = s < r ? s : r;
      const char *hi = s + sb > r + rb ? s + sb : r + rb;
      span = (size_t)(hi - lo);
      need = span;
    } else {
      if (!s_shared) s_off = need, need += (sb + 63) & ~(size_t)63;
      if (!r_shared) r_off = need, need += (rb + 63) & ~(size_t)63;
    }
  }
  if (!a_shared) a_off = need, need += ab;
  if (need) CHECK(stage_reserve(x, need));
  proxy_ref_t stage = {.region = -1};
  if (need) find_ref(x, x->stage, need, &stage);
  if (!s_shared || !r_shared) {
    if (overlap) {
      memcpy(x->stage, lo, span);
      q.send = (proxy_ref_t){stage.region, 0, stage.off + (uint64_t)(s - lo)};
      q.recv = (proxy_ref_t){stage.region, 0, stage.off + (uint64_t)(r - lo)};
    } else {
      if (!s_shared) {
        memcpy(x->stage + s_off, s, sb);
        q.send = (proxy_ref_t){stage.region, 0, stage.off + s_off};
      }
      if (!r_shared) {
        /* a broadcast root's input is its send buffer; other inputs never live in recv unless
         * the buffers overlap (handled above) */
        q.recv = (proxy_ref_t){stage.region, 0, stage.off + r_off};
      }
    }
  }
  if (!a_shared) q.answered = (proxy_ref_t){stage.region, 0, stage.off + a_off};

  /* gpulaunch answers within the deadline plus its diagnosis (a grace on each side). */
  double wait_s = timeout + 2.0 * comm_grace(timeout) + 10.0;
  CHECK(send_req(x, &q, -1));
  proxy_rep_t rep;
  CHECK(recv_rep(x, q.seq, wait_s, &rep, NULL));
  if (rep.rc == GPL_OK || (op->kind == HOP_FLAGS && rep.rc == GPL_ETIMEDOUT)) {
    if (!r_shared) memcpy(r, overlap ? x->stage + (r - lo) : x->stage + r_off, rb);
    if (!a_shared) memcpy(op->answered, x->stage + a_off, ab);
  }
  if (rep.rc < 0 && op->kind != HOP_FLAGS)
    LOG_ERROR("comm: %s failed in gpulaunch: %s (its log names the ranks)", what ? what : "a collective",
              gpl_strerror(rep.rc));
  return rep.rc;
}

static int proxy_alloc(gpl_comm_t *c, void **p, size_t bytes) {
  xport_proxy_t *x = c->xp_state;
  pregion_t *r;
  *p = NULL;
  if (!bytes) return GPL_OK;
  CHECK(region_new(x, bytes, &r));
  *p = r->base;
  return GPL_OK;
}

static void proxy_free(gpl_comm_t *c, void *p) {
  if (p) region_free(c->xp_state, p);
}

static void proxy_destroy(gpl_comm_t *c) {
  xport_proxy_t *x = c->xp_state;
  if (!x) return;
  if (x->fd >= 0) {
    proxy_req_t q;
    memset(&q, 0, sizeof q);
    q.type = PROXY_BYE;
    (void)send_req(x, &q, -1);
  }
  for (int i = 0; i < x->nregions; i++) munmap(x->regions[i].base, x->regions[i].size);
  if (x->fd >= 0) close(x->fd);
  free(x);
  c->xp_state = NULL;
}

const comm_xport_t comm_xport_proxy = {"proxy", proxy_run, proxy_alloc, proxy_free, proxy_destroy};

int comm_proxy_progress(gpl_comm_t *c, double step) {
  xport_proxy_t *x = c->xp_state;
  if (!x || x->fd < 0) return GPL_OK;
  proxy_req_t q;
  memset(&q, 0, sizeof q);
  q.type = PROXY_PROGRESS;
  q.timeout = step;
  return send_req(x, &q, -1);
}

/* ---- connect (gpl_init in a wrapped program) ---- */

int comm_proxy_connect(gpl_comm_t **out, const char *path, const gpl_init_opts_t *o) {
  *out = NULL;
  xport_proxy_t *x = calloc(1, sizeof *x);
  ALLOCCHECK(x);
  x->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa;
  unsigned salen = proxy_sockaddr(path, &sa);
  if (!salen) {
    LOG_ERROR("%s=%s: not a Unix socket path (empty or too long)", COMM_PROXY_ENV, path);
    if (x->fd >= 0) close(x->fd);
    free(x);
    return GPL_EINVAL;
  }
  if (x->fd < 0 || connect(x->fd, (struct sockaddr *)&sa, salen) < 0) {
    LOG_ERROR("gpl_init: cannot connect to gpulaunch at %s=%s: %s", COMM_PROXY_ENV, path,
              strerror(errno));
    if (x->fd >= 0) close(x->fd);
    free(x);
    return GPL_EPEER;
  }
  proxy_req_t q;
  memset(&q, 0, sizeof q);
  q.type = PROXY_HELLO;
  q.version = PROXY_VERSION;
  q.timeout = o->timeout;
  proxy_rep_t rep;
  int hfd = -1, rc = send_req(x, &q, -1);
  if (rc == GPL_OK) rc = recv_rep(x, q.seq, 60.0, &rep, &hfd);
  if (rc == GPL_OK && rep.rc < 0) {
    LOG_ERROR("gpl_init: gpulaunch refused: %s", gpl_strerror(rep.rc));
    rc = rep.rc;
  }
  if (rc < 0) {
    if (hfd >= 0) close(hfd);
    close(x->fd);
    free(x);
    return rc;
  }
  /* The job, and every rank's host name for messages. */
  char *names = NULL;
  size_t nbytes = (size_t)rep.size * (size_t)rep.hostlen;
  const char **hosts = calloc((size_t)rep.size, sizeof *hosts);
  struct stat hst;
  if (hfd >= 0 && hosts && rep.size > 0 && rep.hostlen > 0 && fstat(hfd, &hst) == 0 &&
      hst.st_size >= 0 && (uint64_t)hst.st_size >= (uint64_t)nbytes) {
    names = mmap(NULL, nbytes, PROT_READ, MAP_SHARED, hfd, 0);
    if (names == MAP_FAILED) names = NULL;
  }
  if (hfd >= 0) close(hfd);
  if (hosts && names)
    for (int r = 0; r < rep.size; r++) hosts[r] = names + (size_t)r * (size_t)rep.hostlen;
  comm_job_t j = {.rank = rep.rank, .size = rep.size, .local_rank = rep.local_rank,
                  .local_size = rep.local_size, .node = rep.node, .nnodes = rep.nnodes,
                  .comm = MPI_COMM_NULL, .hosts = hosts && names ? hosts : NULL,
                  .timeout = o->timeout > 0 ? o->timeout : rep.timeout};
  log_set_identity(util_hostname(), rep.rank);
  gpl_comm_t *c = NULL;
  rc = comm_new(&c, &j);
  if (names) munmap(names, nbytes);
  free(hosts);
  if (rc < 0) {
    close(x->fd);
    free(x);
    return rc;
  }
  c->xp = &comm_xport_proxy;
  c->xp_state = x;
  rc = comm_start_backend(c, o);
  if (rc < 0) {
    comm_free(c);
    return rc;
  }
  *out = c;
  return GPL_OK;
}
