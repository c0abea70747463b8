/* Command lines split into words as a POSIX shell would, and words quoted back for display.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#ifndef GPL_COMMON_UTIL_WORDS_H
#define GPL_COMMON_UTIL_WORDS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Split a command line into words as a POSIX shell would (quotes '...' "..." and backslash),
 * without running a shell and without expansions. *argv is NULL-terminated; free with
 * util_free_argv. On error returns GPL_EINVAL and writes a message into err. */
int util_split_words(const char *s, char ***argv, int *argc, char *err, size_t errlen);
void util_free_argv(char **argv);
/* Quote a word for display so that util_split_words gives it back. Returns a malloc'd string. */
char *util_quote_word(const char *w);

#ifdef __cplusplus
}
#endif

#endif
