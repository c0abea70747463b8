/* The MUNGE source where gpulaunch was built without libmunge (seckey_munge.h): it says so. */
#include <stdio.h>

#include "common/envvar.h"
#include "gpulaunch/error.h"
#include "launcher/job/seckey_munge.h"

int seckey_munge_built(void) { return 0; }

const char *seckey_munge_socket(void) {
  const char *s = envvar_get(ENVVAR_MUNGE_SOCKET);
  return s && *s ? s : "(libmunge's default)";
}

int seckey_munge_encode(const uint8_t key[TLS_KEY_LEN], const char *run_id, char **cred, char *why,
                        size_t whylen) {
  (void)key, (void)run_id;
  *cred = NULL;
  snprintf(why, whylen, "not built with MUNGE (libmunge-dev was not found at build time)");
  return GPL_ENOTSUP;
}

int seckey_munge_decode(const char *cred, const char *run_id, uint8_t key[TLS_KEY_LEN], int *replayed,
                        char *why, size_t whylen) {
  (void)cred, (void)run_id, (void)key;
  *replayed = 0;
  snprintf(why, whylen, "not built with MUNGE (libmunge-dev was not found at build time)");
  return GPL_ENOTSUP;
}
