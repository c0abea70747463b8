/* One launch of the job by gpulaunch-run (front_job.h): mpirun started with SIGTERM and SIGHUP
 * blocked in a process group of its own, the user's signals passed to rank 0 through the channel
 * (TLS 1.3, common/tls.h; the words in launcher/sup/frontproto.h), the job's status and the hosts
 * it names lost, mpirun ended when it lingers. */
#include "launcher/front/front_job.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/envvar.h"
#include "common/log.h"
#include "common/tls.h"
#include "common/util.h"
#include "launcher/audit/audit_event.h"
#include "launcher/exitcode.h"
#include "launcher/front/elastic_claims.h"
#include "launcher/job/seckey.h"
#include "launcher/sup/frontproto.h"

#define LINGER_S 10.0     /* after the job's status: mpirun's own teardown may take this long */
#define LINGER_LOST_S 5.0 /* ... after a lost rank (68): mpirun would wait for the lost daemon */
#define ORPHAN_S 30.0     /* rank 0's channel closed without a status: its gpulaunch is gone */
#define UNHEARD_S 5.0     /* a stop before rank 0 connected: then mpirun's own SIGINT ends it */
#define NCONN 64          /* rank 0's connection and short ones of ranks that report a loss; a
                           * connection that has not authenticated within FRONTPROTO_AUTH_S is
                           * closed, and when all are taken the oldest silent one makes room */

static int g_pipe[2] = {-1, -1};

static void on_sig(int sig) {
  int e = errno;
  unsigned char b = (unsigned char)sig;
  if (write(g_pipe[1], &b, 1) < 0) { /* the pipe is full: a wake-up is pending anyway */
  }
  errno = e;
}

double front_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void front_say(const char *fmt, ...) {
  char buf[1024];
  int t = log_time_prefix(buf, sizeof buf); /* the ranks' clock, for profiling */
  t += snprintf(buf + t, sizeof buf - (size_t)t, "gpulaunch-run: ");
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + t, sizeof buf - 1 - (size_t)t, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  n += t;
  if ((size_t)n > sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  if (write(2, buf, (size_t)n) < 0) {
  }
}

typedef struct conn_s {
  int fd;
  tls_t *tls;
  int authed;    /* 1: rank 0 ("hello TOKEN"), 2: a rank that tells a loss ("tell TOKEN") */
  int heard;     /* any byte arrived */
  double opened;
  char peer[48];
  size_t len;
  char buf[FRONTPROTO_LINE_MAX];
  char from[FRONTPROTO_HOST_MAX + 1]; /* the host this connection's rank runs on ("from HOST"; "" not said) */
} conn_t;

static int send_line(conn_t *c, const char *line) {
  return tls_write_all(c->tls, line, strlen(line), 0.5) == 0 ? 0 : -1;
}

static int status_of(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 1;
}

int front_signals_init(int own_signals) {
  if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) < 0) return -1;
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
  return 0;
}

static pid_t start_launcher(char **av, int errfd) {
  pid_t pid = fork();
  if (pid < 0) {
    front_say("fork: %s", strerror(errno));
    return -1;
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
    if (errfd >= 0 && dup2(errfd, 2) < 0) _exit(127);
    execvp(av[0], av);
    front_say("cannot run %s: %s", av[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

/* A "lost HOST" line from the rank on host `by` (rank 0's or another's), or the launcher's word
 * (launcher: mpirun on host `by` lost its daemon on HOST): the claim, once. */
static void add_claim(front_job_t *j, const char *by, const char *host, int rank0, int launcher) {
  if (!*host || strlen(host) >= 64) return;
  for (int i = 0; i < j->nclaims; i++)
    if (strcmp(j->claims[i].by, by) == 0 && strcmp(j->claims[i].lost, host) == 0 && j->claims[i].launcher == launcher)
      return;
  if (j->nclaims == FRONT_MAX_NAMED) return;
  ecore_claim_t *c = &j->claims[j->nclaims++];
  snprintf(c->by, sizeof c->by, "%s", by);
  snprintf(c->lost, sizeof c->lost, "%s", host);
  c->rank0 = rank0;
  c->launcher = launcher;
}

/* A host named in a "lost HOST" / "notice HOST" line, once. */
static void add_named(char (*list)[64], int *n, const char *host) {
  if (!*host || strlen(host) >= 64) return;
  for (int i = 0; i < *n; i++)
    if (strcmp(list[i], host) == 0) return;
  if (*n < FRONT_MAX_NAMED) strcpy(list[(*n)++], host);
}

typedef struct run_s {
  front_job_t *j;
  pid_t pid;
  int errfd;                  /* the launcher's stderr (read here, passed on to ours), -1 none */
  char err[FRONTPROTO_LINE_MAX]; /* ... its line so far */
  size_t errlen;
  int lost_block;             /* lines since its "lost communication with a remote daemon" (0 none) */
  conn_t c[NCONN];
  int stop_sig, stop_sent, nint, rank0_seen;
  double stop_at, deadline, orphan_at;
  double verdict_at; /* when rank 0 said the job's status (0: it did not, or mpirun was ended) */
  int told;          /* the status is another rank's (rank 0's host lost), rank 0 may say it yet */
} run_t;

/* One line of the launcher's stderr: Open MPI's word that it lost a host's daemon (it ends the
 * job at once, maybe before any rank's claim comes) is a claim of the launcher's. */
static void launcher_line(run_t *r, const char *line) {
  front_job_t *j = r->j;
  char host[64];
  if (!ecore_launcher_line(&r->lost_block, line, host, sizeof host)) return;
  add_named(j->lost, &j->nlost, host);
  add_claim(j, util_hostname(), host, 0, 1);
  j->launcher_named = 1;
  if (j->verdict < 0) { /* the job's status: a host lost (rank 0 may say it yet) */
    j->verdict = GPL_EXIT_TIMEOUT;
    r->told = 1;
    r->deadline = front_now() + LINGER_LOST_S;
  }
}

/* The launcher's stderr: passed on as it comes, its lines read. */
static void launcher_err(run_t *r) {
  char b[4096];
  for (int k = 0; k < 16; k++) {
    ssize_t n = read(r->errfd, b, sizeof b);
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(r->errfd);
        r->errfd = -1;
      }
      return;
    }
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(2, b + off, (size_t)(n - off));
      if (w <= 0 && errno != EINTR) break;
      if (w > 0) off += w;
    }
    for (ssize_t i = 0; i < n; i++) {
      if (b[i] != '\n') {
        if (r->errlen < sizeof r->err - 1) r->err[r->errlen++] = b[i];
        continue;
      }
      r->err[r->errlen] = 0;
      launcher_line(r, r->err);
      r->errlen = 0;
    }
  }
}

static void send_stop(run_t *r, int sig) {
  int any = 0;
  for (int i = 0; i < NCONN; i++)
    if (r->c[i].fd >= 0 && r->c[i].authed == 1) {
      send_line(&r->c[i], sig == SIGINT ? FRONTPROTO_STOP " " FRONTPROTO_INT "\n" : FRONTPROTO_STOP " " FRONTPROTO_TERM "\n");
      any = 1;
    }
  r->stop_sent = any;
}

static void conn_close(run_t *r, conn_t *c) {
  if (c->authed == 1 && r->j->verdict < 0 && !r->orphan_at) {
    r->orphan_at = front_now();
    front_say("rank 0's gpulaunch left without the job's status: waiting up to %.0f s for mpirun", ORPHAN_S);
  }
  tls_free(c->tls);
  close(c->fd);
  c->fd = -1;
  c->tls = NULL;
  c->authed = 0;
  c->len = 0;
  c->from[0] = 0;
}

/* One line from a connection; 0 to go on, -1 when the connection was closed. */
static int conn_line(run_t *r, conn_t *c, char *line) {
  front_job_t *j = r->j;
  if (!c->authed) {
    /* Another job's rank 0 (or anything else that got through TLS) on this port: not ours. */
    const char *h = frontproto_arg(line, FRONTPROTO_HELLO), *t = frontproto_arg(line, FRONTPROTO_TELL);
    const char *tok = h ? h : t;
    size_t tl = strlen(j->token);
    if (tok && strlen(tok) == tl && tls_same(tok, j->token, tl)) {
      c->authed = h ? 1 : 2;
      send_line(c, FRONTPROTO_OK "\n");
      if (h) r->rank0_seen = j->rank0_seen = 1;
      if (h && r->stop_sig && !r->stop_sent) send_stop(r, r->stop_sig);
      return 0;
    }
    tls_fail_note("front", c->peer, "a wrong token");
    conn_close(r, c);
    return -1;
  }
  const char *a;
  /* (rank 0's status after another rank's "lost": its programs have ended too, as below) */
  if ((a = frontproto_arg(line, FRONTPROTO_EXIT)) && c->authed == 1 && (j->verdict < 0 || r->told)) {
    r->told = 0;
    j->verdict = atoi(a);
    r->verdict_at = front_now();
    r->deadline = front_now() + (j->verdict == GPL_EXIT_TIMEOUT ? LINGER_LOST_S : LINGER_S);
  } else if ((a = frontproto_arg(line, FRONTPROTO_FROM))) {
    snprintf(c->from, sizeof c->from, "%s", strlen(a) < sizeof c->from ? a : "");
  } else if ((a = frontproto_arg(line, FRONTPROTO_LOST))) {
    add_named(j->lost, &j->nlost, a);
    add_claim(j, c->from, a, c->authed == 1, 0);
    if (c->authed == 2 && j->verdict < 0) { /* rank 0's host is lost: it says nothing more */
      j->verdict = GPL_EXIT_TIMEOUT;
      r->told = 1; /* (unless it was cut off from the others only: a partition) */
      r->deadline = front_now() + LINGER_LOST_S;
    }
  } else if ((a = frontproto_arg(line, FRONTPROTO_NOTICE))) {
    add_named(j->notice, &j->nnotice, a);
  }
  return 0;
}

static void conn_read(run_t *r, conn_t *c) {
  c->heard = 1;
  if (!tls_ready(c->tls)) {
    int h = tls_handshake(c->tls);
    if (h == 0) return;
    if (h < 0) {
      tls_fail_note("front", c->peer, tls_why(c->tls));
      conn_close(r, c);
      return;
    }
  }
  for (;;) {
    ssize_t n = tls_read(c->tls, c->buf + c->len, sizeof c->buf - 1 - c->len);
    if (n == 0) return;
    if (n < 0) {
      conn_close(r, c);
      return;
    }
    c->len += (size_t)n;
    c->buf[c->len] = 0;
    char *nl;
    while ((nl = strchr(c->buf, '\n'))) {
      *nl = 0;
      if (conn_line(r, c, c->buf) < 0) return;
      size_t used = (size_t)(nl + 1 - c->buf);
      memmove(c->buf, nl + 1, c->len - used + 1);
      c->len -= used;
    }
    if (c->len >= sizeof c->buf - 1) c->len = 0;
  }
}

/* A new connection: a free slot, else the oldest one that has said nothing yet (a real rank
 * speaks at once: its TLS ClientHello), else the oldest one not authenticated. */
static int conn_accept(run_t *r, int lfd) {
  struct sockaddr_storage sa;
  socklen_t sl = sizeof sa;
  int fd = accept4(lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return -1;
  int slot = -1, silent = -1, unauth = -1;
  for (int i = 0; i < NCONN; i++) {
    conn_t *c = &r->c[i];
    if (c->fd < 0) {
      if (slot < 0) slot = i;
      continue;
    }
    if (c->authed) continue;
    if (!c->heard && (silent < 0 || c->opened < r->c[silent].opened)) silent = i;
    if (unauth < 0 || c->opened < r->c[unauth].opened) unauth = i;
  }
  if (slot < 0) slot = silent >= 0 ? silent : unauth;
  if (slot < 0) {
    close(fd);
    return 0;
  }
  conn_t *c = &r->c[slot];
  if (c->fd >= 0) {
    tls_fail_note("front", c->peer, "held a connection without authenticating");
    conn_close(r, c);
  }
  *c = (conn_t){.fd = fd, .opened = front_now()};
  char a[INET6_ADDRSTRLEN] = "?";
  if (sa.ss_family == AF_INET) inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, a, sizeof a);
  else if (sa.ss_family == AF_INET6) inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, a, sizeof a);
  util_strlcpy(c->peer, a, sizeof c->peer);
  if (tls_new(&c->tls, r->j->ctx, fd) < 0) {
    close(fd);
    c->fd = -1;
  }
  return 0;
}

/* Connections that did not authenticate within FRONTPROTO_AUTH_S: dropped. */
static void conn_expire(run_t *r) {
  double t = front_now();
  for (int i = 0; i < NCONN; i++) {
    conn_t *c = &r->c[i];
    if (c->fd >= 0 && !c->authed && t - c->opened > FRONTPROTO_AUTH_S) {
      tls_fail_note("front", c->peer, tls_ready(c->tls) ? "no token in time" : "no TLS handshake in time");
      conn_close(r, c);
    }
  }
}

static void on_signals(run_t *r) {
  unsigned char b[16];
  ssize_t n = read(g_pipe[0], b, sizeof b);
  for (ssize_t i = 0; i < n; i++) {
    int sig = b[i];
    if (sig == SIGCHLD) continue;
    if (sig == SIGUSR1 || sig == SIGUSR2) { /* mpirun passes them to every rank */
      kill(r->pid, sig);
      continue;
    }
    if (sig == SIGHUP) sig = SIGTERM; /* the terminal is gone: stop as for a SIGTERM */
    if (sig == SIGINT && ++r->nint >= 3) {
      front_say("SIGINT a third time: killing mpirun and every rank now");
      kill(-r->pid, SIGKILL);
      continue;
    }
    int first = !r->j->user_stop;
    r->j->user_stop = 1;
    if (first) { /* a stop of ours (a membership change) may be under way: this one ends the job */
      if (!r->stop_sig) r->stop_sig = sig, r->stop_at = front_now();
      audit_note_stop(sig, "signal", "gpulaunch-run's caller", 0);
      front_say("%s received: telling the job to stop (every program gets [job] preempt_signal now "
                "and [job] grace to finish)", sig == SIGINT ? "SIGINT" : "SIGTERM");
    } else if (sig != SIGINT) {
      continue; /* repeated SIGTERMs keep the grace */
    }
    send_stop(r, sig);
  }
}

static run_t *g_run; /* the launch front_job_stop acts on */

void front_job_stop(front_job_t *j) {
  run_t *r = g_run;
  if (!r || r->j != j || r->stop_sig) return;
  j->asked_stop = 1;
  j->stop_asked_at = front_now();
  r->stop_sig = SIGTERM;
  r->stop_at = j->stop_asked_at;
  send_stop(r, SIGTERM);
}

/* What the lingering launcher, a silent rank 0 or a stop before start-up call for. */
static void check_timers(run_t *r) {
  front_job_t *j = r->j;
  double t = front_now();
  /* A membership change of an elastic job: rank 0 says the status once every program has ended
   * (or its rank is lost), so nothing of the user's is left to wait for; mpirun's own teardown
   * after a non-zero status (1-3 s, longer with a lost daemon) only delays the next launch. */
  if (r->verdict_at > 0 && j->restart_linger > 0 && !j->user_stop &&
      (j->nlost || j->nnotice || j->asked_stop) && t > r->verdict_at + j->restart_linger) {
    kill(-r->pid, SIGKILL);
    kill(r->pid, SIGKILL);
    r->verdict_at = 0;
    r->deadline = t + 3600;
  }
  if (j->verdict >= 0 && t > r->deadline) {
    front_say("the job ended (exit status %d) but %s did not exit within %.0f s: ending it", j->verdict,
              j->av[0], j->verdict == GPL_EXIT_TIMEOUT ? LINGER_LOST_S : LINGER_S);
    kill(-r->pid, SIGKILL);
    kill(r->pid, SIGKILL);
    r->deadline = t + 3600;
  }
  if (r->orphan_at && j->verdict < 0 && t - r->orphan_at > ORPHAN_S) {
    front_say("mpirun did not exit within %.0f s of losing rank 0: ending it (exit status %d)", ORPHAN_S,
              GPL_EXIT_TIMEOUT);
    j->verdict = GPL_EXIT_TIMEOUT;
    kill(-r->pid, SIGKILL);
    kill(r->pid, SIGKILL);
    r->orphan_at = 0;
  }
  if (j->start_limit > 0 && !r->rank0_seen && !j->start_timed_out && !r->stop_sig &&
      t - j->started > j->start_limit) {
    front_say("rank 0 did not connect within %.0f s of the launch: ending %s", j->start_limit, j->av[0]);
    j->start_timed_out = 1;
    kill(-r->pid, SIGKILL);
    kill(r->pid, SIGKILL);
  }
  if (r->stop_sig && !r->stop_sent && t - r->stop_at > UNHEARD_S) {
    /* Still starting up: no program runs yet, nothing to checkpoint. mpirun's SIGINT ends it. */
    front_say("rank 0 has not connected yet (the job is still starting): ending mpirun");
    kill(r->pid, SIGINT);
    r->stop_sent = 1;
    if (j->verdict < 0) j->verdict = r->stop_sig == SIGINT ? 128 + SIGINT : GPL_EXIT_PREEMPTED;
    r->deadline = t + LINGER_S;
  }
}

int front_job_run(front_job_t *j, front_tick_fn tick, void *arg) {
  run_t r = {.j = j, .errfd = -1};
  j->verdict = j->launcher_status = -1;
  j->user_stop = j->asked_stop = j->nlost = j->nnotice = j->nclaims = j->rank0_seen = j->start_timed_out = 0;
  j->launcher_named = 0;
  j->stop_asked_at = 0;
  j->started = front_now();
  for (int i = 0; i < NCONN; i++) r.c[i].fd = -1;
  int nl = 1 + j->nlfd_more, lfds[8] = {j->lfd};
  for (int i = 1; i < nl; i++) lfds[i] = j->lfd_more[i - 1];
  for (int i = 0; i < nl; i++) fcntl(lfds[i], F_SETFL, fcntl(lfds[i], F_GETFL) | O_NONBLOCK);
  if (seckey_front_renew() < 0) return -1; /* MUNGE: a fresh credential for each launch (said) */
  /* The launcher's stderr through a pipe of ours: its word that it lost a host's daemon is a claim
   * (without the pipe, it goes straight to our stderr as before). */
  int ep[2] = {-1, -1};
  if (pipe2(ep, O_CLOEXEC) < 0) ep[0] = ep[1] = -1;
  r.pid = start_launcher(j->av, ep[1]);
  if (ep[1] >= 0) close(ep[1]);
  if (r.pid < 0) {
    if (ep[0] >= 0) close(ep[0]);
    return -1;
  }
  r.errfd = ep[0];
  if (r.errfd >= 0) fcntl(r.errfd, F_SETFL, fcntl(r.errfd, F_GETFL) | O_NONBLOCK);
  g_run = &r;
  double next_tick = j->started + 0.2;
  while (j->launcher_status < 0) {
    /* the signals' pipe, the listeners, the connections, the launcher's stderr */
    struct pollfd pf[1 + 8 + NCONN + 1] = {{.fd = g_pipe[0], .events = POLLIN}};
    for (int i = 0; i < nl; i++) pf[1 + i] = (struct pollfd){.fd = lfds[i], .events = POLLIN};
    for (int i = 0; i < NCONN; i++) pf[i + 1 + nl] = (struct pollfd){.fd = r.c[i].fd, .events = POLLIN};
    const int perr = 1 + nl + NCONN;
    pf[perr] = (struct pollfd){.fd = r.errfd, .events = POLLIN};
    int rc = poll(pf, (nfds_t)(perr + 1), 200);
    if (rc < 0 && errno != EINTR) break;
    if (pf[0].revents & POLLIN) on_signals(&r);
    if (pf[perr].revents & (POLLIN | POLLHUP | POLLERR)) launcher_err(&r);
    /* Every waiting connection at once (the listener is non-blocking): a flood of them must not
     * keep a real one waiting in the backlog. */
    for (int i = 0; i < nl; i++)
      if (pf[1 + i].revents & POLLIN)
        for (int k = 0; k < 4096 && conn_accept(&r, lfds[i]) == 0; k++) {
        }
    for (int i = 0; i < NCONN; i++)
      if (r.c[i].fd >= 0 && (pf[i + 1 + nl].revents & (POLLIN | POLLHUP | POLLERR))) conn_read(&r, &r.c[i]);
    int st;
    pid_t w = waitpid(r.pid, &st, WNOHANG);
    if (w == r.pid) {
      j->launcher_status = status_of(st);
      break;
    }
    check_timers(&r);
    conn_expire(&r);
    if (tick && front_now() >= next_tick) {
      next_tick = front_now() + 0.2;
      tick(arg, j);
    }
  }
  g_run = NULL;
  if (r.errfd >= 0) { /* what the launcher wrote last (its daemons' leftovers may hold the pipe) */
    launcher_err(&r);
    if (r.errfd >= 0) close(r.errfd);
  }
  for (int i = 0; i < NCONN; i++)
    if (r.c[i].fd >= 0) {
      tls_free(r.c[i].tls);
      close(r.c[i].fd);
    }
  tls_fail_report();
  j->code = j->verdict >= 0 ? j->verdict : j->launcher_status;
  return 0;
}
