/* The reaper: gpulaunch-exec stays between a rank's gpulaunch and its program as the program's
 * parent and a child subreaper, so that the program's whole tree (its own process group and any
 * descendant that left it with setsid) dies with the program, with gpulaunch, and so with mpirun,
 * even when gpulaunch is SIGKILLed. libc only: gpulaunch-exec starts in next to no time. */
#ifndef GPL_LAUNCHER_REAP_H
#define GPL_LAUNCHER_REAP_H

#include <sys/types.h>

/* gpulaunch-exec's main: argv = gpulaunch-exec SUPERVISOR_PID PROGRAM [ARGS...]. Forks the
 * program (in the reaper's process group, which gpulaunch signals), and then:
 *  - when the program ends: kills what is left of its tree, exits with the program's status
 *    (the same exit code, or killed by the same signal), so gpulaunch sees the program's end;
 *  - when the supervisor is gone (PR_SET_PDEATHSIG, and getppid() checked every second) or asks
 *    with reap_request: SIGKILLs the whole tree, then ends as the program did;
 *  - other signals (those gpulaunch sends the group: the program gets them too) are ignored. */
int reap_main(int argc, char **argv);

/* Supervisor side: ask the reaper (pid) to SIGKILL the program's whole tree. A queued signal
 * with a value only gpulaunch sends, so a signal the program's group gets never means it.
 * 0, or -1 with errno (ESRCH: gone already). */
int reap_request(pid_t reaper);

#endif
