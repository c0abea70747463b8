/* Small files read whole: a sysfs or procfs attribute into a buffer.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#include "common/util_file.h"

#include <ctype.h>
#include <stdio.h>


int util_read_small(const char *path, char *buf, size_t len) {
  if (!len) return -1;
  buf[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, len - 1, f);
  int err = ferror(f);
  fclose(f);
  if (err) return -1;
  buf[n] = 0;
  while (n && isspace((unsigned char)buf[n - 1])) buf[--n] = 0;
  return (int)n;
}
