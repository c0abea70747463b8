/* Files replaced whole (safefile_replace), in a folder opened without following another user's links (safefile_open_dir). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/safefile.h"
#include "common/safefile_int.h"
#include "common/util.h"
#include "gpulaunch/error.h"

int safefile_open_dir(const char *path, unsigned flags, int *dfd_out, char *err, size_t errlen) {
  *dfd_out = -1;
  char buf[PATH_MAX];
  if (!path || !*path || strlen(path) >= sizeof buf) {
    util_fmt(err, errlen, "'%s' is not a folder name", path ? path : "");
    return GPL_EINVAL;
  }
  util_strlcpy(buf, path, sizeof buf);
  /* O_PATH: folders on the way need only search permission (x), as a path lookup does. */
  int dfd = open(buf[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    util_fmt(err, errlen, "%s: %s", buf[0] == '/' ? "/" : ".", strerror(errno));
    return GPL_ESYS;
  }
  char done[PATH_MAX] = "";
  if (buf[0] == '/') util_strlcpy(done, "/", sizeof done);
  char *save = NULL;
  /* One component at a time, relative to the one before: a link is followed only when this user
   * or root owns it, and what is checked at the end is the folder then written in. */
  for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    if (strcmp(c, ".") == 0) continue;
    char shown[PATH_MAX];
    util_fmt(shown, sizeof shown, "%s%s%s", done, *done && done[strlen(done) - 1] != '/' ? "/" : "", c);
    unsigned link_uid = 0;
    int fd = safefile__open_component(dfd, c, &link_uid, O_PATH);
    if (fd < 0) {
      int e = errno;
      if (e == EPERM)
        util_fmt(err, errlen, "%s is a symbolic link owned by another user (uid %u); refusing to "
                 "write through it", shown, link_uid);
      else
        util_fmt(err, errlen, "%s: %s", shown, e == ENOTDIR ? "not a folder" : strerror(e));
      close(dfd);
      return e == ENOENT ? GPL_ENOENT : e == EPERM || e == ENOTDIR ? GPL_EINVAL : GPL_ESYS;
    }
    close(dfd);
    dfd = fd;
    util_strlcpy(done, shown, sizeof done);
  }
  struct stat st;
  int rc = GPL_OK;
  if (fstat(dfd, &st) < 0) util_fmt(err, errlen, "%s: %s", path, strerror(errno)), rc = GPL_ESYS;
  else rc = safefile__check_dir_stat(path, &st, flags, err, errlen);
  if (rc < 0) {
    close(dfd);
    return rc;
  }
  *dfd_out = dfd;
  return GPL_OK;
}

int safefile_replace(const char *path, const void *data, size_t len, unsigned mode, unsigned flags,
                     char *err, size_t errlen) {
  char dir[PATH_MAX];
  const char *base;
  if (!path || safefile__split(path, dir, sizeof dir, &base) < 0) {
    util_fmt(err, errlen, "'%s' is not a file name", path ? path : "");
    return GPL_EINVAL;
  }
  char tmp[NAME_MAX + 1];
  if (strlen(base) + 8 > NAME_MAX) {
    util_fmt(err, errlen, "%s: the file name is too long", path);
    return GPL_EINVAL;
  }
  int dfd;
  int rc = safefile_open_dir(dir, flags, &dfd, err, errlen);
  if (rc < 0) return rc;
  /* A fresh name (O_EXCL|O_NOFOLLOW: a link planted there fails the open, another name is
   * tried), mode 0600 until written, then the mode asked for and a rename over the file: rename
   * replaces a link planted under the name itself instead of writing through it, and readers
   * never see a half-written file. The name does not end in ".prom": node_exporter skips it. */
  static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  int fd = -1, e = 0;
  for (int tries = 0; fd < 0 && tries < 64; tries++) {
    unsigned char r[6];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
      for (size_t i = 0; i < sizeof r; i++) r[i] = (unsigned char)(rand() ^ getpid() ^ tries);
    char suf[7];
    for (size_t i = 0; i < 6; i++) suf[i] = alnum[r[i] % (sizeof alnum - 1)];
    suf[6] = 0;
    util_fmt(tmp, sizeof tmp, "%s.%s", base, suf);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    e = errno;
    if (fd < 0 && e != EEXIST) break;
  }
  if (fd < 0) {
    util_fmt(err, errlen, "cannot create a file in %s: %s", dir, strerror(e));
    close(dfd);
    return GPL_ESYS;
  }
  const char *p = data;
  size_t left = len;
  rc = GPL_OK;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      util_fmt(err, errlen, "%s: %s", path, w < 0 ? strerror(errno) : "short write");
      rc = GPL_ESYS;
      break;
    }
    p += w;
    left -= (size_t)w;
  }
  if (rc == GPL_OK && fchmod(fd, (mode_t)(mode & 0777)) < 0)
    util_fmt(err, errlen, "%s: chmod %04o: %s", path, mode & 0777, strerror(errno)), rc = GPL_ESYS;
  if (close(fd) < 0 && rc == GPL_OK)
    util_fmt(err, errlen, "%s: %s", path, strerror(errno)), rc = GPL_ESYS;
  if (rc == GPL_OK && renameat(dfd, tmp, dfd, base) < 0) {
    int re = errno;
    struct stat ts;
    /* a sticky folder keeps another user's entry (a file, a planted link) where it is */
    if ((re == EPERM || re == EACCES) && fstatat(dfd, base, &ts, AT_SYMLINK_NOFOLLOW) == 0 &&
        ts.st_uid != geteuid())
      util_fmt(err, errlen, "%s: %s of another user (uid %u) is there, in a folder whose sticky "
               "bit keeps it; it must be removed", path, S_ISLNK(ts.st_mode) ? "a symbolic link" : "a file",
               (unsigned)ts.st_uid);
    else
      util_fmt(err, errlen, "%s: cannot replace it: %s", path, strerror(re));
    rc = GPL_ESYS;
  }
  if (rc < 0) unlinkat(dfd, tmp, 0);
  close(dfd);
  return rc;
}
