/* Per-rank log files: opened by all ranks together (a failure is named at once, never a hang),
 * appended with lost bytes counted and reported at the end. */
#include "launcher/output/ranklog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/mpix.h"
#include "common/safefile.h"
#include "common/util.h"

#define BLOCK (64u << 10)
#define SHOWN 8 /* failing ranks named one by one, then a count */

typedef struct open_res_s {
  int rc;
  char msg[480];
} open_res_t;

int ranklog_open(ranklog_t *l, job_t *job, const char *log_dir, const char *origin) {
  memset(l, 0, sizeof *l);
  l->fd = -1;
  if (!log_dir || !*log_dir) return GPL_OK;
  open_res_t me, *all = calloc((size_t)job->size, sizeof *all);
  ALLOCCHECK(all);
  memset(&me, 0, sizeof me);
  util_fmt(l->path, sizeof l->path, "%s/rank-%d.log", log_dir, job->rank);
  if ((me.rc = safefile_mkdir_p(log_dir, 0700, me.msg, sizeof me.msg)) == GPL_OK) {
    me.rc = safefile_open_append(l->path, &l->fd, me.msg, sizeof me.msg);
  }
  int rc = mpix_allgather(&me, (int)sizeof me, all, job->world, job->timeout, "start-up (log files)");
  if (rc < 0) {
    free(all);
    ranklog_close(l);
    return rc;
  }
  int bad = 0;
  for (int r = 0; r < job->size; r++) {
    if (all[r].rc == GPL_OK) continue;
    if (job->rank == 0 && bad < SHOWN)
      log_print("gpulaunch: rank %d (host %s): [job] log_dir (%s): cannot open its log file: %s\n",
              r, job->hosts ? job->hosts[r] : "?", origin ? origin : "default", all[r].msg);
    bad++;
  }
  if (job->rank == 0 && bad > SHOWN)
    log_print("gpulaunch: ... and %d more ranks could not open their log file\n", bad - SHOWN);
  free(all);
  if (bad) {
    ranklog_close(l);
    return GPL_ECONFIG;
  }
  return GPL_OK;
}

/* Write p out now; what does not get out is counted as lost. */
static void put(ranklog_t *l, const char *p, size_t n) {
  size_t off = 0;
  while (off < n && !l->err) {
    ssize_t w = write(l->fd, p + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      l->err = w < 0 ? errno : EIO;
      /* Said once: from here on the log has nothing (a log with holes would mislead more). */
      LOG_WARN("log file %s: write failed: %s; the rest of the output is not in it", l->path,
               strerror(l->err));
      break;
    }
    off += (size_t)w;
  }
  l->lost += n - off;
}

void ranklog_flush(ranklog_t *l) {
  if (l->fd < 0 || !l->len) return;
  put(l, l->buf, l->len);
  l->len = 0;
}

void ranklog_write(ranklog_t *l, const char *p, size_t n) {
  if (l->fd < 0 || !n) return;
  if (l->err) {
    l->lost += n;
    return;
  }
  if (l->len + n > l->cap) {
    ranklog_flush(l);
    if (n >= BLOCK) { /* a long piece goes out as it is */
      put(l, p, n);
      return;
    }
    if (!l->buf) {
      l->buf = malloc(BLOCK);
      if (!l->buf) {
        l->lost += n;
        return;
      }
      l->cap = BLOCK;
    }
  }
  memcpy(l->buf + l->len, p, n);
  l->len += n;
}

void ranklog_close(ranklog_t *l) {
  ranklog_flush(l);
  if (l->fd >= 0 && close(l->fd) < 0 && !l->err) { /* NFS may tell only now */
    l->err = errno;
    LOG_WARN("log file %s: %s", l->path, strerror(l->err));
  }
  l->fd = -1;
  free(l->buf);
  l->buf = NULL;
  l->len = l->cap = 0;
}

typedef struct lost_s {
  uint64_t lost;
  int err, pad;
} lost_t;

int ranklog_finish(ranklog_t *l, job_t *job, int together) {
  ranklog_close(l);
  if (!l->path[0]) return 0; /* no log_dir: the same on every rank, nothing to exchange */
  lost_t me = {l->lost, l->err, 0}, *all = calloc((size_t)job->size, sizeof *all);
  ALLOCCHECK(all);
  if (!together) { /* only this rank's, said by itself */
    if (me.err || me.lost)
      log_print("gpulaunch: rank %d (host %s): its log file %s is incomplete (%llu bytes not written): %s\n",
              job->rank, job->host, l->path, (unsigned long long)me.lost, strerror(me.err ? me.err : EIO));
    free(all);
    return me.err || me.lost;
  }
  int rc = mpix_allgather(&me, (int)sizeof me, all, job->world, job->timeout, "end (log files)");
  if (rc < 0) {
    free(all);
    return rc;
  }
  char dir[PATH_MAX];
  util_strlcpy(dir, l->path, sizeof dir);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  int bad = 0;
  for (int r = 0; r < job->size; r++) {
    if (!all[r].err && !all[r].lost) continue;
    if (job->rank == 0 && bad < SHOWN) {
      char n[64] = "";
      if (all[r].lost) util_fmt(n, sizeof n, " (%llu bytes not written)", (unsigned long long)all[r].lost);
      log_print("gpulaunch: rank %d (host %s): its log file %s/rank-%d.log is incomplete%s: %s\n",
              r, job->hosts ? job->hosts[r] : "?", dir, r, n, strerror(all[r].err ? all[r].err : EIO));
    }
    bad++;
  }
  if (job->rank == 0 && bad > SHOWN)
    log_print("gpulaunch: ... and %d more ranks' log files are incomplete\n", bad - SHOWN);
  free(all);
  return bad > 0;
}
