/* Test helper: append N audit lines (alternating start/end, with a long command so each line is
 * several KiB) to one log, as one of many concurrent jobs would. */
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "launcher/ops/audit.h"

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s LOG WRITER_ID LINES\n", argv[0]);
    return 2;
  }
  log_init();
  const char *log = argv[1];
  int id = atoi(argv[2]), lines = atoi(argv[3]);
  /* 300 words of ~20 bytes: lines of ~7 KiB, well over PIPE_BUF */
  char *words[301];
  static char store[300][32];
  for (int i = 0; i < 300; i++) {
    snprintf(store[i], sizeof store[i], "--w%03d=writer-%03d-x", i, id);
    words[i] = store[i];
  }
  words[300] = NULL;
  audit_info_t info;
  audit_info_init(&info);
  snprintf(info.job_id, sizeof info.job_id, "writer-%d", id);
  info.argv = words;
  info.argc = 300;
  info.ranks = id;
  info.nodes = 1;
  for (int i = 0; i < lines; i++) {
    int rc = i % 2 ? audit_job_end(log, &info, i, "test") : audit_job_start(log, &info);
    if (rc != 0) return 1;
  }
  return 0;
}
