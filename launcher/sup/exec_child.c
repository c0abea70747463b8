/* gpulaunch-exec: the first thing a supervised program runs; it stays as the program's reaper
 * (launcher/sup/reap.c) so the program's whole tree dies with it or with gpulaunch. libuv's
 * uv_spawn has no pre-exec hook, and a parent that outlives gpulaunch's SIGKILL needs a process. */
#include "launcher/sup/reap.h"

/* argv: gpulaunch-exec SUPERVISOR_PID PROGRAM [ARGS...] */
int main(int argc, char **argv) { return reap_main(argc, argv); }
