/* gpulaunch-exec: the first thing a supervised program runs; it stays as the program's reaper
 * (launcher/exec/reap.c) so the program's whole tree dies with it or with gpulaunch. libuv's
 * uv_spawn has no pre-exec hook, and a parent that outlives gpulaunch's SIGKILL needs a process. */
#include "launcher/exec/fdclose.h"
#include "launcher/exec/reap.h"

/* argv: gpulaunch-exec SUPERVISOR_PID PROGRAM [ARGS...]
 * The program inherits its three standard streams and nothing else (docs/supervision.md): what
 * gpulaunch holds open (MPI's sockets and listeners, mpirun's pipes) and did not mark close-on-exec
 * is closed here, for the reaper and so for the program it forks. gpulaunch passes no descriptor
 * on purpose: the program reaches its gpulaunch by the socket path in GPULAUNCH_PROXY. */
int main(int argc, char **argv) {
  fdclose_from(3);
  return reap_main(argc, argv);
}
