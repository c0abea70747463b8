/* Nearest-word suggestions for a misspelt name: edit distance and the closest candidate.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#ifndef GPL_COMMON_UTIL_SUGGEST_H
#define GPL_COMMON_UTIL_SUGGEST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Edit distance, and the candidate nearest to word (NULL when none is close enough). */
int util_levenshtein(const char *a, const char *b);
const char *util_nearest(const char *word, const char *const *cands, size_t n);

#ifdef __cplusplus
}
#endif

#endif
