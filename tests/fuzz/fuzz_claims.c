/* Fuzz target: gpulaunch-run's claims (launcher/front/elastic_claims.c): the launcher's stderr read
 * line by line for Open MPI's "lost communication with a remote daemon" (ecore_launcher_line), and
 * the partition rule over the claims made of the input (ecore_resolve, ecore_partition_note).
 * Oracles: a host named is non-empty, NUL-terminated, without blanks; keep[] is 0 or 1 and the
 * hosts the launcher lost are never kept; the note is NUL-terminated. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "launcher/front/elastic_claims.h"

#define MAXC 16

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  if (!text) return 0;
  ecore_claim_t claims[MAXC];
  front_host_t cur[MAXC];
  int nclaims = 0, ncur = 0, state = 0;
  memset(claims, 0, sizeof claims);
  memset(cur, 0, sizeof cur);
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char host[ECORE_NAME];
    if (ecore_launcher_line(&state, line, host, sizeof host)) {
      FUZZ_ASSERT(memchr(host, 0, sizeof host) && host[0], "host");
      FUZZ_ASSERT(!strpbrk(host, " \t\r\n"), "host '%s'", host);
      if (nclaims < MAXC) {
        snprintf(claims[nclaims].by, ECORE_NAME, "h0");
        snprintf(claims[nclaims].lost, ECORE_NAME, "%s", host);
        claims[nclaims++].launcher = 1;
      }
      continue;
    }
    /* "by>lost" lines are a rank's claims ("*by>lost" rank 0's); other short words hosts */
    char *gt = strchr(line, '>');
    if (gt && nclaims < MAXC && strlen(line) < ECORE_NAME) {
      *gt = 0;
      claims[nclaims].rank0 = line[0] == '*';
      snprintf(claims[nclaims].by, ECORE_NAME, "%s", line + claims[nclaims].rank0);
      snprintf(claims[nclaims++].lost, ECORE_NAME, "%s", gt + 1);
    } else if (ncur < MAXC && strlen(line) < ECORE_NAME) {
      snprintf(cur[ncur].name, sizeof cur[ncur].name, "%s", line);
      cur[ncur++].slots = 1;
    }
  }
  int keep[MAXC];
  int rc = ecore_resolve(cur, ncur, claims, nclaims, keep);
  FUZZ_ASSERT(rc == 0 || rc == 1, "resolve %d", rc);
  for (int i = 0; i < ncur; i++) {
    FUZZ_ASSERT(keep[i] == 0 || keep[i] == 1, "keep[%d] %d", i, keep[i]);
    for (int k = 0; k < nclaims && *cur[i].name; k++)
      FUZZ_ASSERT(!(claims[k].launcher && strcmp(claims[k].lost, cur[i].name) == 0 && keep[i]), "kept %s",
                  cur[i].name);
  }
  char note[512];
  note[0] = 0;
  if (ecore_partition_note(claims, nclaims, note, sizeof note)) FUZZ_ASSERT(memchr(note, 0, sizeof note), "note");
  free(text);
  return 0;
}
