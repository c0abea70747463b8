/* Capture what this process writes on stderr (the log) during a call, to check its messages. */
#ifndef GPL_TESTS_COMM_CAPTURE_H
#define GPL_TESTS_COMM_CAPTURE_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static FILE *cap_file;
static int cap_saved = -1;

static void capture_begin(void) {
  fflush(stderr);
  cap_file = tmpfile();
  cap_saved = dup(2);
  if (cap_file && cap_saved >= 0) dup2(fileno(cap_file), 2);
}

/* Stop capturing; the text goes into buf and is also echoed on the real stderr. */
static void capture_end(char *buf, size_t len) {
  fflush(stderr);
  buf[0] = 0;
  if (cap_saved >= 0) {
    dup2(cap_saved, 2);
    close(cap_saved);
    cap_saved = -1;
  }
  if (!cap_file) return;
  rewind(cap_file);
  size_t n = fread(buf, 1, len - 1, cap_file);
  buf[n] = 0;
  fclose(cap_file);
  cap_file = NULL;
  fputs(buf, stderr);
}

#endif
