/* Bounded output queue with a writer thread per stream; fds 1 and 2 interposed by a private pipe. */
#include "launcher/output/outq.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/log.h"
#include "common/util.h"
#include "gpulaunch/error.h"

#define CHUNK (64u << 10)
#define MSG_RESERVE (1u << 20) /* our own messages still fit when program output hit the cap */

typedef struct chunk_s {
  struct chunk_s *next;
  size_t len, cap;
  uint64_t lines;
  char data[];
} chunk_t;

typedef struct stream_s {
  struct outq_s *q;
  int fd;           /* 1 or 2 */
  int real;         /* the original stdout/stderr (a dup) */
  int pipe_r;       /* read end of the pipe that is fd now */
  chunk_t *head, *tail;
  size_t queued;    /* bytes in the list */
  size_t writing;   /* bytes of the chunk the thread is writing */
  uint64_t written; /* bytes written so far (progress) */
  uint64_t drop_lines, drop_bytes;
  int broken;       /* a write failed (the reader closed): the rest is dropped */
  int err;
  int wake;         /* eventfd: data for the writer (it also wakes on the pipe) */
  uv_thread_t th;
  int started, finished;
} stream_t;

struct outq_s {
  uv_mutex_t mu;
  uv_cond_t progress; /* a chunk was written (outq_stop waits on it) */
  int stopping;
  int merged;         /* outq_merge: everything goes through st[0] */
  stream_t st[2];
};

static void wake(stream_t *st) {
  uint64_t one = 1;
  (void)!write(st->wake, &one, sizeof one);
}

static void push(outq_t *q, stream_t *st, const char *p, size_t n, size_t limit, int line);

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      /* the reader made our stdout non-blocking: this thread may wait */
      struct pollfd pfd = {fd, POLLOUT, 0};
      poll(&pfd, 1, -1);
      continue;
    }
    if (w < 0) return errno;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void pump(outq_t *q, stream_t *st);

/* The thread of one stream: moves what is written to the pipe into the queue and the queue to
 * the real fd. It does not wait for the loop: a message of another thread (the liveness watch of
 * a hung loop) still gets out. */
static void writer(void *arg) {
  stream_t *st = arg;
  outq_t *q = st->q;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals are the loop's */
  util_thread_name("gpl-output");
  uv_mutex_lock(&q->mu);
  for (;;) {
    if (!q->stopping) pump(q, st);
    while (!st->head && !q->stopping) {
      uv_mutex_unlock(&q->mu);
      struct pollfd pf[2] = {{st->pipe_r, POLLIN, 0}, {st->wake, POLLIN, 0}};
      poll(pf, 2, -1);
      uint64_t v;
      if (pf[1].revents & POLLIN) (void)!read(st->wake, &v, sizeof v);
      uv_mutex_lock(&q->mu);
      if (!q->stopping) pump(q, st);
    }
    /* stopping: outq_stop has taken the queue; what it gave up on is counted there */
    if (!st->head || q->stopping) break;
    chunk_t *c = st->head;
    st->head = c->next;
    if (!st->head) st->tail = NULL;
    st->queued -= c->len;
    st->writing = c->len;
    int broken = st->broken;
    uv_mutex_unlock(&q->mu);
    int err = broken ? 0 : write_all(st->real, c->data, c->len);
    uv_mutex_lock(&q->mu);
    st->writing = 0;
    if (broken || err) {
      if (!st->broken) st->broken = 1, st->err = err;
      st->drop_bytes += c->len;
      st->drop_lines += c->lines;
    } else {
      st->written += c->len;
    }
    uv_cond_broadcast(&q->progress);
    free(c);
  }
  st->finished = 1;
  uv_cond_broadcast(&q->progress);
  uv_mutex_unlock(&q->mu);
}

/* What was written to the pipe (by any thread) into the queue; under the lock, so that bytes
 * keep their order whoever moves them. */
static void pump(outq_t *q, stream_t *st) {
  char buf[16384];
  for (;;) {
    ssize_t r = read(st->pipe_r, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    push(q, q->merged ? &q->st[0] : st, buf, (size_t)r, OUTQ_CAP + MSG_RESERVE, 0);
  }
}

/* Append under the lock; limit: the total backlog above which this is dropped. */
static void push(outq_t *q, stream_t *st, const char *p, size_t n, size_t limit, int line) {
  size_t total = q->st[0].queued + q->st[1].queued;
  if (st->broken || total + n > limit) {
    st->drop_bytes += n;
    st->drop_lines += (uint64_t)line;
    return;
  }
  chunk_t *t = st->tail;
  if (!t || t->len + n > t->cap) {
    size_t cap = n > CHUNK ? n : CHUNK;
    t = malloc(sizeof *t + cap);
    if (!t) {
      st->drop_bytes += n;
      st->drop_lines += (uint64_t)line;
      return;
    }
    t->next = NULL;
    t->len = 0;
    t->cap = cap;
    t->lines = 0;
    if (st->tail) st->tail->next = t;
    else st->head = t;
    st->tail = t;
  }
  int was_empty = st->queued == 0;
  memcpy(t->data + t->len, p, n);
  t->len += n;
  t->lines += (uint64_t)line;
  st->queued += n;
  if (was_empty) wake(st); /* the writer may be asleep; while it works it finds the rest itself */
}

void outq_write(outq_t *q, int fd, const char *p, size_t n) {
  if (!n) return;
  uv_mutex_lock(&q->mu);
  push(q, &q->st[fd == 2 && !q->merged], p, n, OUTQ_CAP, 1);
  uv_mutex_unlock(&q->mu);
}

void outq_merge(outq_t *q) {
  uv_mutex_lock(&q->mu);
  pump(q, &q->st[1]); /* what stderr holds now keeps its place */
  q->merged = 1;
  uv_mutex_unlock(&q->mu);
}

void outq_poll(outq_t *q) {
  uv_mutex_lock(&q->mu);
  for (int i = 0; i < 2; i++) pump(q, &q->st[i]);
  uv_mutex_unlock(&q->mu);
}

size_t outq_backlog(const outq_t *q) {
  outq_t *m = (outq_t *)q;
  uv_mutex_lock(&m->mu);
  size_t n = q->st[0].queued + q->st[1].queued + q->st[0].writing + q->st[1].writing;
  uv_mutex_unlock(&m->mu);
  return n;
}

/* Undo what outq_start did for streams [0, n). A stream whose writer is still blocked keeps its
 * pipe open: the writer reads it again when it wakes (a closed number could be another file). */
static void restore(outq_t *q, int n, const int *stuck) {
  for (int i = 0; i < n; i++) {
    stream_t *st = &q->st[i];
    if (st->real >= 0) dup2(st->real, st->fd);
    if (st->pipe_r >= 0 && !(stuck && stuck[i])) {
      close(st->pipe_r);
      st->pipe_r = -1;
    }
  }
}

int outq_start(outq_t **out) {
  *out = NULL;
  outq_t *q = calloc(1, sizeof *q);
  if (!q) return GPL_ENOMEM;
  uv_mutex_init(&q->mu);
  uv_cond_init(&q->progress);
  fflush(stdout);
  fflush(stderr);
  int ok = 1, i;
  for (i = 0; i < 2 && ok; i++) {
    stream_t *st = &q->st[i];
    st->q = q;
    st->fd = i + 1;
    st->pipe_r = -1;
    st->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int p[2];
    st->real = fcntl(st->fd, F_DUPFD_CLOEXEC, 3);
    if (st->wake < 0 || st->real < 0 || pipe2(p, O_CLOEXEC) < 0) {
      ok = 0;
      break;
    }
    /* room for a burst of our own messages between two polls */
    (void)fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    st->pipe_r = p[0];
    if (dup2(p[1], st->fd) < 0) ok = 0;
    close(p[1]);
  }
  if (ok) {
    for (int k = 0; k < 2; k++) {
      if (uv_thread_create(&q->st[k].th, writer, &q->st[k]) != 0) {
        ok = 0;
        break;
      }
      q->st[k].started = 1;
    }
  }
  if (!ok) {
    int e = errno;
    uv_mutex_lock(&q->mu);
    q->stopping = 1;
    for (int k = 0; k < 2; k++)
      if (q->st[k].wake >= 0) wake(&q->st[k]);
    uv_mutex_unlock(&q->mu);
    for (int k = 0; k < 2; k++)
      if (q->st[k].started) uv_thread_join(&q->st[k].th);
    restore(q, i < 2 ? i + 1 : 2, NULL);
    for (int k = 0; k < 2; k++) {
      if (q->st[k].real >= 0) close(q->st[k].real);
      if (q->st[k].wake >= 0) close(q->st[k].wake);
    }
    LOG_WARN("cannot queue the job's output (%s); it is written directly", strerror(e));
    free(q);
    return GPL_ESYS;
  }
  *out = q;
  return GPL_OK;
}

void outq_stop(outq_t *q, double idle_s) {
  if (!q) return;
  fflush(stdout);
  fflush(stderr);
  outq_poll(q);
  uv_mutex_lock(&q->mu);
  uint64_t seen = q->st[0].written + q->st[1].written;
  double deadline = util_now() + idle_s;
  int stuck[2] = {0, 0};
  for (;;) {
    size_t left = q->st[0].queued + q->st[1].queued + q->st[0].writing + q->st[1].writing;
    if (!left) break;
    uint64_t w = q->st[0].written + q->st[1].written;
    double now = util_now();
    if (w != seen) seen = w, deadline = now + idle_s; /* a slow reader that reads is waited for */
    if (now >= deadline) break;
    uv_cond_timedwait(&q->progress, &q->mu, (uint64_t)((deadline - now) * 1e9) + 1);
  }
  q->stopping = 1;
  for (int i = 0; i < 2; i++) {
    stream_t *st = &q->st[i];
    stuck[i] = st->writing > 0;
    for (chunk_t *c = st->head, *n; c; c = n) { /* given up: counted as dropped */
      n = c->next;
      st->drop_bytes += c->len;
      st->drop_lines += c->lines;
      free(c);
    }
    st->head = st->tail = NULL;
    st->queued = 0;
    if (stuck[i]) st->drop_bytes += st->writing; /* may still get out one day */
    wake(st);
  }
  uint64_t lines = q->st[0].drop_lines + q->st[1].drop_lines;
  uint64_t bytes = q->st[0].drop_bytes + q->st[1].drop_bytes;
  int err = q->st[0].err ? q->st[0].err : q->st[1].err;
  int which = q->st[0].drop_bytes ? 1 : 2;
  uv_mutex_unlock(&q->mu);
  /* the writers must be out of their pipe reads before the pipes close (restore closes them) */
  for (int i = 0; i < 2; i++)
    if (!stuck[i]) uv_thread_join(&q->st[i].th);
  /* Written after the last poll (another thread's last words): straight out, where the reader
   * reads at all. */
  for (int i = 0; i < 2; i++) {
    char buf[16384];
    ssize_t r;
    while (!stuck[i] && (r = read(q->st[i].pipe_r, buf, sizeof buf)) > 0) (void)write_all(q->st[i].real, buf, (size_t)r);
  }
  restore(q, 2, stuck);
  if (bytes && !stuck[1]) {
    log_print("gpulaunch %s: %llu line%s (%llu bytes) of the job's output could not be written "
              "to standard %s: %s\n",
              log_identity(), (unsigned long long)lines, lines == 1 ? "" : "s",
              (unsigned long long)bytes, which == 1 ? "output" : "error",
              err ? strerror(err) : "its reader stopped reading");
  }
  /* A writer blocked on a reader that never reads keeps q; the others are joined and freed. */
  int all_done = 1;
  for (int i = 0; i < 2; i++) {
    if (stuck[i]) {
      all_done = 0;
      continue;
    }
    close(q->st[i].real);
    close(q->st[i].wake);
  }
  if (all_done) {
    uv_cond_destroy(&q->progress);
    uv_mutex_destroy(&q->mu);
    free(q);
  }
}
