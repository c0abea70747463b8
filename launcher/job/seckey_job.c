/* The job key on every rank (seckey.h): the same as gpulaunch-run's (or rank 0's), from the same
 * source (key_file, MUNGE, handed over), require = strict, and every host's key against rank 0's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/envvar.h"
#include "common/log.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/conf/conf.h"
#include "launcher/job/job.h"
#include "launcher/job/seckey.h"
#include "launcher/job/seckey_munge.h"

#define CRED_MAX 4096 /* a MUNGE credential of a job key: some 300 characters */


/* Rank 0's run id (the environment's, or a random one) on every rank. */
static int agree_run_id(job_t *job, char *out, size_t len) {
  char id[64] = "";
  const char *e = envvar_get(ENVVAR_RUN_ID);
  if (job->rank == 0) {
    if (e && *e) util_strlcpy(id, e, sizeof id);
    else {
      uint8_t r[8];
      char hex[17];
      CHECK(tls_random(r, sizeof r));
      tls_hex(r, sizeof r, hex);
      snprintf(id, sizeof id, "gpl-%s", hex);
    }
  }
  CHECK(mpix_bcast(id, (int)sizeof id, 0, job->world, job->timeout, "start-up (the run id)"));
  id[sizeof id - 1] = 0;
  util_strlcpy(out, id, len);
  return 0;
}

/* The key handed over: gpulaunch-run's (the environment), or rank 0's made now (MPI). */
static int handed_key(seckey_t *k, job_t *job) {
  const char *hex = envvar_get(ENVVAR_JOB_KEY);
  int have = hex && *hex && tls_unhex(hex, k->tls.key, TLS_KEY_LEN) == 0, any = have;
  if (job->size > 1)
    CHECK(mpix_bcast(&any, (int)sizeof any, 0, job->world, job->timeout, "start-up (job key)"));
  if (!any) { /* no gpulaunch-run: rank 0 makes it */
    if (job->rank == 0) CHECK(tls_random(k->tls.key, TLS_KEY_LEN));
    if (job->size > 1)
      CHECK(mpix_bcast(k->tls.key, TLS_KEY_LEN, 0, job->world, job->timeout, "start-up (job key)"));
  } else if (!have) {
    log_print("gpulaunch: rank %d (host %s): %s is missing or malformed here\n", job->rank, job->host,
              envvar_name(ENVVAR_JOB_KEY));
    return GPL_EAUTH;
  }
  k->src = SECKEY_HANDED;
  return 0;
}

/* The MUNGE credential every rank decodes: gpulaunch-run's (each rank's environment) or, with no
 * gpulaunch-run, rank 0's made now (sent over MPI; none when rank 0's munged does not answer,
 * [security] munge = off, or the key is handed over by gpulaunch-run). 1 with cred set, 0 none. */
static int munge_cred(seckey_t *k, const conf_security_t *c, job_t *job, const char *run_id, char *cred) {
  const char *front = envvar_get(ENVVAR_KEY_SOURCE);
  if (front && *front) { /* gpulaunch-run chose */
    if (seckey_src_of(front) != SECKEY_MUNGE) return 0;
    const char *e = envvar_get(ENVVAR_MUNGE_CREDENTIAL);
    cred[0] = 0;
    if (e) util_strlcpy(cred, e, CRED_MAX);
    return 1; /* (a rank without it fails in its decode, named) */
  }
  cred[0] = 0;
  if (job->rank == 0 && seckey_munge_wanted(c)) {
    char *m = NULL, why[512];
    CHECK(tls_random(k->tls.key, TLS_KEY_LEN));
    if (seckey_munge_encode(k->tls.key, run_id, &m, why, sizeof why) == 0 && strlen(m) < CRED_MAX) {
      util_strlcpy(cred, m, CRED_MAX);
    } else {
      LOG_INFO(JOB, "the job key's MUNGE source: %s", m ? "credential too long" : why);
    }
    free(m);
  }
  if (job->size > 1) CHECK(mpix_bcast(cred, CRED_MAX, 0, job->world, job->timeout, "start-up (MUNGE credential)"));
  cred[CRED_MAX - 1] = 0;
  return cred[0] != 0;
}

/* The key from the credential: one decode per host, by the node's first rank (munged answers a
 * second decode of one credential with "replayed", and thousands of ranks need not all ask it),
 * then to the node's ranks over MPI within the host. A host whose munged refuses it is named. */
static int munge_key(seckey_t *k, job_t *job, const char *run_id, const char *cred) {
  struct {
    int rc;
    uint8_t key[TLS_KEY_LEN];
  } got = {0};
  if (job->local_rank == 0) {
    char why[512] = "";
    int replayed = 0;
    got.rc = !*cred ? GPL_EAUTH : seckey_munge_decode(cred, run_id, got.key, &replayed, why, sizeof why);
    if (!*cred) snprintf(why, sizeof why, "%s is missing here", envvar_name(ENVVAR_MUNGE_CREDENTIAL));
    if (got.rc < 0) {
      log_print("gpulaunch: host %s: the job key's MUNGE credential: %s (exit status 79)\n", job->host, why);
      got.rc = GPL_EAUTH;
    }
  }
  int rc = 0;
  if (job->local_size > 1)
    rc = mpix_gbcast(&job->node_grp, &got, (int)sizeof got, 0, job->timeout, "start-up (the job key on the node)");
  if (rc == 0) rc = got.rc;
  if (job->size > 1) rc = job_agree(job, rc, "start-up (MUNGE)");
  if (rc == 0) memcpy(k->tls.key, got.key, TLS_KEY_LEN);
  memset(&got, 0, sizeof got);
  k->src = SECKEY_MUNGE;
  return rc;
}

/* 1 when gpulaunch-run (if any) runs on rank 0's host. */
static int front_on_host(const job_t *job) {
  const char *fh = envvar_get(ENVVAR_FRONTEND_HOST);
  const char *fe = envvar_get(ENVVAR_FRONTEND);
  if (!fe || !*fe) return 1; /* no gpulaunch-run */
  return fh && strcmp(fh, job->host) == 0;
}

/* Every host's fingerprint against rank 0's: the hosts that differ named. */
static int compare_keys(const seckey_t *k, job_t *job) {
  if (job->size < 2) return 0;
  uint8_t mine[8];
  seckey_fingerprint(k, mine);
  uint8_t *all = calloc((size_t)job->size, 8);
  if (!all) return GPL_ENOMEM;
  int rc = mpix_allgather(mine, 8, all, job->world, job->timeout, "start-up (job key check)");
  if (rc < 0) {
    free(all);
    return rc;
  }
  char names[1024] = "";
  size_t off = 0;
  int bad = 0;
  for (int r = 1; r < job->size; r++) {
    if (memcmp(all + 8 * r, all, 8) == 0) continue;
    const char *h = job->hosts ? job->hosts[r] : "?";
    bad++;
    if (strstr(names, h) || off + strlen(h) + 3 >= sizeof names) continue;
    off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", off ? ", " : "", h);
  }
  free(all);
  if (!bad) return 0;
  if (job->rank == 0)
    log_print("gpulaunch: the job key of host(s) %s differs from rank 0's (host %s): %s (exit status 79)\n",
              names, job->host,
              k->src == SECKEY_FILE ? "their [security] key_file is not the same file as rank 0's"
              : k->src == SECKEY_MUNGE ? "their MUNGE credential carried another key (another launch's?)"
                                       : "the key handed over differs (another launch's environment?)");
  return GPL_EAUTH;
}

int seckey_agree(seckey_t *k, const conf_security_t *c, job_t *job) {
  memset(k, 0, sizeof *k);
  seckey_fill_tls(k, c);
  char run_id[64];
  CHECK(agree_run_id(job, run_id, sizeof run_id));
  int rc = 0;
  if (c && *c->key_file) {
    rc = seckey_from_file(c->key_file, run_id, k->tls.key);
    k->src = SECKEY_FILE;
  }
  /* Every rank learns whether one failed: a bad key_file on one host ends all, naming it. */
  if (job->size > 1) rc = job_agree(job, rc, "start-up (key_file)");
  if (rc < 0) return rc;
  if (k->src == SECKEY_NONE) {
    char *cred = malloc(CRED_MAX);
    if (!cred) return GPL_ENOMEM;
    rc = munge_cred(k, c, job, run_id, cred);
    if (rc > 0) rc = munge_key(k, job, run_id, cred);
    else if (rc == 0) rc = handed_key(k, job);
    free(cred);
    if (rc < 0) return rc;
  }
  int one_host = job->nnodes <= 1 && front_on_host(job);
  k->crossed = k->src == SECKEY_HANDED && !one_host;
  const char *front = envvar_get(ENVVAR_KEY_SOURCE);
  if (front && *front && seckey_src_of(front) != k->src) {
    if (job->rank == 0)
      log_print("gpulaunch: gpulaunch-run took the job key from %s, this job from %s: give both the same "
                "[security] key_file and munge (the same config) and the same GPULAUNCH_MUNGE_SOCKET\n", seckey_src_name(seckey_src_of(front)), seckey_src_name(k->src));
    return GPL_EAUTH;
  }
  if (k->strict && k->crossed) {
    if (job->rank == 0)
      log_print("gpulaunch: [security] require = strict: the job key was handed over the network (no "
                "key_file, no munged that answers): refusing to start (exit status 79). Give every host and "
                "gpulaunch-run the same [security] key_file (0600), or run munged on every host.\n");
    return GPL_EAUTH;
  }
  CHECK(compare_keys(k, job));
  if (job->rank == 0) {
    if (k->tls.off)
      LOG_WARN("[security] tls = off: the control channels are plain TCP; anyone on the network can read, "
               "forge and replay control messages (docs/security.md)");
    else if (k->crossed)
      LOG_WARN("the job key was made for this job and handed over %s: anyone who can read Open MPI's or "
               "Slurm's launch traffic, or root on a job host, can learn it and forge control messages; "
               "a [security] key_file or munged on every host (MUNGE) stops that (docs/security.md)",
               envvar_get(ENVVAR_JOB_KEY) ? "the launcher's environment" : "MPI");
    LOG_INFO(JOB, "security: TLS %s, job key from %s", k->tls.off ? "off" : k->tls.cert ? "with certificates" : "1.3 PSK",
             seckey_src_name(k->src));
  }
  return 0;
}
