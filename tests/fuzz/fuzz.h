/* What every harness here defines: libFuzzer's entry point. Built with -fsanitize=fuzzer in the
 * fuzz build (GPULAUNCH_FUZZ=ON), and with corpus_main.c in the normal build, where each seed and
 * past finding in corpus/<target>/ is replayed as a regression test. */
#ifndef GPL_TESTS_FUZZ_H
#define GPL_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An oracle failed: say what, then abort, so that libFuzzer (and the replay) report a finding. */
#define FUZZ_ASSERT(cond, ...)                                                                    \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      fprintf(stderr, "fuzz oracle failed at %s:%d: ", __FILE__, __LINE__);                      \
      fprintf(stderr, __VA_ARGS__);                                                               \
      fputc('\n', stderr);                                                                        \
      abort();                                                                                    \
    }                                                                                             \
  } while (0)

/* The input as a C string (a copy with a NUL after it: a NUL inside ends the text, as it would a
 * C string's); NULL when out of memory. The caller frees it. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s) {
    memcpy(s, data, size);
    s[size] = 0;
  }
  return s;
}

#endif
