/* Fuzz target: `gpulaunch audit verify`'s parser (launcher/audit/audit_chain.c) over any bytes.
 * Oracles: the result is 0 (the chain holds) or 1 (broken); holding means every line ended with
 * a newline and the lines counted are the newlines; broken names a line in 1..lines+1 with a
 * reason; the stream parser (over the same bytes) agrees. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "launcher/audit/audit_chain.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  audit_verify_t v;
  int rc = audit_chain_verify_buf((const char *)data, size, &v);
  FUZZ_ASSERT(rc == 0 || rc == 1, "verify returned %d", rc);
  long nl = 0;
  for (size_t i = 0; i < size; i++) nl += data[i] == '\n';
  if (rc == 0) {
    FUZZ_ASSERT(size == 0 || data[size - 1] == '\n', "a log without its last newline holds");
    FUZZ_ASSERT(v.lines == nl, "%ld lines counted, %ld newlines", v.lines, nl);
    FUZZ_ASSERT(v.bad_line == 0, "bad line %ld in a chain that holds", v.bad_line);
  } else {
    FUZZ_ASSERT(v.bad_line == v.lines + 1 && v.bad_line >= 1, "bad line %ld after %ld lines", v.bad_line, v.lines);
    FUZZ_ASSERT(v.why[0] != 0 && memchr(v.why, 0, sizeof v.why), "no reason");
  }
  if (size > 0) {
    FILE *f = fmemopen((void *)data, size, "r");
    if (f) {
      audit_verify_t vs;
      int rs = audit_chain_verify_stream(f, &vs);
      fclose(f);
      /* getline reads a NUL inside a line as any byte: the same lines, the same verdict */
      FUZZ_ASSERT(rs == rc && vs.bad_line == v.bad_line, "stream %d/%ld, buffer %d/%ld", rs, vs.bad_line, rc,
                 v.bad_line);
    }
  }
  return 0;
}
