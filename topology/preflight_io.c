/* Preflight sockets on a libuv loop of their own: token-checked listeners and bounded probes,
 * inside TLS 1.3 with the "preflight" channel's key (common/tls.h over memory BIOs) once
 * preflight_set_tls is called. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "common/check.h"
#include "common/log.h"
#include "common/tls.h"
#include "common/util.h"
#include "topology/preflight.h"
#include "topology/preflight_port.h"

/* Wire (inside TLS): the prober sends HELLO (magic, its node, the node it means to reach, the first half of
 * the token); the listener answers ACK (magic, its node, the second half) and closes. Anything
 * else -- a wrong token, another node's number, garbage, silence -- is closed without a word. */
#define HALF (PREFLIGHT_TOKEN_LEN / 2)
#define HELLO_LEN (8 + 4 + 4 + HALF)
#define ACK_LEN (8 + 4 + HALF)
static const char HELLO_MAGIC[8] = {'G', 'P', 'L', 'P', 'R', 'B', '0', '1'};
static const char ACK_MAGIC[8] = {'G', 'P', 'L', 'A', 'C', 'K', '0', '1'};
/* How long a listener waits for a connected peer's hello. */
#define CONN_TIMEOUT_MS 10000

typedef struct probe_s {
  char src[48], dst[48];
  int port, peer, done, rc;
  double timeout, t0, t1;
  uint8_t token[PREFLIGHT_TOKEN_LEN];
  char err[160];
} probe_t;

/* Handles live in owners freed when their last handle has closed. */
typedef struct owner_s {
  int refs;
} owner_t;

typedef struct probe_io_s {
  owner_t own;
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_connect_t conn;
  preflight_t *pf;
  tls_t *tls;
  int idx, stage, finished, sent;
  uint8_t hello[HELLO_LEN];
  uint8_t ack[ACK_LEN];
  size_t got;
  char scratch[16384];
} probe_io_t;

typedef struct conn_s {
  owner_t own;
  uv_tcp_t tcp;
  uv_timer_t timer;
  preflight_t *pf;
  tls_t *tls;
  int closing, answered;
  char peer[48];
  uint8_t hello[HELLO_LEN];
  uint8_t ack[ACK_LEN];
  size_t got;
  char scratch[16384];
} conn_t;

typedef struct listener_s {
  owner_t own;
  uv_tcp_t tcp;
  preflight_t *pf;
} listener_t;

struct preflight_s {
  uv_loop_t loop;
  uv_timer_t poll;
  uint8_t token[PREFLIGHT_TOKEN_LEN];
  int node;
  probe_t *probes;
  int nprobes, cap, pending;
  int accepted, refused;
  int (*more)(void *);
  void *arg;
  double deadline;
  int timed_out;
  tls_ctx_t *srv, *cli; /* the "preflight" channel's TLS (plain until preflight_set_tls) */
};

/* What TLS has for the peer, written; done(arg) once it is on its way (status < 0: failed). */
typedef struct wbuf_s {
  uv_write_t w;
  void (*done)(void *arg, int status);
  void *arg;
  char data[];
} wbuf_t;

static void on_flushed(uv_write_t *w, int status) {
  wbuf_t *b = (wbuf_t *)w;
  if (b->done) b->done(b->arg, status);
  free(b);
}

static int flush(uv_stream_t *s, tls_t *t, void (*done)(void *, int), void *arg) {
  size_t n = tls_pending(t);
  if (!n) {
    if (done) done(arg, 0);
    return 0;
  }
  wbuf_t *b = malloc(sizeof *b + n);
  if (!b) return GPL_ENOMEM;
  n = tls_drain(t, b->data, n);
  b->done = done;
  b->arg = arg;
  uv_buf_t ub = uv_buf_init(b->data, (unsigned)n);
  int rc = uv_write(&b->w, s, &ub, 1, on_flushed);
  if (rc < 0) {
    free(b);
    return GPL_EUNREACH;
  }
  return 0;
}

static void on_close(uv_handle_t *h) {
  owner_t *o = h->data;
  if (o && --o->refs == 0) free(o);
}

static void close_handle(uv_handle_t *h) {
  if (!uv_is_closing(h)) uv_close(h, on_close);
}

/* Constant-time comparison: how long it takes says nothing about the token. */
static int same_bytes(const uint8_t *a, const uint8_t *b, size_t n) {
  uint8_t d = 0;
  for (size_t i = 0; i < n; i++) d |= (uint8_t)(a[i] ^ b[i]);
  return d == 0;
}

static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int parse_addr(const char *s, int port, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  if (uv_ip4_addr(s, port, (struct sockaddr_in *)ss) == 0) return 0;
  if (uv_ip6_addr(s, port, (struct sockaddr_in6 *)ss) == 0) return 0;
  return GPL_EINVAL;
}

/* ---- listener side -------------------------------------------------------------------------- */

static void conn_close(conn_t *c, int refused) {
  if (c->closing) return;
  c->closing = 1;
  if (refused) c->pf->refused++;
  if (refused == 2) tls_fail_note("preflight", c->peer, tls_why(c->tls));
  tls_free(c->tls);
  c->tls = NULL;
  uv_timer_stop(&c->timer);
  close_handle((uv_handle_t *)&c->tcp);
  close_handle((uv_handle_t *)&c->timer);
}

static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  conn_t *c = h->data;
  *buf = uv_buf_init(c->scratch, sizeof c->scratch);
}

static void on_ack_written(void *arg, int status) {
  (void)status;
  conn_close(arg, 0);
}

static void on_conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  conn_t *c = s->data;
  if (c->closing) return;
  if (nread < 0) { /* EOF or error before a whole hello: not one of ours */
    conn_close(c, 1);
    return;
  }
  if (c->answered || nread == 0) return;
  tls_feed(c->tls, buf->base, (size_t)nread);
  if (!tls_ready(c->tls)) {
    int h = tls_handshake(c->tls);
    flush(s, c->tls, NULL, NULL);
    if (h < 0) {
      conn_close(c, 2); /* a peer without the job's key */
      return;
    }
    if (h == 0) return;
  }
  ssize_t got = tls_read(c->tls, c->hello + c->got, HELLO_LEN - c->got);
  if (got < 0) {
    conn_close(c, 1);
    return;
  }
  c->got += (size_t)got;
  if (c->got < HELLO_LEN) return;
  c->answered = 1;
  preflight_t *pf = c->pf;
  int ok = memcmp(c->hello, HELLO_MAGIC, 8) == 0 && get32(c->hello + 12) == (uint32_t)pf->node &&
           same_bytes(c->hello + 16, pf->token, HALF);
  if (!ok) {
    LOG_DEBUG(NET, "preflight listener: refused a connection (wrong magic, node or token)");
    conn_close(c, 1);
    return;
  }
  LOG_DEBUG(NET, "preflight listener: node %u reached us", get32(c->hello + 8));
  pf->accepted++; /* counted before answering: a prober that has our answer has been counted */
  memcpy(c->ack, ACK_MAGIC, 8);
  put32(c->ack + 8, (uint32_t)pf->node);
  memcpy(c->ack + 12, pf->token + HALF, HALF);
  if (tls_write(c->tls, c->ack, ACK_LEN) < 0 || flush(s, c->tls, on_ack_written, c) < 0) conn_close(c, 1);
}

static void on_conn_timeout(uv_timer_t *t) { conn_close(t->data, 1); }

static void on_connection(uv_stream_t *server, int status) {
  listener_t *l = server->data;
  if (status < 0) {
    LOG_DEBUG(NET, "preflight listener: %s", uv_strerror(status));
    return;
  }
  conn_t *c = calloc(1, sizeof *c);
  if (!c) return;
  c->pf = l->pf;
  uv_tcp_init(&l->pf->loop, &c->tcp);
  uv_timer_init(&l->pf->loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->own.refs = 2;
  if (tls_new(&c->tls, l->pf->srv, -1) < 0 || uv_accept(server, (uv_stream_t *)&c->tcp) < 0 ||
      uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, on_conn_read) < 0) {
    conn_close(c, 1);
    return;
  }
  struct sockaddr_storage sa;
  int sl = sizeof sa;
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &sl) == 0) uv_ip_name((struct sockaddr *)&sa, c->peer, sizeof c->peer);
  uv_tcp_nodelay(&c->tcp, 1);
  uv_timer_start(&c->timer, on_conn_timeout, CONN_TIMEOUT_MS, 0);
}

int preflight_listen(preflight_t *pf, const char *addr, int *port) {
  struct sockaddr_storage ss;
  if (parse_addr(addr, *port > 0 ? *port : 0, &ss) < 0) {
    LOG_WARN("preflight: '%s' is not an IP address", addr);
    return GPL_EINVAL;
  }
  listener_t *l = calloc(1, sizeof *l);
  ALLOCCHECK(l);
  l->pf = pf;
  l->own.refs = 1;
  UVCHECK(uv_tcp_init(&pf->loop, &l->tcp));
  l->tcp.data = l;
  int rc = preflight_port_listen(&l->tcp, &ss, 128, on_connection); /* [net] port_range */
  if (rc < 0) {
    LOG_WARN("preflight: cannot listen on %s: %s", addr, uv_strerror(rc));
    close_handle((uv_handle_t *)&l->tcp);
    return GPL_EUNREACH;
  }
  int len = (int)sizeof ss;
  UVCHECK(uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&ss, &len));
  *port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port : ((struct sockaddr_in6 *)&ss)->sin6_port);
  return 0;
}

/* ---- prober side ---------------------------------------------------------------------------- */

static void probe_finish(probe_io_t *io, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int send_hello(probe_io_t *io, uv_stream_t *s);

static void probe_finish(probe_io_t *io, int rc, const char *fmt, ...) {
  if (io->finished) return;
  io->finished = 1;
  probe_t *p = &io->pf->probes[io->idx];
  p->done = 1;
  p->rc = rc;
  p->t1 = util_now();
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
  }
  io->pf->pending--;
  tls_free(io->tls);
  io->tls = NULL;
  uv_timer_stop(&io->timer);
  close_handle((uv_handle_t *)&io->tcp);
  close_handle((uv_handle_t *)&io->timer);
}

static void probe_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  probe_io_t *io = h->data;
  *buf = uv_buf_init(io->scratch, sizeof io->scratch);
}

static void on_probe_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  probe_io_t *io = s->data;
  if (io->finished) return;
  if (nread == UV_EOF) {
    probe_finish(io, GPL_EUNREACH, "the listener closed the connection without accepting the token");
    return;
  }
  if (nread < 0) {
    probe_finish(io, GPL_EUNREACH, "reading the answer: %s", uv_strerror((int)nread));
    return;
  }
  if (nread == 0) return;
  tls_feed(io->tls, buf->base, (size_t)nread);
  if (!tls_ready(io->tls)) {
    int h = tls_handshake(io->tls);
    /* Done: the client's Finished goes out with the HELLO, in one segment (send_hello). Two
     * small writes in a row would wait for the listener's delayed ACK (Nagle: 40 ms). */
    if (h != 1 || io->sent) flush(s, io->tls, NULL, NULL);
    if (h < 0) {
      probe_finish(io, GPL_EUNREACH, "the listener failed the TLS handshake (%s): not this job's", tls_why(io->tls));
      return;
    }
    if (h == 0) return;
  }
  if (!io->sent && send_hello(io, s) < 0) return;
  ssize_t got = tls_read(io->tls, io->ack + io->got, ACK_LEN - io->got);
  if (got < 0) {
    probe_finish(io, GPL_EUNREACH, "the listener closed the connection without accepting the token");
    return;
  }
  io->got += (size_t)got;
  if (io->got < ACK_LEN) return;
  probe_t *p = &io->pf->probes[io->idx];
  if (memcmp(io->ack, ACK_MAGIC, 8) != 0 || !same_bytes(io->ack + 12, p->token + HALF, HALF))
    probe_finish(io, GPL_EUNREACH, "the listener answered without the job's token (another program on that port?)");
  else if (get32(io->ack + 8) != (uint32_t)p->peer)
    probe_finish(io, GPL_EUNREACH, "answered by node %u instead of node %d", get32(io->ack + 8), p->peer);
  else
    probe_finish(io, 0, NULL);
}

static void on_hello_written(void *arg, int status) {
  probe_io_t *io = arg;
  if (status < 0 && !io->finished) probe_finish(io, GPL_EUNREACH, "sending: %s", uv_strerror(status));
}

/* The HELLO, once TLS is up. 0, or -1 (finished). */
static int send_hello(probe_io_t *io, uv_stream_t *s) {
  probe_t *p = &io->pf->probes[io->idx];
  io->sent = 1;
  memcpy(io->hello, HELLO_MAGIC, 8);
  put32(io->hello + 8, (uint32_t)io->pf->node);
  put32(io->hello + 12, (uint32_t)p->peer);
  memcpy(io->hello + 16, p->token, HALF);
  if (tls_write(io->tls, io->hello, HELLO_LEN) < 0 || flush(s, io->tls, on_hello_written, io) < 0) {
    probe_finish(io, GPL_EUNREACH, "cannot send the hello");
    return -1;
  }
  return 0;
}

static void on_connect(uv_connect_t *req, int status) {
  probe_io_t *io = req->data;
  if (io->finished) return; /* timed out: the close cancelled the connect */
  if (status < 0) {
    probe_finish(io, GPL_EUNREACH, "%s", uv_strerror(status));
    return;
  }
  io->stage = 1;
  uv_tcp_nodelay(&io->tcp, 1); /* small flights and frames: none waits for an ACK */
  int rc = uv_read_start(req->handle, probe_alloc, on_probe_read);
  if (rc < 0) {
    probe_finish(io, GPL_EUNREACH, "%s", uv_strerror(rc));
    return;
  }
  int h = tls_handshake(io->tls); /* the ClientHello (plain: done at once) */
  if (h < 0 || flush(req->handle, io->tls, NULL, NULL) < 0) {
    probe_finish(io, GPL_EUNREACH, "TLS: %s", tls_why(io->tls));
    return;
  }
  if (h == 1) send_hello(io, req->handle);
}

static void on_probe_timeout(uv_timer_t *t) {
  probe_io_t *io = t->data;
  probe_t *p = &io->pf->probes[io->idx];
  probe_finish(io, GPL_EUNREACH, "timed out after %.1f s %s", p->timeout,
               io->stage == 0 ? "connecting" : "waiting for the answer");
}

int preflight_probe(preflight_t *pf, const char *src, const char *dst, int port, int peer_node, double timeout_s,
                    const uint8_t *token) {
  if (pf->nprobes == pf->cap) {
    int ncap = pf->cap ? 2 * pf->cap : 8;
    probe_t *v = realloc(pf->probes, sizeof *v * (size_t)ncap);
    ALLOCCHECK(v);
    pf->probes = v, pf->cap = ncap;
  }
  int idx = pf->nprobes++;
  probe_t *p = &pf->probes[idx];
  memset(p, 0, sizeof *p);
  util_strlcpy(p->src, src ? src : "", sizeof p->src);
  util_strlcpy(p->dst, dst, sizeof p->dst);
  p->port = port;
  p->peer = peer_node;
  p->timeout = timeout_s;
  p->t0 = util_now();
  memcpy(p->token, token ? token : pf->token, PREFLIGHT_TOKEN_LEN);

  probe_io_t *io = calloc(1, sizeof *io);
  ALLOCCHECK(io);
  io->pf = pf;
  io->idx = idx;
  pf->pending++;
  if (tls_new(&io->tls, pf->cli, -1) < 0) {
    free(io);
    pf->pending--;
    p->done = 1;
    p->rc = GPL_ENOMEM;
    return idx;
  }
  uv_tcp_init(&pf->loop, &io->tcp);
  uv_timer_init(&pf->loop, &io->timer);
  io->tcp.data = io->timer.data = io->conn.data = io;
  io->own.refs = 2;
  struct sockaddr_storage sd, ss;
  if (parse_addr(dst, port, &sd) < 0) {
    probe_finish(io, GPL_EINVAL, "'%s' is not an IP address", dst);
    return idx;
  }
  if (src && *src) {
    int rc = parse_addr(src, 0, &ss);
    if (rc == 0) rc = uv_tcp_bind(&io->tcp, (const struct sockaddr *)&ss, 0);
    if (rc < 0) {
      probe_finish(io, GPL_EUNREACH, "cannot use the source address %s: %s", src, rc == GPL_EINVAL ? "not an IP address" : uv_strerror(rc));
      return idx;
    }
  }
  uint64_t ms = timeout_s > 0 ? (uint64_t)(timeout_s * 1e3) : 1;
  uv_timer_start(&io->timer, on_probe_timeout, ms, 0);
  int rc = uv_tcp_connect(&io->conn, &io->tcp, (const struct sockaddr *)&sd, on_connect);
  if (rc < 0) probe_finish(io, GPL_EUNREACH, "%s", uv_strerror(rc));
  return idx;
}

/* ---- the loop ------------------------------------------------------------------------------- */

int preflight_init(preflight_t **out, const uint8_t token[PREFLIGHT_TOKEN_LEN], int node) {
  preflight_t *pf = calloc(1, sizeof *pf);
  ALLOCCHECK(pf);
  int rc = uv_loop_init(&pf->loop);
  if (rc < 0) {
    LOG_WARN("uv_loop_init: %s", uv_strerror(rc));
    free(pf);
    return GPL_EUV;
  }
  uv_timer_init(&pf->loop, &pf->poll);
  pf->poll.data = NULL;
  memcpy(pf->token, token, PREFLIGHT_TOKEN_LEN);
  pf->node = node;
  tls_cfg_t plain = {.off = 1};
  if (tls_ctx_new(&pf->srv, &plain, "preflight", 1) < 0 || tls_ctx_new(&pf->cli, &plain, "preflight", 0) < 0) {
    preflight_free(pf);
    return GPL_ENOMEM;
  }
  *out = pf;
  return 0;
}

int preflight_set_tls(preflight_t *pf, const tls_cfg_t *cfg) {
  tls_ctx_t *srv = NULL, *cli = NULL;
  int rc = tls_ctx_new(&srv, cfg, "preflight", 1);
  if (rc == 0) rc = tls_ctx_new(&cli, cfg, "preflight", 0);
  if (rc < 0) {
    tls_ctx_free(srv);
    return rc;
  }
  tls_ctx_free(pf->srv);
  tls_ctx_free(pf->cli);
  pf->srv = srv;
  pf->cli = cli;
  return 0;
}

static void on_poll(uv_timer_t *t) {
  preflight_t *pf = (preflight_t *)((char *)t - offsetof(preflight_t, poll));
  if (util_now() >= pf->deadline) {
    pf->timed_out = 1;
    uv_stop(&pf->loop);
  } else if (pf->pending == 0 && (!pf->more || !pf->more(pf->arg))) {
    uv_stop(&pf->loop);
  }
}

int preflight_loop(preflight_t *pf, int (*more)(void *arg), void *arg, double deadline) {
  pf->more = more;
  pf->arg = arg;
  pf->deadline = deadline;
  pf->timed_out = 0;
  uv_timer_start(&pf->poll, on_poll, 1, 1);
  uv_run(&pf->loop, UV_RUN_DEFAULT);
  uv_timer_stop(&pf->poll);
  return pf->timed_out ? GPL_ETIMEDOUT : 0;
}

int preflight_result(const preflight_t *pf, int i, char *err, size_t len) {
  if (i < 0 || i >= pf->nprobes) return GPL_EINVAL;
  const probe_t *p = &pf->probes[i];
  if (err && len) util_strlcpy(err, p->done ? p->err : "still running", len);
  return p->done ? p->rc : GPL_ESTATE;
}

double preflight_seconds(const preflight_t *pf, int i) {
  if (i < 0 || i >= pf->nprobes || !pf->probes[i].done) return 0;
  return pf->probes[i].t1 - pf->probes[i].t0;
}

void preflight_counts(const preflight_t *pf, int *accepted, int *refused) {
  if (accepted) *accepted = pf->accepted;
  if (refused) *refused = pf->refused;
}

static void walk_close(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, h->data ? on_close : NULL);
}

void preflight_free(preflight_t *pf) {
  if (!pf) return;
  uv_walk(&pf->loop, walk_close, NULL);
  uv_run(&pf->loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&pf->loop);
  if (rc < 0) LOG_WARN("preflight: loop not closed: %s", uv_strerror(rc));
  memset(pf->token, 0, sizeof pf->token);
  tls_fail_report();
  tls_ctx_free(pf->srv);
  tls_ctx_free(pf->cli);
  free(pf->probes);
  free(pf);
}
