/* Closing every inherited descriptor above the standard streams, before the program is started. */
#include "launcher/exec/fdclose.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The highest number worth trying when /proc is not mounted: the soft limit, capped so that a
 * limit of a million does not cost a million system calls. */
#define FDCLOSE_SCAN_MAX 65536

void fdclose_from(int lowfd) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0) return;
#endif
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    int self = dirfd(d);
    struct dirent *e;
    /* Closing while reading is safe here: /proc/self/fd lists the table as it is at each read,
     * and an entry closed already is skipped by close's EBADF. */
    while ((e = readdir(d)) != NULL) {
      char *end;
      long fd = strtol(e->d_name, &end, 10);
      if (*end || end == e->d_name || fd < lowfd || fd == self) continue;
      close((int)fd);
    }
    closedir(d);
    return;
  }
  struct rlimit rl;
  long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur
                                                                                : FDCLOSE_SCAN_MAX;
  if (max > FDCLOSE_SCAN_MAX) max = FDCLOSE_SCAN_MAX;
  for (long fd = lowfd; fd < max; fd++) close((int)fd);
}
