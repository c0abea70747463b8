/* Sorting helpers: doubles in order, their median, the first index of each equal string.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#include "common/util_sort.h"

#include <stdlib.h>
#include <string.h>

#include "gpulaunch/error.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void util_sort_doubles(double *v, size_t n) {
  if (n > 1) qsort(v, n, sizeof *v, cmp_double);
}

typedef struct str_at_s {
  const char *s;
  int i;
} str_at_t;

static int cmp_str_at(const void *a, const void *b) {
  const str_at_t *x = a, *y = b;
  int c = strcmp(x->s, y->s);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

int util_first_of_each(const char *const *s, int n, int *first) {
  if (n <= 0) return GPL_OK;
  str_at_t *v = malloc((size_t)n * sizeof *v);
  if (!v) return GPL_ENOMEM;
  for (int i = 0; i < n; i++) v[i] = (str_at_t){s[i], i};
  qsort(v, (size_t)n, sizeof *v, cmp_str_at);
  /* in each run of equal strings the lowest index comes first */
  for (int k = 0, head = 0; k < n; k++) {
    if (k > 0 && strcmp(v[k - 1].s, v[k].s) != 0) head = k;
    first[v[k].i] = v[head].i;
  }
  free(v);
  return GPL_OK;
}

double util_median(double *v, size_t n) {
  if (n == 0) return 0;
  util_sort_doubles(v, n);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
