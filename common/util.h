/* Small utilities: clocks, parsing of sizes/durations/numbers, nearest-word suggestions, word splitting. */
#ifndef GPL_COMMON_UTIL_H
#define GPL_COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define GPL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GPL_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Monotonic clock. */
double util_now(void);
uint64_t util_now_ns(void);
/* Wall clock (CLOCK_REALTIME) in seconds: comparable between hosts whose clocks are synced. */
double util_wall_now(void);
/* Wall clock as an ISO 8601 UTC string "2026-12-02T09:00:00.123Z". */
void util_iso_time(char *out, size_t len);
/* Sleep for a number of seconds (fractions allowed). */
void util_sleep(double seconds);

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

/* Sort n doubles ascending, in place. */
void util_sort_doubles(double *v, size_t n);
/* The median of n values: the middle one, or the mean of the two middle ones when n is even (0
 * when n is 0). Sorts v in place. */
double util_median(double *v, size_t n);

/* first[i] = the lowest j with s[j] equal to s[i] (so first[i] == i for the first of each
 * value), in O(n log n): the first rank of each host at start-up with thousands of ranks.
 * 0 or GPL_ENOMEM. */
int util_first_of_each(const char *const *s, int n, int *first);

/* Edit distance, and the candidate nearest to word (NULL when none is close enough). */
int util_levenshtein(const char *a, const char *b);
const char *util_nearest(const char *word, const char *const *cands, size_t n);

/* Split a command line into words as a POSIX shell would (quotes '...' "..." and backslash),
 * without running a shell and without expansions. *argv is NULL-terminated; free with
 * util_free_argv. On error returns GPL_EINVAL and writes a message into err. */
int util_split_words(const char *s, char ***argv, int *argc, char *err, size_t errlen);
void util_free_argv(char **argv);
/* Quote a word for display so that util_split_words gives it back. Returns a malloc'd string. */
char *util_quote_word(const char *w);

/* snprintf into a fixed field for text that may be cut short (reasons, messages): cutting is
 * fine, and unlike snprintf the compiler does not warn that the text may not fit. */
void util_fmt(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* strlcpy: always NUL-terminates; returns strlen(src). */
size_t util_strlcpy(char *dst, const char *src, size_t size);
/* Trim spaces at both ends in place; returns s. */
char *util_trim(char *s);
/* This machine's short host name (cached). */
const char *util_hostname(void);

/* Does the environment variable name look like a credential (*SECRET*, *TOKEN*, *PASSWORD*,
 * *PASSWD*, *PASSPHRASE*, *CREDENTIAL*, *PRIVATE*, *API_KEY*, *AUTH*, *_KEY, AWS_*, AZURE_*, or
 * one of the words PASS, PWD, PW, PAT, DSN, JWT, COOKIE, OTP between '_', '-' or '.': MYSQL_PWD,
 * DOCKER_PASS, GITLAB_PAT, SENTRY_DSN; PWD and OLDPWD themselves are not)? Its value must never
 * be printed. */
int util_is_secret_name(const char *name);

/* A small file (a sysfs or procfs attribute) into buf, at most len - 1 bytes, trailing white
 * space cut: its length, or -1 when it cannot be opened or read (the speed of a link that is down
 * fails with EINVAL on read). Logs nothing: a missing attribute is an answer, not an error. */
int util_read_small(const char *path, char *buf, size_t len);

/* This process's rank as told by the launcher's environment before MPI is up (Open MPI, PMIx,
 * Slurm, PMI); -1 when started alone. Used to print config errors once, not once per rank. */
int util_env_rank(void);

#ifdef __cplusplus
}
#endif

/* The job id its scheduler or launcher gave (SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, Open MPI's
 * job id), the same on every rank, or NULL when none is set. */
const char *util_sched_job_id(void);

#endif
