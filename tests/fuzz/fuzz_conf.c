/* Fuzz target: the config loader (inih under our reader, schema, typed values, continuations,
 * duplicates) on any bytes. Oracles: no crash or sanitizer report; a loaded config answers
 * every getter; time and memory linear in the input (libFuzzer's -timeout and -rss_limit_mb);
 * the errors of a refused config never quote a secret: not the value of a secret-named variable
 * of the environment (FUZZ_API_TOKEN below, in the corpus and the inputs it grows), not the value
 * of a secret-named [env] key of the input itself. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "launcher/conf/conf.h"

#define SECRET "Zq7xK9pW3mRt"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* conf_load prints its errors on rank 0 only: as rank 1 it stays quiet (the fuzzer's output
   * is its findings). */
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("FUZZ_API_TOKEN", SECRET, 1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  conf_t *c = NULL;
  char *errors = NULL;
  if (conf_load_text_errors(&c, "fuzz.conf", (const char *)data, size, &errors) == 0) {
    FUZZ_ASSERT(c != NULL, "loaded without a config");
    int n;
    const conf_key_t *k = conf_schema(&n);
    for (int i = 0; i < n; i++) {
      if (k[i].type == CONF_FREE) continue;
      const void *field = (const char *)c + k[i].offset;
      FUZZ_ASSERT(conf_text(c, field) != NULL, "no text for %s", k[i].key);
      if (k[i].type == CONF_DURATION) {
        double d = *(const double *)field;
        FUZZ_ASSERT(d >= 0 && d <= 30.0 * 86400, "[%s] %s = %g s passed the range", k[i].section,
                    k[i].key, d);
      }
    }
    for (int s = 0; s < CONF_VARS_COUNT; s++)
      for (int j = 0; j < conf_vars_count(c, (conf_vars_id_t)s); j++) {
        const char *key, *val;
        conf_vars_entry(c, (conf_vars_id_t)s, j, &key, &val);
        FUZZ_ASSERT(key && val && *key, "free section %d entry %d has no key", s, j);
      }
    int argc = c->job.command.argc;
    char *const *argv = c->job.command.argv;
    for (int i = 0; i < argc; i++) FUZZ_ASSERT(argv[i] != NULL, "command word %d missing", i);
    conf_free(c);
  } else {
    FUZZ_ASSERT(c == NULL, "a refused config was returned");
    if (errors) FUZZ_ASSERT(strstr(errors, SECRET) == NULL, "an error quotes a secret: %s", errors);
  }
  free(errors);
  return 0;
}
