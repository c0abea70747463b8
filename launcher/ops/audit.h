/* Audit log ([audit] log = PATH): one JSON line per job start and per job end, safe for many jobs;
 * control events are launcher/audit/audit_event.h's, every line chained (audit_chain.h). */
#ifndef GPL_LAUNCHER_AUDIT_H
#define GPL_LAUNCHER_AUDIT_H

#include <stddef.h>
#include <sys/types.h>

/* What a job's two lines say. Fill it with audit_info_init, set the fields you know, and pass
 * the same struct to audit_job_start and audit_job_end (the job id and start time tie the two
 * lines together). Rank 0 writes both lines. */
typedef struct audit_info_s {
  char job_id[96];        /* SLURM_JOB_ID / PBS_JOBID / OMPI job id when set, else host-pid-time */
  char user[64];          /* the user name (getpwuid), or the uid as text */
  uid_t uid;
  char started[40];       /* ISO 8601 UTC, set by audit_info_init */
  double t0;              /* monotonic start, for the duration in the end line */
  int ranks, nodes;       /* world size and node count */
  const char *const *hosts; /* distinct host names (nodes entries), may be NULL */
  char *const *argv;      /* the wrapped command or the gpulaunch command line (redacted when
                           * written); may be NULL */
  int argc;
  const char *mode;       /* "run", "bench", "accept", ... (may be NULL) */
  const char *conf_path;  /* the config file, or NULL */
  const char *elastic;    /* an elastic gpulaunch-run's restarts before this launch (a JSON array),
                           * or NULL */
  const char *key_source; /* where the job key came from (seckey_src_name: "key_file", "MUNGE",
                           * "handed over"), once agreed; NULL before */
} audit_info_t;


/* Fill job id, user, uid and start time; everything else zero. */
void audit_info_init(audit_info_t *info);

/* Append the start line. The file is created 0600 (and an existing file's mode is never
 * loosened); the line is one write(2) under an exclusive flock, with O_APPEND, so concurrent
 * jobs never interleave or lose lines. 0, GPL_ETIMEDOUT (lock not obtained within 10 s) or
 * GPL_ESYS/GPL_EIO (logged as a warning: the job checked the log with audit_check before it
 * started, so this is a log lost mid-job). */
int audit_job_start(const char *path, const audit_info_t *info);
/* Append the end line: the start line's fields plus exit status, root cause (NULL when the job
 * succeeded) and duration. */
int audit_job_end(const char *path, const audit_info_t *info, int exit_status,
                  const char *root_cause);

/* Can the audit log be appended to (checked before a job starts: a job that must be audited
 * does not start without its log)? safefile_check_append: 0, or a negative GPL_E* code with one
 * line in err. */
int audit_check(const char *path, char *err, size_t errlen);

/* SHA-256 of a file as 64 hex digits (OpenSSL libcrypto). 0, GPL_ENOENT or GPL_ESYS. */
int audit_file_sha256(const char *path, char hex[65]);

/* Append one JSON object line (a '\n' is added) to path with the rules above, chained to the line
 * before it (launcher/audit/audit_chain.h). Exposed for tests. */
int audit_append_line(const char *path, const char *line);

#endif
