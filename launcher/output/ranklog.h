/* A rank's log file (`[job] log_dir`/rank-N.log): opened safely by every rank at once, so a rank
 * that cannot open it stops the job at start with its name, and written with every lost byte
 * counted, so a full file system is reported instead of a silently short log. */
#ifndef GPL_LAUNCHER_RANKLOG_H
#define GPL_LAUNCHER_RANKLOG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "launcher/job/job.h"

typedef struct ranklog_s {
  int fd;               /* -1: no log file */
  char path[PATH_MAX];
  char *buf;            /* written in blocks of up to 64 KiB */
  size_t len, cap;
  uint64_t lost;        /* bytes that could not be written */
  int err;              /* errno of the first failed write */
} ranklog_t;

/* Collective over job->world (bounded by job->timeout): every rank creates log_dir (0700) and
 * opens its rank-N.log with safefile_open_append. When any rank cannot, rank 0 names each such
 * rank, its host, the path and why, with origin (the config's file:line of log_dir), and every
 * rank returns GPL_ECONFIG. log_dir NULL or "": no log, nothing exchanged (the same config on
 * every rank). */
int ranklog_open(ranklog_t *l, job_t *job, const char *log_dir, const char *origin);
/* Append (buffered). Never blocks on other ranks; a failed write is counted, said once. */
void ranklog_write(ranklog_t *l, const char *p, size_t n);
void ranklog_flush(ranklog_t *l);
/* At the end of the job, collective when `together` (every rank reached the end with the others):
 * rank 0 names every rank whose log is incomplete and how much is missing; not together (a rank
 * was lost: no exchange may wait for it) each rank names its own. Returns 1 on every rank when
 * some log is incomplete, 0 when none, or a negative code when the exchange failed. Flushes and
 * closes the log. */
int ranklog_finish(ranklog_t *l, job_t *job, int together);
void ranklog_close(ranklog_t *l);

#endif
