/* The rank-0 coordinator as a state machine: the ranks' events, Slurm's reason and the time in;
 * commands for every rank, the lines to print and the abort out. No libuv, no MPI, no clock. */
#ifndef GPL_LAUNCHER_COORD_H
#define GPL_LAUNCHER_COORD_H

#include <stddef.h>

#include "launcher/sup/ctl_msg.h"

#define COORD_SETTLE_S 1.0 /* after a rank fails, wait this long for others failing too (the first
                            * of them is the cause) before stopping the rest */
#define COORD_MARGIN_S 5.0 /* extra time for the ranks to report a stop */
#define COORD_QUERY_S 10.0 /* the longest wait for Slurm's reason (scontrol, tried again while it fails);
                           * well inside KillWait (30 s by default) */
/* At a failure, a rank still running is silent when it made no progress for COORD_SILENT_MIN_S
 * and COORD_SILENT_FACTOR times longer than the ranks that ended (the median): its stacks are
 * taken before it is stopped, COORD_SILENT_WAIT_S at most (each rank's collection gets
 * COORD_SILENT_COLLECT_S), to name where it was. */
#define COORD_SILENT_MIN_S 5.0
#define COORD_SILENT_FACTOR 2.0
#define COORD_SILENT_WAIT_S 6.0
#define COORD_SILENT_COLLECT_S 5.0

/* Why the job stops after a SIGTERM/SIGINT (0: undecided, or not stopped by a signal). */
enum { COORD_PREEMPTED = 1, COORD_CANCELLED, COORD_INTERRUPTED };

typedef enum coord_act_type_e {
  COORD_PRINT = 1, /* text: a message for the user, printed as written (log_print) */
  COORD_INFO,      /* text: a line of the sup subsystem at level info (LOG_INFO) */
  COORD_SEND,      /* msg: a command to every rank (ctl_broadcast): CTL_STOP, START, EXIT, HANG */
  COORD_QUERY,     /* ask Slurm why the job is being signalled, COORD_QUERY_S at most; its answer
                    * comes back through coord_slurm_end */
  COORD_ABORT,     /* code: ranks never reported the stop (they were named in a COORD_PRINT just
                    * before): write what is queued and abort the job with this exit code */
  COORD_COLLECT    /* msg: CTL_HANG for every rank (grace: each rank's budget): the stacks of the
                    * ranks still running after a failure, silent[] the candidates; the answer
                    * comes back through coord_silent_found, before COORD_SILENT_WAIT_S */
} coord_act_type_t;

typedef struct coord_act_s {
  coord_act_type_t type;
  int code;      /* COORD_ABORT */
  char *text;    /* COORD_PRINT, COORD_INFO: the whole text, newline included where printed */
  ctl_msg_t msg; /* COORD_SEND */
} coord_act_t;

/* What one call asks for, in order. Filled by the coord_* calls (appended), emptied by the caller
 * with coord_acts_clear once done. */
typedef struct coord_acts_s {
  coord_act_t *v;
  int n, cap;
} coord_acts_t;

typedef struct coord_opts_s {
  int size;              /* ranks in the job */
  int restarts;          /* restarts allowed after a failure (not after a hang; after a CUDA
                          * out-of-memory error only with restart_on_oom) */
  int restart_on_oom;    /* [job] restart_on_oom */
  double grace;          /* a stop for SIGTERM/SIGINT: the program's grace before SIGKILL */
  double stop_timeout;   /* a stop for another rank's failure: SIGTERM -> SIGKILL */
  int preempt_signal;    /* what every program gets when the job gets SIGTERM */
  /* "rank 3 (host h)" for the ranks that never reported (mpix_rank_name) */
  const char *(*rank_name)(int rank, char *buf, size_t len);
  /* Seconds since the rank's program last made progress (< 0: unknown); NULL: silent ranks are
   * never looked for at a failure. */
  double (*silence)(void *arg, int rank);
  void *silence_arg;
} coord_opts_t;

typedef struct coord_s {
  coord_opts_t o;
  int attempt;
  char *down;       /* per rank: program ended in this attempt */
  int ndown, nok;
  int nfailed;      /* ranks whose program failed on its own (the cause among them) */
  int failing;      /* stopping everyone */
  double settle_until; /* > 0: a rank failed; until then others that fail too are heard first */
  int have_cause;
  ctl_msg_t cause;  /* the first failure: of those reported, the program that failed first */
  double deadline;  /* all ranks must have reported the stop by then */
  int finished;     /* the job's end (CTL_EXIT) or the abort was asked for */
  int sig;          /* first terminating signal reported (SIGTERM, SIGINT), 0: none */
  int sig_by_rm;    /* ... which Slurm delivered to every program of the step itself */
  double sig_t0;
  char *sig_seen;   /* per rank: reported that signal */
  int verdict;      /* 0 undecided, else COORD_PREEMPTED... (why the job stops) */
  int finish_pending; /* every rank stopped, the verdict still waits for Slurm */
  int end_known;    /* Slurm's reason is in (or none was asked for) */
  int end_preemption; /* ... it is a preemption (an unknown reason is) */
  char end_why[160];  /* ... in words ("" unknown) */
  int stop_by_mpirun; /* the SIGTERM came from plain mpirun, which ends every program itself */
  int notice;       /* the stop is for a cloud's interruption notice (of notice_host) */
  char notice_host[64];
  char notice_text[256];
  double stop_grace; /* > 0: the grace of this stop ([job] grace, or less: what a notice leaves) */
  double *down_at;  /* per rank: when its end was reported (now of coord_event) */
  double *silent;   /* per rank, at a failure's settle: > 0 a candidate silent this long */
  int peer_timed_out; /* a program that failed on its own says a collective timed out (gloo's "Timed
                       * out waiting", NCCL's watchdog): the peers waited for someone. Any of them,
                       * not only the cause: the first to fail is often one whose connection the
                       * timed-out peer closed ("Connection closed by peer") */
  int collecting;   /* the candidates' stacks are being taken (COORD_COLLECT) */
  double collect_until; /* ... until then at most */
  char silent_note[512]; /* "rank 2 (host h) was still running, silent for 15 s, in f: the likely
                          * cause" ("" none), said after the failure's own description */
  int silent_rank;  /* ... that rank (-1: none), silent that long, in that function */
  double silent_for;
  char silent_func[256];
} coord_t;

/* 0 or GPL_ENOMEM. */
int coord_init(coord_t *co, const coord_opts_t *o);
void coord_free(coord_t *co);

/* A rank's event (CTL_EV_EXIT, CTL_EV_STOPPED, CTL_EV_SIGNAL) at time now (seconds, monotonic). */
void coord_event(coord_t *co, const ctl_msg_t *m, double now, coord_acts_t *a);
/* The time passes: the settle window, the wait for Slurm's reason, the stop's deadline. */
void coord_tick(coord_t *co, double now, coord_acts_t *a);
/* Does a SIGTERM's verdict wait for Slurm's reason (coord_slurm_end)? */
int coord_wants_slurm_end(const coord_t *co);
/* Slurm's reason is known: a preemption or not, in words ("" when unknown). */
void coord_slurm_end(coord_t *co, int preemption, const char *why, double now, coord_acts_t *a);
/* The SIGTERM came from plain mpirun (said in the verdict). */
void coord_stop_by_mpirun(coord_t *co, int yes);

/* Is the job simply running (no failure, no signal, not ending)? Only then is a hang declared. */
int coord_quiet(const coord_t *co);
/* A hang was declared: every rank collects its program's stacks (CTL_HANG). */
void coord_hang_collect(coord_t *co, coord_acts_t *a);
/* The hang watchdog ends the job: rank `rank` on host is the cause, verdict its one line. Nothing
 * when the job ends for another reason already. */
void coord_hang(coord_t *co, int rank, const char *host, const char *verdict, double now,
                coord_acts_t *a);

/* The stacks after COORD_COLLECT are in (or their wait is over): rank `rank` on host, silent for
 * silent_s, in func ("": its stack could not be read) is the likely cause, or rank -1: nobody.
 * Every rank is stopped now. Nothing unless collecting. */
void coord_silent_found(coord_t *co, int rank, const char *host, double silent_s, const char *func,
                        double now, coord_acts_t *a);

/* The root cause in one line: "rank 2 (host h) exited with status 7", ...; a CUDA out-of-memory
 * error adds the peak device memory the monitor saw, the GPU's total and the remedies. */
void coord_describe(const ctl_msg_t *m, char *buf, size_t len);

void coord_acts_clear(coord_acts_t *a);
void coord_acts_free(coord_acts_t *a);

#endif
