/* Sorting helpers: doubles in order, their median, the first index of each equal string.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#ifndef GPL_COMMON_UTIL_SORT_H
#define GPL_COMMON_UTIL_SORT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sort n doubles ascending, in place. */
void util_sort_doubles(double *v, size_t n);
/* The median of n values: the middle one, or the mean of the two middle ones when n is even (0
 * when n is 0). Sorts v in place. */
double util_median(double *v, size_t n);

/* first[i] = the lowest j with s[j] equal to s[i] (so first[i] == i for the first of each
 * value), in O(n log n): the first rank of each host at start-up with thousands of ranks.
 * 0 or GPL_ENOMEM. */
int util_first_of_each(const char *const *s, int n, int *first);

#ifdef __cplusplus
}
#endif

#endif
