/* The supervisor's standard output and error while a job runs: queued in memory and written by a
 * thread of their own, so a reader that stops reading (`gpulaunch x.conf | sleep 25`) never blocks
 * the event loop that serves signals and timers. */
#ifndef GPL_LAUNCHER_OUTQ_H
#define GPL_LAUNCHER_OUTQ_H

#include <stddef.h>
#include <stdint.h>

/* Above this backlog the supervisor stops reading its program's output (the program then waits
 * in write); above OUTQ_CAP what comes in is dropped and counted. */
#define OUTQ_HIGH (4u << 20)
#define OUTQ_CAP (64u << 20)

typedef struct outq_s outq_t;

/* Take over fds 1 and 2: what anyone in this process writes there (our messages, the logger,
 * MPI) goes through a private pipe into the queue, behind the lines queued with outq_write, in
 * order. GPL_ESYS when it cannot (then the caller writes directly, as before). */
int outq_start(outq_t **q);
/* fds 1 and 2 reach the same file (`> log 2>&1`, a terminal): from now on every line goes out
 * through fd 1's writer, in the order queued, one line never cut by another, also where a reader
 * between us and that file takes the two streams apart at any byte (mpirun's). */
void outq_merge(outq_t *q);
/* Queue n bytes for fd 1 or 2 (whole lines: they are written in one piece). Never blocks. */
void outq_write(outq_t *q, int fd, const char *p, size_t n);
/* Move what was written to fds 1 and 2 since the last call into the queue (non-blocking; call it
 * before outq_write and from a timer, so that messages keep their place among the lines). */
void outq_poll(outq_t *q);
/* Bytes queued and not yet written (both streams). */
size_t outq_backlog(const outq_t *q);
/* Give fds 1 and 2 back and write what is queued, waiting as long as the reader takes some
 * within idle_s; what is left then is dropped. Drops are reported on stderr with their count.
 * q is freed (its writer thread may stay, blocked on a reader that never reads). */
void outq_stop(outq_t *q, double idle_s);

#endif
