/* The harnesses without libFuzzer: run every file of the folders (or files) given through
 * LLVMFuzzerTestOneInput once, so the seed corpus and every past finding stay regression tests
 * in the normal build. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/safefile.h"
#include "fuzz.h"

/* Corpus inputs are small; libFuzzer's own default -max_len is far below this. */
#define CORPUS_MAX_BYTES (16u << 20)

static int run_file(const char *path) {
  char *text, err[4400];
  size_t n;
  if (safefile_read(path, CORPUS_MAX_BYTES, &text, &n, err, sizeof err) < 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  /* an exact-size copy without safefile_read's NUL, so a one-byte over-read still faults under
   * ASan as it does under libFuzzer */
  unsigned char *buf = malloc(n ? n : 1);
  if (buf) memcpy(buf, text, n);
  free(text);
  if (!buf) return 1;
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  int files = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) < 0) {
      perror(argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      bad |= run_file(argv[i]);
      files++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
      bad |= run_file(p);
      files++;
    }
    if (d) closedir(d);
  }
  printf("%d inputs replayed, no finding\n", files);
  return bad || files == 0;
}
