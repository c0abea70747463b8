/* Nearest-word suggestions for a misspelt name: edit distance and the closest candidate.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#include "common/util_suggest.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>


int util_levenshtein(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 255 || lb > 255) return (int)(la > lb ? la : lb);
  int row[256];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int prev = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int cur = row[j];
      int cost = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ? 0 : 1;
      int best = prev + cost;
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      prev = cur;
    }
  }
  return row[lb];
}

const char *util_nearest(const char *word, const char *const *cands, size_t n) {
  const char *best = NULL;
  int best_d = 1 << 30;
  for (size_t i = 0; i < n; i++) {
    int d = util_levenshtein(word, cands[i]);
    if (d < best_d) best_d = d, best = cands[i];
  }
  /* Close enough to be a typo: at most a third of the word, and at least 1 or 2 edits. */
  size_t len = strlen(word);
  int limit = (int)(len / 3);
  if (limit < 2) limit = 2;
  return best && best_d <= limit ? best : NULL;
}
