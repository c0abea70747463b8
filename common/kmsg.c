/* The kernel log from /dev/kmsg, read without blocking (diag's bundle, accept's Xid check). */
#include "common/kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpulaunch/error.h"

int kmsg_read(strbuf_t *out, char *why, size_t whylen) {
  int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, whylen, "/dev/kmsg: %s", strerror(errno));
    return GPL_ESYS;
  }
  char rec[8192]; /* one record per read */
  for (int i = 0; i < KMSG_MAX_RECORDS; i++) {
    ssize_t n = read(fd, rec, sizeof rec);
    if (n < 0 && (errno == EPIPE || errno == EINTR)) continue; /* records overwritten while reading */
    if (n <= 0) break;                                          /* EAGAIN: the end */
    /* "prio,seq,usec,flags;message\n" (continuation lines start with a space) */
    const char *msg = memchr(rec, ';', (size_t)n);
    msg = msg ? msg + 1 : rec;
    strbuf_append_n(out, msg, (size_t)(rec + n - msg));
    if (rec[n - 1] != '\n') strbuf_append(out, "\n");
  }
  close(fd);
  return out->oom ? GPL_ENOMEM : GPL_OK;
}
