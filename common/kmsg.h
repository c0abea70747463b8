/* The kernel log from /dev/kmsg, read without blocking (diag's bundle, accept's Xid check). */
#ifndef GPL_COMMON_KMSG_H
#define GPL_COMMON_KMSG_H

#include <stddef.h>

#include "common/strbuf.h"

/* The kernel log since boot from /dev/kmsg, without blocking (diag, and accept's Xid check):
 * the message of each record (its "prio,seq,usec,flags;" header dropped), each ending with a
 * newline, appended to out; at most KMSG_MAX_RECORDS records. 0, GPL_ESYS when /dev/kmsg
 * cannot be opened (why: "/dev/kmsg: Operation not permitted"), or GPL_ENOMEM. */
#define KMSG_MAX_RECORDS 100000
int kmsg_read(strbuf_t *out, char *why, size_t whylen);

#endif
