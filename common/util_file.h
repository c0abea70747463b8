/* Small files read whole: a sysfs or procfs attribute into a buffer.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#ifndef GPL_COMMON_UTIL_FILE_H
#define GPL_COMMON_UTIL_FILE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A small file (a sysfs or procfs attribute) into buf, at most len - 1 bytes, trailing white
 * space cut: its length, or -1 when it cannot be opened or read (the speed of a link that is down
 * fails with EINVAL on read). Logs nothing: a missing attribute is an answer, not an error. */
int util_read_small(const char *path, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
