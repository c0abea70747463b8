/* Replay sampling source: one rank's samples read back from a --metrics JSON-lines file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/util.h"
#include "launcher/ops/monitor.h"

typedef struct replay_s {
  FILE *f;
  char *path;
  int rank;
  long lineno;
  int bad_logged;
  char *buf;
  size_t cap;
} replay_t;

/* The next line for this rank. Lines of other ranks are skipped, so one file drives every rank;
 * a line that is not a sample (a truncated last line after a kill) is skipped with one warning. */
static int replay_read(mon_source_t *src, mon_sample_t *out) {
  replay_t *r = src->state;
  for (;;) {
    errno = 0;
    ssize_t n = getline(&r->buf, &r->cap, r->f);
    if (n < 0) return errno ? GPL_EIO : 1;
    r->lineno++;
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

static const mon_source_ops_t replay_ops = {"replay", replay_read, replay_close};

int mon_replay_open(const char *path, int rank, mon_source_t **out) {
  *out = NULL;
  FILE *f = fopen(path, "re");
  if (!f) return errno == ENOENT ? GPL_ENOENT : GPL_ESYS;
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
