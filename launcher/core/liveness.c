/* Supervisor liveness outside MPI: rank 0 listens, every other rank connects; heartbeats both ways
 * on a libuv loop of its own thread, so a busy or blocked supervisor loop does not miss them. */
#include "launcher/core/liveness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "common/mpix.h"
#include "common/util.h"
#include "launcher/core/exitcode.h"
#include "launcher/core/reap.h"

#define LIVE_MAGIC 0x4270484cu /* "LHpB" */
enum { M_HELLO = 1, M_BEAT, M_BYE, M_ABORT };

/* One frame; HELLO carries the token (a peer that does not know it is dropped). */
typedef struct frame_s {
  uint32_t magic, type;
  int32_t rank, arg;
  int32_t progress_ms; /* ms since the sender's program last made progress (-1: unknown) */
  uint64_t token;
} frame_t;

typedef struct peer_s {
  uv_tcp_t tcp;
  struct live_s *l;
  int rank;          /* -1 until its HELLO */
  int closing;
  double opened;
  size_t have;
  unsigned char buf[sizeof(frame_t)];
  struct peer_s *next;
} peer_t;

struct live_s {
  char *const *hosts;     /* by rank (the job's, borrowed): a lost host's ranks named together */
  live_opts_t o;
  int rank, size;
  uint64_t token;
  int port, listen_fd;
  uv_loop_t loop;
  uv_thread_t thread;
  uv_async_t wake;
  uv_timer_t timer, retry;
  uv_tcp_t server;        /* rank 0 */
  peer_t *conns;          /* rank 0: every accepted connection; the others: the one to rank 0 */
  peer_t **by_rank;       /* rank 0: the connection of each rank once it said hello */
  double *last;           /* last frame from each rank (the others: [0] only) */
  char *bye;              /* a goodbye came: its end is not a loss */
  uv_connect_t creq;
  int connecting;
  double t0, last_timer;
  /* Shared with the supervisor's thread. */
  uv_mutex_t mu;
  uv_cond_t cv;
  int have_event, stopping, abort_rank, stall_said;
  int aborts_pending, aborts_done; /* ABORT frames written; live_abort_all waits for them */
  live_event_t ev;
  double lost_at, stop_at;
  uint64_t tick_ns;       /* __atomic */
  int child;              /* __atomic */
};

static int send_frame(peer_t *p, int type, int arg);
static void close_all(uv_handle_t *h, void *arg);

/* ---- the loss: told once to the supervisor ---- */

/* ranks[0..n) were lost together (one reason). */
static void lost_many(live_t *l, const int *ranks, int n, live_why_t why, double silent) {
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
    for (int i = 0; i < n && off < sizeof l->ev.who - 80; i++) {
      char name[300];
      int w = snprintf(l->ev.who + off, sizeof l->ev.who - off, "%s%s", i ? ", " : "",
                       mpix_rank_name(ranks[i], name, sizeof name));
      if (w > 0) off += (size_t)w;
      if (i + 1 < n && off >= sizeof l->ev.who - 80) snprintf(l->ev.who + off, sizeof l->ev.who - off, " and %d more", n - i - 1);
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

static void lost(live_t *l, int rank, live_why_t why, double silent) {
  lost_many(l, &rank, 1, why, silent);
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
  if (p->l->by_rank && p->rank > 0 && p->l->by_rank[p->rank] == p) p->l->by_rank[p->rank] = NULL;
  uv_close((uv_handle_t *)&p->tcp, on_closed);
}

/* A connection ended (EOF, error): a loss unless its rank said goodbye or the job is ending. */
static void peer_gone(peer_t *p) {
  live_t *l = p->l;
  int r = l->rank == 0 ? p->rank : 0;
  peer_close(p);
  if (r < 0 || (l->rank == 0 && r == 0)) return; /* never said hello: nothing lost */
  if (!l->bye[r]) lost(l, r, LIVE_CLOSED, 0); /* lost_many: not while the job is ending */
}

static void on_frame(peer_t *p, const frame_t *f) {
  live_t *l = p->l;
  if (f->magic != LIVE_MAGIC) {
    peer_close(p);
    return;
  }
  if (l->rank == 0 && p->rank < 0) {
    /* The first frame must be a hello with the job's token and a rank of the job. */
    if (f->type != M_HELLO || f->token != l->token || f->rank <= 0 || f->rank >= l->size) {
      LOG_INFO(SUP, "liveness: a connection without the job's token was dropped");
      peer_close(p);
      return;
    }
    p->rank = f->rank;
    if (l->by_rank[p->rank] && l->by_rank[p->rank] != p) peer_close(l->by_rank[p->rank]);
    l->by_rank[p->rank] = p;
  }
  int r = l->rank == 0 ? p->rank : 0;
  l->last[r] = util_now();
  if (f->type == M_BYE) l->bye[r] = 1;
  if (f->progress_ms >= 0 && l->o.progress) l->o.progress(l->o.progress_arg, r, f->progress_ms);
  if (f->type == M_ABORT && l->rank != 0) lost(l, f->arg, LIVE_ABORT, 0);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  peer_t *p = h->data;
  (void)suggested;
  b->base = (char *)p->buf + p->have;
  b->len = sizeof p->buf - p->have;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  peer_t *p = s->data;
  (void)b;
  if (n < 0) {
    peer_gone(p);
    return;
  }
  p->have += (size_t)n;
  if (p->have == sizeof p->buf) {
    frame_t f;
    memcpy(&f, p->buf, sizeof f);
    p->have = 0;
    on_frame(p, &f);
  }
}

typedef struct wreq_s {
  uv_write_t w;
  frame_t f;
} wreq_t;

static void on_written(uv_write_t *w, int status) {
  (void)status; /* a failed write shows as a closed or silent connection */
  wreq_t *r = (wreq_t *)w;
  if (r->f.type == M_ABORT) {
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

/* 1 when the frame is on its way. */
static int send_frame(peer_t *p, int type, int arg) {
  if (!p || p->closing) return 0;
  wreq_t *w = calloc(1, sizeof *w);
  if (!w) return 0;
  int32_t age = p->l->o.progress ? p->l->o.progress(p->l->o.progress_arg, -1, 0) : -1;
  w->f = (frame_t){LIVE_MAGIC, (uint32_t)type, p->l->rank, arg, age, p->l->token};
  uv_buf_t b = uv_buf_init((char *)&w->f, sizeof w->f);
  if (uv_write(&w->w, (uv_stream_t *)&p->tcp, &b, 1, on_written) < 0) {
    free(w);
    return 0;
  }
  return 1;
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

/* ---- the connection to rank 0 ---- */

static void connect_up(live_t *l);

static void on_connected(uv_connect_t *req, int status) {
  live_t *l = req->data;
  peer_t *p = (peer_t *)req->handle->data;
  l->connecting = 0;
  if (status < 0) {
    peer_close(p); /* retried by the timer until the connect deadline */
    return;
  }
  uv_tcp_nodelay(&p->tcp, 1);
  p->rank = 0;
  l->last[0] = util_now();
  send_frame(p, M_HELLO, 0);
  uv_read_start((uv_stream_t *)&p->tcp, on_alloc, on_read);
}

static void connect_up(live_t *l) {
  if (l->connecting || l->conns) return;
  struct sockaddr_storage sa;
  memset(&sa, 0, sizeof sa);
  if (strchr(l->o.addr, ':')) uv_ip6_addr(l->o.addr, l->port, (struct sockaddr_in6 *)&sa);
  else uv_ip4_addr(l->o.addr, l->port, (struct sockaddr_in *)&sa);
  peer_t *p = peer_new(l);
  if (!p) return;
  l->creq.data = l;
  if (uv_tcp_connect(&l->creq, &p->tcp, (const struct sockaddr *)&sa, on_connected) < 0) {
    peer_close(p);
    return;
  }
  l->connecting = 1;
}

/* ---- the heartbeat timer ---- */

/* A lost host stops all its ranks at once, but their last beats differ by up to an interval, so
 * the first past the deadline would be named alone. silent[0..ns) (ascending, past the deadline):
 * add the ranks of the same hosts that have been silent for half the deadline as well (a live
 * rank beats every interval, at most a fifth of it), keeping rank order. Returns the new count
 * (silent holds size entries). */
static int add_host_mates(live_t *l, int *silent, int ns, double now) {
  char *mark = l->hosts ? calloc((size_t)l->size, 1) : NULL;
  if (!mark) return ns;
  double quiet_s = GPL_MAX(2 * l->o.interval, l->o.timeout / 2);
  for (int i = 0; i < ns; i++) mark[silent[i]] = 1;
  for (int r = 1; r < l->size; r++) {
    if (mark[r] || l->bye[r] || l->last[r] <= 0 || now - l->last[r] <= quiet_s) continue;
    for (int i = 0; i < ns && !mark[r]; i++)
      if (strcmp(l->hosts[silent[i]], l->hosts[r]) == 0) mark[r] = 2;
  }
  int n = 0;
  for (int r = 1; r < l->size; r++)
    if (mark[r]) silent[n++] = r;
  free(mark);
  return n;
}

static void on_timer(uv_timer_t *t) {
  live_t *l = t->data;
  double now = util_now();
  /* This thread itself did not run for a long while (the process was stopped, SIGSTOP, or
   * starved): the silence it would see is its own, not its peers'. Start counting again. */
  if (l->last_timer > 0 && now - l->last_timer > l->o.timeout / 2) {
    LOG_INFO(SUP, "liveness: this rank did not run for %.1f s; not counting it against the others", now - l->last_timer);
    for (int r = 0; r < l->size; r++)
      if (l->last[r] > 0) l->last[r] = now;
  }
  l->last_timer = now;
  uv_mutex_lock(&l->mu);
  double lost_at = l->lost_at;
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
  /* A supervisor whose loop stopped is hung: this rank stops beating, so rank 0 (or, for rank 0,
   * every other rank) names it and the job ends. */
  double tick = (double)__atomic_load_n(&l->tick_ns, __ATOMIC_RELAXED) / 1e9;
  int stalled = l->o.stall_s > 0 && tick > 0 && now - tick > l->o.stall_s;
  if (stalled && !l->stall_said) {
    l->stall_said = 1;
    LOG_WARN("the supervisor's loop has not run for %.0f s: no more heartbeats from this rank", now - tick);
  }
  uv_mutex_lock(&l->mu);
  int stopping = l->stopping;
  uv_mutex_unlock(&l->mu);
  if (l->rank == 0 && !stopping) {
    int *silent = calloc((size_t)l->size, sizeof *silent), ns = 0;
    double longest = 0;
    for (int r = 1; r < l->size; r++) {
      if (l->bye[r]) continue;
      if (!stalled) send_frame(l->by_rank[r], M_BEAT, 0);
      if (!l->by_rank[r] && l->last[r] == 0 && now - l->t0 > l->o.connect_s) lost(l, r, LIVE_NEVER, 0);
      else if (l->last[r] > 0 && now - l->last[r] > l->o.timeout && silent) {
        silent[ns++] = r;
        longest = GPL_MAX(longest, now - l->last[r]);
      }
    }
    if (ns > 0) ns = add_host_mates(l, silent, ns, now);
    lost_many(l, silent, ns, LIVE_SILENT, longest);
    free(silent);
    /* Connections that never said hello in time: not ours. */
    for (peer_t *p = l->conns; p; p = p->next)
      if (p->rank < 0 && now - p->opened > 5.0) peer_close(p);
  } else if (l->rank == 0) {
    /* Ending: close once every rank said goodbye (it got the job's end), or after 2 s. */
    int all = 1;
    for (int r = 1; r < l->size; r++) all &= l->bye[r] || !l->by_rank[r];
    if (all || now - l->stop_at > 2.0) uv_walk(&l->loop, close_all, NULL);
  } else if (!l->bye[0] && !stopping) {
    if (!l->conns && !l->connecting && l->last[0] == 0) {
      if (now - l->t0 > l->o.connect_s) lost(l, 0, LIVE_NEVER, 0);
      else connect_up(l);
    } else if (l->last[0] > 0 && !l->conns) {
      /* The connection failed after it was made: peer_gone said so. */
    } else if (!stalled && l->conns && l->conns->rank == 0) {
      send_frame(l->conns, M_BEAT, 0);
    }
    if (l->last[0] > 0 && now - l->last[0] > l->o.timeout) lost(l, 0, LIVE_SILENT, now - l->last[0]);
  }
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

static void on_wake(uv_async_t *a) {
  live_t *l = a->data;
  uv_mutex_lock(&l->mu);
  int stopping = l->stopping, abort_rank = l->abort_rank;
  l->abort_rank = -1;
  uv_mutex_unlock(&l->mu);
  if (abort_rank >= 0) {
    int sent = 0;
    uv_mutex_lock(&l->mu);
    l->aborts_pending = 1; /* held until every frame is queued */
    uv_mutex_unlock(&l->mu);
    for (peer_t *p = l->conns; p; p = p->next)
      if (p->rank > 0 && !l->bye[p->rank]) {
        uv_mutex_lock(&l->mu);
        l->aborts_pending += send_frame(p, M_ABORT, abort_rank);
        uv_mutex_unlock(&l->mu);
        sent++;
      }
    uv_mutex_lock(&l->mu);
    if (--l->aborts_pending == 0) {
      l->aborts_done = 1;
      uv_cond_signal(&l->cv);
    }
    uv_mutex_unlock(&l->mu);
    LOG_INFO(SUP, "liveness: told %d ranks the job ends", sent);
  }
  if (stopping) {
    for (peer_t *p = l->conns; p; p = p->next)
      if (p->rank >= 0) send_frame(p, M_BYE, 0);
    l->stop_at = util_now();
    if (l->rank != 0) {
      /* Say goodbye, give it a moment on the wire, close. Rank 0 waits for the goodbyes (its
       * timer, at a faster pace now) so that no rank mistakes its closing for a loss. */
      uv_timer_stop(&l->timer);
      uv_timer_start(&l->retry, on_bye_sent, 50, 0);
    } else {
      uv_timer_stop(&l->timer);
      uv_timer_start(&l->timer, on_timer, 10, 10);
    }
  }
}

static void run(void *arg) {
  live_t *l = arg;
  uv_run(&l->loop, UV_RUN_DEFAULT);
}

/* ---- the supervisor's side ---- */

/* Rank 0's listener on every address of its family, port chosen by the kernel. */
static int open_listener(const char *addr, int *port) {
  int v6 = strchr(addr, ':') != NULL;
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_storage sa;
  socklen_t len = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  memset(&sa, 0, sizeof sa);
  sa.ss_family = (sa_family_t)(v6 ? AF_INET6 : AF_INET);
  if (bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, SOMAXCONN) < 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(v6 ? ((struct sockaddr_in6 *)&sa)->sin6_port : ((struct sockaddr_in *)&sa)->sin_port);
  return fd;
}

static void live_free(live_t *l) {
  free(l->last);
  free(l->bye);
  free(l->by_rank);
  free(l);
}

int live_start(live_t **out, job_t *job, const live_opts_t *o) {
  *out = NULL;
  if (job->size < 2) return GPL_OK;
  struct { int port; uint64_t token; } share = {0, 0};
  int fd = -1;
  if (job->rank == 0) {
    /* One descriptor per rank: raise the soft limit where a big job needs it. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)job->size + 256 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    fd = open_listener(o->addr, &share.port);
    if (fd < 0) LOG_WARN("liveness: cannot listen for the other supervisors (%s); a lost host will not be noticed",
                         strerror(errno));
    if (uv_random(NULL, NULL, &share.token, sizeof share.token, 0, NULL) < 0) share.token = util_now_ns();
  }
  CHECK(mpix_bcast(&share, (int)sizeof share, 0, job->world, job->timeout, "start-up (supervisor liveness)"));
  if (share.port == 0) return GPL_OK;

  live_t *l = calloc(1, sizeof *l);
  if (!l) {
    if (fd >= 0) close(fd);
    return GPL_ENOMEM;
  }
  l->hosts = job->hosts;
  l->o = *o;
  l->rank = job->rank;
  l->size = job->size;
  l->token = share.token;
  l->port = share.port;
  l->abort_rank = -1;
  l->t0 = util_now();
  l->last = calloc((size_t)job->size, sizeof *l->last);
  l->bye = calloc((size_t)job->size, 1);
  l->by_rank = job->rank == 0 ? calloc((size_t)job->size, sizeof *l->by_rank) : NULL;
  if (!l->last || !l->bye || (job->rank == 0 && !l->by_rank)) {
    live_free(l);
    if (fd >= 0) close(fd);
    return GPL_ENOMEM;
  }
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
  if (job->rank == 0) {
    uv_tcp_init(&l->loop, &l->server);
    l->server.data = l;
    if (uv_tcp_open(&l->server, fd) < 0 || uv_listen((uv_stream_t *)&l->server, SOMAXCONN, on_connection) < 0)
      LOG_WARN("liveness: cannot serve the listener; a lost host will not be noticed");
  } else {
    connect_up(l);
  }
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

void live_abort_all(live_t *l, int lost_rank) {
  if (!l) return;
  uv_mutex_lock(&l->mu);
  l->abort_rank = lost_rank;
  l->aborts_done = 0;
  uv_mutex_unlock(&l->mu);
  uv_async_send(&l->wake);
  /* Wait (1 s at most) for the frames to be written: this rank's end closes the connections,
   * and a rank that saw the close before the abort would report rank 0 lost. */
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
