/* The words of the channel between rank 0's supervisor and gpulaunch-run, used by both ends
 * (launcher/sup/frontch.c, launcher/front/front_job.c). Lines of text inside TLS 1.3 (the "front"
 * channel's key, common/tls.h; plain TCP only with [security] tls = off):
 *   rank 0 -> gpulaunch-run:   "hello TOKEN", later "from ITS_HOST" then "lost HOST" for each host
 *                              whose ranks were lost (an elastic gpulaunch-run goes on without
 *                              them; the claims of both sides settle a partition), "notice HOST"
 *                              for a host with an interruption notice, and "exit CODE" last
 *   another rank:              "tell TOKEN", "from ITS_HOST", "lost HOST"..., then it closes
 *                              (rank 0's host was lost)
 *   gpulaunch-run -> a rank:   "ok" to the right token (else it closes), later "stop TERM" or
 *                              "stop INT" to rank 0
 * TOKEN is derived from the job key (launcher/job/seckey.h, "front token"); a connection that has
 * not said it within FRONTPROTO_AUTH_S is closed. */
#ifndef GPL_LAUNCHER_FRONTPROTO_H
#define GPL_LAUNCHER_FRONTPROTO_H

#include <string.h>

#define FRONTPROTO_HELLO "hello"
#define FRONTPROTO_TELL "tell"
#define FRONTPROTO_OK "ok"
#define FRONTPROTO_FROM "from"
#define FRONTPROTO_LOST "lost"
#define FRONTPROTO_NOTICE "notice"
#define FRONTPROTO_EXIT "exit"
#define FRONTPROTO_STOP "stop"
#define FRONTPROTO_TERM "TERM"
#define FRONTPROTO_INT "INT"

#define FRONTPROTO_LINE_MAX 256  /* no line of the protocol is longer */
#define FRONTPROTO_HOST_MAX 63   /* a host name in a line */
#define FRONTPROTO_TOKEN_BYTES 16
#define FRONTPROTO_AUTH_S 1.5    /* TLS handshake and the token, from the connect (checked every
                                  * 200 ms: a connection is dropped within 2 s, under load too) */

/* The argument after "WORD " in line, or NULL when line is another word's. */
static inline const char *frontproto_arg(const char *line, const char *word) {
  size_t n = strlen(word);
  return strncmp(line, word, n) == 0 && line[n] == ' ' ? line + n + 1 : NULL;
}

#endif
