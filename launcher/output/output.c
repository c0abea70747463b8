/* Line splitting and prefixing of a supervised program's output; nothing is lost or cut in half. */
#include "launcher/output/output.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/envvar.h"
#include "common/util.h"
#include "launcher/output/outq.h"
#include "launcher/output/ranklog.h"

int output_init(output_t *o, const char *prefix_mode, const char *host, int rank, int tail_lines,
                ranklog_t *log, outq_t *q) {
  memset(o, 0, sizeof *o);
  if (!prefix_mode || strcmp(prefix_mode, "host:rank") == 0)
    snprintf(o->prefix, sizeof o->prefix, "[%s:%d] ", host, rank);
  else if (strcmp(prefix_mode, "rank") == 0)
    snprintf(o->prefix, sizeof o->prefix, "[%d] ", rank);
  o->tail_cap = tail_lines > 0 ? tail_lines : 0;
  if (o->tail_cap) {
    o->tail = calloc((size_t)o->tail_cap, sizeof *o->tail);
    ALLOCCHECK(o->tail);
  }
  o->log = log;
  o->q = q;
  return GPL_OK;
}

/* Write everything, waiting when the reader (mpirun's output forwarding) is slow: our stdout may
 * be a non-blocking pipe, and a line dropped on EAGAIN is a line lost. */
void output_write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        struct pollfd pfd = {fd, POLLOUT, 0};
        poll(&pfd, 1, 1000);
        continue;
      }
      return; /* our own stdout is gone: nothing better to do */
    }
    p += w;
    n -= (size_t)w;
  }
}

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int output_streams_merged(int launcher_pid) {
  const char *m = envvar_get(ENVVAR_FRONTEND_MERGED);
  if (m && *m) return strcmp(m, "1") == 0;
  struct stat a, b;
  if (!launcher_pid) return fstat(1, &a) == 0 && fstat(2, &b) == 0 && same_file(&a, &b);
  /* Under mpirun our fds are its pipes, one per stream, and it writes what it reads from each to
   * its own fd 1 or 2 in pieces of any size: where those are one file, two streams cut lines. */
  char path[64], comm[64] = "";
  snprintf(path, sizeof path, "/proc/%d/comm", launcher_pid);
  if (util_read_small(path, comm, sizeof comm) < 0) return 0;
  comm[strcspn(comm, "\n")] = 0;
  if (strcmp(comm, "mpirun") != 0 && strcmp(comm, "mpiexec") != 0 && strcmp(comm, "orterun") != 0 &&
      strcmp(comm, "prterun") != 0)
    return 0;
  char p1[64], p2[64];
  snprintf(p1, sizeof p1, "/proc/%d/fd/1", launcher_pid);
  snprintf(p2, sizeof p2, "/proc/%d/fd/2", launcher_pid);
  return stat(p1, &a) == 0 && stat(p2, &b) == 0 && same_file(&a, &b);
}

static void keep_tail(output_t *o, const char *line, size_t len) {
  if (!o->tail_cap) return;
  int slot = (o->tail_head + o->tail_n) % o->tail_cap;
  if (o->tail_n == o->tail_cap) {
    slot = o->tail_head;
    o->tail_head = (o->tail_head + 1) % o->tail_cap;
  } else {
    o->tail_n++;
  }
  free(o->tail[slot]);
  size_t keep = len > 1000 ? 1000 : len;
  o->tail[slot] = malloc(keep + 1);
  if (o->tail[slot]) {
    memcpy(o->tail[slot], line, keep);
    o->tail[slot][keep] = 0;
  }
}

/* Emit one line, or one piece of an over-long line: prefix + text + newline in one go, so lines
 * of different ranks that share an output channel are never mixed inside a line. */
static void emit(output_t *o, int is_err, const char *line, size_t len) {
  size_t plen = strlen(o->prefix);
  char stackbuf[8192];
  size_t total = plen + len + 1;
  char *buf = total <= sizeof stackbuf ? stackbuf : malloc(total);
  if (buf) {
    memcpy(buf, o->prefix, plen);
    memcpy(buf + plen, line, len);
    buf[plen + len] = '\n';
    if (o->sink) o->sink(o->sink_arg, is_err, buf, total);
    else if (o->q) outq_write(o->q, is_err ? 2 : 1, buf, total);
    else output_write_all(is_err ? STDERR_FILENO : STDOUT_FILENO, buf, total);
    if (o->log) ranklog_write(o->log, buf, total);
    if (buf != stackbuf) free(buf);
  } else {
    LOG_WARN("out of memory: a line of %zu bytes of the program's output was dropped", len);
  }
  o->lines[is_err]++;
  if (is_err) keep_tail(o, line, len);
  if (o->on_line) o->on_line(o->on_line_arg, is_err, line, len);
}

static int append_partial(output_t *o, int s, const char *p, size_t n) {
  if (o->plen[s] + n > o->pcap[s]) {
    size_t cap = o->pcap[s] ? o->pcap[s] : 4096;
    while (cap < o->plen[s] + n) cap *= 2;
    char *nb = realloc(o->partial[s], cap);
    if (!nb) return -1;
    o->partial[s] = nb;
    o->pcap[s] = cap;
  }
  memcpy(o->partial[s] + o->plen[s], p, n);
  o->plen[s] += n;
  return 0;
}

/* The partial line plus n more bytes of buf, as one line (or piece). */
static void emit_joined(output_t *o, int s, const char *buf, size_t n) {
  if (!o->plen[s]) {
    emit(o, s, buf, n);
    return;
  }
  if (append_partial(o, s, buf, n) == 0) {
    emit(o, s, o->partial[s], o->plen[s]);
  } else { /* no memory to join them: two pieces rather than a loss */
    emit(o, s, o->partial[s], o->plen[s]);
    emit(o, s, buf, n);
  }
  o->plen[s] = 0;
}

void output_feed(output_t *o, int is_err, const char *buf, size_t len) {
  int s = is_err ? 1 : 0;
  while (len) {
    const char *nl = memchr(buf, '\n', len);
    size_t n = nl ? (size_t)(nl - buf) : len;
    if (o->plen[s] + n > OUTPUT_MAX_LINE) {
      /* over the cap: a piece of exactly the cap now, the rest continues as a new piece */
      size_t take = OUTPUT_MAX_LINE - o->plen[s];
      emit_joined(o, s, buf, take);
      buf += take;
      len -= take;
      continue;
    }
    if (!nl) {
      if (append_partial(o, s, buf, len) < 0) emit_joined(o, s, buf, len);
      return;
    }
    emit_joined(o, s, buf, n);
    buf = nl + 1;
    len -= n + 1;
  }
}

void output_flush(output_t *o, int is_err) {
  int s = is_err ? 1 : 0;
  if (o->plen[s]) emit(o, s, o->partial[s], o->plen[s]);
  o->plen[s] = 0;
  if (o->log) ranklog_flush(o->log);
}

void output_clear_tail(output_t *o) {
  for (int i = 0; i < o->tail_cap; i++) {
    free(o->tail[i]);
    o->tail[i] = NULL;
  }
  o->tail_n = o->tail_head = 0;
}

size_t output_tail(const output_t *o, char *buf, size_t len) {
  /* Keep the newest lines that fit: count back from the newest. */
  size_t need = 1;
  int first = o->tail_n;
  while (first > 0) {
    const char *l = o->tail[(o->tail_head + first - 1) % o->tail_cap];
    size_t n = l ? strlen(l) + 1 : 0;
    if (need + n > len) break;
    need += n;
    first--;
  }
  size_t off = 0;
  if (len) buf[0] = 0;
  for (int i = first; i < o->tail_n; i++) {
    const char *l = o->tail[(o->tail_head + i) % o->tail_cap];
    if (!l) continue;
    int w = snprintf(buf + off, len - off, "%s\n", l);
    if (w < 0 || (size_t)w >= len - off) break;
    off += (size_t)w;
  }
  return off;
}

void output_free(output_t *o) {
  output_clear_tail(o);
  free(o->tail);
  free(o->partial[0]);
  free(o->partial[1]);
  memset(o, 0, sizeof *o);
}
