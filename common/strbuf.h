/* Growable string buffer for building messages, JSON-free reports and command lines. */
#ifndef GPL_COMMON_STRBUF_H
#define GPL_COMMON_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct strbuf_s {
  char *s;    /* always NUL-terminated once anything was appended ("" when empty) */
  size_t len; /* bytes used, without the NUL */
  size_t cap;
  int oom;    /* set when an allocation failed; further appends are ignored */
} strbuf_t;

#define STRBUF_INIT {NULL, 0, 0, 0}

void strbuf_append(strbuf_t *b, const char *s);
void strbuf_append_n(strbuf_t *b, const char *s, size_t n);
void strbuf_printf(strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vprintf(strbuf_t *b, const char *fmt, va_list ap);
/* The contents ("" when empty); valid until the next append. */
const char *strbuf_str(const strbuf_t *b);
/* Hand the buffer to the caller (malloc'd, caller frees) and reset b. */
char *strbuf_take(strbuf_t *b);
void strbuf_reset(strbuf_t *b);
void strbuf_free(strbuf_t *b);

#ifdef __cplusplus
}
#endif

#endif
