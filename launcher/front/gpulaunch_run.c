/* gpulaunch-run: the command to type instead of mpirun. `gpulaunch-run [mpirun options] gpulaunch
 * ARGS...` starts mpirun in a process group of its own with SIGTERM and SIGHUP blocked (plain
 * mpirun SIGKILLs its ranks a second after a SIGTERM, and a terminal's Ctrl-C reaches the whole
 * foreground group), with Open MPI's OOB keepalive short (a lost host's daemon is given up on in
 * seconds, not minutes), and a TCP channel to rank 0's supervisor (launcher/sup/frontch.h).
 *
 * A SIGTERM or SIGINT to gpulaunch-run goes to rank 0 through the channel, and rank 0 stops the
 * job as on its own SIGTERM/SIGINT: every program gets [job] preempt_signal at once and the grace.
 * Rank 0 sends the job's exit status once it is decided; gpulaunch-run exits with it once mpirun
 * is gone, ending mpirun when it does not go by itself (a lost host: mpirun waits for its daemon,
 * and may crash in PMIx_Finalize). SIGUSR1/SIGUSR2 go to mpirun, which passes them to every rank.
 *
 * The launcher may be srun too (GPULAUNCH_MPIRUN=srun): the channel then reaches the ranks in the
 * environment srun passes on, and a lost host ends srun 5 s after rank 0 named it, where srun
 * itself waits for the lost node's tasks until Slurm's KillWait has passed (or the node is
 * declared down). GPULAUNCH_RUN_SIGNALS=0 leaves SIGTERM/SIGINT/SIGHUP to the caller (a batch
 * script that passes them on through Slurm); GPULAUNCH_RUN_LD_PRELOAD is the launcher's LD_PRELOAD
 * (gpulaunch-srun.sbatch's shim). Libc only. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/envvar.h"
#include "launcher/sup/frontch.h"

#define LINGER_S 10.0     /* after the job's status: mpirun's own teardown may take this long */
#define LINGER_LOST_S 5.0 /* ... after a lost rank (68): mpirun would wait for the lost daemon */
#define ORPHAN_S 30.0     /* rank 0's channel closed without a status: its gpulaunch is gone */
#define UNHEARD_S 5.0     /* a stop before rank 0 connected: then mpirun's own SIGINT ends it */

static const char g_usage[] =
    "usage: gpulaunch-run [mpirun options] gpulaunch [gpulaunch options] CONFIG | -- PROGRAM...\n"
    "  e.g. gpulaunch-run -np 8 --hostfile hosts gpulaunch train.conf\n"
    "Starts mpirun (GPULAUNCH_MPIRUN, default mpirun) so that a SIGTERM or SIGINT to this command\n"
    "gives every program [job] preempt_signal at once and the full [job] grace, and this command\n"
    "exits with the job's status (75 preempted, 130 SIGINT, 68 a rank or host lost, ...) once every\n"
    "program is done, within seconds also when a host is lost.\n"
    "GPULAUNCH_MPIRUN=srun: the same around srun (gpulaunch-run -N 2 --ntasks-per-node 8 --mpi=pmix\n"
    "gpulaunch train.conf).\n";

static int g_pipe[2] = {-1, -1};

static void on_sig(int sig) {
  int e = errno;
  unsigned char b = (unsigned char)sig;
  if (write(g_pipe[1], &b, 1) < 0) { /* the pipe is full: a wake-up is pending anyway */
  }
  errno = e;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n > sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  if (write(2, "gpulaunch-run: ", 15) < 0 || write(2, buf, (size_t)n) < 0) {
  }
}

static int send_line(int fd, const char *line) {
  size_t n = strlen(line);
  return send(fd, line, n, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)n ? 0 : -1;
}

/* 1 when an mpirun option (or OMPI_MCA_ variable) already sets this MCA parameter. */
static int mca_given(int argc, char **argv, const char *name) {
  char env[128];
  snprintf(env, sizeof env, "OMPI_MCA_%s", name);
  if (getenv(env)) return 1;
  for (int i = 0; i + 1 < argc; i++)
    if ((strcmp(argv[i], "--mca") == 0 || strcmp(argv[i], "-mca") == 0) && strcmp(argv[i + 1], name) == 0)
      return 1;
  return 0;
}

/* Every address rank 0 may reach this host at, loopback first ("127.0.0.1:P,10.0.0.1:P"). */
static void addresses(int port, char *out, size_t len) {
  size_t off = (size_t)snprintf(out, len, "127.0.0.1:%d", port);
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs) < 0) return;
  for (struct ifaddrs *i = ifs; i && off + 32 < len; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    char a[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, sizeof a);
    off += (size_t)snprintf(out + off, len - off, ",%s:%d", a, port);
  }
  freeifaddrs(ifs);
}

static int make_token(char *out, size_t len) {
  unsigned char r[16];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, r, sizeof r) != (ssize_t)sizeof r) {
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  for (size_t i = 0; i < sizeof r && 2 * i + 2 < len; i++) snprintf(out + 2 * i, 3, "%02x", r[i]);
  return 0;
}

static int status_of(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    fputs(g_usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 64 : 0;
  }
  const char *mpirun = envvar_get(ENVVAR_MPIRUN);
  if (!mpirun || !*mpirun) mpirun = "mpirun";
  const char *base = strrchr(mpirun, '/');
  int srun = strcmp(base ? base + 1 : mpirun, "srun") == 0;
  const char *sigs = envvar_get(ENVVAR_RUN_SIGNALS);
  int own_signals = !sigs || strcmp(sigs, "0") != 0;

  /* The channel: any address of this host, a port the kernel picks. */
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
  socklen_t sl = sizeof sa;
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 8) < 0 ||
      getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
    say("cannot open the channel for rank 0: %s", strerror(errno));
    return 70;
  }
  char token[40], addrs[1024];
  if (make_token(token, sizeof token) < 0) {
    say("cannot read /dev/urandom: %s", strerror(errno));
    return 70;
  }
  addresses(ntohs(sa.sin_port), addrs, sizeof addrs);
  setenv(FRONTCH_ENV, addrs, 1);
  setenv(FRONTCH_TOKEN_ENV, token, 1);
  /* `> log 2>&1`: rank 0 then writes every line through one stream (mpirun would cut lines
   * of two streams at any byte); it may run on another host, where it cannot see our fds. */
  struct stat s1, s2;
  int merged = fstat(1, &s1) == 0 && fstat(2, &s2) == 0 && s1.st_dev == s2.st_dev && s1.st_ino == s2.st_ino;
  setenv("GPULAUNCH_FRONTEND_MERGED", merged ? "1" : "0", 1);

  /* mpirun -x the channel, the keepalive (unless given), then the user's words. srun passes the
   * environment on by itself; a --export list of the user's gets the channel's names added. */
  char **av = calloc((size_t)argc + 20, sizeof *av);
  if (!av) return 70;
  int n = 0;
  av[n++] = (char *)mpirun;
  if (srun) {
    static const char names[] = "," FRONTCH_ENV "," FRONTCH_TOKEN_ENV ",GPULAUNCH_FRONTEND_MERGED";
    for (int i = 1; i < argc; i++) {
      if (strncmp(argv[i], "--export=", 9) != 0 || strncmp(argv[i] + 9, "ALL", 3) == 0) continue;
      char *e = malloc(strlen(argv[i]) + sizeof names);
      if (!e) return 70;
      strcpy(e, argv[i]);
      strcat(e, names); /* also NONE,NAMES: these and Slurm's own */
      argv[i] = e;
    }
  } else {
    static const char *const xs[] = {FRONTCH_ENV, FRONTCH_TOKEN_ENV, "GPULAUNCH_FRONTEND_MERGED"};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
      av[n++] = "-x";
      av[n++] = (char *)xs[i];
    }
    static const char *const ka[][2] = {{"oob_tcp_keepalive_time", "10"},
                                        {"oob_tcp_keepalive_intvl", "2"},
                                        {"oob_tcp_keepalive_probes", "5"}};
    for (size_t i = 0; i < sizeof ka / sizeof ka[0]; i++) {
      if (mca_given(argc, argv, ka[i][0])) continue;
      av[n++] = "--mca";
      av[n++] = (char *)ka[i][0];
      av[n++] = (char *)ka[i][1];
    }
  }
  for (int i = 1; i < argc; i++) av[n++] = argv[i];
  av[n] = NULL;

  if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) < 0) return 70;
  struct sigaction act = {.sa_handler = on_sig};
  sigemptyset(&act.sa_mask);
  act.sa_flags = SA_RESTART;
  if (own_signals) {
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    sigaction(SIGHUP, &act, NULL);
  } else { /* the caller passes them on (and must not end this command with them) */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
  }
  sigaction(SIGCHLD, &act, NULL);
  sigaction(SIGUSR1, &act, NULL);
  sigaction(SIGUSR2, &act, NULL);

  pid_t pid = fork();
  if (pid < 0) {
    say("fork: %s", strerror(errno));
    return 70;
  }
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
    signal(SIGUSR2, SIG_DFL);
    /* Blocked, the signals stay pending in mpirun (gpulaunch unblocks them for itself). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    const char *pre = envvar_get(ENVVAR_RUN_LD_PRELOAD);
    if (pre && *pre) setenv("LD_PRELOAD", pre, 1);
    execvp(av[0], av);
    say("cannot run %s: %s", av[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);

  int cfd = -1, authed = 0, stop_sig = 0, stop_sent = 0, nint = 0, verdict = -1, mpirun_status = -1;
  double stop_at = 0, deadline = 0, orphan_at = 0;
  char cbuf[256];
  size_t clen = 0;
  while (mpirun_status < 0) {
    struct pollfd pf[3] = {{.fd = g_pipe[0], .events = POLLIN},
                           {.fd = cfd < 0 ? lfd : -1, .events = POLLIN},
                           {.fd = cfd, .events = POLLIN}};
    int rc = poll(pf, 3, 200);
    if (rc < 0 && errno != EINTR) break;
    if (pf[0].revents & POLLIN) {
      unsigned char b[16];
      ssize_t r = read(g_pipe[0], b, sizeof b);
      for (ssize_t i = 0; i < r; i++) {
        int sig = b[i];
        if (sig == SIGCHLD) continue;
        if (sig == SIGUSR1 || sig == SIGUSR2) { /* mpirun passes them to every rank */
          kill(pid, sig);
          continue;
        }
        if (sig == SIGHUP) sig = SIGTERM; /* the terminal is gone: stop as for a SIGTERM */
        if (sig == SIGINT && ++nint >= 3) {
          say("SIGINT a third time: killing mpirun and every rank now");
          kill(-pid, SIGKILL);
          continue;
        }
        if (!stop_sig) {
          stop_sig = sig;
          stop_at = now();
          say("%s received: telling the job to stop (every program gets [job] preempt_signal now "
              "and [job] grace to finish)", sig == SIGINT ? "SIGINT" : "SIGTERM");
        } else if (sig != SIGINT) {
          continue; /* repeated SIGTERMs keep the grace */
        }
        if (authed) send_line(cfd, sig == SIGINT ? "stop INT\n" : "stop TERM\n");
        stop_sent = authed;
      }
    }
    if (cfd < 0 && (pf[1].revents & POLLIN)) {
      cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
      clen = 0;
    }
    if (cfd >= 0 && (pf[2].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t r = recv(cfd, cbuf + clen, sizeof cbuf - 1 - clen, MSG_DONTWAIT);
      if (r <= 0 && !(r < 0 && (errno == EAGAIN || errno == EINTR))) {
        close(cfd);
        cfd = -1;
        if (authed && verdict < 0 && !orphan_at) {
          orphan_at = now();
          say("rank 0's gpulaunch left without the job's status: waiting up to %.0f s for mpirun", ORPHAN_S);
        }
        authed = 0;
      } else if (r > 0) {
        clen += (size_t)r;
        cbuf[clen] = 0;
        char *nl;
        while ((nl = strchr(cbuf, '\n'))) {
          *nl = 0;
          if (!authed) {
            /* Another job's rank 0 (or anything else) on this port: not ours. */
            if (strncmp(cbuf, "hello ", 6) == 0 && strcmp(cbuf + 6, token) == 0) {
              authed = 1;
              send_line(cfd, "ok\n");
              if (stop_sig && !stop_sent) {
                send_line(cfd, stop_sig == SIGINT ? "stop INT\n" : "stop TERM\n");
                stop_sent = 1;
              }
            } else {
              close(cfd);
              cfd = -1;
              clen = 0;
              break;
            }
          } else if (strncmp(cbuf, "exit ", 5) == 0 && verdict < 0) {
            verdict = atoi(cbuf + 5);
            deadline = now() + (verdict == 68 ? LINGER_LOST_S : LINGER_S);
          }
          size_t used = (size_t)(nl + 1 - cbuf);
          memmove(cbuf, nl + 1, clen - used + 1);
          clen -= used;
        }
        if (clen >= sizeof cbuf - 1) clen = 0;
      }
    }
    int st;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) {
      mpirun_status = status_of(st);
      break;
    }
    double t = now();
    if (verdict >= 0 && t > deadline) {
      say("the job ended (exit status %d) but %s did not exit within %.0f s: ending it", verdict, av[0],
          verdict == 68 ? LINGER_LOST_S : LINGER_S);
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      deadline = t + 3600;
    }
    if (orphan_at && verdict < 0 && t - orphan_at > ORPHAN_S) {
      say("mpirun did not exit within %.0f s of losing rank 0: ending it (exit status 68)", ORPHAN_S);
      verdict = 68;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      orphan_at = 0;
    }
    if (stop_sig && !stop_sent && t - stop_at > UNHEARD_S) {
      /* Still starting up: no program runs yet, nothing to checkpoint. mpirun's SIGINT ends it. */
      say("rank 0 has not connected yet (the job is still starting): ending mpirun");
      kill(pid, SIGINT);
      stop_sent = 1;
      if (verdict < 0) verdict = stop_sig == SIGINT ? 128 + SIGINT : 75;
      deadline = t + LINGER_S;
    }
  }
  if (cfd >= 0) close(cfd);
  int code = verdict >= 0 ? verdict : mpirun_status;
  if (verdict >= 0 && mpirun_status != verdict && mpirun_status >= 0)
    fprintf(stderr, "gpulaunch-run: exit status %d (the job's; %s's was %d)\n", code, av[0], mpirun_status);
  free(av);
  return code;
}
