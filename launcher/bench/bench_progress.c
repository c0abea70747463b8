/* The terminal for bench's progress line: rank 0's stderr, or that of the mpirun that started it. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "launcher/bench/bench.h"

/* The parent of pid, from /proc/PID/stat (0 when unknown). */
static pid_t parent_of(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
  int ppid = 0;
  if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1) return 0;
  return (pid_t)ppid;
}

static int is_mpirun(pid_t pid) {
  char path[64], name[64] = "";
  snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  if (!fgets(name, sizeof name, f)) name[0] = 0;
  fclose(f);
  name[strcspn(name, "\n")] = 0;
  return strcmp(name, "mpirun") == 0 || strcmp(name, "mpiexec") == 0 || strcmp(name, "orterun") == 0 ||
         strcmp(name, "prterun") == 0 || strcmp(name, "prte") == 0;
}

/* The terminal device that pid's file descriptor fd is, into out; 0, or -1 when it is none. */
static int tty_of(pid_t pid, int fd, char *out, size_t len) {
  char link[64];
  snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)pid, fd);
  ssize_t n = readlink(link, out, len - 1);
  if (n <= 0) return -1;
  out[n] = 0;
  return strncmp(out, "/dev/pts/", 9) == 0 || strncmp(out, "/dev/tty", 8) == 0 ? 0 : -1;
}

FILE *bench_progress_stream(int *via_mpirun) {
  *via_mpirun = 0;
  if (isatty(STDERR_FILENO)) return stderr;
  /* mpirun forks the ranks of its own node: the first mpirun among our ancestors */
  pid_t pid = getppid();
  for (int depth = 0; depth < 4 && pid > 1; depth++, pid = parent_of(pid)) {
    if (!is_mpirun(pid)) continue;
    char target[PATH_MAX], out[PATH_MAX];
    if (tty_of(pid, 2, target, sizeof target) < 0) return NULL;
    int fd = open(target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return NULL;
    if (!isatty(fd)) {
      close(fd);
      return NULL;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) close(fd);
    *via_mpirun = f && tty_of(pid, 1, out, sizeof out) == 0 && strcmp(out, target) == 0;
    return f;
  }
  return NULL;
}
