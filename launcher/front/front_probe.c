/* Which hosts the launcher can start a program on now (front_probe.h): `LAUNCHER [options]
 * --host H:1 -np 1 true` (srun: `srun [options] --overlap -N1 -n1 --nodelist=H true`) on every
 * host at once, each bounded; after a launch that did not start
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

/* One round over the hosts whose ok[i] is 0. */
static int round_of(char **head, int nhead, char **opts, int nopts, int srun, const front_host_t *hosts,
                    int n, double timeout_s, int *ok) {
  pid_t *pids = calloc((size_t)n, sizeof *pids);
  if (!pids) return -1;
  int left = 0;
  for (int i = 0; i < n; i++) {
    pids[i] = ok[i] ? 0 : start(head, nhead, opts, nopts, srun, hosts[i].name);
    left += pids[i] > 0;
  }
  double until = front_now() + timeout_s;
  while (left > 0 && front_now() < until) {
    for (int i = 0; i < n; i++) {
      int st;
      if (pids[i] <= 0 || waitpid(pids[i], &st, WNOHANG) != pids[i]) continue;
      ok[i] = WIFEXITED(st) && WEXITSTATUS(st) == 0;
      pids[i] = 0;
      left--;
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
  return 0;
}

int front_probe(char **head, int nhead, char **opts, int nopts, int srun, const front_host_t *hosts, int n,
                double timeout_s, int *ok) {
  for (int i = 0; i < n; i++) ok[i] = 0;
  /* A second round for the hosts that failed the first: a host is left out for minutes, so one
   * slow start on a busy machine must not be mistaken for an unreachable host. */
  for (int r = 0; r < 2; r++)
    if (round_of(head, nhead, opts, nopts, srun, hosts, n, r ? timeout_s * 2 / 3 : timeout_s, ok) < 0) return -1;
  return 0;
}
