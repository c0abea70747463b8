/* gpulaunch-run's side of the job key (launcher/job/seckey.h): the [security] section of the
 * config the gpulaunch words name, the key made or derived before mpirun starts, and the
 * channel's TLS context and token. */
#include "launcher/front/front_sec.h"

#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "launcher/conf/conf.h"
#include "launcher/front/front_job.h"
#include "launcher/sup/frontproto.h"

static conf_t *g_conf; /* kept: the key's PKI paths point into it */

/* gpulaunch's options that take a value (main.c's), so that the value is not read as the config. */
static int takes_value(const char *w) {
  static const char *const opts[] = {"--summary", "--metrics", "--prom", "--topology", "--config"};
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
    if (strcmp(w, opts[i]) == 0) return 1;
  return 0;
}

static int is_mode(const char *w) {
  static const char *const modes[] = {"run", "check", "env", "topo", "bench", "accept", "diag", "audit"};
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (strcmp(w, modes[i]) == 0) return 1;
  return 0;
}

const char *front_sec_config(int argc, char **argv) {
  int g = 0;
  for (int i = 1; i < argc && !g; i++) {
    const char *b = strrchr(argv[i], '/');
    if (strcmp(b ? b + 1 : argv[i], "gpulaunch") == 0) g = i;
  }
  if (!g) return NULL;
  for (int i = g + 1; i < argc; i++) {
    const char *w = argv[i];
    if (strcmp(w, "--") == 0) return NULL;
    if (w[0] == '-') {
      if (takes_value(w)) i++;
      continue;
    }
    if (is_mode(w)) continue;
    struct stat st;
    return stat(w, &st) == 0 && S_ISREG(st.st_mode) ? w : NULL;
  }
  return NULL;
}

int front_sec_init(int argc, char **argv, seckey_t *k, front_job_t *job, char *token, size_t len) {
  const char *path = front_sec_config(argc, argv);
  if (path && conf_load(&g_conf, path) < 0) return -1; /* (said, file:line) */
  if (seckey_front(k, g_conf ? &g_conf->security : NULL) < 0) return -1;
  uint8_t t[FRONTPROTO_TOKEN_BYTES];
  if (len < 2 * sizeof t + 1 || seckey_derive(k, "front token", t, sizeof t) < 0) return -1;
  tls_hex(t, sizeof t, token);
  if (tls_ctx_new(&job->ctx, &k->tls, "front", 1) < 0) return -1;
  /* (tls = off: rank 0 says it, once for the whole job) */
  job->token = token;
  return 0;
}
