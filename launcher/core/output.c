/* Line splitting and prefixing of a supervised program's output; nothing is lost or cut in half. */
#include "launcher/core/output.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/util.h"

/* Lines longer than this are passed on in pieces (the rest continues without a prefix). */
#define OUTPUT_MAX_LINE (1u << 20)

int output_init(output_t *o, const char *prefix_mode, const char *host, int rank, int tail_lines,
                const char *log_path) {
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
  if (log_path && *log_path) {
    o->log = fopen(log_path, "a");
    if (!o->log) {
      LOG_WARN("cannot open the log file %s: %s", log_path, strerror(errno));
      return GPL_ESYS;
    }
  }
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

/* Emit one piece of a line; `end` says whether it ends the line. */
static void emit(output_t *o, int is_err, const char *line, size_t len, int end) {
  /* Build prefix + line + newline and write it in one go, so lines of different ranks that share
   * mpirun's output channel are not mixed inside a line. */
  size_t plen = o->midline[is_err] ? 0 : strlen(o->prefix);
  char stackbuf[8192];
  size_t total = plen + len + (end ? 1 : 0);
  char *buf = total <= sizeof stackbuf ? stackbuf : malloc(total);
  if (!buf) return;
  memcpy(buf, o->prefix, plen);
  memcpy(buf + plen, line, len);
  if (end) buf[plen + len] = '\n';
  if (o->sink) o->sink(o->sink_arg, is_err, buf, total);
  else output_write_all(is_err ? STDERR_FILENO : STDOUT_FILENO, buf, total);
  if (o->log) fwrite(buf, 1, total, o->log);
  if (buf != stackbuf) free(buf);
  if (end) {
    o->lines[is_err]++;
    if (is_err) keep_tail(o, line, len);
    if (o->on_line) o->on_line(o->on_line_arg, is_err, line, len);
  }
  o->midline[is_err] = !end;
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

void output_feed(output_t *o, int is_err, const char *buf, size_t len) {
  int s = is_err ? 1 : 0;
  while (len) {
    const char *nl = memchr(buf, '\n', len);
    if (!nl) {
      if (append_partial(o, s, buf, len) < 0) {
        emit(o, s, buf, len, 0); /* no memory: pass it on rather than drop it */
        return;
      }
      if (o->plen[s] >= OUTPUT_MAX_LINE) {
        emit(o, s, o->partial[s], o->plen[s], 0);
        o->plen[s] = 0;
      }
      return;
    }
    size_t n = (size_t)(nl - buf);
    if (o->plen[s]) {
      if (append_partial(o, s, buf, n) == 0) {
        emit(o, s, o->partial[s], o->plen[s], 1);
      } else {
        emit(o, s, o->partial[s], o->plen[s], 0);
        emit(o, s, buf, n, 1);
      }
      o->plen[s] = 0;
    } else {
      emit(o, s, buf, n, 1);
    }
    buf = nl + 1;
    len -= n + 1;
  }
}

void output_flush(output_t *o, int is_err) {
  int s = is_err ? 1 : 0;
  if (o->plen[s] || o->midline[s]) emit(o, s, o->partial[s] ? o->partial[s] : "", o->plen[s], 1);
  o->plen[s] = 0;
  if (o->log) fflush(o->log);
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
  if (o->log) fclose(o->log);
  memset(o, 0, sizeof *o);
}
