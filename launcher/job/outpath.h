/* The files a mode writes when it is done (reports, results), checked before it measures
 * anything: a path that cannot be written fails the run at once, not after minutes of work. */
#ifndef GPL_LAUNCHER_OUTPATH_H
#define GPL_LAUNCHER_OUTPATH_H

#include "launcher/job/job.h"

typedef struct outpath_s {
  const char *what; /* where the path was given, for the message: "--json", "x.conf:4 [bench] csv" */
  const char *path; /* NULL or "": not asked for, not checked */
} outpath_t;

/* Rank 0 checks that each path can be written as safefile writes it: an existing file is a
 * regular file of this user's (or root's) that it may open; for a missing one, its folder exists
 * and passes safefile_check_dir, and the file can be created there (it is, and removed at once:
 * nothing is left behind, nothing emptied). For the first path that cannot be, rank 0 prints
 * "PROG: WHAT: cannot write there: WHY" (WHY names the path). Every rank of the job learns the
 * answer (a broadcast with the job's deadline; job NULL or of one rank: none), so every rank of a
 * collective mode stops together.
 * \return an exit code (launcher/exitcode.h): 0 when every path can be written; else
 * GPL_EXIT_USAGE for a path given on the command line (WHAT starts with '-'), GPL_EXIT_CONFIG for
 * one from the config file, as for the other options and keys; GPL_EXIT_TIMEOUT when the answer
 * did not reach this rank. */
int outpath_check(const job_t *job, const char *prog, const outpath_t *paths, int n);

#endif
