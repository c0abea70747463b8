/* One launch of the job by gpulaunch-run: mpirun (or srun) in a process group of its own, the
 * channel to rank 0's supervisor (launcher/sup/frontch.h), the user's signals, the job's status. */
#ifndef GPL_LAUNCHER_FRONT_JOB_H
#define GPL_LAUNCHER_FRONT_JOB_H

#include <stddef.h>

#include "launcher/front/elastic_core.h"

#define FRONT_MAX_NAMED 64 /* hosts a job can name lost or noticed */

typedef struct front_job_s {
  /* in */
  char **av;              /* the launcher's argv (mpirun ... gpulaunch ...), NULL-terminated */
  const char *token;      /* the channel's token (hex, derived from the job key) */
  struct tls_ctx_s *ctx;  /* the channel's TLS, server side (common/tls.h) */
  double start_limit;     /* > 0: rank 0 must connect within this many seconds, else the
                           * launcher is ended (an elastic launch on a host that cannot start) */
  int lfd;                /* the channel's listening socket */
  int lfd_more[7];        /* the same port on this host's other addresses (front_listen.h) */
  int nlfd_more;
  double restart_linger;  /* > 0: after rank 0's status for a membership change (hosts lost or
                           * noticed, front_job_stop), mpirun is ended if it lingers this long */
  /* out */
  int verdict;            /* the job's exit status as rank 0 said it (-1: never said) */
  int launcher_status;    /* mpirun's own exit status (-1: not reaped) */
  int code;               /* what gpulaunch-run would exit with for this launch */
  int user_stop;          /* SIGTERM/SIGINT/SIGHUP to gpulaunch-run: the whole job ends */
  int asked_stop;         /* front_job_stop was called (a membership change) */
  int rank0_seen;         /* rank 0 connected: the job started */
  int start_timed_out;    /* ended for start_limit */
  int launcher_named;     /* the launcher said it lost a host's daemon (a claim with .launcher) */
  int nlost, nnotice;     /* hosts named lost / with an interruption notice */
  char lost[FRONT_MAX_NAMED][64];
  int nclaims;            /* who named each lost host ("from HOST" before its "lost" lines) */
  ecore_claim_t claims[FRONT_MAX_NAMED];
  char notice[FRONT_MAX_NAMED][64];
  double started;         /* monotonic time of the launch */
  double stop_asked_at;   /* ... of the stop we asked for (0: none) */
} front_job_t;

/* Called about every 200 ms while the job runs; may call front_job_stop. */
typedef void (*front_tick_fn)(void *arg, front_job_t *j);

/* Install gpulaunch-run's signal handling (once, before the first launch). own_signals: SIGTERM,
 * SIGINT and SIGHUP stop the job; 0: they are ignored (the caller passes them on). -1 on error. */
int front_signals_init(int own_signals);
/* Run one launch to its end; fills the outputs. 0, or -1 when the launcher could not start. */
int front_job_run(front_job_t *j, front_tick_fn tick, void *arg);
/* Ask the running job to stop as on a SIGTERM (every program gets preempt_signal and the grace),
 * for a membership change; the user's own stop still wins. */
void front_job_stop(front_job_t *j);
/* Monotonic seconds. */
double front_now(void);
/* "gpulaunch-run: " + the text on stderr, one line. */
void front_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
