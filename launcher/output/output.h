/* Output of a supervised program: whole lines, prefixed, copied to our stdout/stderr and a log
 * file, with the last stderr lines kept for the root-cause report. */
#ifndef GPL_LAUNCHER_OUTPUT_H
#define GPL_LAUNCHER_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

struct outq_s;
struct ranklog_s;

/* Lines longer than this are passed on in pieces of this size, each prefixed and ended, so no
 * other rank's line can land inside one (a tqdm bar that only ever writes \r is such a line). */
#define OUTPUT_MAX_LINE (1u << 20)

typedef void (*output_line_fn)(void *arg, int is_err, const char *line, size_t len);
/* Where prefixed lines go instead of our stdout/stderr (e.g. forwarded to rank 0). */
typedef void (*output_sink_fn)(void *arg, int is_err, const char *data, size_t len);

typedef struct output_s {
  char prefix[300];   /* "[host:rank] ", "[rank] " or "" */
  struct ranklog_s *log; /* per-rank log file or NULL */
  struct outq_s *q;   /* where lines for our stdout/stderr go (NULL: written directly) */
  /* One partial line per stream (0 = stdout, 1 = stderr). */
  char *partial[2];
  size_t plen[2], pcap[2];
  /* Ring of the last stderr lines. */
  char **tail;
  int tail_cap, tail_n, tail_head;
  output_line_fn on_line; /* optional hook for every complete line (OOM detection) */
  void *on_line_arg;
  output_sink_fn sink;    /* optional: replaces writing to fd 1/2 */
  void *sink_arg;
  unsigned long long lines[2];
} output_t;

/* prefix_mode: "host:rank", "rank" or "none". log and q may be NULL (borrowed, not owned). */
int output_init(output_t *o, const char *prefix_mode, const char *host, int rank, int tail_lines,
                struct ranklog_s *log, struct outq_s *q);
/* Feed bytes read from the program's stdout (is_err = 0) or stderr (1). */
void output_feed(output_t *o, int is_err, const char *buf, size_t len);
/* End of a stream: a last line without newline is passed on with one added. */
void output_flush(output_t *o, int is_err);
/* Forget the kept stderr lines (a new attempt starts). */
void output_clear_tail(output_t *o);
/* The last stderr lines, oldest first, each ending in '\n', into buf. */
size_t output_tail(const output_t *o, char *buf, size_t len);
void output_free(output_t *o);
/* 1 when this process's stdout and stderr end in the same file, so that its lines must go out
 * as one stream (outq_merge): fds 1 and 2 are the same file (st_dev, st_ino), or, under a
 * launcher, gpulaunch-run found its own to be (GPULAUNCH_FRONTEND_MERGED=1), or the launcher
 * that started this process is a local mpirun whose fds 1 and 2 are. Call before outq_start. */
int output_streams_merged(int launcher_pid);
/* Write all of buf to fd, waiting while a non-blocking reader is slow. */
void output_write_all(int fd, const char *buf, size_t len);

#endif
