/* A deadline for a call that cannot be bounded otherwise (MPI_Init, a blocking MPI collective,
 * MPI_Abort): a thread of its own ends the process when the call has not returned in time. */
#ifndef GPL_COMMON_WATCHDOG_H
#define GPL_COMMON_WATCHDOG_H

/* Arm the watchdog: unless wdog_disarm is called within timeout_s seconds, the watchdog thread
 * writes "gpulaunch: <host:rank>: <what> did not return within N s; <hint>" to stderr and
 * ends the process with _exit(exit_code). It calls no MPI (the main thread is stuck inside it)
 * and nothing that could wait on a lock the stuck thread holds (write(2), _exit). One deadline
 * at a time: arming again replaces it. what and hint must stay valid until disarmed (string
 * literals). */
/* gpulaunch's "a wait on other ranks timed out" (README "Exit status"). */
#define WDOG_EXIT_TIMEOUT 68

void wdog_arm(double timeout_s, const char *what, const char *hint, int exit_code);
void wdog_disarm(void);

#endif
