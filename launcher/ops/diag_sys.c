/* diag helpers: run a command with a deadline, write redacted files, read the kernel log and sysfs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/check.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/ops/diag.h"
#include "common/redact.h"
#include "common/safefile.h"

extern char **environ;

#define RUN_MAX_OUTPUT (8u << 20)

/* posix_spawn rather than fork: an MPI process should not fork (Open MPI warns, some transports
 * break), and spawn uses vfork/clone underneath. */
int diag_run(char *const argv[], double timeout_s, char **out, int *status) {
  *out = NULL;
  *status = -1;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return GPL_ESYS;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  /* Its own process group, so a timeout kills the command and whatever it started. */
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);
  pid_t pid;
  int e = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(fds[1]);
  if (e != 0) {
    close(fds[0]);
    return e == ENOENT ? GPL_ENOENT : GPL_ESYS;
  }
  strbuf_t b = STRBUF_INIT;
  strbuf_append(&b, "");
  double deadline = util_now() + (timeout_s > 0 ? timeout_s : 20.0);
  int timed_out = 0;
  for (;;) {
    double left = deadline - util_now();
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    int r = poll(&p, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[8192];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (b.len < RUN_MAX_OUTPUT) strbuf_append_n(&b, buf, (size_t)n);
  }
  close(fds[0]);
  if (timed_out) kill(-pid, SIGKILL);
  /* Its output closed is not its end: a command that closed its output and went on (or hung) is
   * waited for until the same deadline, then killed with its group. */
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, timed_out ? 0 : WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (w == 0 && util_now() >= deadline) {
      timed_out = 1;
      kill(-pid, SIGKILL);
    } else if (w == 0) {
      usleep(10000);
    }
  }
  if (WIFEXITED(st)) *status = WEXITSTATUS(st);
  else if (WIFSIGNALED(st)) *status = 128 + WTERMSIG(st);
  /* posix_spawnp reports a missing program as exit 127 with glibc (the child fails exec). */
  if (!timed_out && *status == 127 && b.len == 0) {
    strbuf_free(&b);
    return GPL_ENOENT;
  }
  if (b.oom) {
    strbuf_free(&b);
    return GPL_ENOMEM;
  }
  *out = strbuf_take(&b);
  return timed_out ? GPL_ETIMEDOUT : 0;
}

static int g_written; /* files diag_write wrote in this process */

int diag_files_written(void) { return g_written; }

int diag_write(const char *dir, const char *name, const char *text) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *clean = redact_text(text ? text : "", text ? strlen(text) : 0);
  if (!clean) return GPL_ENOMEM;
  char err[4096 + 200];
  int rc = safefile_write_text(path, clean, err, sizeof err);
  if (rc < 0) LOG_WARN("diag: cannot write: %s", err);
  else g_written++;
  free(clean);
  return rc;
}

static long read_hex(const char *path) {
  char txt[32];
  return util_read_small(path, txt, sizeof txt) < 0 ? -1 : strtol(txt, NULL, 16);
}

/* NVIDIA PCI functions under root (sysfs by default) whose class code, masked, is want; -1 when
 * the folder cannot be read. */
int diag_count_nvidia_class(const char *root, long mask, long want) {
  const char *dir = root ? root : "/sys/bus/pci/devices";
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s/vendor", dir, e->d_name);
    if (read_hex(p) != 0x10de) continue;
    snprintf(p, sizeof p, "%s/%s/class", dir, e->d_name);
    long cls = read_hex(p);
    if (cls >= 0 && (cls & mask) == want) n++;
  }
  closedir(d);
  return n;
}

int diag_count_nvidia_pci(const char *root) {
  return diag_count_nvidia_class(root, 0xff0000, 0x030000); /* display controllers: GPUs */
}
