/* A program for the Slurm tests to wrap: records every signal it gets (time, name, sender) so a
 * test can count deliveries, and takes a while to "checkpoint" after the first stop signal; in a
 * requeued run (SLURM_RESTART_COUNT > 0) it ends after a second, so the requeued job completes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char g_log[4096];
static volatile sig_atomic_t g_stop;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One line per delivery: "TIME SIGNAME SENDER_PID SENDER_COMM". */
static void on_sig(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  char comm[64] = "?", path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/comm", (int)si->si_pid);
  int fd = open(path, O_RDONLY);
  if (fd >= 0) {
    ssize_t n = read(fd, comm, sizeof comm - 1);
    comm[n > 0 ? n : 0] = 0;
    if (n > 0 && comm[n - 1] == '\n') comm[n - 1] = 0;
    close(fd);
  }
  int n = snprintf(line, sizeof line, "%.6f %s %d %s\n", now(), sigabbrev_np(sig), (int)si->si_pid, comm);
  fd = open(g_log, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd >= 0) {
    if (write(fd, line, (size_t)n) < 0) {}
    close(fd);
  }
  if (sig == SIGTERM || sig == SIGINT || sig == SIGUSR1) g_stop = 1;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: sigrec DIR SECONDS [CHECKPOINT_SECONDS [EXIT_CODE]]\n"
                    "  records signals in DIR/sig.RESTART.RANK (one line each: time, name, sender pid\n"
                    "  and name); after the first SIGTERM/SIGINT/SIGUSR1 it 'checkpoints' for\n"
                    "  CHECKPOINT_SECONDS (default: never ends) then exits with EXIT_CODE; a\n"
                    "  requeued run (SLURM_RESTART_COUNT > 0) ends after 1 s\n");
    return 2;
  }
  const char *rank = getenv("RANK");
  int restart = getenv("SLURM_RESTART_COUNT") ? atoi(getenv("SLURM_RESTART_COUNT")) : 0;
  snprintf(g_log, sizeof g_log, "%s/sig.%d.%s", argv[1], restart, rank ? rank : "x");
  double secs = restart > 0 ? 1 : atof(argv[2]);
  double ckpt = argc > 3 ? atof(argv[3]) : -1;
  int code = argc > 4 ? atoi(argv[4]) : 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sig;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  int sigs[] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGCONT, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
  char ready[4200];
  snprintf(ready, sizeof ready, "%s/ready.%d.%s", argv[1], restart, rank ? rank : "x");
  FILE *f = fopen(ready, "w");
  if (f) fprintf(f, "%d\n", (int)getpid()), fclose(f);
  printf("sigrec rank %s ready (restart %d)\n", rank ? rank : "?", restart);
  fflush(stdout);
  double t_end = now() + secs, t_stop = 0;
  while (now() < t_end) {
    usleep(20000);
    if (g_stop && t_stop == 0) t_stop = now();
    if (t_stop > 0 && ckpt >= 0 && now() >= t_stop + ckpt) {
      printf("sigrec rank %s: checkpoint written after %.1f s\n", rank ? rank : "?", ckpt);
      return code;
    }
  }
  return 0;
}
