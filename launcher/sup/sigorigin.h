/* Who sent a signal: libuv's signal watchers give only the number, so the handler libuv installs
 * is wrapped to keep the sender (siginfo) of each signal's last delivery. */
#ifndef GPL_LAUNCHER_SIGORIGIN_H
#define GPL_LAUNCHER_SIGORIGIN_H

#include <sys/types.h>

typedef struct sigorigin_s {
  pid_t pid;      /* sender (0: the kernel, or unknown) */
  uid_t uid;
  int code;       /* si_code: SI_USER for kill(2), SI_QUEUE, SI_KERNEL, ... */
  char comm[32];  /* the sender's command name from /proc ("" when it is gone) */
} sigorigin_t;

/* Record the sender of signum from now on. Call after uv_signal_start for that signal (libuv
 * installs its handler there); the recorder calls libuv's handler, so the watcher still runs.
 * Also unblocks signum, which a parent may have left blocked (Open MPI's orted under our
 * scripts/slurm wrapper). 0 or GPL_ESYS. */
int sigorigin_watch(int signum);
/* The sender of the last delivery of signum (zeros when none was seen); comm is read now. */
void sigorigin_get(int signum, sigorigin_t *out);
/* Forget recorded senders and stop wrapping (tests). */
void sigorigin_reset(void);

#endif
