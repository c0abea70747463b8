/* Fixed-size string helpers: a formatted write that may cut, strlcpy, trimming.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#ifndef GPL_COMMON_UTIL_STR_H
#define GPL_COMMON_UTIL_STR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* snprintf into a fixed field for text that may be cut short (reasons, messages): cutting is
 * fine, and unlike snprintf the compiler does not warn that the text may not fit. */
void util_fmt(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* strlcpy: always NUL-terminates; returns strlen(src). */
size_t util_strlcpy(char *dst, const char *src, size_t size);
/* Trim spaces at both ends in place; returns s. */
char *util_trim(char *s);

#ifdef __cplusplus
}
#endif

#endif
