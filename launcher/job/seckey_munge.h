/* MUNGE for the job key (seckey.h, docs/security.md): a credential of the local munged that
 * carries the job key, restricted to the job's uid, and its decoding. Built with Debian's libmunge
 * where it is found (seckey_munge.c), else seckey_nomunge.c says "not built with MUNGE". */
#ifndef GPL_LAUNCHER_SECKEY_MUNGE_H
#define GPL_LAUNCHER_SECKEY_MUNGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/tls.h"

/* 1 when gpulaunch was built with libmunge. */
int seckey_munge_built(void);

/* munged's socket: GPULAUNCH_MUNGE_SOCKET, else libmunge's default. */
const char *seckey_munge_socket(void);

/* A credential that carries key and run_id, decodable only by this process's uid (munge_encode
 * with MUNGE_OPT_UID_RESTRICTION = getuid()); *cred is malloc'd. 0, or GPL_EUNREACH when munged
 * does not answer (no socket, an error of munged's: why says which), GPL_ENOTSUP when not built
 * with MUNGE. */
int seckey_munge_encode(const uint8_t key[TLS_KEY_LEN], const char *run_id, char **cred, char *why,
                        size_t whylen);

/* Decode cred with the local munged: the key, checked against run_id and encoded by this uid.
 * *replayed is set when munged had decoded it before on this host (accepted: see seckey_munge.c).
 * 0, GPL_EAUTH (munged refused it: another cluster key, expired, not ours; why says which),
 * GPL_EUNREACH (no munged), GPL_ENOTSUP (not built with MUNGE). */
int seckey_munge_decode(const char *cred, const char *run_id, uint8_t key[TLS_KEY_LEN], int *replayed,
                        char *why, size_t whylen);

#endif
