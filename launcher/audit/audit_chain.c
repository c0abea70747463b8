/* The audit log's hash chain: chained appends under flock, and the check of a whole log. */
#include "launcher/audit/audit_chain.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "common/log.h"
#include "common/safefile.h"
#include "gpulaunch/error.h"

#define LOCK_TIMEOUT_S 10.0
#define CHUNK 65536

static const char g_zeros[AUDIT_CHAIN_HEX + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

static void to_hex(const unsigned char *md, char hex[AUDIT_CHAIN_HEX + 1]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[md[i] >> 4];
    hex[2 * i + 1] = digits[md[i] & 15];
  }
  hex[AUDIT_CHAIN_HEX] = 0;
}

int audit_chain_hash(const void *data, size_t len, char hex[AUDIT_CHAIN_HEX + 1]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32) return GPL_ESYS;
  to_hex(md, hex);
  return GPL_OK;
}

/* SHA-256 of the bytes [from, to) of fd, read with pread. */
static int hash_range(int fd, off_t from, off_t to, char hex[AUDIT_CHAIN_HEX + 1]) {
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  char *buf = malloc(CHUNK);
  int rc = GPL_ESYS;
  if (ctx && buf && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1) {
    off_t at = from;
    int ok = 1;
    while (ok && at < to) {
      size_t want = (size_t)(to - at) < CHUNK ? (size_t)(to - at) : CHUNK;
      ssize_t n = pread(fd, buf, want, at);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        ok = 0;
        break;
      }
      ok = EVP_DigestUpdate(ctx, buf, (size_t)n) == 1;
      at += n;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32) {
      to_hex(md, hex);
      rc = GPL_OK;
    }
  }
  free(buf);
  EVP_MD_CTX_free(ctx);
  return rc;
}

/* The hash the next line chains to: the last line's (zeros for an empty file). *need_nl: the
 * file does not end with a newline (a cut write): the next line starts on a line of its own, and
 * verify names the cut one. */
static int last_line_hash(int fd, char hex[AUDIT_CHAIN_HEX + 1], int *need_nl) {
  struct stat st;
  *need_nl = 0;
  if (fstat(fd, &st) < 0) return GPL_ESYS;
  if (st.st_size == 0) {
    memcpy(hex, g_zeros, sizeof g_zeros);
    return GPL_OK;
  }
  char c;
  if (pread(fd, &c, 1, st.st_size - 1) != 1) return GPL_ESYS;
  off_t end = c == '\n' ? st.st_size - 1 : st.st_size;
  *need_nl = c != '\n';
  /* back to the newline before the last line */
  char *buf = malloc(CHUNK);
  if (!buf) return GPL_ENOMEM;
  off_t start = 0, pos = end;
  while (pos > 0) {
    size_t n = pos < CHUNK ? (size_t)pos : CHUNK;
    ssize_t got = pread(fd, buf, n, pos - (off_t)n);
    if (got != (ssize_t)n) {
      free(buf);
      return GPL_ESYS;
    }
    char *nl = memrchr(buf, '\n', n);
    if (nl) {
      start = pos - (off_t)n + (nl - buf) + 1;
      break;
    }
    pos -= (off_t)n;
  }
  free(buf);
  return hash_range(fd, start, end, hex);
}

/* An exclusive flock within LOCK_TIMEOUT_S: writers of other jobs (and NFS clients that honour
 * it) wait, a stuck holder does not stall the job. */
static int lock(int fd, const char *path) {
  struct timespec t0, now, nap = {0, 5 * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    double waited = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
    if ((errno != EWOULDBLOCK && errno != EINTR) || waited > LOCK_TIMEOUT_S) {
      int e = errno;
      LOG_WARN("audit log %s: cannot lock: %s", path,
               e == EWOULDBLOCK ? "another writer held it for 10 s" : strerror(e));
      return e == EWOULDBLOCK ? GPL_ETIMEDOUT : GPL_ESYS;
    }
    nanosleep(&nap, NULL);
  }
  return GPL_OK;
}

int audit_chain_append(const char *path, const char *obj, char **line_out) {
  if (line_out) *line_out = NULL;
  size_t olen = obj ? strlen(obj) : 0;
  if (olen < 2 || obj[0] != '{' || obj[olen - 1] != '}' || memchr(obj, '\n', olen)) return GPL_EINVAL;
  /* O_NOFOLLOW, 0600, in a folder of ours or root's, an existing file ours with one link: a
   * link planted in a shared log folder must not make a root job append to another file. */
  int fd, rfd = -1;
  char err[PATH_MAX + 200];
  if (safefile_open_append(path, &fd, err, sizeof err) < 0) {
    LOG_WARN("audit log: cannot open it: %s", err);
    return GPL_ESYS;
  }
  struct stat st, rst;
  if (fstat(fd, &st) == 0 && (st.st_mode & 077))
    LOG_WARN("audit log %s is readable or writable by others (mode %04o); it should be 0600", path,
             (unsigned)(st.st_mode & 07777));
  int rc = lock(fd, path);
  if (rc < 0) {
    close(fd);
    return rc;
  }
  /* The last line is read through a second descriptor of the same file (the first one is
   * write-only): the same inode, or another file took the name since. */
  char hex[AUDIT_CHAIN_HEX + 1];
  int need_nl = 0;
  if (safefile_open_read(path, &rfd, NULL, err, sizeof err) < 0 || fstat(fd, &st) < 0 ||
      fstat(rfd, &rst) < 0 || st.st_dev != rst.st_dev || st.st_ino != rst.st_ino) {
    LOG_WARN("audit log %s: cannot read its last line back: %s", path,
             rfd < 0 ? err : "the file was replaced while it was opened");
    rc = GPL_ESYS;
  } else {
    rc = last_line_hash(rfd, hex, &need_nl);
    if (rc < 0) LOG_WARN("audit log %s: cannot hash its last line: %s", path, strerror(errno));
  }
  if (rfd >= 0) close(rfd);
  char *buf = NULL;
  size_t n = 0;
  if (rc == GPL_OK) {
    /* "\n"? + {"prev":"HEX", + the object's members + "}\n" */
    size_t plen = strlen(AUDIT_CHAIN_PREFIX);
    buf = malloc(olen + plen + AUDIT_CHAIN_HEX + 8);
    if (!buf) rc = GPL_ENOMEM;
  }
  if (buf) {
    if (need_nl) buf[n++] = '\n';
    n += (size_t)sprintf(buf + n, "%s%s\"%s", AUDIT_CHAIN_PREFIX, hex, olen > 2 ? "," : "");
    memcpy(buf + n, obj + 1, olen - 1);
    n += olen - 1;
    buf[n++] = '\n';
    ssize_t w;
    do w = write(fd, buf, n);
    while (w < 0 && errno == EINTR);
    if (w != (ssize_t)n) {
      LOG_WARN("audit log %s: write failed: %s", path, w < 0 ? strerror(errno) : "short write");
      rc = w < 0 ? GPL_ESYS : GPL_EIO;
    }
  }
  flock(fd, LOCK_UN);
  close(fd);
  if (rc == GPL_OK && line_out) {
    size_t skip = need_nl ? 1 : 0;
    *line_out = strndup(buf + skip, n - skip - 1);
  }
  free(buf);
  return rc;
}

/* ---- verify: one line at a time ---- */

typedef struct chk_s {
  char prev[AUDIT_CHAIN_HEX + 1]; /* the hash this line must carry */
  audit_verify_t *out;
} chk_t;

static int is_hex(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) return 0;
  return 1;
}

static int broken(chk_t *c, long line, const char *why) {
  c->out->bad_line = line;
  snprintf(c->out->why, sizeof c->out->why, "%s", why);
  return 1;
}

/* One line (without its newline): 0 when it holds, 1 when it breaks the chain. */
static int check_line(chk_t *c, const char *p, size_t n, int whole) {
  long no = c->out->lines + 1;
  char why[sizeof c->out->why];
  if (!whole) {
    snprintf(why, sizeof why, "line %ld has no newline at its end: a write was cut short or the "
             "file was cut inside the line", no);
    return broken(c, no, why);
  }
  size_t plen = strlen(AUDIT_CHAIN_PREFIX);
  if (n < plen + AUDIT_CHAIN_HEX + 2 || memcmp(p, AUDIT_CHAIN_PREFIX, plen) != 0 ||
      !is_hex(p + plen, AUDIT_CHAIN_HEX) || p[plen + AUDIT_CHAIN_HEX] != '"' ||
      (p[plen + AUDIT_CHAIN_HEX + 1] != ',' && p[plen + AUDIT_CHAIN_HEX + 1] != '}')) {
    snprintf(why, sizeof why, "line %ld does not start with the chain field {\"prev\":\"<64 hex "
             "digits>\" (a line written without the chain, or edited at its start)", no);
    return broken(c, no, why);
  }
  if (memcmp(p + plen, c->prev, AUDIT_CHAIN_HEX) != 0) {
    if (no == 1)
      snprintf(why, sizeof why, "line 1 chains to a line that is not in the file (a file's first "
               "line chains to 64 zeros): lines were removed from its start");
    else
      snprintf(why, sizeof why, "line %ld does not chain to line %ld (its \"prev\" is not the "
               "SHA-256 of line %ld): line %ld was edited, or lines were removed, inserted or "
               "moved there", no, no - 1, no - 1, no - 1);
    return broken(c, no, why);
  }
  cJSON *o = cJSON_ParseWithLength(p, n);
  int obj = cJSON_IsObject(o);
  cJSON_Delete(o);
  if (!obj) {
    snprintf(why, sizeof why, "line %ld is not a JSON object (edited, or a write cut short)", no);
    return broken(c, no, why);
  }
  if (audit_chain_hash(p, n, c->prev) < 0) {
    snprintf(why, sizeof why, "line %ld: SHA-256 failed (OpenSSL)", no);
    return broken(c, no, why);
  }
  c->out->lines = no;
  return 0;
}

int audit_chain_verify_buf(const char *buf, size_t len, audit_verify_t *out) {
  memset(out, 0, sizeof *out);
  chk_t c = {.out = out};
  memcpy(c.prev, g_zeros, sizeof g_zeros);
  size_t at = 0;
  while (at < len) {
    const char *nl = memchr(buf + at, '\n', len - at);
    size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
    if (check_line(&c, buf + at, n, nl != NULL)) return 1;
    at += n + 1;
  }
  return 0;
}

int audit_chain_verify_stream(FILE *f, audit_verify_t *out) {
  memset(out, 0, sizeof *out);
  chk_t c = {.out = out};
  memcpy(c.prev, g_zeros, sizeof g_zeros);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = 0;
  while ((n = getline(&line, &cap, f)) > 0) {
    int whole = line[n - 1] == '\n';
    if (check_line(&c, line, (size_t)n - (whole ? 1 : 0), whole)) {
      rc = 1;
      break;
    }
  }
  if (rc == 0 && ferror(f)) {
    snprintf(out->why, sizeof out->why, "read error after line %ld: %s", out->lines, strerror(errno));
    rc = GPL_EIO;
  }
  free(line);
  return rc;
}
