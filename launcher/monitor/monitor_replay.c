/* Replay sampling source: one rank's samples read back from a --metrics JSON-lines file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/safefile.h"
#include "common/util.h"
#include "launcher/monitor/monitor.h"

typedef struct replay_s {
  FILE *f;
  char *path;
  int rank;
  long lineno;
  int bad_logged;
  char *buf;    /* REPLAY_MAX_LINE + 2 bytes */
  size_t bytes; /* read so far */
} replay_t;

#define REPLAY_MAX_LINE (64u << 10)
#define REPLAY_MAX_BYTES (1024u << 20)

/* The next line for this rank. Lines of other ranks are skipped, so one file drives every rank;
 * a line that is not a sample (a truncated last line after a kill) is skipped with one warning. */
static int replay_read(mon_source_t *src, mon_sample_t *out) {
  replay_t *r = src->state;
  for (;;) {
    /* Lines read into a fixed buffer: a file without newlines must not become one huge line in
     * memory. An over-long line is skipped to its end. */
    if (!r->buf && !(r->buf = malloc(REPLAY_MAX_LINE + 2))) return GPL_ENOMEM;
    errno = 0;
    if (!fgets(r->buf, REPLAY_MAX_LINE + 2, r->f)) return ferror(r->f) ? GPL_EIO : 1;
    size_t n = strlen(r->buf);
    r->lineno++;
    r->bytes += n;
    int too_long = n > REPLAY_MAX_LINE && r->buf[n - 1] != '\n';
    if (too_long) {
      int ch;
      while ((ch = fgetc(r->f)) != EOF && ch != '\n') r->bytes++;
    }
    if (r->bytes > REPLAY_MAX_BYTES) {
      LOG_WARN("%s: more than %u MiB of samples; the rest is not replayed", r->path, REPLAY_MAX_BYTES >> 20);
      return 1;
    }
    if (too_long) { /* a sample is a few hundred bytes */
      if (!r->bad_logged) LOG_WARN("%s:%ld: a line of more than %u bytes is not a sample; skipped", r->path,
                                   r->lineno, REPLAY_MAX_LINE);
      r->bad_logged = 1;
      continue;
    }
    char *line = util_trim(r->buf);
    if (!*line || *line == '#') continue;
    mon_sample_t s;
    if (mon_sample_from_json(line, &s) < 0) {
      if (!r->bad_logged)
        LOG_WARN("%s:%ld: not a monitor sample (a JSON object with \"t\" and \"busy\", \"sm\" "
                 "or \"sm_active\"); skipped", r->path, r->lineno);
      r->bad_logged = 1;
      continue;
    }
    if (s.rank >= 0 && s.rank != r->rank) continue;
    *out = s;
    return 0;
  }
}

static void replay_close(mon_source_t *src) {
  replay_t *r = src->state;
  if (r) {
    if (r->f) fclose(r->f);
    free(r->path);
    free(r->buf);
    free(r);
  }
  free(src);
}

/* A recording names no GPU: the textfile then labels it by the index the monitor was given. */
static const mon_source_ops_t replay_ops = {"replay", replay_read, replay_close, NULL};

int mon_replay_open(const char *path, int rank, mon_source_t **out) {
  *out = NULL;
  /* a regular file: a FIFO would block the supervisor's loop in its first read */
  int fd;
  char err[4400];
  int rc = safefile_open_read(path, &fd, NULL, err, sizeof err);
  if (rc < 0) {
    LOG_WARN("monitor: replay file: %s", err);
    return rc == GPL_ENOENT ? GPL_ENOENT : GPL_ESYS;
  }
  FILE *f = fdopen(fd, "re");
  if (!f) {
    close(fd);
    return GPL_ESYS;
  }
  replay_t *r = calloc(1, sizeof *r);
  mon_source_t *src = calloc(1, sizeof *src);
  char *p = strdup(path);
  if (!r || !src || !p) {
    fclose(f);
    free(r);
    free(src);
    free(p);
    return GPL_ENOMEM;
  }
  r->f = f;
  r->path = p;
  r->rank = rank;
  src->ops = &replay_ops;
  src->state = r;
  *out = src;
  return 0;
}
