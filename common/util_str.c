/* Fixed-size string helpers: a formatted write that may cut, strlcpy, trimming.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#include "common/util_str.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>


void util_fmt(char *dst, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dst, len, fmt, ap);
  va_end(ap);
}

size_t util_strlcpy(char *dst, const char *src, size_t size) {
  size_t n = strlen(src);
  if (size) {
    size_t c = n < size - 1 ? n : size - 1;
    memcpy(dst, src, c);
    dst[c] = 0;
  }
  return n;
}

char *util_trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
  return s;
}
