/* Checking a mode's output files before it measures anything (outpath.h). */
#include "launcher/job/outpath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/log.h"
#include "common/mpix.h"
#include "common/safefile.h"
#include "common/util.h"
#include "launcher/exitcode.h"

/* A file that is not there yet, in a folder safefile_check_append found fit: created and removed
 * at once, in that folder (openat, unlinkat: no link swapped in between is followed), since the
 * permission bits do not tell everything (root, a read-only or special file system such as /proc,
 * ACLs, quotas). Someone else creating it meanwhile is no error: the real write judges then. */
static int try_create(const char *path, char *err, size_t errlen) {
  char dir[PATH_MAX] = ".";
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  if (slash) snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  int fd = dfd < 0 ? -1 : openat(dfd, base, flags, 0600);
  int e = errno;
  if (fd >= 0) {
    close(fd);
    (void)unlinkat(dfd, base, 0);
  }
  if (dfd >= 0) close(dfd);
  if (fd >= 0 || e == EEXIST) return GPL_OK;
  util_fmt(err, errlen, "cannot create %s: %s", path, strerror(e));
  return GPL_ESYS;
}

int outpath_check(const job_t *job, const char *prog, const outpath_t *paths, int n) {
  int bad = -1;
  if (!job || job->rank == 0) {
    char err[4400];
    for (int i = 0; i < n && bad < 0; i++) {
      if (!paths[i].path || !*paths[i].path) continue;
      /* The checks of safefile_open_write, which every report goes through, without emptying
       * anything (safefile_check_append opens an existing file to append nothing), and a missing
       * file created for a moment. */
      const char *p = paths[i].path;
      if (safefile_check_append(p, err, sizeof err) < 0 ||
          (access(p, F_OK) < 0 && try_create(p, err, sizeof err) < 0)) {
        log_print("%s: %s: cannot write there: %s\n", prog, paths[i].what, err);
        bad = i;
      }
    }
  }
  if (job && job->size > 1) {
    int rc = mpix_bcast(&bad, sizeof bad, 0, job->world, job->timeout, "checking the output paths");
    if (rc < 0) return exitcode_of(rc);
  }
  if (bad < 0) return GPL_EXIT_OK;
  return paths[bad].what[0] == '-' ? GPL_EXIT_USAGE : GPL_EXIT_CONFIG;
}
