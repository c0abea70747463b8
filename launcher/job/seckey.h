/* The job key (docs/security.md): where it comes from ([security] key_file, MUNGE, or a key made
 * for the job and handed over), what the channels derive from it, and the start-up checks
 * (require = strict, a host whose key differs). Used by gpulaunch-run and by every rank. */
#ifndef GPL_LAUNCHER_SECKEY_H
#define GPL_LAUNCHER_SECKEY_H

#include <stdint.h>

#include "common/tls.h"

struct conf_security_s;
struct job_s;

typedef enum seckey_src_e {
  SECKEY_NONE = 0,
  SECKEY_FILE,   /* [security] key_file + the run id: never crosses the network */
  SECKEY_MUNGE,  /* a credential of munged's, restricted to the job's uid */
  SECKEY_HANDED, /* made for the job, handed over the environment (mpirun -x) or MPI */
} seckey_src_t;

typedef struct seckey_s {
  tls_cfg_t tls;          /* the job key, tls = off, the PKI files */
  seckey_src_t src;
  int crossed;            /* the key (or its credential) may have crossed a network in clear */
  int strict;             /* [security] require = strict */
} seckey_t;

/* The source's name: "key_file", "MUNGE", "handed over"; from GPULAUNCH_KEY_SOURCE's word
 * ("file", "munge", "handed"). */
const char *seckey_src_name(seckey_src_t s);
seckey_src_t seckey_src_of(const char *word);
/* tls = off, require = strict and the PKI files from c (NULL: the defaults) into k. */
void seckey_fill_tls(seckey_t *k, const struct conf_security_s *c);

/* gpulaunch-run: make the job's key from c (NULL: the defaults) and export what the ranks need
 * (GPULAUNCH_KEY_SOURCE, the run id, and for MUNGE the credential, for a key handed over the
 * key; names only ever on mpirun's command line, never values). The sources in order: key_file;
 * MUNGE when [security] munge is not off and munged answers (its socket is there and it encodes);
 * a key handed over. 0, or a negative code (said). */
int seckey_front(seckey_t *k, const struct conf_security_s *c);

/* gpulaunch-run, before each launch: a fresh MUNGE credential for the same key (a credential
 * lives munged's --max-ttl; an elastic job's later launches need their own). 0 (also when the
 * source is not MUNGE), or GPL_EAUTH (said). */
int seckey_front_renew(void);

/* 0 when [security] munge = off in c (NULL: the default, auto). */
int seckey_munge_wanted(const struct conf_security_s *c);

/* Every rank, collective over job->world: the same key as gpulaunch-run (or rank 0 without it),
 * checked: the same source as gpulaunch-run's, require = strict, and every host's key against rank
 * 0's (a host whose key differs is named). 0, GPL_ECONFIG (a key_file that cannot be used),
 * GPL_EAUTH (strict refused, or keys differ: exit 79), or an exchange's error. */
int seckey_agree(seckey_t *k, const struct conf_security_s *c, struct job_s *job);

/* A value derived from the job key for one use ("live token", "front token"): len bytes. */
int seckey_derive(const seckey_t *k, const char *use, uint8_t *out, size_t len);

/* The key_file's key for run_id into out (0, or GPL_ECONFIG with the reason on stderr: missing,
 * not 0600, not the user's, too short). */
int seckey_from_file(const char *path, const char *run_id, uint8_t out[TLS_KEY_LEN]);

/* The job key's fingerprint (8 bytes, says nothing about the key). */
void seckey_fingerprint(const seckey_t *k, uint8_t out[8]);

#endif
