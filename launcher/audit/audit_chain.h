/* The audit log's hash chain: each line carries the SHA-256 of the line before it ("prev"), so
 * an edited, removed, inserted or moved line breaks the chain at the line after it. */
#ifndef GPL_LAUNCHER_AUDIT_CHAIN_H
#define GPL_LAUNCHER_AUDIT_CHAIN_H

#include <stddef.h>
#include <stdio.h>

/* Every line starts so: `{"prev":"` + 64 lowercase hex digits + `"`, then `,` or `}`. A file's
 * first line chains to 64 zeros. */
#define AUDIT_CHAIN_PREFIX "{\"prev\":\""
#define AUDIT_CHAIN_HEX 64

/* SHA-256 (OpenSSL EVP) of len bytes as 64 lowercase hex digits. 0 or GPL_ESYS. */
int audit_chain_hash(const void *data, size_t len, char hex[AUDIT_CHAIN_HEX + 1]);

/* Append the JSON object `obj` (text starting with '{', no newline) to path as one chained line:
 * the file opened as safefile_open_append does (0600, no links), an exclusive flock (10 s at
 * most), the last line read back and hashed, `"prev":"HEX",` put first in the object, one
 * write(2) with O_APPEND. *line (when not NULL) gets the line as written (malloc'd, no newline).
 * 0, GPL_ETIMEDOUT (lock), GPL_ESYS/GPL_EIO (said as a warning) or GPL_EINVAL (not an object). */
int audit_chain_append(const char *path, const char *obj, char **line);

/* What a verify found: the lines read and, when the chain breaks, the first line that does
 * (1-based) and why, in words. */
typedef struct audit_verify_s {
  long lines;       /* whole lines checked */
  long bad_line;    /* 0: the chain holds */
  char why[320];
} audit_verify_t;

/* Check the chain of a whole log given as bytes (the parser; fuzzed by tests/fuzz/fuzz_audit.c):
 * 0 when every line is whole, starts with the chain field and chains to the line before it, and
 * is a JSON object; 1 with bad_line and why set when not. */
int audit_chain_verify_buf(const char *buf, size_t len, audit_verify_t *out);
/* The same over a stream, line by line (no size cap: a log of years). 0 or 1 as above, or
 * GPL_EIO (read error, said in out->why). */
int audit_chain_verify_stream(FILE *f, audit_verify_t *out);

#endif
