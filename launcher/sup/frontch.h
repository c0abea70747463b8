/* The channel between rank 0's supervisor and gpulaunch-run, the front end that started mpirun
 * (launcher/front/gpulaunch_run.c): the front end catches the user's SIGTERM/SIGINT and asks the
 * job to stop through it; rank 0 answers with the job's exit status once it is decided.
 *
 * gpulaunch-run exports GPULAUNCH_FRONTEND ("ADDR:PORT[,ADDR:PORT...]", tried in order; loopback
 * addresses only on gpulaunch-run's own host, GPULAUNCH_FRONTEND_HOST) with mpirun -x. The words
 * are in frontproto.h; every connection is TLS 1.3 with the "front" channel's key (the job key's,
 * launcher/job/seckey.h), mutually authenticated. */
#ifndef GPL_LAUNCHER_FRONTCH_H
#define GPL_LAUNCHER_FRONTCH_H

#include <stddef.h>

#include "common/envvar.h"
#include "common/tls.h"

#define FRONTCH_ENV ENVVAR_LITERAL(FRONTEND)

struct seckey_s;

typedef struct frontch_s {
  int fd;           /* -1: no front end */
  tls_t *tls;       /* the connection's TLS (plain with tls = off) */
  int exit_sent;
  size_t len;
  char buf[128];    /* a partial line from the front end */
} frontch_t;

/* The job's key and TLS settings for every connection to the front end (once, before
 * frontch_open or frontch_tell_lost; the strings k points to must live as long). */
void frontch_set_key(const struct seckey_s *k);
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
/* Name the hosts of the lost ranks (every "(host NAME)" in who, "rank 4 (host h2), ...") before
 * the exit status, as seen from host by (this rank's). */
void frontch_lost(frontch_t *f, const char *by, const char *who);
/* Name a host whose cloud announced its interruption (the job stops with the grace). */
void frontch_notice(frontch_t *f, const char *host);
/* The same from a rank other than rank 0, when rank 0's host is the one lost: a connection of its
 * own, bounded by timeout_s per address, closed at once. Nothing when there is no front end. */
void frontch_tell_lost(const char *by, const char *who, double timeout_s);
/* 1 when this process runs under gpulaunch-run (the variable is set). */
int frontch_present(void);

#endif
