/* Command lines split into words as a POSIX shell would, and words quoted back for display.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#include "common/util_words.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpulaunch/error.h"

int util_split_words(const char *s, char ***argv_out, int *argc_out, char *err, size_t errlen) {
  size_t cap = 8, argc = 0;
  char **argv = calloc(cap, sizeof *argv);
  size_t slen = strlen(s);
  char *word = malloc(slen + 1);
  if (!argv || !word) goto oom;
  const char *p = s;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (!*p) break;
    size_t w = 0;
    while (*p && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
      if (*p == '\'') {
        const char *q = strchr(p + 1, '\'');
        if (!q) {
          snprintf(err, errlen, "unterminated single quote at column %zu", (size_t)(p - s) + 1);
          goto bad;
        }
        memcpy(word + w, p + 1, (size_t)(q - p - 1));
        w += (size_t)(q - p - 1);
        p = q + 1;
      } else if (*p == '"') {
        const char *start = p++;
        while (*p && *p != '"') {
          /* Inside double quotes a backslash escapes only $ ` " \ and newline. */
          if (*p == '\\' && p[1] && strchr("$`\"\\\n", p[1])) p++;
          word[w++] = *p++;
        }
        if (*p != '"') {
          snprintf(err, errlen, "unterminated double quote at column %zu", (size_t)(start - s) + 1);
          goto bad;
        }
        p++;
      } else if (*p == '\\') {
        if (!p[1]) {
          snprintf(err, errlen, "trailing backslash");
          goto bad;
        }
        word[w++] = p[1];
        p += 2;
      } else {
        word[w++] = *p++;
      }
    }
    if (argc + 2 > cap) {
      cap *= 2;
      char **n = realloc(argv, cap * sizeof *argv);
      if (!n) goto oom;
      argv = n;
    }
    argv[argc] = malloc(w + 1);
    if (!argv[argc]) goto oom;
    memcpy(argv[argc], word, w);
    argv[argc][w] = 0;
    argv[++argc] = NULL;
  }
  free(word);
  *argv_out = argv;
  *argc_out = (int)argc;
  return GPL_OK;
oom:
  snprintf(err, errlen, "out of memory");
bad:
  free(word);
  if (argv) util_free_argv(argv);
  return GPL_EINVAL;
}

void util_free_argv(char **argv) {
  if (!argv) return;
  for (char **a = argv; *a; a++) free(*a);
  free(argv);
}

char *util_quote_word(const char *w) {
  int plain = *w != 0;
  for (const char *p = w; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr("-_./=:,+@%", *p))) plain = 0;
  if (plain) return strdup(w);
  size_t n = 3;
  for (const char *p = w; *p; p++) n += *p == '\'' ? 4 : 1;
  char *out = malloc(n), *o = out;
  if (!out) return NULL;
  *o++ = '\'';
  for (const char *p = w; *p; p++) {
    if (*p == '\'') {
      memcpy(o, "'\\''", 4);
      o += 4;
    } else {
      *o++ = *p;
    }
  }
  *o++ = '\'';
  *o = 0;
  return out;
}
