/* Growable string buffer. */
#include "common/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(strbuf_t *b, size_t extra) {
  if (b->oom) return -1;
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap *= 2;
  char *n = realloc(b->s, cap);
  if (!n) {
    b->oom = 1;
    return -1;
  }
  b->s = n;
  b->cap = cap;
  return 0;
}

void strbuf_append_n(strbuf_t *b, const char *s, size_t n) {
  if (grow(b, n) < 0) return;
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void strbuf_append(strbuf_t *b, const char *s) { strbuf_append_n(b, s, strlen(s)); }

void strbuf_vprintf(strbuf_t *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0 || grow(b, (size_t)n) < 0) return;
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void strbuf_printf(strbuf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  strbuf_vprintf(b, fmt, ap);
  va_end(ap);
}

const char *strbuf_str(const strbuf_t *b) { return b->s ? b->s : ""; }

char *strbuf_take(strbuf_t *b) {
  char *s = b->s ? b->s : strdup("");
  b->s = NULL;
  b->len = b->cap = 0;
  b->oom = 0;
  return s;
}

void strbuf_reset(strbuf_t *b) {
  b->len = 0;
  if (b->s) b->s[0] = 0;
}

void strbuf_free(strbuf_t *b) {
  free(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
  b->oom = 0;
}
