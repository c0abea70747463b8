/* LD_PRELOAD shim for srun in gpulaunch-srun.sbatch: srun ignores the stop signals meant for the job's programs, so they keep their grace. */
/*
 * Why: srun reads SIGTERM, SIGINT, SIGHUP, SIGUSR1 and SIGUSR2 with sigwait(3) in a signal
 * thread. On SIGTERM or SIGHUP it SIGKILLs every task at once ("srun: forcing job termination");
 * other signals it forwards to the tasks. Inside the batch script srun gets these signals only
 * when Slurm signals the batch step's processes: scancel --full --signal=SIG (which in Slurm
 * 22.05 signals the batch script and its children but not the other steps), a plain scancel or
 * the time limit (which signal every step too). The batch script passes a signal on to the step
 * through Slurm itself, once, and gpulaunch stops the programs with their grace; srun's own
 * reaction would kill that grace (TERM) or double the signal (USR1). With this shim srun's
 * sigwait(3) skips those five signals when another process sent them (one line on stderr
 * each); SIGKILL (KillWait, scancel --signal=KILL) still ends srun, and srun still ends when
 * the step ends.
 *
 * The batch script sets LD_PRELOAD for srun only; the constructor puts the user's LD_PRELOAD
 * back (GPULAUNCH_SRUN_LD_PRELOAD) so that srun does not pass the shim on to the programs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void shim_init(void) {
  /* srun passes its environment on to the programs: they must not load the shim. */
  const char *user = getenv("GPULAUNCH_SRUN_LD_PRELOAD");
  if (user && *user)
    setenv("LD_PRELOAD", user, 1);
  else
    unsetenv("LD_PRELOAD");
  unsetenv("GPULAUNCH_SRUN_LD_PRELOAD");
}

static int ignored(int sig) {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGUSR1 || sig == SIGUSR2;
}

/* srun's own thread-directed signals pass: at its end srun wakes its signal thread with
 * pthread_kill(SIGINT). Only signals from other processes are skipped. */
int sigwait(const sigset_t *set, int *sig) {
  for (;;) {
    siginfo_t si;
    int s = sigwaitinfo(set, &si);
    if (s < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    *sig = s;
    if (!ignored(s) || si.si_pid == getpid()) return 0;
    char line[128];
    int n = snprintf(line, sizeof line, "srun: SIG%s ignored (gpulaunch-srun passes it on to the job's programs)\n",
                     sigabbrev_np(s));
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) {}
  }
}
