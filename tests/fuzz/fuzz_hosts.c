/* Fuzz target: gpulaunch-run's host list parser (launcher/front/front_hosts.c), which reads a
 * hostfile or a discovery script's output. Oracles: the count is -1 (with a reason that names the
 * origin and a line) or 0..max; every host has a valid, NUL-terminated name, slots > 0, and no
 * name twice. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "launcher/front/front_hosts.h"

#define MAX 64

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  if (!text) return 0;
  front_host_t h[MAX];
  char err[256];
  err[0] = 0;
  int n = front_hosts_parse(text, "hosts", h, MAX, err, sizeof err);
  FUZZ_ASSERT(n >= -1 && n <= MAX, "count %d", n);
  if (n < 0) FUZZ_ASSERT(strncmp(err, "hosts:", 6) == 0 && isdigit((unsigned char)err[6]), "reason '%s'", err);
  for (int i = 0; i < n; i++) {
    FUZZ_ASSERT(memchr(h[i].name, 0, sizeof h[i].name) && h[i].name[0], "host %d's name", i);
    for (const char *c = h[i].name; *c; c++)
      FUZZ_ASSERT(isalnum((unsigned char)*c) || *c == '-' || *c == '.' || *c == '_', "name '%s'", h[i].name);
    FUZZ_ASSERT(h[i].slots > 0, "slots %d", h[i].slots);
    for (int j = 0; j < i; j++) FUZZ_ASSERT(strcmp(h[i].name, h[j].name) != 0, "'%s' twice", h[i].name);
  }
  free(text);
  return 0;
}
