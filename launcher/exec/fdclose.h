/* Descriptors a supervised program must not inherit: gpulaunch-exec closes them before it forks
 * the program (launcher/exec/exec_child.c). */
#ifndef GPL_LAUNCHER_FDCLOSE_H
#define GPL_LAUNCHER_FDCLOSE_H

/* Close every file descriptor from lowfd up: close_range(2) where the kernel has it (Linux 5.9),
 * else each entry of /proc/self/fd, else every number below the open-files limit (at most
 * 65536). Cannot fail: a descriptor that cannot be closed is one that was not open. */
void fdclose_from(int lowfd);

#endif
