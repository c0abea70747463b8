/* A host lost mid-job: close the local Open MPI launcher's connections to it, so it ends now. */
#include "launcher/live/lostpeer.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

extern char **environ;

/* Open MPI's processes that hold the out-of-band connections to the hosts' daemons. */
static int is_ompi_launcher(const char *comm) {
  static const char *const names[] = {"mpirun", "mpiexec", "orterun", "orted", "prterun", "prted", "prte"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(comm, names[i]) == 0) return 1;
  return 0;
}

/* The peer address of a connected TCP socket, as text ("" otherwise). v4-mapped IPv6 addresses
 * are given as IPv4. */
static void peer_text(int fd, char *out, size_t len) {
  out[0] = 0;
  int type = 0;
  socklen_t tl = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM) return;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0) return;
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, out, (socklen_t)len);
  } else if (ss.ss_family == AF_INET6) {
    const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a)) inet_ntop(AF_INET, &a->s6_addr[12], out, (socklen_t)len);
    else inet_ntop(AF_INET6, a, out, (socklen_t)len);
  }
}

/* addr is one of the words of list (blank separated). */
static int listed(const char *list, const char *addr) {
  size_t n = strlen(addr);
  for (const char *p = list; *p;) {
    while (*p == ' ') p++;
    size_t w = strcspn(p, " ");
    if (w == n && w && strncmp(p, addr, n) == 0) return 1;
    p += w;
  }
  return 0;
}

static void comm_of(int pid, char *comm, size_t len) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/comm", pid);
  (void)util_read_small(path, comm, len); /* "" when it cannot be read */
}

int lostpeer_cut(int pid, const char *addrs, char *why, size_t len) {
  if (why && len) why[0] = 0;
  if (pid <= 1 || !addrs || !*addrs) return 0;
  char path[64], comm[64];
  comm_of(pid, comm, sizeof comm);
  if (!is_ompi_launcher(comm)) {
    if (why) snprintf(why, len, "the parent process (%s) is not Open MPI's mpirun or orted", comm[0] ? comm : "?");
    return -2;
  }
  int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pfd < 0) {
    if (why) snprintf(why, len, "pidfd_open(%s): %s", comm, strerror(errno));
    return -1;
  }
  snprintf(path, sizeof path, "/proc/%d/fd", pid);
  DIR *d = opendir(path);
  if (!d) {
    if (why) snprintf(why, len, "%s: %s", path, strerror(errno));
    close(pfd);
    return -1;
  }
  int cut = 0, denied = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end || fd < 0) continue;
    char lp[128], target[64];
    snprintf(lp, sizeof lp, "%s/%ld", path, fd);
    ssize_t tn = readlink(lp, target, sizeof target - 1);
    if (tn <= 0) continue;
    target[tn] = 0;
    if (strncmp(target, "socket:", 7) != 0) continue;
    int mine = (int)syscall(SYS_pidfd_getfd, pfd, (int)fd, 0);
    if (mine < 0) { /* ptrace rules: another user's launcher, or kernel.yama.ptrace_scope >= 1 */
      if (errno == EPERM) denied = errno;
      else if (!denied) denied = errno;
      continue;
    }
    char peer[INET6_ADDRSTRLEN];
    peer_text(mine, peer, sizeof peer);
    /* The socket is the launcher's too: shutting it down shows there as the peer gone. */
    if (peer[0] && listed(addrs, peer) && shutdown(mine, SHUT_RDWR) == 0) {
      LOG_INFO(SUP, "closed %s's connection (fd %ld) to the lost host at %s", comm, fd, peer);
      cut++;
    }
    close(mine);
  }
  closedir(d);
  close(pfd);
  if (!cut && denied && why) snprintf(why, len, "cannot reach %s's connections: %s", comm, strerror(denied));
  else if (!cut && why) snprintf(why, len, "%s holds no connection to %s", comm, addrs);
  return cut;
}

int lostpeer_spawn(const char *self_exe, const char *lost, const char *others, char *why, size_t len) {
  if (why && len) why[0] = 0;
  int launcher = (int)getppid();
  char comm[64];
  comm_of(launcher, comm, sizeof comm);
  if (!lost || !*lost || !is_ompi_launcher(comm)) {
    if (why) snprintf(why, len, "the parent process (%s) is not Open MPI's mpirun or orted", comm[0] ? comm : "?");
    return -2;
  }
  /* Can we reach its sockets at all (ptrace rights)? Try on its standard input. */
  int pfd = (int)syscall(SYS_pidfd_open, launcher, 0);
  int probe = pfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pfd, 0, 0) : -1;
  int err = errno;
  if (probe >= 0) close(probe);
  if (pfd >= 0) close(pfd);
  if (probe < 0 && (pfd < 0 || err == EPERM)) {
    if (why) snprintf(why, len, "cannot reach %s's connections: %s", comm, strerror(err));
    return -1;
  }
  /* The addresses go in on the helper's standard input (thousands of nodes' would not fit in an
   * argument): a memory file with two lines. */
  int mfd = (int)syscall(SYS_memfd_create, "gpulaunch-lostpeer", 0);
  if (mfd < 0) {
    if (why) snprintf(why, len, "memfd_create: %s", strerror(errno));
    return -1;
  }
  const char *parts[] = {lost, "\n", others ? others : "", "\n"};
  for (size_t i = 0; i < 4; i++)
    for (size_t off = 0, n = strlen(parts[i]); off < n;) {
      ssize_t w = write(mfd, parts[i] + off, n - off);
      if (w <= 0) {
        if (why) snprintf(why, len, "writing the helper's addresses: %s", strerror(errno));
        close(mfd);
        return -1;
      }
      off += (size_t)w;
    }
  lseek(mfd, 0, SEEK_SET);
  /* The helper: its own session, no descriptor of ours (mpirun must see this rank's pipes
   * close when it leaves), exec'd at once (this process has threads). */
  char watch[24], lpid[24];
  snprintf(watch, sizeof watch, "%d", (int)getpid());
  snprintf(lpid, sizeof lpid, "%d", launcher);
  char *argv[] = {(char *)"gpulaunch", (char *)LOSTPEER_HELPER_ARG, watch, lpid, NULL};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  posix_spawn_file_actions_adddup2(&fa, mfd, 0);
  for (int fd = 1; fd < 3; fd++) posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
  pid_t child;
  int rc = posix_spawn(&child, self_exe, &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(mfd);
  if (rc != 0) {
    if (why) snprintf(why, len, "cannot start the helper %s: %s", self_exe, strerror(rc));
    return -1;
  }
  if (why) snprintf(why, len, "%s's connections to %s close once this rank has left (helper pid %d)", comm, lost, (int)child);
  return (int)child;
}

/* Waits until pid has left, seconds at most; 1 when it has. */
static int wait_gone(int pid, double seconds) {
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return errno == ESRCH;
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int rc = poll(&p, 1, (int)(seconds * 1000));
  close(fd);
  return rc > 0;
}

/* A line of the standard input (malloc'd, "" at the end). */
static char *read_line(FILE *f) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, f);
  if (n < 0) {
    free(line);
    return strdup("");
  }
  line[strcspn(line, "\n")] = 0;
  return line;
}

int lostpeer_helper_main(int argc, char **argv) {
  if (argc < 4) return 64;
  int watch = atoi(argv[2]), launcher = atoi(argv[3]);
  char *lost = read_line(stdin), *others = read_line(stdin);
  /* Wait for the rank that started us to leave (10 s at most): mpirun then has its exit status
   * (68) before it learns of the lost daemon, which would otherwise make its status 1. */
  (void)wait_gone(watch, 10.0);
  util_sleep(0.3);
  int rc = lostpeer_cut(launcher, lost, NULL, 0);
  /* More hosts may be lost than the one named first (this host's own link is down, and every
   * other host went silent): the job is over, so after 5 s the launcher's connections to every
   * other host go too, and it ends (an orted whose mpirun is gone ends as well). */
  if (rc >= 0 && others && *others && !wait_gone(launcher, 5.0)) rc = lostpeer_cut(launcher, others, NULL, 0);
  free(lost);
  free(others);
  return rc >= 0 ? 0 : 1;
}
