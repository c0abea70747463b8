/* The proxy server in the gpulaunch rank: a SOCK_SEQPACKET Unix socket in a private folder, served
 * from the supervisor's libuv loop; each request of the wrapped program is answered at once or, for
 * a collective, started on this rank's MPI communicator and polled from the loop (an idle handle
 * for the first millisecond, then a 1 ms timer) until it is done or its deadline passed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/random.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include "comm/proxy.h"
#include "comm/proxy_proto.h"
#include "comm/xport_mpi.h"
#include "common/util.h"

enum { HOSTLEN = 64 };

typedef struct region_s {
  int id;
  char *base;
  size_t size;
} region_t;

typedef struct client_s {
  uv_poll_t poll;
  int fd;
  struct comm_proxy_s *p;
  region_t regions[PROXY_MAX_REGIONS];
  int nregions;
  int gone;   /* the program closed the connection (or broke the protocol) */
  int busy;   /* a collective of this client is in flight */
  int keep;   /* a collective failed: MPI may still write its buffers, keep them mapped */
  uint64_t seq;
  xport_op_t x;
  char what[48];
  double since;
} client_t;

struct comm_proxy_s {
  uv_loop_t *loop;
  gpl_comm_t *c;    /* this rank's communicator for the program's collectives (cpu backend) */
  comm_job_t job;   /* to rebuild it: a copy, with the host names owned */
  char **hosts;
  int served;       /* programs greeted so far */
  char path[128];   /* "@gpulaunch-proxy-<random>": abstract, nothing on disk */
  int lfd;
  uv_poll_t lpoll;
  uv_idle_t idle;
  uv_timer_t timer;
  client_t *client; /* the connected program, or NULL */
  int hosts_fd;     /* memfd: the host name of every rank, HOSTLEN bytes each */
  int handles;      /* open handles (the proxy is freed when the last one closed) */
  int stopping;
  void (*on_progress)(void *arg, double step); /* the hang watchdog and the straggler view */
  void *progress_arg;
};

void comm_proxy_on_progress(comm_proxy_t *p, void (*fn)(void *arg, double step), void *arg) {
  if (!p) return;
  p->on_progress = fn;
  p->progress_arg = arg;
}

static void free_hosts(comm_proxy_t *p) {
  if (p->hosts)
    for (int r = 0; r < p->job.size; r++) free(p->hosts[r]);
  free(p->hosts);
  p->hosts = NULL;
}

static void maybe_free(comm_proxy_t *p) {
  if (p->handles > 0 || !p->stopping) return;
  if (p->lfd >= 0) close(p->lfd); /* only now: libuv polled it until its handle closed */
  if (p->hosts_fd >= 0) close(p->hosts_fd);
  free_hosts(p);
  free(p);
}

/* The communicator for the program's collectives, made when a program greets us: for the first
 * program, and afresh for every later one (a restart), since the previous program may have left
 * its ranks out of step (killed inside a collective on some ranks, between two on others). Every
 * rank greets its program once per attempt, so every gpulaunch builds it at the same point; it is
 * collective and bounded (a rank whose program never connects is named). */
static int fresh_comm(comm_proxy_t *p) {
  p->served++;
  if (p->c) gpl_finalize(p->c);
  p->c = NULL;
  gpl_init_opts_t o;
  gpl_init_opts_default(&o);
  o.backend = GPL_BACKEND_CPU;
  o.timeout = p->job.timeout;
  int rc = comm_init(&p->c, &p->job, &o);
  if (rc < 0) LOG_ERROR("comm proxy: could not set up the communicator for the program");
  return rc;
}

static void on_proxy_handle_closed(uv_handle_t *h) {
  comm_proxy_t *p = h->data;
  p->handles--;
  maybe_free(p);
}

/* ---- replies ---- */

static int send_rep(client_t *cl, const proxy_rep_t *rep, int fd) {
  ssize_t n = proxy_send(cl->fd, rep, sizeof *rep, fd, MSG_DONTWAIT);
  if (n != (ssize_t)sizeof *rep) {
    LOG_WARN("comm proxy: reply to the program failed: %s", n < 0 ? strerror(errno) : "short");
    cl->gone = 1;
    return GPL_EIO;
  }
  return GPL_OK;
}

static void reply(client_t *cl, uint32_t type, uint64_t seq, int rc) {
  proxy_rep_t rep;
  memset(&rep, 0, sizeof rep);
  rep.magic = PROXY_MAGIC;
  rep.type = type;
  rep.seq = seq;
  rep.rc = rc;
  (void)send_rep(cl, &rep, -1);
}

/* ---- client life ---- */

static void on_client_closed(uv_handle_t *h) {
  client_t *cl = h->data; /* the fd is closed only now: libuv polled it until here */
  comm_proxy_t *p = cl->p;
  for (int i = 0; i < cl->nregions && !cl->keep; i++) munmap(cl->regions[i].base, cl->regions[i].size);
  close(cl->fd);
  free(cl);
  p->handles--;
  maybe_free(p);
}

/* Drop the client once nothing of ours still uses its memory (no collective in flight). */
static void drop_client(client_t *cl) {
  if (cl->busy || uv_is_closing((uv_handle_t *)&cl->poll)) return;
  if (cl->p->client == cl) cl->p->client = NULL;
  uv_poll_stop(&cl->poll);
  uv_close((uv_handle_t *)&cl->poll, on_client_closed);
}

static void stop_polling(comm_proxy_t *p) {
  uv_idle_stop(&p->idle);
  uv_timer_stop(&p->timer);
}

static void on_timer(uv_timer_t *h);

/* The collective in flight: poll it; when done, answer and let the next request in. */
static void progress(comm_proxy_t *p) {
  client_t *cl = p->client;
  if (!cl || !cl->busy) {
    stop_polling(p);
    return;
  }
  int rc = xport_mpi_test(&cl->x);
  if (rc == GPL_OK && !cl->x.done) {
    /* after a millisecond of spinning, poll from a timer instead */
    if (uv_is_active((uv_handle_t *)&p->idle) && util_now() - cl->since > 1e-3) {
      uv_idle_stop(&p->idle);
      uv_timer_start(&p->timer, on_timer, 1, 1);
    }
    return;
  }
  int status = rc < 0 ? rc : cl->x.status;
  cl->busy = 0;
  stop_polling(p);
  if (status == GPL_ETIMEDOUT || status == GPL_EMPI || status == GPL_EPEER) {
    /* The collective stays with MPI (it cannot be cancelled) and may still write into the
     * program's memory: the communicator is broken, the regions stay mapped for good. */
    p->c->broken = 1;
    cl->keep = 1;
  }
  if (!cl->gone) reply(cl, PROXY_OP, cl->seq, status);
  if (cl->gone) drop_client(cl);
}

static void on_idle(uv_idle_t *h) {
  sched_yield(); /* other ranks (and the program) share the cores */
  progress(h->data);
}

static void on_timer(uv_timer_t *h) { progress(h->data); }

/* ---- requests ---- */

static region_t *find_region(client_t *cl, int id) {
  for (int i = 0; i < cl->nregions; i++)
    if (cl->regions[i].id == id) return &cl->regions[i];
  return NULL;
}

/* A client's reference as a pointer, if [off, off+bytes) lies inside the region and off is a
 * multiple of align (the element's size: the reductions read whole elements). */
static int resolve(client_t *cl, proxy_ref_t ref, size_t bytes, size_t align, void **out) {
  *out = NULL;
  if (ref.region < 0) return bytes ? GPL_EPROTO : GPL_OK;
  region_t *r = find_region(cl, ref.region);
  if (!r || ref.off > r->size || bytes > r->size - ref.off) {
    LOG_WARN("comm proxy: the program referred to bytes outside its shared memory");
    return GPL_EPROTO;
  }
  if (align > 1 && ref.off % align) {
    LOG_WARN("comm proxy: the program referred to a buffer not aligned to its elements");
    return GPL_EPROTO;
  }
  *out = r->base + ref.off;
  return GPL_OK;
}

static void do_hello(client_t *cl, const proxy_req_t *q) {
  comm_proxy_t *p = cl->p;
  proxy_rep_t rep;
  memset(&rep, 0, sizeof rep);
  rep.magic = PROXY_MAGIC;
  rep.type = PROXY_HELLO;
  rep.seq = q->seq;
  if (q->version != PROXY_VERSION) {
    LOG_WARN("comm proxy: the program speaks version %d, this gpulaunch %d (rebuild it against "
             "this gpulaunch)", q->version, PROXY_VERSION);
    rep.rc = GPL_EPROTO;
    (void)send_rep(cl, &rep, -1);
    return;
  }
  int frc = fresh_comm(p);
  if (frc < 0) {
    rep.rc = frc;
    (void)send_rep(cl, &rep, -1);
    return;
  }
  gpl_comm_t *c = p->c;
  rep.rank = c->rank;
  rep.size = c->size;
  rep.local_rank = c->local_rank;
  rep.local_size = c->local_size;
  rep.node = c->node;
  rep.nnodes = c->nnodes;
  rep.hostlen = HOSTLEN;
  rep.timeout = c->timeout;
  rep.rc = p->c->broken ? GPL_ESTATE : GPL_OK;
  (void)send_rep(cl, &rep, p->hosts_fd);
}

/* A region's memfd as the program sent it: sealed against shrinking (else it could cut it under
 * our mapping, and our next touch is SIGBUS) and at least as large as it says. 0 or why not. */
static int region_fd_ok(int fd, uint64_t size) {
  struct stat st;
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & PROXY_REGION_SEALS) != PROXY_REGION_SEALS) {
    LOG_WARN("comm proxy: the program sent a region that is not a memfd sealed against shrinking "
             "(is it built against this gpulaunch?)");
    return GPL_EPROTO;
  }
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0 || size > (uint64_t)st.st_size ||
      size > (uint64_t)SIZE_MAX) {
    LOG_WARN("comm proxy: the program declared a region of %llu bytes in a memfd of %lld",
             (unsigned long long)size, (long long)st.st_size);
    return GPL_EPROTO;
  }
  return GPL_OK;
}

static void do_map(client_t *cl, const proxy_req_t *q, int fd) {
  int rc = GPL_OK;
  if (fd < 0 || cl->nregions == PROXY_MAX_REGIONS || find_region(cl, q->region) || !q->size) {
    rc = fd < 0 ? GPL_EPROTO : GPL_ENOMEM;
  } else if ((rc = region_fd_ok(fd, q->size)) < 0) {
    /* refused: the program gets the error, the supervisor lives on */
  } else {
    void *base = mmap(NULL, q->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
      LOG_WARN("comm proxy: cannot map the program's %llu bytes: %s",
               (unsigned long long)q->size, strerror(errno));
      rc = GPL_ESYS;
    } else {
      cl->regions[cl->nregions++] = (region_t){q->region, base, q->size};
    }
  }
  if (fd >= 0) close(fd);
  reply(cl, PROXY_MAP, q->seq, rc);
}

static void do_unmap(client_t *cl, const proxy_req_t *q) {
  int rc = GPL_EINVAL;
  for (int i = 0; i < cl->nregions; i++)
    if (cl->regions[i].id == q->region) {
      if (!cl->keep) munmap(cl->regions[i].base, cl->regions[i].size);
      cl->regions[i] = cl->regions[--cl->nregions];
      rc = GPL_OK;
      break;
    }
  reply(cl, PROXY_UNMAP, q->seq, rc);
}

static void do_op(client_t *cl, const proxy_req_t *q) {
  comm_proxy_t *p = cl->p;
  gpl_comm_t *c = p->c;
  if (p->on_progress) p->on_progress(p->progress_arg, -1);
  if (!c || c->broken) {
    reply(cl, PROXY_OP, q->seq, GPL_ESTATE);
    return;
  }
  hostop_t op;
  memset(&op, 0, sizeof op);
  op.kind = (hostop_kind_t)q->kind;
  op.dtype = (gpl_dtype_t)q->dtype;
  op.op = (gpl_redop_t)q->op;
  op.root = q->root;
  op.count = q->count;
  void *send = NULL, *recv = NULL, *ans = NULL;
  int rc = (unsigned)q->kind < HOP_KIND_COUNT ? GPL_OK : GPL_EPROTO;
  if (rc == GPL_OK && op.kind != HOP_FLAGS && op.kind != HOP_BARRIER &&
      (unsigned)q->dtype >= GPL_DTYPE_COUNT)
    rc = GPL_EPROTO;
  /* before any size is computed from it: count * element * ranks must not wrap */
  if (rc == GPL_OK && q->count > (uint64_t)INT_MAX) rc = GPL_ERANGE;
  size_t align = op.kind == HOP_FLAGS ? sizeof(int) : op.kind == HOP_BARRIER ? 1 : hostop_dtype_size(op.dtype);
  if (rc == GPL_OK)
    rc = resolve(cl, q->send, q->send.region < 0 ? 0 : hostop_send_bytes(&op, c->size), align, &send);
  if (rc == GPL_OK) rc = resolve(cl, q->recv, hostop_recv_bytes(&op, c->size), align, &recv);
  if (rc == GPL_OK && op.kind == HOP_FLAGS)
    rc = resolve(cl, q->answered, sizeof(int) * (size_t)c->size, sizeof(int), &ans);
  if (rc < 0) {
    reply(cl, PROXY_OP, q->seq, rc);
    return;
  }
  op.send = send;
  op.recv = recv;
  op.answered = ans;
  double timeout = q->timeout > 0 && q->timeout < 1e7 ? q->timeout : c->timeout;
  /* what[] comes from the program: bounded by its size, never by a NUL it may not have sent */
  size_t wlen = strnlen(q->what, sizeof q->what);
  if (wlen) {
    memcpy(cl->what, q->what, wlen);
    cl->what[wlen] = 0;
  } else {
    util_strlcpy(cl->what, "a collective of the program", sizeof cl->what);
  }
  cl->seq = q->seq;
  rc = xport_mpi_start(c, &op, timeout, cl->what, &cl->x);
  if (rc < 0) {
    reply(cl, PROXY_OP, q->seq, rc);
    return;
  }
  cl->busy = 1;
  cl->since = util_now();
  uv_idle_start(&p->idle, on_idle);
  progress(p);
}

static void handle(client_t *cl, const proxy_req_t *q, ssize_t n, int fd) {
  if (n != (ssize_t)sizeof *q || q->magic != PROXY_MAGIC || cl->busy) {
    LOG_WARN("comm proxy: unexpected message from the program (%zd bytes%s); closing it", n,
             cl->busy ? ", while a collective is in flight" : "");
    if (fd >= 0) close(fd);
    cl->gone = 1;
    return;
  }
  if (fd >= 0 && q->type != PROXY_MAP) {
    close(fd);
    fd = -1;
  }
  switch (q->type) {
    case PROXY_HELLO: do_hello(cl, q); break;
    case PROXY_MAP: do_map(cl, q, fd); break;
    case PROXY_UNMAP: do_unmap(cl, q); break;
    case PROXY_OP: do_op(cl, q); break;
    case PROXY_BYE: cl->gone = 1; break;
    case PROXY_PROGRESS:
      if (cl->p->on_progress) cl->p->on_progress(cl->p->progress_arg, q->timeout);
      break;
    default:
      reply(cl, q->type, q->seq, GPL_EPROTO);
      break;
  }
}

static void on_client(uv_poll_t *h, int status, int events) {
  client_t *cl = h->data;
  if (status < 0 || (events & UV_DISCONNECT)) cl->gone = 1;
  while (!cl->gone && (events & UV_READABLE)) {
    proxy_req_t q;
    int fd;
    ssize_t n = proxy_recv(cl->fd, &q, sizeof q, &fd, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) { /* closed by the program (or an error) */
      if (fd >= 0) close(fd);
      cl->gone = 1;
      break;
    }
    handle(cl, &q, n, fd);
  }
  if (cl->gone) {
    uv_poll_stop(&cl->poll); /* no more events from a closed connection while we finish */
    drop_client(cl);
  }
}

static void on_listen(uv_poll_t *h, int status, int events) {
  comm_proxy_t *p = h->data;
  (void)events;
  if (status < 0 || p->stopping) return;
  int fd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return;
  struct ucred cr;
  socklen_t crl = sizeof cr;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0 || cr.uid != getuid()) {
    LOG_WARN("comm proxy: refused a connection from another user");
    close(fd);
    return;
  }
  if (p->client && !p->client->gone) {
    LOG_WARN("comm proxy: a second connection while the program's first is open; refused");
    close(fd);
    return;
  }
  if (p->client) {
    /* The previous program is gone but a collective of its is still in flight (it was killed
     * inside one): leave that to MPI with its memory, and the communicator (broken now) too. */
    client_t *old = p->client;
    stop_polling(p);
    old->busy = 0;
    old->keep = 1;
    if (p->c) p->c->broken = 1;
    drop_client(old);
  }
  client_t *cl = calloc(1, sizeof *cl);
  if (!cl) {
    close(fd);
    return;
  }
  cl->fd = fd;
  cl->p = p;
  cl->poll.data = cl;
  if (uv_poll_init(p->loop, &cl->poll, fd) < 0) {
    close(fd);
    free(cl);
    return;
  }
  p->handles++;
  p->client = cl;
  uv_poll_start(&cl->poll, UV_READABLE | UV_DISCONNECT, on_client);
  LOG_INFO(COMM, "comm proxy: the program connected (pid %d)", (int)cr.pid);
}

/* ---- start / stop ---- */

/* The host names for the program, sealed: one program cannot change what the next one reads. */
static int hosts_memfd(const comm_job_t *job) {
  int fd = memfd_create("gpulaunch-hosts", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  size_t bytes = (size_t)job->size * HOSTLEN;
  char *names = calloc(1, bytes);
  if (!names || ftruncate(fd, (off_t)bytes) < 0) {
    free(names);
    close(fd);
    return -1;
  }
  for (int r = 0; r < job->size; r++)
    if (job->hosts && job->hosts[r]) util_strlcpy(names + (size_t)r * HOSTLEN, job->hosts[r], HOSTLEN);
  ssize_t w = pwrite(fd, names, bytes, 0);
  free(names);
  if (w != (ssize_t)bytes ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int comm_proxy_start(struct uv_loop_s *loop, const comm_job_t *job, comm_proxy_t **out,
                     char *path_out, size_t len) {
  *out = NULL;
  comm_proxy_t *p = calloc(1, sizeof *p);
  ALLOCCHECK(p);
  p->loop = loop;
  p->lfd = -1;
  p->hosts_fd = -1;
  p->job = *job;
  if (job->hosts) {
    p->hosts = calloc((size_t)job->size, sizeof *p->hosts);
    if (!p->hosts) {
      free(p);
      return GPL_ENOMEM;
    }
    for (int r = 0; r < job->size; r++)
      p->hosts[r] = job->hosts[r] ? strdup(job->hosts[r]) : NULL;
    p->job.hosts = (const char *const *)p->hosts;
  }
  /* The program's collectives run on a communicator of our own (cpu backend: the parent never
   * touches the GPU; the program's nccl backend bootstraps through us), made when the program
   * first greets us (fresh_comm), not here: a program that never calls gpl_init (most do not)
   * costs no communicator (~0.3 s of collectives at start on 4 hosts), the same way a restarted
   * program always got its own. */
  int rc;
  p->hosts_fd = hosts_memfd(job);
  if (p->hosts_fd < 0) {
    LOG_WARN("comm proxy: cannot make the memfd of host names: %s", strerror(errno));
    rc = GPL_ESYS;
    goto fail;
  }
  /* An abstract socket: no folder in /tmp to leave behind when gpulaunch is killed. Anyone on
   * this host may connect to it; on_listen refuses other users (SO_PEERCRED). */
  p->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int bound = -1;
  for (int tries = 0; p->lfd >= 0 && bound < 0 && tries < 8; tries++) {
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) r = util_now_ns() ^ ((uint64_t)getpid() << 32);
    snprintf(p->path, sizeof p->path, "@gpulaunch-proxy-%d-%016llx", (int)getpid(), (unsigned long long)r);
    struct sockaddr_un sa;
    unsigned salen = proxy_sockaddr(p->path, &sa);
    bound = salen ? bind(p->lfd, (struct sockaddr *)&sa, salen) : -1;
    if (bound < 0 && errno != EADDRINUSE) break;
  }
  if (p->lfd < 0 || bound < 0 || listen(p->lfd, 4) < 0) {
    LOG_WARN("comm proxy: cannot listen on %s: %s", p->path, strerror(errno));
    rc = GPL_ESYS;
    goto fail;
  }
  if (uv_poll_init(loop, &p->lpoll, p->lfd) < 0) {
    rc = GPL_EUV;
    goto fail;
  }
  p->lpoll.data = p;
  uv_idle_init(loop, &p->idle);
  p->idle.data = p;
  uv_timer_init(loop, &p->timer);
  p->timer.data = p;
  p->handles = 3;
  uv_poll_start(&p->lpoll, UV_READABLE, on_listen);
  util_strlcpy(path_out, p->path, len);
  LOG_INFO(COMM, "comm proxy: listening on %s", p->path);
  *out = p;
  return GPL_OK;
fail:
  if (p->lfd >= 0) close(p->lfd);
  if (p->hosts_fd >= 0) close(p->hosts_fd);
  gpl_finalize(p->c);
  free_hosts(p);
  free(p);
  return rc;
}

void comm_proxy_stop(comm_proxy_t *p) {
  if (!p || p->stopping) return;
  p->stopping = 1;
  stop_polling(p);
  /* A collective in flight (the program was killed inside one) cannot be cancelled: its
   * communicator is left to MPI, and the client's memory stays mapped. */
  if (p->client && p->client->busy) {
    if (p->c) p->c->broken = 1;
    p->client->busy = 0;
    p->client->keep = 1;
  }
  if (p->client) {
    p->client->gone = 1;
    drop_client(p->client);
  }
  gpl_finalize(p->c);
  p->c = NULL;
  uv_poll_stop(&p->lpoll);
  uv_close((uv_handle_t *)&p->lpoll, on_proxy_handle_closed);
  uv_close((uv_handle_t *)&p->idle, on_proxy_handle_closed);
  uv_close((uv_handle_t *)&p->timer, on_proxy_handle_closed);
}
