/* Supervisor liveness outside MPI, the libuv/TCP driver of the tree in livetree.c: each process
 * connects to its parent and accepts its children, every connection TLS 1.3 with the "live"
 * channel's key (common/tls.h over memory BIOs); heartbeats on a libuv loop of its own thread, so a
 * busy or blocked supervisor loop does not miss them. */
#include "launcher/live/liveness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "common/envvar.h"
#include "common/mpix.h"
#include "common/tls.h"
#include "common/util.h"
#include "launcher/exitcode.h"
#include "launcher/exec/reap.h"
#include "launcher/job/seckey.h"
#include "launcher/live/livesock.h"

#define AUTH_S 1.5       /* a connection must have finished TLS and said HELLO within this (the
                          * check runs every 250 ms: dropped within 2 s, under load too) */
#define UNAUTH_MAX 256   /* connections not yet authenticated; past it the oldest silent one goes */

typedef struct peer_s {
  uv_tcp_t tcp;
  struct live_s *l;
  int rank;          /* -1 until its HELLO (a child) */
  int closing;
  int heard;         /* any byte arrived */
  double opened;
  tls_t *tls;
  char addr[48];     /* the peer's address, for the failure log */
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
  uv_timer_t timer, retry, authchk;
  uv_tcp_t server;        /* a process with children */
  int serving;
  peer_t *conns;          /* every connection: the parent's and the children's */
  peer_t *up;             /* the parent's, once connected and authenticated */
  peer_t *pending_up;     /* the parent's during its TLS handshake */
  tls_ctx_t *srv, *cli;   /* the "live" channel's TLS, both sides */
  unsigned char cbuf[65536]; /* records as read (one read at a time on this loop) */
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
  tls_free(p->tls);
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
  if (l->pending_up == p) l->pending_up = NULL;
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

static void peer_flush(peer_t *p, int is_abort);

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
  lt_hdr_t h;
  memcpy(&h, frame, sizeof h);
  if (tls_write(p->tls, frame, len) < 0) return;
  peer_flush(p, h.type == LT_ABORT);
}

/* What TLS has for the peer (records of frames, handshake flights), written as one buffer. */
static void peer_flush(peer_t *p, int is_abort) {
  live_t *l = p->l;
  size_t len = tls_pending(p->tls);
  if (!len || p->closing) return;
  wreq_t *w = malloc(sizeof *w + len);
  if (!w) return;
  w->len = tls_drain(p->tls, w->f, len);
  w->abort = is_abort;
  uv_buf_t b = uv_buf_init((char *)w->f, (unsigned)w->len);
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
  b->base = (char *)p->l->cbuf;
  b->len = sizeof p->l->cbuf;
}

/* One whole frame from p. */
static void peer_frame(peer_t *p, const unsigned char *f, size_t len) {
  live_t *l = p->l;
  if (p->rank < 0) {
    /* A child's first frame must be a hello with the job's token from one of our children. */
    int r = lt_hello_rank(l->core, f, len);
    int i = r >= 0 ? lt_kid_index(l->core, r) : -1;
    if (i < 0) {
      tls_fail_note("live", p->addr, "no HELLO with the job's token from a child");
      peer_close(p);
      return;
    }
    /* A second HELLO for a child that is connected: refused (the child's own connection stays;
     * one that broke is a loss the core hears of, never replaced). */
    if (l->by_kid[i] && l->by_kid[i] != p) {
      tls_fail_note("live", p->addr, "a second HELLO for a connected child");
      peer_close(p);
      return;
    }
    p->rank = r;
    l->by_kid[i] = p;
    lt_up(l->core, r, util_now());
    return;
  }
  lt_on_frame(l->core, p->rank, f, len, util_now());
}

/* The parent's connection finished its handshake: it is up. */
static void up_ready(peer_t *p) {
  live_t *l = p->l;
  l->pending_up = NULL;
  l->up = p;
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&p->tcp, &fd) == 0) __atomic_store_n(&l->up_fd, (int)fd, __ATOMIC_RELAXED);
  lt_up(l->core, l->parent, util_now());
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  peer_t *p = s->data;
  live_t *l = p->l;
  (void)b;
  if (n < 0) {
    peer_gone(p);
    return;
  }
  if (n == 0) return;
  p->heard = 1;
  tls_feed(p->tls, l->cbuf, (size_t)n);
  if (!tls_ready(p->tls)) {
    int h = tls_handshake(p->tls);
    /* Done: the child's Finished goes out with its HELLO (up_ready), the flush at the end. */
    if (h != 1) peer_flush(p, 0);
    if (h < 0) {
      tls_fail_note("live", p->addr, tls_why(p->tls));
      peer_close(p); /* (the parent's: connected again by the timer) */
      return;
    }
    if (h == 0) return;
    if (p == l->pending_up) up_ready(p);
  }
  while (!p->closing) {
    ssize_t m = sizeof p->buf > p->have ? tls_read(p->tls, p->buf + p->have, sizeof p->buf - p->have) : -1;
    if (m < 0) { /* a record that fails its MAC, a replay, or a frame past the bound */
      peer_gone(p);
      return;
    }
    if (m == 0) break;
    p->have += (size_t)m;
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
  if (!p->closing) peer_flush(p, 0);
}

static peer_t *peer_new(live_t *l, int server) {
  peer_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->l = l;
  p->rank = -1;
  p->opened = util_now();
  if (tls_new(&p->tls, server ? l->srv : l->cli, -1) < 0) {
    free(p);
    return NULL;
  }
  uv_tcp_init(&l->loop, &p->tcp);
  p->tcp.data = p;
  p->next = l->conns;
  l->conns = p;
  return p;
}

/* Past UNAUTH_MAX connections that have not authenticated: the oldest silent one (a real peer
 * speaks at once, its TLS ClientHello), else the oldest, makes room. */
static void make_room(live_t *l) {
  int n = 0;
  peer_t *silent = NULL, *old = NULL;
  for (peer_t *q = l->conns; q; q = q->next) {
    if (q->rank >= 0 || q->closing) continue;
    n++;
    if (!q->heard && (!silent || q->opened <= silent->opened)) silent = q;
    if (!old || q->opened <= old->opened) old = q;
  }
  if (n < UNAUTH_MAX) return;
  peer_t *v = silent ? silent : old;
  tls_fail_note("live", v->addr, "held a connection without authenticating");
  peer_close(v);
}

static void on_connection(uv_stream_t *server, int status) {
  live_t *l = server->data;
  if (status < 0) return;
  make_room(l);
  peer_t *p = peer_new(l, 1);
  if (!p) return;
  if (uv_accept(server, (uv_stream_t *)&p->tcp) < 0) {
    peer_close(p);
    return;
  }
  struct sockaddr_storage sa;
  int sl = sizeof sa;
  if (uv_tcp_getpeername(&p->tcp, (struct sockaddr *)&sa, &sl) == 0) uv_ip_name((struct sockaddr *)&sa, p->addr, sizeof p->addr);
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
  /* Up once the handshake completes (on_read): the ClientHello goes out now. */
  l->pending_up = p;
  uv_read_start((uv_stream_t *)&p->tcp, on_alloc, on_read);
  int h = tls_handshake(p->tls);
  peer_flush(p, 0);
  if (h < 0) peer_close(p);
  else if (h == 1) up_ready(p); /* (tls = off: no handshake) */
}

static void connect_up(live_t *l) {
  if (l->connecting || l->up || l->pending_up || l->parent < 0) return;
  struct sockaddr_storage sa;
  memset(&sa, 0, sizeof sa);
  if (strchr(l->parent_addr, ':')) uv_ip6_addr(l->parent_addr, l->parent_port, (struct sockaddr_in6 *)&sa);
  else uv_ip4_addr(l->parent_addr, l->parent_port, (struct sockaddr_in *)&sa);
  peer_t *p = peer_new(l, 0);
  if (!p) return;
  util_strlcpy(p->addr, l->parent_addr, sizeof p->addr);
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
}

/* Connections that did not finish TLS and say HELLO in time: not ours (dropped within 2 s). */
static void on_authchk(uv_timer_t *t) {
  live_t *l = t->data;
  double now = util_now();
  for (peer_t *p = l->conns; p; p = p->next)
    if (p->rank < 0 && !p->closing && now - p->opened > AUTH_S) {
      tls_fail_note("live", p->addr, tls_ready(p->tls) ? "no HELLO in time" : "no TLS handshake in time");
      peer_close(p);
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
  util_thread_name("gpl-live");
  uv_run(&l->loop, UV_RUN_DEFAULT);
}

/* ---- the supervisor's side ---- */

static void live_free(live_t *l) {
  tls_fail_report();
  tls_ctx_free(l->srv);
  tls_ctx_free(l->cli);
  lt_free(l->core);
  tree_shape_free(&l->shape);
  free(l->by_kid);
  free(l);
}

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
  /* The tree's token (inside TLS; the only check with tls = off) and keys: from the job key. */
  uint64_t token = 0;
  int keyed = o->sec && seckey_derive(o->sec, "live token", (uint8_t *)&token, sizeof token) == 0 &&
              tls_ctx_new(&l->srv, &o->sec->tls, "live", 1) == 0 && tls_ctx_new(&l->cli, &o->sec->tls, "live", 0) == 0;
  if (!keyed) LOG_WARN("liveness: no job key; a lost host will not be noticed");
  int ok = 0;
  rc = livesock_exchange(job, o->addr, nkids, l->parent, keyed, &l->listen_fd, l->parent_addr,
                         sizeof l->parent_addr, &l->parent_port, &ok);
  if (rc < 0 || !ok) {
    if (l->listen_fd >= 0) close(l->listen_fd);
    live_free(l);
    return rc < 0 ? rc : GPL_OK;
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
  uv_timer_init(&l->loop, &l->authchk);
  l->timer.data = l->retry.data = l->authchk.data = l;
  uv_timer_start(&l->authchk, on_authchk, 250, 250);
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
