/* The job key in a MUNGE credential (seckey_munge.h), with Debian's libmunge.
 *
 * The credential is encrypted and MACed by munged with the cluster's munge.key and restricted to
 * the job's uid: munged decodes it only for a client of that uid (checked on its Unix socket),
 * so whoever reads Open MPI's or Slurm's launch traffic learns a credential, not the key.
 *
 * Replays: munged remembers each credential it decoded and answers a second decode on the same
 * host with EMUNGE_CRED_REPLAYED, the payload still given (munge(3)). munged checks the uid
 * restriction before its replay cache (another uid gets EMUNGE_CRED_UNAUTHORIZED, replayed or
 * not), so a replayed decode can only come from the job's own uid. seckey_job.c decodes once
 * per host (the node's first rank, then the node's ranks over MPI within the host); a replay
 * seen then means hosts that share one munged (namespace hosts of one machine, a test cluster)
 * or a decode of the job's own user: it is accepted and logged at debug level. */
#include "launcher/job/seckey_munge.h"

#include <munge.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/envvar.h"
#include "common/log.h"
#include "gpulaunch/error.h"

#define PAYLOAD_MAGIC "gpulaunch job key v1" /* then NUL, the key, the run id */

int seckey_munge_built(void) { return 1; }

const char *seckey_munge_socket(void) {
  static char dflt[256];
  const char *s = envvar_get(ENVVAR_MUNGE_SOCKET);
  if (s && *s) return s;
  if (!dflt[0]) {
    munge_ctx_t c = munge_ctx_create();
    char *p = NULL;
    if (c && munge_ctx_get(c, MUNGE_OPT_SOCKET, &p) == EMUNGE_SUCCESS && p)
      snprintf(dflt, sizeof dflt, "%s", p);
    else
      snprintf(dflt, sizeof dflt, "/run/munge/munge.socket.2");
    if (c) munge_ctx_destroy(c);
  }
  return dflt;
}

/* A context on our socket, or NULL with why set: no socket there (libmunge would retry a missing
 * socket for seconds before it gives up; munged not running must cost nothing). */
static munge_ctx_t ctx_new(char *why, size_t whylen) {
  const char *sock = seckey_munge_socket();
  struct stat st;
  if (stat(sock, &st) < 0 || !S_ISSOCK(st.st_mode)) {
    snprintf(why, whylen, "no munged socket at %s", sock);
    return NULL;
  }
  munge_ctx_t c = munge_ctx_create();
  if (!c) {
    snprintf(why, whylen, "munge_ctx_create: out of memory");
    return NULL;
  }
  if (munge_ctx_set(c, MUNGE_OPT_SOCKET, sock) != EMUNGE_SUCCESS) {
    snprintf(why, whylen, "munge socket %s: %s", sock, munge_ctx_strerror(c));
    munge_ctx_destroy(c);
    return NULL;
  }
  return c;
}

int seckey_munge_encode(const uint8_t key[TLS_KEY_LEN], const char *run_id, char **cred, char *why,
                        size_t whylen) {
  *cred = NULL;
  munge_ctx_t c = ctx_new(why, whylen);
  if (!c) return GPL_EUNREACH;
  uint8_t buf[sizeof PAYLOAD_MAGIC + TLS_KEY_LEN + 128];
  size_t idlen = strlen(run_id);
  if (idlen > 127) idlen = 127;
  memcpy(buf, PAYLOAD_MAGIC, sizeof PAYLOAD_MAGIC);
  memcpy(buf + sizeof PAYLOAD_MAGIC, key, TLS_KEY_LEN);
  memcpy(buf + sizeof PAYLOAD_MAGIC + TLS_KEY_LEN, run_id, idlen);
  int len = (int)(sizeof PAYLOAD_MAGIC + TLS_KEY_LEN + idlen);
  /* Only our uid may decode it; it lives munged's longest time (a start-up may be slow; an
   * elastic gpulaunch-run makes a fresh one for every launch). */
  munge_err_t e = munge_ctx_set(c, MUNGE_OPT_UID_RESTRICTION, getuid());
  if (e == EMUNGE_SUCCESS) e = munge_ctx_set(c, MUNGE_OPT_TTL, (int)MUNGE_TTL_MAXIMUM);
  if (e == EMUNGE_SUCCESS) e = munge_encode(cred, c, buf, len);
  memset(buf, 0, sizeof buf);
  if (e != EMUNGE_SUCCESS) {
    snprintf(why, whylen, "munged at %s: %s", seckey_munge_socket(), munge_ctx_strerror(c));
    free(*cred);
    *cred = NULL;
  }
  munge_ctx_destroy(c);
  return e == EMUNGE_SUCCESS ? 0 : GPL_EUNREACH;
}

int seckey_munge_decode(const char *cred, const char *run_id, uint8_t key[TLS_KEY_LEN], int *replayed,
                        char *why, size_t whylen) {
  *replayed = 0;
  munge_ctx_t c = ctx_new(why, whylen);
  if (!c) return GPL_EUNREACH;
  void *buf = NULL;
  int len = 0;
  uid_t uid = (uid_t)-1;
  gid_t gid = (gid_t)-1;
  munge_err_t e = munge_decode(cred, c, &buf, &len, &uid, &gid);
  int rc = 0;
  if (e == EMUNGE_CRED_REPLAYED) {
    *replayed = 1;
    LOG_DEBUG(JOB, "MUNGE: munged at %s had decoded the job key's credential before on this host "
              "(hosts sharing one munged); accepted (uid %u only)", seckey_munge_socket(), (unsigned)getuid());
  } else if (e == EMUNGE_SOCKET) {
    snprintf(why, whylen, "munged at %s: %s", seckey_munge_socket(), munge_ctx_strerror(c));
    rc = GPL_EUNREACH;
  } else if (e != EMUNGE_SUCCESS) {
    snprintf(why, whylen, "munged at %s refused the job key's credential: %s%s", seckey_munge_socket(),
             munge_ctx_strerror(c),
             e == EMUNGE_CRED_INVALID ? " (this host's munge.key differs from the encoding host's)" : "");
    rc = GPL_EAUTH;
  }
  size_t idlen = strlen(run_id);
  if (rc == 0) {
    const uint8_t *p = buf;
    if (!p || (size_t)len != sizeof PAYLOAD_MAGIC + TLS_KEY_LEN + (idlen > 127 ? 127 : idlen) ||
        memcmp(p, PAYLOAD_MAGIC, sizeof PAYLOAD_MAGIC) != 0) {
      snprintf(why, whylen, "the MUNGE credential does not carry a gpulaunch job key");
      rc = GPL_EAUTH;
    } else if (uid != getuid()) {
      snprintf(why, whylen, "the MUNGE credential was made by uid %u, not this job's uid %u", (unsigned)uid,
               (unsigned)getuid());
      rc = GPL_EAUTH;
    } else if (memcmp(p + sizeof PAYLOAD_MAGIC + TLS_KEY_LEN, run_id, (size_t)len - sizeof PAYLOAD_MAGIC - TLS_KEY_LEN) != 0) {
      snprintf(why, whylen, "the MUNGE credential is another run's (not %s)", run_id);
      rc = GPL_EAUTH;
    } else {
      memcpy(key, p + sizeof PAYLOAD_MAGIC, TLS_KEY_LEN);
    }
  }
  if (buf) {
    memset(buf, 0, (size_t)len);
    free(buf);
  }
  munge_ctx_destroy(c);
  return rc;
}
