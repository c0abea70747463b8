/* Which hosts the launcher can start a program on now (front_probe.h): `LAUNCHER [options]
 * --host H:1 -np 1 true` (srun: `srun [options] --overlap -N1 -n1 --nodelist=H true`) on every
 * host at once within one bound, a failed try again after a pause; after a launch that did not start
 * or lost a rank nobody named, the hosts that fail are the ones to leave out. Libc only. */
#include "launcher/front/front_probe.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launcher/front/front_job.h"

static pid_t start(char **head, int nhead, char **opts, int nopts, int srun, const char *host) {
  char hostarg[80];
  snprintf(hostarg, sizeof hostarg, srun ? "--nodelist=%s" : "%s:1", host);
  char **av = calloc((size_t)(nhead + nopts + 8), sizeof *av);
  if (!av) return -1;
  int k = 0;
  for (int i = 0; i < nhead; i++) av[k++] = head[i];
  for (int i = 0; i < nopts; i++) av[k++] = opts[i];
  if (srun) { /* a step of its own beside any other: srun --overlap -N1 -n1 --nodelist=H true */
    av[k++] = "--overlap";
    av[k++] = "-N1";
    av[k++] = "-n1";
    av[k++] = hostarg;
  } else {
    av[k++] = "--host";
    av[k++] = hostarg;
    av[k++] = "-np";
    av[k++] = "1";
  }
  av[k++] = "true";
  av[k] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    execvp(av[0], av);
    _exit(127);
  }
  if (pid > 0) setpgid(pid, pid);
  free(av);
  return pid;
}

#define PROBE_AT_ONCE 32  /* probes running at once (each is a launcher with its daemon) */
#define PROBE_RETRY_S 0.5 /* a probe that failed is tried again after this, doubled each time */
#define PROBE_MIN_S 3.0   /* ... while at least this much of the bound is left */

int front_probe(char **head, int nhead, char **opts, int nopts, int srun, const front_host_t *hosts, int n,
                double timeout_s, int *ok) {
  /* One bound for all: every host's probe at once (up to PROBE_AT_ONCE), a host that answers is
   * done, one whose probe failed (a start that failed on a busy machine, a daemon port still
   * held) is tried again after a pause while time is left, one that does not answer is waited
   * for up to the bound. A host is left out for minutes: load must not make a healthy one fail. */
  pid_t *pids = calloc((size_t)(n ? n : 1), sizeof *pids);
  double *next = calloc((size_t)(n ? n : 1), sizeof *next), *pause = calloc((size_t)(n ? n : 1), sizeof *pause);
  if (!pids || !next || !pause) {
    free(pids);
    free(next);
    free(pause);
    return -1;
  }
  double t0 = front_now(), until = t0 + timeout_s;
  int left = n, running = 0;
  for (int i = 0; i < n; i++) {
    ok[i] = 0;
    pause[i] = PROBE_RETRY_S;
  }
  while (left > 0 && front_now() < until) {
    double t = front_now();
    for (int i = 0; i < n && running < PROBE_AT_ONCE; i++)
      if (!ok[i] && pids[i] == 0 && next[i] >= 0 && t >= next[i]) {
        pids[i] = start(head, nhead, opts, nopts, srun, hosts[i].name);
        if (pids[i] > 0) running++;
        else pids[i] = 0, next[i] = t + pause[i];
      }
    for (int i = 0; i < n; i++) {
      int st;
      if (pids[i] <= 0 || waitpid(pids[i], &st, WNOHANG) != pids[i]) continue;
      pids[i] = 0;
      running--;
      if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        ok[i] = 1;
        left--;
      } else if (until - front_now() >= PROBE_MIN_S + pause[i]) { /* again, after a pause */
        next[i] = front_now() + pause[i];
        pause[i] *= 2;
      } else {
        next[i] = -1; /* no time for another try: unreachable */
        left--;
      }
    }
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  for (int i = 0; i < n; i++) /* past the bound: that host does not answer */
    if (pids[i] > 0) {
      kill(-pids[i], SIGKILL);
      kill(pids[i], SIGKILL);
      waitpid(pids[i], NULL, 0);
    }
  free(pids);
  free(next);
  free(pause);
  return 0;
}
