/* Fuzz target: diag's reading of `dcgmi diag` output (launcher/ops/diag_nvidia.c diag_dcgmi_parse),
 * text from another program. Oracles: counts never negative, the failed checks' names always a
 * terminated string within its buffer, and a failure counted for each name listed. */
#include <string.h>

#include "fuzz.h"
#include "launcher/ops/diag.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  if (!text) return 0;
  /* a guard byte after the buffer: the names must stay within their len */
  char failed[41];
  for (size_t len = 1; len <= 40; len += 39) {
    memset(failed, 'G', sizeof failed);
    int npass = -1;
    int nfail = diag_dcgmi_parse(text, &npass, failed, len);
    FUZZ_ASSERT(npass >= 0 && nfail >= 0, "npass %d nfail %d", npass, nfail);
    FUZZ_ASSERT(memchr(failed, 0, len) != NULL, "failed names not terminated within %zu", len);
    FUZZ_ASSERT(failed[40] == 'G', "failed names written past %zu bytes", len);
    FUZZ_ASSERT(nfail > 0 || failed[0] == 0, "names listed without a failure");
  }
  free(text);
  return 0;
}
