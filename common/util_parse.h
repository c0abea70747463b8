/* Parsing config and flag values: sizes, durations, numbers, booleans, signals (decimal only).
 * (util_ prefix kept: its functions are called from dozens of files.) */
#ifndef GPL_COMMON_UTIL_PARSE_H
#define GPL_COMMON_UTIL_PARSE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes with K/M/G/T suffixes (powers of 1024, as nccl-tests). 0 or GPL_EINVAL. */
int util_parse_size(const char *s, uint64_t *out);
/* The longest duration accepted anywhere: 30 days. */
#define UTIL_DURATION_MAX (30.0 * 86400)
/* Durations: "30", "30s", "500ms", "2m", "1h", "1.5s". 0, GPL_EINVAL, or GPL_ERANGE above
 * UTIL_DURATION_MAX. */
int util_parse_duration(const char *s, double *seconds);
/* Whole numbers in [min,max]; GPL_EINVAL if not a number, GPL_ERANGE if out of range. */
int util_parse_long(const char *s, long min, long max, long *out);
/* A finite decimal number. All of these take decimal only (no hex, hex floats, inf or nan). */
int util_parse_double(const char *s, double *out);
/* true/false/yes/no/on/off/1/0. */
int util_parse_bool(const char *s, int *out);
/* Signal name ("SIGTERM", "TERM", "15") to number; returns 0 or GPL_EINVAL. */
int util_parse_signal(const char *s, int *signo);
/* "SIGTERM" for 15, or "SIG<n>" for unknown. */
const char *util_signal_name(int signo);

#ifdef __cplusplus
}
#endif

#endif
