/* Finding the program to supervise as execvp would, before anything starts (sup_locate). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/sup/supervise.h"

int sup_resolve(const char *prog, const char *path_env, char *out, size_t len) {
  if (strchr(prog, '/')) {
    util_strlcpy(out, prog, len);
    if (access(prog, F_OK) < 0) return GPL_ENOENT;
    return access(prog, X_OK) < 0 ? GPL_ESYS : GPL_OK;
  }
  const char *path = path_env && *path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  int found_noexec = 0;
  while (*path) {
    size_t n = strcspn(path, ":");
    char cand[PATH_MAX];
    snprintf(cand, sizeof cand, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", prog);
    struct stat st;
    if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(cand, X_OK) == 0) {
        util_strlcpy(out, cand, len);
        return GPL_OK;
      }
      found_noexec = 1;
      util_strlcpy(out, cand, len);
    }
    path += n;
    if (*path == ':') path++;
  }
  return found_noexec ? GPL_ESYS : GPL_ENOENT;
}

int sup_locate(const char *prog, const char *path_env, const char *workdir, char *out, size_t len,
               int *wd_errno) {
  *wd_errno = 0;
  if (workdir && *workdir) {
    struct stat st;
    if (stat(workdir, &st) < 0) *wd_errno = errno;
    else if (!S_ISDIR(st.st_mode)) *wd_errno = ENOTDIR;
    if (*wd_errno) return GPL_ECONFIG;
    if (strchr(prog, '/') && prog[0] != '/') {
      char full[PATH_MAX];
      snprintf(full, sizeof full, "%s/%s", workdir, prog);
      return sup_resolve(full, path_env, out, len);
    }
  }
  return sup_resolve(prog, path_env, out, len);
}

const char *sup_locate_reason(const char *prog, int rc) {
  if (rc == GPL_ENOENT) return strchr(prog, '/') ? "no such file" : "not found in PATH";
  return "not executable";
}
