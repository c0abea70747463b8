/* gpulaunch-exec: the first thing a supervised program runs: dies with its supervisor
 * (PR_SET_PDEATHSIG), then becomes the program (exec). libuv's uv_spawn has no pre-exec hook. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* argv: gpulaunch-exec SUPERVISOR_PID PROGRAM [ARGS...] */
int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "gpulaunch-exec: used by gpulaunch to start programs; not meant to be run by hand\n");
    return 127;
  }
  long parent = strtol(argv[1], NULL, 10);
  /* SIGKILL when the supervisor dies, even by SIGKILL: no orphans. Survives exec. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) perror("gpulaunch-exec: prctl(PR_SET_PDEATHSIG)");
  /* The supervisor may have died between fork and prctl. */
  if (getppid() != (pid_t)parent) return 127;
  execvp(argv[2], argv + 2);
  int err = errno;
  fprintf(stderr, "gpulaunch: cannot run '%s': %s\n", argv[2], strerror(err));
  return err == ENOENT ? 127 : 126;
}
