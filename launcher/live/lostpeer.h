/* A host lost mid-job: close the local Open MPI launcher's connections to it, so it ends now. */
#ifndef GPL_LAUNCHER_LOSTPEER_H
#define GPL_LAUNCHER_LOSTPEER_H

#include <stddef.h>

/* Open MPI's mpirun (or an orted) that started this rank keeps waiting for a lost host's daemon
 * after every rank has left, as long as its out-of-band TCP keepalive says (300 s + 9 x 20 s by
 * default), and the user's command hangs. When pid (this process's parent) is such a launcher,
 * shut down its TCP connections to any of addrs (blank-separated addresses of the lost host):
 * it then sees the daemon gone at once, ends the job and exits with the ranks' status (68).
 * The socket is reached with pidfd_getfd(2), which needs the ptrace rights on the launcher (the
 * same user where kernel.yama.ptrace_scope is 0, or root). Returns the connections closed, 0
 * when the launcher holds none to those addresses (an orted on another host may), -1 when they
 * could not be reached, -2 when pid is no Open MPI launcher (srun's slurmstepd, ...); why
 * (optional) says why none was closed. */
int lostpeer_cut(int pid, const char *addrs, char *why, size_t len);

/* The cut must come after mpirun has this rank's exit status (68), and this rank may be ended
 * by mpirun itself before it can do anything at its end: so a helper does it. Starts
 * self_exe (gpulaunch) as LOSTPEER_HELPER_ARG in a session of its own, which waits for this
 * process to leave, then cuts this process's parent's connections to lost (blank-separated
 * addresses), and when the parent has not ended 5 s later, its connections to others (every
 * other node's addresses: more hosts were lost, or this one was cut off). Returns the helper's
 * pid, -2 when the parent is no Open MPI launcher, -1 when its connections cannot be reached
 * (ptrace rights) or the helper cannot start; why says what. */
#define LOSTPEER_HELPER_ARG "--lostpeer-helper"
int lostpeer_spawn(const char *self_exe, const char *lost, const char *others, char *why, size_t len);
/* The helper's main: gpulaunch --lostpeer-helper WATCH_PID LAUNCHER_PID, the two address lines on
 * its standard input. */
int lostpeer_helper_main(int argc, char **argv);

#endif
