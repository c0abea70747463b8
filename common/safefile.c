/* Safe file creation (O_NOFOLLOW, 0600, checked folder and file) and bounded reads of regular files. */
#include "common/safefile.h"
#include "common/safefile_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "gpulaunch/error.h"

static const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a folder";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

static int trusted_owner(uid_t uid) { return uid == geteuid() || uid == 0; }

/* The folder part of path ("." when none) and the last component. */
int safefile__split(const char *path, char *dir, size_t dlen, const char **base) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    util_strlcpy(dir, ".", dlen);
    *base = path;
  } else {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    if (n >= dlen) return -1;
    memcpy(dir, path, n);
    dir[n] = 0;
    *base = slash + 1;
  }
  return **base && strcmp(*base, ".") != 0 && strcmp(*base, "..") != 0 ? 0 : -1;
}

/* Symbolic links on the way to dir: each must be owned by this user or root, or whoever owns it
 * decides where our files land. */
static int check_links(const char *dir, char *err, size_t errlen) {
  char abs[PATH_MAX];
  if (dir[0] == '/') {
    util_strlcpy(abs, dir, sizeof abs);
  } else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return GPL_OK; /* a vanished cwd fails at open */
    util_fmt(abs, sizeof abs, "%s/%s", cwd, dir);
  }
  for (char *p = abs + 1;; p++) {
    if (*p != '/' && *p) continue;
    char keep = *p;
    *p = 0;
    struct stat st;
    if (lstat(abs, &st) == 0 && S_ISLNK(st.st_mode) && !trusted_owner(st.st_uid)) {
      util_fmt(err, errlen, "%s is a symbolic link owned by another user (uid %u); refusing to "
               "write through it", abs, (unsigned)st.st_uid);
      return GPL_EINVAL;
    }
    *p = keep;
    if (!keep) break;
  }
  return GPL_OK;
}

/* Is gid this process's group or one of its supplementary groups? */
static int in_group(gid_t gid) {
  if (gid == getegid()) return 1;
  gid_t g[NGROUPS_MAX];
  int n = getgroups(NGROUPS_MAX, g);
  for (int i = 0; i < n; i++)
    if (g[i] == gid) return 1;
  return 0;
}

static const char *group_name(gid_t gid, char *buf, size_t len) {
  struct group gr, *res = NULL;
  char tmp[4096];
  if (getgrgid_r(gid, &gr, tmp, sizeof tmp, &res) == 0 && res) util_strlcpy(buf, res->gr_name, len);
  else util_fmt(buf, len, "gid %u", (unsigned)gid);
  return buf;
}

/* The folder rule. With SAFEFILE_DIR_GROUP, a folder writable through a group this process is in
 * passes whoever owns it (node_exporter's textfile folder, root's or node_exporter's and
 * group-writable): the writer (safefile_replace) works relative to the folder it opened, creates
 * with O_EXCL|O_NOFOLLOW and renames, so a link another member plants is replaced, never followed;
 * members of the group were let in by whoever made the folder. */
int safefile__check_dir_stat(const char *dir, const struct stat *st, unsigned flags, char *err,
                             size_t errlen) {
  if (!S_ISDIR(st->st_mode)) {
    util_fmt(err, errlen, "%s: %s, not a folder", dir, kind_of(st->st_mode));
    return GPL_EINVAL;
  }
  int sticky = (st->st_mode & S_ISVTX) != 0;
  if (flags & SAFEFILE_DIR_GROUP) {
    int via_group = (st->st_mode & S_IWGRP) && in_group(st->st_gid);
    char g[128];
    if (!trusted_owner(st->st_uid) && !via_group) {
      util_fmt(err, errlen, "the folder %s belongs to another user (uid %u) and is not writable "
               "through a group of yours (group %s, mode %04o); use a folder of your own, or one "
               "group-writable for a group you are in (node_exporter's textfile folder)", dir,
               (unsigned)st->st_uid, group_name(st->st_gid, g, sizeof g),
               (unsigned)(st->st_mode & 07777));
      return GPL_EINVAL;
    }
    if ((st->st_mode & S_IWGRP) && !sticky && !via_group) {
      util_fmt(err, errlen, "the folder %s is writable by group %s, which you are not in (mode "
               "%04o): its members could replace what gpulaunch writes there (chmod g-w, or add "
               "the job's user to the group)", dir, group_name(st->st_gid, g, sizeof g),
               (unsigned)(st->st_mode & 07777));
      return GPL_EINVAL;
    }
    if ((st->st_mode & S_IWOTH) && !sticky) {
      util_fmt(err, errlen, "the folder %s is writable by every user (mode %04o) without the "
               "sticky bit: they could replace what gpulaunch writes there (chmod o-w or +t)",
               dir, (unsigned)(st->st_mode & 07777));
      return GPL_EINVAL;
    }
    return GPL_OK;
  }
  if (!trusted_owner(st->st_uid)) {
    util_fmt(err, errlen, "the folder %s belongs to another user (uid %u); use a folder of "
             "your own", dir, (unsigned)st->st_uid);
    return GPL_EINVAL;
  }
  if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
    util_fmt(err, errlen, "the folder %s is writable by other users (mode %04o) without the "
             "sticky bit: they could replace what gpulaunch writes there (chmod go-w or +t)",
             dir, (unsigned)(st->st_mode & 07777));
    return GPL_EINVAL;
  }
  return GPL_OK;
}

static int check_dir_stat(const char *dir, const struct stat *st, char *err, size_t errlen) {
  return safefile__check_dir_stat(dir, st, 0, err, errlen);
}

static int check_dir_flags(const char *dir, unsigned flags, char *err, size_t errlen) {
  int rc = check_links(dir, err, errlen);
  if (rc < 0) return rc;
  struct stat st;
  if (stat(dir, &st) < 0) {
    util_fmt(err, errlen, "%s: %s", dir, strerror(errno));
    return errno == ENOENT ? GPL_ENOENT : GPL_ESYS;
  }
  return safefile__check_dir_stat(dir, &st, flags, err, errlen);
}

int safefile_check_dir(const char *dir, char *err, size_t errlen) {
  return check_dir_flags(dir, 0, err, errlen);
}

int safefile_check_parent_flags(const char *path, unsigned flags, char *err, size_t errlen) {
  char dir[PATH_MAX];
  const char *base;
  if (!path || safefile__split(path, dir, sizeof dir, &base) < 0) {
    util_fmt(err, errlen, "'%s' is not a file name", path ? path : "");
    return GPL_EINVAL;
  }
  int rc = check_dir_flags(dir, flags, err, errlen);
  if (rc == GPL_ENOENT) util_fmt(err, errlen, "%s: the folder %s does not exist", path, dir);
  return rc;
}

int safefile_check_parent(const char *path, char *err, size_t errlen) {
  return safefile_check_parent_flags(path, 0, err, errlen);
}

static int open_out(const char *path, int flags, int *fd_out, char *err, size_t errlen) {
  *fd_out = -1;
  char dir[PATH_MAX];
  const char *base;
  if (!path || safefile__split(path, dir, sizeof dir, &base) < 0) {
    util_fmt(err, errlen, "'%s' is not a file name", path ? path : "");
    return GPL_EINVAL;
  }
  int rc = check_links(dir, err, errlen);
  if (rc < 0) return rc;
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    int e = errno;
    util_fmt(err, errlen, "%s: the folder %s: %s", path, dir, strerror(e));
    return e == ENOENT ? GPL_ENOENT : GPL_ESYS;
  }
  struct stat st;
  if (fstat(dfd, &st) < 0 || (rc = check_dir_stat(dir, &st, err, errlen)) < 0) {
    if (rc == GPL_OK) util_fmt(err, errlen, "%s: %s", dir, strerror(errno)), rc = GPL_ESYS;
    close(dfd);
    return rc;
  }
  /* O_NONBLOCK: a FIFO planted under the name must not hold us in open(). */
  int fd = openat(dfd, base, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | flags,
                  0600);
  int e = errno;
  if (fd < 0) {
    /* Say what is there: the kernel answers a planted link with ELOOP, or EACCES in a sticky
     * folder; a FIFO without a reader with ENXIO. */
    struct stat ls;
    int there = fstatat(dfd, base, &ls, AT_SYMLINK_NOFOLLOW) == 0;
    close(dfd);
    if (e == ELOOP || (there && S_ISLNK(ls.st_mode)))
      util_fmt(err, errlen, "%s is a symbolic link; refusing to write through it", path);
    else if (e == ENXIO || (there && (S_ISFIFO(ls.st_mode) || S_ISSOCK(ls.st_mode))))
      util_fmt(err, errlen, "%s is a FIFO or socket, not a regular file", path);
    else if (there && !trusted_owner(ls.st_uid))
      util_fmt(err, errlen, "%s belongs to another user (uid %u); refusing to write to it", path,
               (unsigned)ls.st_uid);
    else
      util_fmt(err, errlen, "%s: %s", path, strerror(e));
    return e == ENOENT ? GPL_ENOENT : GPL_ESYS;
  }
  close(dfd);
  if (fstat(fd, &st) < 0) {
    util_fmt(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
    return GPL_ESYS;
  }
  rc = GPL_EINVAL;
  if (!S_ISREG(st.st_mode))
    util_fmt(err, errlen, "%s is %s, not a regular file", path, kind_of(st.st_mode));
  else if (!trusted_owner(st.st_uid))
    util_fmt(err, errlen, "%s belongs to another user (uid %u); refusing to write to it", path,
             (unsigned)st.st_uid);
  else if (st.st_nlink != 1)
    util_fmt(err, errlen, "%s has %lu hard links; refusing to write to it (another name of the "
             "same file could be anywhere)", path, (unsigned long)st.st_nlink);
  else
    rc = GPL_OK;
  if (rc == GPL_OK && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
    util_fmt(err, errlen, "%s: %s", path, strerror(errno));
    rc = GPL_ESYS;
  }
  if (rc < 0) {
    close(fd);
    return rc;
  }
  *fd_out = fd;
  return GPL_OK;
}

int safefile_open_append(const char *path, int *fd, char *err, size_t errlen) {
  return open_out(path, O_APPEND, fd, err, errlen);
}

int safefile_open_write(const char *path, int *fd, char *err, size_t errlen) {
  /* Emptied only after the checks: O_TRUNC in open() would empty a planted link's target. */
  int rc = open_out(path, 0, fd, err, errlen);
  if (rc == GPL_OK && ftruncate(*fd, 0) < 0) {
    util_fmt(err, errlen, "%s: %s", path, strerror(errno));
    close(*fd);
    *fd = -1;
    return GPL_ESYS;
  }
  return rc;
}

FILE *safefile_fopen_write(const char *path, char *err, size_t errlen) {
  int fd;
  if (safefile_open_write(path, &fd, err, errlen) < 0) return NULL;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    util_fmt(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
  }
  return f;
}

int safefile_write_text(const char *path, const char *text, char *err, size_t errlen) {
  FILE *f = safefile_fopen_write(path, err, errlen);
  if (!f) return GPL_ESYS;
  int bad = fputs(text, f) < 0;
  int e = errno;
  if (fclose(f) != 0 && !bad) {
    bad = 1;
    e = errno;
  }
  if (bad) util_fmt(err, errlen, "%s: %s", path, strerror(e));
  return bad ? GPL_ESYS : GPL_OK;
}

int safefile_open_read(const char *path, int *fd_out, size_t *size, char *err, size_t errlen) {
  *fd_out = -1;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    util_fmt(err, errlen, "%s: %s", path, strerror(e));
    return e == ENOENT ? GPL_ENOENT : GPL_ESYS;
  }
  struct stat st;
  if (fstat(fd, &st) < 0) {
    util_fmt(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
    return GPL_ESYS;
  }
  if (!S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) util_fmt(err, errlen, "%s: %s", path, strerror(EISDIR));
    else util_fmt(err, errlen, "%s is %s, not a regular file", path, kind_of(st.st_mode));
    close(fd);
    return GPL_EINVAL;
  }
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
    util_fmt(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
    return GPL_ESYS;
  }
  if (size) *size = (size_t)st.st_size;
  *fd_out = fd;
  return GPL_OK;
}

int safefile_read(const char *path, size_t cap, char **out, size_t *len, char *err, size_t errlen) {
  *out = NULL;
  if (len) *len = 0;
  int fd;
  size_t size;
  int rc = safefile_open_read(path, &fd, &size, err, errlen);
  if (rc < 0) return rc;
  if (size > cap) {
    util_fmt(err, errlen, "%s is %zu bytes, more than the %zu this input may have", path, size, cap);
    close(fd);
    return GPL_ERANGE;
  }
  /* /proc and /sys files say size 0 and still have content: read to the end, up to the cap. */
  size_t bufcap = size + 1 > 4096 ? size + 1 : 4096, n = 0;
  char *buf = malloc(bufcap);
  rc = GPL_OK;
  while (buf) {
    if (n + 1 >= bufcap) {
      size_t nc = bufcap * 2 > cap + 2 ? cap + 2 : bufcap * 2;
      char *nb = nc > bufcap ? realloc(buf, nc) : NULL;
      if (!nb) {
        rc = nc > bufcap ? GPL_ENOMEM : GPL_ERANGE;
        break;
      }
      buf = nb;
      bufcap = nc;
    }
    ssize_t r = read(fd, buf + n, bufcap - n - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      util_fmt(err, errlen, "%s: %s", path, strerror(errno));
      rc = GPL_ESYS;
      break;
    }
    if (r == 0) break;
    n += (size_t)r;
    if (n > cap) {
      rc = GPL_ERANGE;
      break;
    }
  }
  close(fd);
  if (!buf) rc = GPL_ENOMEM;
  if (rc == GPL_ERANGE)
    util_fmt(err, errlen, "%s holds more than the %zu bytes this input may have", path, cap);
  if (rc == GPL_ENOMEM) util_fmt(err, errlen, "%s: out of memory", path);
  if (rc < 0) {
    free(buf);
    return rc;
  }
  buf[n] = 0;
  *out = buf;
  if (len) *len = n;
  return GPL_OK;
}

int safefile_read_text(const char *path, char **out, size_t *len) {
  /* A regular file, bounded: a FIFO or /dev/zero given by mistake must not hang or eat memory. */
  char err[PATH_MAX + 128];
  int rc = safefile_read(path, SAFEFILE_CAP_TEXT, out, len, err, sizeof err);
  if (rc < 0 && rc != GPL_ENOENT) LOG_INFO(JOB, "%s", err);
  return rc;
}

/* Open component name below dfd as a folder without following a link, except a link owned by
 * this user or root (as /var/run -> /run): the descriptor, or -1 with errno. */
int safefile__open_component(int dfd, const char *name, unsigned *link_uid, int how) {
  int fd = openat(dfd, name, how | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0 || (errno != ELOOP && errno != ENOTDIR)) return fd;
  struct stat ls;
  if (fstatat(dfd, name, &ls, AT_SYMLINK_NOFOLLOW) < 0) return -1;
  if (!S_ISLNK(ls.st_mode)) return errno = ENOTDIR, -1;
  *link_uid = (unsigned)ls.st_uid;
  if (!trusted_owner(ls.st_uid)) return errno = EPERM, -1;
  return openat(dfd, name, how | O_DIRECTORY | O_CLOEXEC);
}

static int open_component(int dfd, const char *name, unsigned *link_uid) {
  return safefile__open_component(dfd, name, link_uid, O_RDONLY);
}

int safefile_mkdir_p(const char *path, unsigned mode, char *err, size_t errlen) {
  char buf[PATH_MAX];
  if (!path || !*path || strlen(path) >= sizeof buf) {
    util_fmt(err, errlen, "'%s' is not a folder name", path ? path : "");
    return GPL_EINVAL;
  }
  util_strlcpy(buf, path, sizeof buf);
  int dfd = open(buf[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    util_fmt(err, errlen, "%s: %s", buf[0] == '/' ? "/" : ".", strerror(errno));
    return GPL_ESYS;
  }
  char done[PATH_MAX] = "";
  if (buf[0] == '/') util_strlcpy(done, "/", sizeof done);
  int rc = GPL_OK;
  char *save = NULL;
  for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    if (strcmp(c, ".") == 0) continue;
    if (strcmp(c, "..") == 0) {
      util_fmt(err, errlen, "%s: '..' in a folder gpulaunch creates", path);
      rc = GPL_EINVAL;
      break;
    }
    char shown[PATH_MAX];
    util_fmt(shown, sizeof shown, "%s%s%s", done, *done && done[strlen(done) - 1] != '/' ? "/" : "", c);
    unsigned link_uid = 0;
    int fd = open_component(dfd, c, &link_uid);
    if (fd < 0 && errno == ENOENT) {
      /* Created only in a folder no other user can swap things in: ours or root's, and not
       * writable by others unless sticky; then opened without following, so a link planted
       * between the mkdir and the open is refused, not followed. */
      struct stat st;
      const char *parent = *done ? done : ".";
      if (fstat(dfd, &st) < 0) {
        util_fmt(err, errlen, "%s: %s", parent, strerror(errno));
        rc = GPL_ESYS;
        break;
      }
      if ((rc = check_dir_stat(parent, &st, err, errlen)) < 0) break;
      if (mkdirat(dfd, c, (mode_t)mode) < 0 && errno != EEXIST) {
        util_fmt(err, errlen, "cannot create the folder %s: %s", shown, strerror(errno));
        rc = GPL_ESYS;
        break;
      }
      fd = openat(dfd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      int e = errno;
      if (e == EPERM)
        util_fmt(err, errlen, "%s is a symbolic link owned by another user (uid %u); refusing to "
                 "create folders through it", shown, link_uid);
      else if (e == ELOOP)
        util_fmt(err, errlen, "%s became a symbolic link while it was created; refusing it", shown);
      else
        util_fmt(err, errlen, "%s: %s", shown, e == ENOTDIR ? "exists and is not a folder" : strerror(e));
      rc = e == ENOENT ? GPL_ENOENT : GPL_ESYS;
      break;
    }
    close(dfd);
    dfd = fd;
    util_strlcpy(done, shown, sizeof done);
  }
  if (rc == GPL_OK) {
    /* the folder itself: ours or root's, not writable by others without the sticky bit */
    struct stat st;
    if (fstat(dfd, &st) < 0) util_fmt(err, errlen, "%s: %s", path, strerror(errno)), rc = GPL_ESYS;
    else rc = check_dir_stat(path, &st, err, errlen);
  }
  close(dfd);
  return rc;
}

int safefile_check_append(const char *path, char *err, size_t errlen) {
  struct stat st;
  if (path && lstat(path, &st) == 0) {
    int fd;
    int rc = safefile_open_append(path, &fd, err, errlen);
    if (rc == 0) close(fd);
    return rc;
  }
  if (path && errno != ENOENT) {
    util_fmt(err, errlen, "%s: %s", path, strerror(errno));
    return GPL_ESYS;
  }
  int rc = safefile_check_parent(path, err, errlen);
  if (rc < 0) return rc;
  char dir[PATH_MAX];
  const char *base;
  (void)safefile__split(path, dir, sizeof dir, &base); /* checked by safefile_check_parent */
  if (access(dir, W_OK | X_OK) < 0) {
    util_fmt(err, errlen, "cannot create %s in %s: %s", path, dir, strerror(errno));
    return GPL_ESYS;
  }
  return GPL_OK;
}
