/* The channel between rank 0's supervisor and gpulaunch-run, the front end that started mpirun
 * (launcher/front/gpulaunch_run.c): the front end catches the user's SIGTERM/SIGINT and asks the
 * job to stop through it; rank 0 answers with the job's exit status once it is decided.
 *
 * gpulaunch-run exports GPULAUNCH_FRONTEND ("ADDR:PORT[,ADDR:PORT...]", tried in order) and
 * GPULAUNCH_FRONTEND_TOKEN (hex) with mpirun -x. The protocol is lines of text:
 *   rank 0 -> front end:  "hello TOKEN\n", later "exit CODE\n"
 *   front end -> rank 0:  "stop TERM\n" or "stop INT\n" */
#ifndef GPL_LAUNCHER_FRONTCH_H
#define GPL_LAUNCHER_FRONTCH_H

#include <stddef.h>

#define FRONTCH_ENV "GPULAUNCH_FRONTEND"
#define FRONTCH_TOKEN_ENV "GPULAUNCH_FRONTEND_TOKEN"

typedef struct frontch_s {
  int fd;           /* -1: no front end */
  int exit_sent;
  size_t len;
  char buf[128];    /* a partial line from the front end */
} frontch_t;

/* Connect to the front end named in the environment (each address within timeout_s). 1
 * connected, 0 no front end (the variables are unset), negative: named but not reachable (said
 * on stderr; the job runs on without it). */
int frontch_open(frontch_t *f, double timeout_s);
/* Read what arrived (the fd is readable): SIGTERM or SIGINT when the front end asks for a stop,
 * 0 nothing (yet), -1 the front end closed the connection (f->fd is then -1). */
int frontch_read(frontch_t *f);
/* Tell the front end the job's exit status (once; later calls do nothing). */
void frontch_exit(frontch_t *f, int code);
void frontch_close(frontch_t *f);
/* 1 when this process runs under gpulaunch-run (the variable is set). */
int frontch_present(void);

#endif
