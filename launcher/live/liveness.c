/* Supervisor liveness outside MPI, the libuv/TCP driver of the tree in livetree.c: each process
 * connects to its parent and accepts its children; heartbeats on a libuv loop of its own thread,
 * so a busy or blocked supervisor loop does not miss them. */
#include "launcher/live/liveness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "common/envvar.h"
#include "common/mpix.h"
#include "common/util.h"
#include "launcher/exitcode.h"
#include "launcher/exec/reap.h"
#include "launcher/live/livesock.h"

typedef struct peer_s {
  uv_tcp_t tcp;
  struct live_s *l;
  int rank;          /* -1 until its HELLO (a child) */
  int closing;
  double opened;
  size_t have;
  unsigned char buf[LT_FRAME_MAX];
  struct peer_s *next;
} peer_t;

struct live_s {
  live_opts_t o;
  int rank, size;
  tree_shape_t shape;
  lt_t *core;
  int parent;             /* -1: rank 0 */
  char parent_addr[64];
  int parent_port, listen_fd;
  uv_loop_t loop;
  uv_thread_t thread;
  uv_async_t wake;
  uv_timer_t timer, retry;
  uv_tcp_t server;        /* a process with children */
  int serving;
  peer_t *conns;          /* every connection: the parent's and the children's */
  peer_t *up;             /* the parent's, once connected */
  peer_t **by_kid;        /* each child's connection once it said hello (lt_kid_index) */
  uv_connect_t creq;
  int connecting;
  /* Shared with the supervisor's thread. */
  uv_mutex_t mu;
  uv_cond_t cv;
  int have_event, stopping, abort_rank, stall_said;
  int aborts_pending, aborts_done; /* ABORT frames written; live_abort_all waits for them */
  live_event_t ev;
  double lost_at, stop_at;
  uint64_t tick_ns;       /* __atomic */
  int child;              /* __atomic */
  int up_fd;              /* __atomic: the parent's socket, -1: none (live_parent_gone) */
};

static void close_all(uv_handle_t *h, void *arg);

/* ---- the loss: told once to the supervisor (the core's io.lost) ---- */

static void io_lost(void *arg, const int *ranks, int n, live_why_t why, double silent) {
  live_t *l = arg;
  if (n <= 0) return;
  uv_mutex_lock(&l->mu);
  int tell = !l->have_event && !l->stopping; /* a job that is ending loses nobody */
  if (tell) {
    l->ev.lost_rank = ranks[0];
    l->ev.why = why;
    l->ev.silent_s = silent;
    l->ev.nlost = n;
    size_t off = 0;
    l->ev.who[0] = 0;
    size_t cap = sizeof l->ev.who;
    int i = 0;
    for (; i < n && off < cap - 200; i++) {
      char name[300];
      int w = snprintf(l->ev.who + off, cap - off, "%s%s", i ? ", " : "", mpix_rank_name(ranks[i], name, sizeof name));
      if (w > 0) off += (size_t)w;
    }
    /* Past the room: the count, and each host not named yet, once (gpulaunch-run leaves out
     * every host in a "(host NAME)"; two lost together must both be there). */
    if (i < n) {
      int w = snprintf(l->ev.who + off, cap - off, " and %d more", n - i);
      if (w > 0) off += (size_t)w;
      for (; i < n && off < cap - 80; i++) {
        char name[300];
        const char *h = strstr(mpix_rank_name(ranks[i], name, sizeof name), "(host ");
        if (!h || strstr(l->ev.who, h)) continue;
        w = snprintf(l->ev.who + off, cap - off, ", %s", h);
        if (w > 0) off += (size_t)w;
      }
    }
    l->have_event = 1;
    l->lost_at = util_now();
  }
  uv_mutex_unlock(&l->mu);
  if (tell) {
    LOG_INFO(SUP, "liveness: %d rank(s) lost (%d)", n, (int)why);
    if (l->o.notify) l->o.notify(l->o.arg);
  }
}

/* ---- connections ---- */

static void on_closed(uv_handle_t *h) {
  peer_t *p = h->data;
  live_t *l = p->l;
  for (peer_t **pp = &l->conns; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  free(p);
}

static void peer_close(peer_t *p) {
  if (p->closing) return;
  p->closing = 1;
  live_t *l = p->l;
  if (l->up == p) {
    l->up = NULL;
    __atomic_store_n(&l->up_fd, -1, __ATOMIC_RELAXED);
  }
  int i = p->rank >= 0 && p->rank != l->parent ? lt_kid_index(l->core, p->rank) : -1;
  if (i >= 0 && l->by_kid[i] == p) l->by_kid[i] = NULL;
  uv_close((uv_handle_t *)&p->tcp, on_closed);
}

/* A connection ended (EOF, error): the core decides whether it is a loss. */
static void peer_gone(peer_t *p) {
  live_t *l = p->l;
  int r = p->rank, was = p == l->up || (r >= 0 && r != l->parent);
  peer_close(p);
  if (r >= 0 && was) lt_on_closed(l->core, r, util_now());
}

typedef struct wreq_s {
  uv_write_t w;
  size_t len;
  int abort;
  unsigned char f[];
} wreq_t;

static void on_written(uv_write_t *w, int status) {
  (void)status; /* a failed write shows as a closed or silent connection */
  wreq_t *r = (wreq_t *)w;
  if (r->abort) {
    live_t *l = w->handle->loop->data;
    uv_mutex_lock(&l->mu);
    if (--l->aborts_pending == 0) {
      l->aborts_done = 1;
      uv_cond_signal(&l->cv);
    }
    uv_mutex_unlock(&l->mu);
  }
  free(w);
}

/* The core's io.send: to the parent or a child, by rank. */
static void io_send(void *arg, int to, const void *frame, size_t len) {
  live_t *l = arg;
  peer_t *p = NULL;
  if (to == l->parent) p = l->up;
  else {
    int i = lt_kid_index(l->core, to);
    if (i >= 0) p = l->by_kid[i];
  }
  if (!p || p->closing) return;
  wreq_t *w = malloc(sizeof *w + len);
  if (!w) return;
  memcpy(w->f, frame, len);
  w->len = len;
  lt_hdr_t h;
  memcpy(&h, frame, sizeof h);
  w->abort = h.type == LT_ABORT;
  uv_buf_t b = uv_buf_init((char *)w->f, (unsigned)len);
  if (w->abort) {
    uv_mutex_lock(&l->mu);
    l->aborts_pending++;
    uv_mutex_unlock(&l->mu);
  }
  if (uv_write(&w->w, (uv_stream_t *)&p->tcp, &b, 1, on_written) < 0) {
    if (w->abort) {
      uv_mutex_lock(&l->mu);
      l->aborts_pending--;
      uv_mutex_unlock(&l->mu);
    }
    free(w);
  }
}

static int32_t io_progress(void *arg, int from, int32_t age_ms) {
  live_t *l = arg;
  if (!l->o.progress) return -1;
  return l->o.progress(l->o.progress_arg, from, age_ms);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  peer_t *p = h->data;
  (void)suggested;
  b->base = (char *)p->buf + p->have;
  b->len = sizeof p->buf - p->have;
}

/* One whole frame from p. */
static void peer_frame(peer_t *p, const unsigned char *f, size_t len) {
  live_t *l = p->l;
  if (p->rank < 0) {
    /* A child's first frame must be a hello with the job's token from one of our children. */
    int r = lt_hello_rank(l->core, f, len);
    int i = r >= 0 ? lt_kid_index(l->core, r) : -1;
    if (i < 0) {
      LOG_INFO(SUP, "liveness: a connection without the job's token was dropped");
      peer_close(p);
      return;
    }
    p->rank = r;
    if (l->by_kid[i] && l->by_kid[i] != p) {
      l->by_kid[i]->rank = -1; /* the old one's close is not this child's */
      peer_close(l->by_kid[i]);
    }
    l->by_kid[i] = p;
    lt_up(l->core, r, util_now());
    return;
  }
  lt_on_frame(l->core, p->rank, f, len, util_now());
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  peer_t *p = s->data;
  (void)b;
  if (n < 0) {
    peer_gone(p);
    return;
  }
  p->have += (size_t)n;
  size_t off = 0;
  while (!p->closing) {
    long need = lt_frame_len(p->buf + off, p->have - off);
    if (need < 0) {
      peer_close(p);
      return;
    }
    if (need == 0 || (size_t)need > p->have - off) break;
    peer_frame(p, p->buf + off, (size_t)need);
    off += (size_t)need;
  }
  if (p->closing) return;
  memmove(p->buf, p->buf + off, p->have - off);
  p->have -= off;
}

static peer_t *peer_new(live_t *l) {
  peer_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->l = l;
  p->rank = -1;
  p->opened = util_now();
  uv_tcp_init(&l->loop, &p->tcp);
  p->tcp.data = p;
  p->next = l->conns;
  l->conns = p;
  return p;
}

static void on_connection(uv_stream_t *server, int status) {
  live_t *l = server->data;
  if (status < 0) return;
  peer_t *p = peer_new(l);
  if (!p) return;
  if (uv_accept(server, (uv_stream_t *)&p->tcp) < 0) {
    peer_close(p);
    return;
  }
  uv_tcp_nodelay(&p->tcp, 1);
  uv_read_start((uv_stream_t *)&p->tcp, on_alloc, on_read);
}

/* ---- the connection to the parent ---- */

static void on_connected(uv_connect_t *req, int status) {
  live_t *l = req->data;
  peer_t *p = (peer_t *)req->handle->data;
  l->connecting = 0;
  if (status < 0) {
    peer_close(p); /* retried by the timer until the connect deadline */
    return;
  }
  uv_tcp_nodelay(&p->tcp, 1);
  l->up = p;
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&p->tcp, &fd) == 0) __atomic_store_n(&l->up_fd, (int)fd, __ATOMIC_RELAXED);
  uv_read_start((uv_stream_t *)&p->tcp, on_alloc, on_read);
  lt_up(l->core, l->parent, util_now());
}

static void connect_up(live_t *l) {
  if (l->connecting || l->up || l->parent < 0) return;
  struct sockaddr_storage sa;
  memset(&sa, 0, sizeof sa);
  if (strchr(l->parent_addr, ':')) uv_ip6_addr(l->parent_addr, l->parent_port, (struct sockaddr_in6 *)&sa);
  else uv_ip4_addr(l->parent_addr, l->parent_port, (struct sockaddr_in *)&sa);
  peer_t *p = peer_new(l);
  if (!p) return;
  p->rank = l->parent; /* its close counts once it is up (l->up) */
  l->creq.data = l;
  if (uv_tcp_connect(&l->creq, &p->tcp, (const struct sockaddr *)&sa, on_connected) < 0) {
    peer_close(p);
    return;
  }
  l->connecting = 1;
}

/* ---- the heartbeat timer ---- */

static void on_timer(uv_timer_t *t) {
  live_t *l = t->data;
  double now = util_now();
  uv_mutex_lock(&l->mu);
  double lost_at = l->lost_at;
  int stopping = l->stopping;
  uv_mutex_unlock(&l->mu);
  /* The supervisor had its grace to end the program and leave, and did not: do it here. */
  if (lost_at > 0 && now - lost_at > l->o.grace_s) {
    int child = __atomic_load_n(&l->child, __ATOMIC_RELAXED);
    /* through the reaper (gpulaunch-exec): it kills the whole tree, setsid'd descendants too */
    if (child > 0 && reap_request(child) < 0) kill(-child, SIGKILL);
    log_print("gpulaunch: %s: the supervisor did not end within %.0f s of losing a rank; "
              "its program was killed, leaving now (exit status %d)\n", log_identity(), l->o.grace_s,
              GPL_EXIT_TIMEOUT);
    _exit(GPL_EXIT_TIMEOUT);
  }
  /* A supervisor whose loop stopped is hung: this rank stops beating, so its parent names it
   * (and its children end) and the job ends. */
  double tick = (double)__atomic_load_n(&l->tick_ns, __ATOMIC_RELAXED) / 1e9;
  int stalled = l->o.stall_s > 0 && tick > 0 && now - tick > l->o.stall_s;
  if (stalled && !l->stall_said) {
    l->stall_said = 1;
    LOG_WARN("the supervisor's loop has not run for %.0f s: no more heartbeats from this rank", now - tick);
  }
  if (stopping) {
    /* Ending: close once every child said goodbye (it got the job's end), or after 2 s. Not
     * before on_wake said ours (stop_at): a close without a goodbye would be a loss. */
    if (l->stop_at > 0 && (lt_all_bye(l->core) || now - l->stop_at > 2.0)) uv_walk(&l->loop, close_all, NULL);
    return;
  }
  if (lt_on_tick(l->core, now, stalled)) connect_up(l);
  /* Connections that never said hello in time: not ours. */
  for (peer_t *p = l->conns; p; p = p->next)
    if (p->rank < 0 && now - p->opened > 5.0) peer_close(p);
}

/* ---- requests from the supervisor's thread ---- */

static void close_all(uv_handle_t *h, void *arg) {
  (void)arg;
  if (uv_is_closing(h)) return;
  if (h->type == UV_TCP && h->data && h != (uv_handle_t *)&((live_t *)h->loop->data)->server) {
    peer_close(h->data);
    return;
  }
  uv_close(h, NULL);
}

static void on_bye_sent(uv_timer_t *t) {
  /* The goodbyes had their moment on the wire: close everything, the loop then ends. */
  uv_walk(t->loop, close_all, NULL);
}

/* The goodbye to the parent went out, and after it our end of the connection (libuv shuts the
 * socket down once every queued write is in the kernel): the parent reads BYE then EOF in that
 * order, so closing now cannot look like a loss. */
static void on_up_shut(uv_shutdown_t *req, int status) {
  uv_loop_t *loop = req->handle->loop;
  free(req);
  if (status != UV_ECANCELED) uv_walk(loop, close_all, NULL); /* (cancelled: closed already) */
}

static void on_wake(uv_async_t *a) {
  live_t *l = a->data;
  uv_mutex_lock(&l->mu);
  int stopping = l->stopping, abort_rank = l->abort_rank;
  l->abort_rank = -1;
  l->aborts_pending++; /* held until every frame is queued */
  uv_mutex_unlock(&l->mu);
  if (abort_rank >= 0) {
    int sent = lt_abort(l->core, abort_rank);
    LOG_INFO(SUP, "liveness: told %d children the job ends", sent);
  }
  uv_mutex_lock(&l->mu);
  if (--l->aborts_pending == 0) {
    l->aborts_done = 1;
    uv_cond_signal(&l->cv);
  }
  uv_mutex_unlock(&l->mu);
  if (stopping && l->stop_at == 0) {
    lt_stop(l->core);
    l->stop_at = util_now();
    uv_timer_stop(&l->timer);
    if (lt_nkids(l->core) == 0) {
      /* Say goodbye, shut our end down behind it, close once that is done (50 ms at most). A
       * process with children waits for theirs (its timer, at a faster pace now) so that none
       * mistakes its closing for a loss. */
      uv_shutdown_t *req = l->up && !l->up->closing ? malloc(sizeof *req) : NULL;
      if (req && uv_shutdown(req, (uv_stream_t *)&l->up->tcp, on_up_shut) < 0) free(req);
      uv_timer_start(&l->retry, on_bye_sent, 50, 0);
    } else {
      uv_timer_start(&l->timer, on_timer, 10, 10);
    }
  }
}

static void run(void *arg) {
  live_t *l = arg;
  uv_run(&l->loop, UV_RUN_DEFAULT);
}

/* ---- the supervisor's side ---- */

static void live_free(live_t *l) {
  lt_free(l->core);
  tree_shape_free(&l->shape);
  free(l->by_kid);
  free(l);
}

/* What each rank shares at start: where its children reach it, and rank 0's token. */
typedef struct share_s {
  uint64_t token;
  int32_t port; /* 0: no listener (no children, or it could not open one) */
  int32_t need; /* it has children */
  char addr[48];
} share_t;

/* GPULAUNCH_LIVE_FANOUT: leaders per leader in the tree, 2..1024 (default TREE_FANOUT_DEFAULT). */
static int fanout_env(const job_t *job, int *out) {
  const char *v = envvar_get(ENVVAR_LIVE_FANOUT);
  *out = TREE_FANOUT_DEFAULT;
  if (!v || !*v) return GPL_OK;
  char *end;
  errno = 0;
  long k = strtol(v, &end, 10);
  if (errno || *end || k < 2 || k > 1024) {
    if (job->rank == 0)
      log_print("gpulaunch: environment GPULAUNCH_LIVE_FANOUT=%s: not a whole number from 2 to 1024 "
                "(leaders per leader in the liveness tree)\n", v);
    return GPL_ECONFIG;
  }
  *out = (int)k;
  return GPL_OK;
}

int live_start(live_t **out, job_t *job, const live_opts_t *o) {
  *out = NULL;
  if (job->size < 2) return GPL_OK;
  int fanout = o->fanout;
  if (fanout <= 0) CHECK(fanout_env(job, &fanout));
  live_t *l = calloc(1, sizeof *l);
  if (!l) return GPL_ENOMEM;
  l->o = *o;
  l->rank = job->rank;
  l->size = job->size;
  l->listen_fd = -1;
  l->abort_rank = -1;
  l->up_fd = -1;
  l->shape = (tree_shape_t){.size = job->size, .nnodes = job->nnodes, .fanout = fanout,
                            .node_of = job->node_of, .leader_of_node = job->leader_of_node};
  int rc = tree_shape_index(&l->shape);
  if (rc < 0) {
    free(l);
    return rc;
  }
  l->parent = tree_parent(&l->shape, job->rank);
  int nkids = tree_children(&l->shape, job->rank, NULL, 0);
  int v6 = strchr(o->addr, ':') != NULL;
  share_t me;
  memset(&me, 0, sizeof me);
  me.need = nkids > 0;
  if (nkids > 0) {
    /* One descriptor per child: raise the soft limit where a big fan-in needs it. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)nkids + 256 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    l->listen_fd = livesock_listen(v6, &me.port);
    if (l->listen_fd < 0)
      LOG_WARN("liveness: cannot listen for the other supervisors (%s); a lost host will not be noticed",
               strerror(errno));
    if (job->nnodes == 1) util_strlcpy(me.addr, v6 ? "::1" : "127.0.0.1", sizeof me.addr);
    else if (job->rank == 0) util_strlcpy(me.addr, o->addr, sizeof me.addr);
    else if (livesock_route_addr(o->addr, me.addr, sizeof me.addr) < 0)
      LOG_WARN("liveness: no address of this host on the route to %s; its children cannot reach it", o->addr);
  }
  if (job->rank == 0 && uv_random(NULL, NULL, &me.token, sizeof me.token, 0, NULL) < 0) me.token = util_now_ns();
  share_t *all = calloc((size_t)job->size, sizeof *all);
  if (!all) rc = GPL_ENOMEM;
  else rc = mpix_allgather(&me, (int)sizeof me, all, job->world, job->timeout, "start-up (supervisor liveness)");
  if (rc < 0) {
    free(all);
    if (l->listen_fd >= 0) close(l->listen_fd);
    live_free(l);
    return rc;
  }
  /* Every rank decides the same from the same table: a parent without a listener or address
   * means no liveness for anyone. */
  int ok = 1;
  for (int r = 0; r < job->size; r++)
    if (all[r].need && (all[r].port == 0 || !all[r].addr[0])) ok = 0;
  if (l->parent >= 0) {
    const share_t *p = &all[l->parent];
    l->parent_port = p->port;
    if (job->node_of[l->parent] == job->node) util_strlcpy(l->parent_addr, v6 ? "::1" : "127.0.0.1", sizeof l->parent_addr);
    else util_strlcpy(l->parent_addr, p->addr, sizeof l->parent_addr);
  }
  uint64_t token = all[0].token;
  free(all);
  if (!ok) {
    if (l->listen_fd >= 0) close(l->listen_fd);
    live_free(l);
    return GPL_OK;
  }
  lt_cfg_t cfg = {l->shape, job->rank, token, o->interval, o->timeout, o->connect_s};
  lt_io_t io = {l, io_send, io_lost, io_progress};
  l->by_kid = calloc((size_t)nkids + 1, sizeof *l->by_kid);
  if (!l->by_kid || (rc = lt_init(&l->core, &cfg, &io, util_now())) < 0) {
    if (l->listen_fd >= 0) close(l->listen_fd);
    live_free(l);
    return rc < 0 ? rc : GPL_ENOMEM;
  }
  LOG_INFO(SUP, "liveness: parent %d (%s:%d), %d children", l->parent, l->parent_addr, l->parent_port, nkids);
  uv_mutex_init(&l->mu);
  uv_cond_init(&l->cv);
  uv_loop_init(&l->loop);
  l->loop.data = l;
  uv_async_init(&l->loop, &l->wake, on_wake);
  l->wake.data = l;
  uv_timer_init(&l->loop, &l->timer);
  uv_timer_init(&l->loop, &l->retry);
  l->timer.data = l->retry.data = l;
  uint64_t ms = (uint64_t)(o->interval * 1000);
  uv_timer_start(&l->timer, on_timer, ms ? ms : 1, ms ? ms : 1);
  if (l->listen_fd >= 0) {
    uv_tcp_init(&l->loop, &l->server);
    l->server.data = l;
    l->serving = 1;
    if (uv_tcp_open(&l->server, l->listen_fd) < 0 || uv_listen((uv_stream_t *)&l->server, SOMAXCONN, on_connection) < 0)
      LOG_WARN("liveness: cannot serve the listener; a lost host will not be noticed");
  }
  connect_up(l);
  live_tick(l);
  if (uv_thread_create(&l->thread, run, l) != 0) {
    LOG_WARN("liveness: no thread; a lost host will not be noticed");
    uv_walk(&l->loop, close_all, NULL);
    uv_run(&l->loop, UV_RUN_DEFAULT);
    uv_loop_close(&l->loop);
    live_free(l);
    return GPL_OK;
  }
  *out = l;
  return GPL_OK;
}

void live_tick(live_t *l) {
  if (l) __atomic_store_n(&l->tick_ns, util_now_ns(), __ATOMIC_RELAXED);
}

void live_set_child(live_t *l, int pid) {
  if (l) __atomic_store_n(&l->child, pid, __ATOMIC_RELAXED);
}

int live_event(live_t *l, live_event_t *ev) {
  if (!l) return 0;
  uv_mutex_lock(&l->mu);
  int have = l->have_event;
  if (have) *ev = l->ev;
  uv_mutex_unlock(&l->mu);
  return have;
}

static int parent_lost(live_t *l) {
  uv_mutex_lock(&l->mu);
  int told = l->have_event && l->ev.lost_rank == l->parent && l->ev.why == LIVE_CLOSED;
  uv_mutex_unlock(&l->mu);
  return told;
}

int live_parent_gone(live_t *l, double wait_s) {
  if (!l || l->parent < 0) return -1;
  if (parent_lost(l)) return l->parent;
  int fd = __atomic_load_n(&l->up_fd, __ATOMIC_RELAXED);
  struct pollfd pf = {fd, POLLRDHUP, 0};
  if (fd < 0 || poll(&pf, 1, 0) != 1 || !(pf.revents & (POLLRDHUP | POLLHUP))) return -1;
  /* Its end is closed: what it sent last (a goodbye, or nothing: a death) is this thread's to
   * read, and on a loaded machine it may not have yet. */
  for (double until = util_now() + wait_s; util_now() < until;) {
    if (parent_lost(l)) return l->parent;
    if (__atomic_load_n(&l->up_fd, __ATOMIC_RELAXED) < 0) break; /* read: a goodbye */
    usleep(5000);
  }
  return parent_lost(l) ? l->parent : -1;
}

void live_abort_all(live_t *l, int lost_rank) {
  if (!l) return;
  uv_mutex_lock(&l->mu);
  l->abort_rank = lost_rank;
  l->aborts_done = 0;
  uv_mutex_unlock(&l->mu);
  uv_async_send(&l->wake);
  /* Wait (1 s at most) for the frames to be written: this rank's end closes the connections,
   * and a child that saw the close before the abort would report its parent lost. */
  uv_mutex_lock(&l->mu);
  uint64_t deadline = uv_hrtime() + 1000000000ull;
  while (!l->aborts_done) {
    uint64_t now = uv_hrtime();
    if (now >= deadline || uv_cond_timedwait(&l->cv, &l->mu, deadline - now) != 0) break;
  }
  uv_mutex_unlock(&l->mu);
}

void live_stop(live_t *l) {
  if (!l) return;
  uv_mutex_lock(&l->mu);
  l->stopping = 1;
  uv_mutex_unlock(&l->mu);
  uv_async_send(&l->wake);
  uv_thread_join(&l->thread);
  uv_loop_close(&l->loop);
  uv_cond_destroy(&l->cv);
  uv_mutex_destroy(&l->mu);
  live_free(l);
}
