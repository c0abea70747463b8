/* The job key (seckey.h): [security] key_file + the run id, else a key made for the job by
 * gpulaunch-run, in a MUNGE credential where munged answers (seckey_munge.c), else handed over
 * the environment; what the channels derive from it. The ranks' agreement is in seckey_job.c. */
#include "launcher/job/seckey.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/envvar.h"
#include "common/log.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/conf/conf.h"
#include "launcher/job/seckey_munge.h"

#define KEYFILE_MIN 16   /* bytes of key material a key_file must hold at least */
#define KEYFILE_MAX 4096

const char *seckey_src_name(seckey_src_t s) {
  switch (s) {
    case SECKEY_FILE: return "key_file";
    case SECKEY_MUNGE: return "MUNGE";
    case SECKEY_HANDED: return "handed over";
    default: return "none";
  }
}

seckey_src_t seckey_src_of(const char *name) {
  if (!name) return SECKEY_NONE;
  if (strcmp(name, "file") == 0) return SECKEY_FILE;
  if (strcmp(name, "munge") == 0) return SECKEY_MUNGE;
  if (strcmp(name, "handed") == 0) return SECKEY_HANDED;
  return SECKEY_NONE;
}

int seckey_from_file(const char *path, const char *run_id, uint8_t out[TLS_KEY_LEN]) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    log_print("gpulaunch: [security] key_file %s on host %s: %s\n", path, util_hostname(), strerror(errno));
    if (fd >= 0) close(fd);
    return GPL_ECONFIG;
  }
  const char *bad = !S_ISREG(st.st_mode) ? "not a regular file"
                    : st.st_uid != getuid() ? "not owned by the user who runs the job"
                    : (st.st_mode & 077) ? "readable or writable by others (chmod 600 it)"
                    : st.st_size < KEYFILE_MIN ? "shorter than 16 bytes"
                    : st.st_size > KEYFILE_MAX ? "longer than 4096 bytes" : NULL;
  if (bad) {
    log_print("gpulaunch: [security] key_file %s on host %s: %s\n", path, util_hostname(), bad);
    close(fd);
    return GPL_ECONFIG;
  }
  uint8_t buf[KEYFILE_MAX];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (n < KEYFILE_MIN) {
    log_print("gpulaunch: [security] key_file %s on host %s: cannot read it\n", path, util_hostname());
    return GPL_ECONFIG;
  }
  char info[160];
  snprintf(info, sizeof info, "job key %s", run_id);
  int rc = tls_hkdf(buf, (size_t)n, "gpulaunch key_file v1", info, out, TLS_KEY_LEN);
  memset(buf, 0, sizeof buf);
  return rc;
}

int seckey_derive(const seckey_t *k, const char *use, uint8_t *out, size_t len) {
  return tls_hkdf(k->tls.key, TLS_KEY_LEN, "gpulaunch use v1", use, out, len);
}

void seckey_fingerprint(const seckey_t *k, uint8_t out[8]) {
  if (seckey_derive(k, "fingerprint", out, 8) < 0) memset(out, 0, 8);
}

void seckey_fill_tls(seckey_t *k, const conf_security_t *c) {
  k->tls.off = c && strcmp(c->tls, "off") == 0;
  k->strict = c && strcmp(c->require, "strict") == 0;
  if (c && *c->tls_cert && *c->tls_key && *c->tls_ca) {
    k->tls.cert = c->tls_cert;
    k->tls.pkey = c->tls_key;
    k->tls.ca = c->tls_ca;
  }
}

/* A fresh run id for gpulaunch-run's job (kept when the environment has one: an elastic job's
 * launches, a user's own). */
static int ensure_run_id(void) {
  const char *id = envvar_get(ENVVAR_RUN_ID);
  if (id && *id) return 0;
  uint8_t r[8];
  char hex[17], v[40];
  if (tls_random(r, sizeof r) < 0) return GPL_ESYS;
  tls_hex(r, sizeof r, hex);
  snprintf(v, sizeof v, "gpl-%s", hex);
  setenv(envvar_name(ENVVAR_RUN_ID), v, 1);
  return 0;
}

int seckey_munge_wanted(const conf_security_t *c) { return !c || strcmp(c->munge, "off") != 0; }

static uint8_t g_munge_key[TLS_KEY_LEN]; /* gpulaunch-run's key, kept for a fresh credential */
static int g_munge_on, g_munge_fresh; /* fresh: the credential in the environment is unused */

/* The credential, not the key, in the environment (GPULAUNCH_MUNGE_CREDENTIAL); 0, or < 0 when munged
 * does not answer here (said at info level: the key is then handed over, with its warning). */
static int front_munge(const uint8_t key[TLS_KEY_LEN], const char *run_id) {
  char *cred = NULL, why[512];
  int rc = seckey_munge_encode(key, run_id, &cred, why, sizeof why);
  if (rc < 0) {
    LOG_INFO(JOB, "the job key's MUNGE source: %s", why);
    return rc;
  }
  setenv(envvar_name(ENVVAR_MUNGE_CREDENTIAL), cred, 1);
  free(cred);
  unsetenv(envvar_name(ENVVAR_JOB_KEY));
  setenv(envvar_name(ENVVAR_KEY_SOURCE), "munge", 1);
  memcpy(g_munge_key, key, TLS_KEY_LEN);
  g_munge_on = g_munge_fresh = 1;
  LOG_INFO(JOB, "the job key travels in a MUNGE credential (munged at %s, uid %u only)", seckey_munge_socket(),
           (unsigned)getuid());
  return 0;
}

int seckey_front_renew(void) {
  if (!g_munge_on) return 0;
  if (g_munge_fresh) { /* the first launch: the credential made a moment ago */
    g_munge_fresh = 0;
    return 0;
  }
  char *cred = NULL, why[512];
  if (seckey_munge_encode(g_munge_key, envvar_get(ENVVAR_RUN_ID), &cred, why, sizeof why) < 0) {
    log_print("gpulaunch-run: a fresh MUNGE credential for the job key: %s\n", why);
    return GPL_EAUTH;
  }
  setenv(envvar_name(ENVVAR_MUNGE_CREDENTIAL), cred, 1);
  free(cred);
  return 0;
}

int seckey_front(seckey_t *k, const conf_security_t *c) {
  memset(k, 0, sizeof *k);
  seckey_fill_tls(k, c);
  CHECK(ensure_run_id());
  const char *run_id = envvar_get(ENVVAR_RUN_ID);
  g_munge_on = 0;
  unsetenv(envvar_name(ENVVAR_MUNGE_CREDENTIAL));
  if (c && *c->key_file) {
    CHECK(seckey_from_file(c->key_file, run_id, k->tls.key));
    k->src = SECKEY_FILE;
    setenv(envvar_name(ENVVAR_KEY_SOURCE), "file", 1);
    return 0;
  }
  CHECK(tls_random(k->tls.key, TLS_KEY_LEN));
  if (seckey_munge_wanted(c) && front_munge(k->tls.key, run_id) == 0) {
    k->src = SECKEY_MUNGE;
    return 0;
  }
  k->src = SECKEY_HANDED;
  char hex[2 * TLS_KEY_LEN + 1];
  tls_hex(k->tls.key, TLS_KEY_LEN, hex);
  setenv(envvar_name(ENVVAR_JOB_KEY), hex, 1);
  memset(hex, 0, sizeof hex);
  setenv(envvar_name(ENVVAR_KEY_SOURCE), "handed", 1);
  return 0;
}

