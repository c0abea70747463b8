/* Clocks (monotonic, wall, ISO 8601 stamp) and a sleep that resumes after signals.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#ifndef GPL_COMMON_UTIL_TIME_H
#define GPL_COMMON_UTIL_TIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Monotonic clock. */
double util_now(void);
uint64_t util_now_ns(void);
/* Wall clock (CLOCK_REALTIME) in seconds: comparable between hosts whose clocks are synced. */
double util_wall_now(void);
/* Wall clock as an ISO 8601 UTC string "2026-12-02T09:00:00.123Z". */
void util_iso_time(char *out, size_t len);
/* Sleep for a number of seconds (fractions allowed). */
void util_sleep(double seconds);

#ifdef __cplusplus
}
#endif

#endif
