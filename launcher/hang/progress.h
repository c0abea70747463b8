/* A rank's progress: when its program last showed it works (an output line, a call of the C API,
 * gpl_progress(), its heartbeat file) for the hang watchdog, and when it reported its steps (the
 * C API's step or [job] step_regex on its output lines) for the straggler view. */
#ifndef GPL_LAUNCHER_PROGRESS_H
#define GPL_LAUNCHER_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#define PROG_MAX_STEPS 256 /* the last steps kept per rank (the straggler view's window) */

typedef struct prog_step_s {
  double step;  /* the step number reported */
  double t;     /* when (CLOCK_REALTIME seconds: comparable between hosts with synced clocks) */
} prog_step_t;

typedef struct prog_s prog_t;

/* step_regex: POSIX extended regex whose first group is the step number ("" or NULL: none; \d,
 * \s and \w are understood as in Perl); heartbeat_file: a file whose mtime the program touches
 * ("" or NULL: none). GPL_ECONFIG with the regex's error in err when it does not compile. */
int prog_create(prog_t **out, const char *step_regex, const char *heartbeat_file, char *err, size_t errlen);
void prog_free(prog_t *p);
/* The program (re)started: that is progress, and the steps of the last attempt are forgotten. */
void prog_reset(prog_t *p);
/* Progress now (any thread). */
void prog_touch(prog_t *p);
/* A step was reported (the supervisor's thread); also progress. */
void prog_step(prog_t *p, double step);
/* One output line of the program (without its newline): progress, and a step when step_regex
 * matches it. */
void prog_line(prog_t *p, const char *line, size_t len);
/* Look at the heartbeat file (call it about once a second). */
void prog_poll(prog_t *p);
/* Seconds since the last progress (any thread); -1 for NULL. */
double prog_age(const prog_t *p);
/* The last steps, oldest first, into out[0..max); returns how many. */
int prog_steps(const prog_t *p, prog_step_t *out, int max);

#endif
