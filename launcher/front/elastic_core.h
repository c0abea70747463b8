/* The elastic controller of gpulaunch-run --nodes MIN:MAX as a state machine: the host list, each
 * launch's end, the probe's answer and the time in; what to launch, stop, probe, say, record and
 * exit with out. No threads, no clock, no sleep, no environment, no process (front_elastic.c
 * carries the actions out). */
#ifndef GPL_LAUNCHER_FRONT_ELASTIC_CORE_H
#define GPL_LAUNCHER_FRONT_ELASTIC_CORE_H

#include <stddef.h>

#include "launcher/front/front_hosts.h"

#define ECORE_HISTORY_MAX 16 /* the restarts --summary and the audit log carry: the last ones */
#define ECORE_NAME 64        /* a host name's room, NUL included */

typedef enum ecore_act_type_e {
  ECORE_LAUNCH = 1, /* hosts: start the job on them; code: the membership restarts before it */
  ECORE_STOP,       /* text: why; stop the running launch with the grace (front_job_stop) */
  ECORE_PROBE,      /* hosts: can the launcher start a program on each? ecore_probe_result says */
  ECORE_EXIT,       /* code: gpulaunch-run ends with it (the last action) */
  ECORE_SAY,        /* text: one line on gpulaunch-run's stderr */
  ECORE_RECORD      /* text: the restarts so far, a JSON array (GPULAUNCH_ELASTIC_HISTORY) */
} ecore_act_type_t;

typedef struct ecore_act_s {
  ecore_act_type_t type;
  int code;
  char *text;
  front_host_t *hosts;
  int nhosts;
} ecore_act_t;

/* What one call asks for, in order; appended by the ecore_* calls, emptied by ecore_acts_clear. */
typedef struct ecore_acts_s {
  ecore_act_t *v;
  int n, cap;
} ecore_acts_t;

/* One claim: the ranks of host `lost` are gone, as seen from host `by` ("" unknown): a rank's, or
 * the launcher's own (mpirun on `by` lost its daemon on `lost`: that host cannot be launched on
 * from here, and its own claims are the view of a host cut off). */
typedef struct ecore_claim_s {
  char by[ECORE_NAME];
  char lost[ECORE_NAME];
  int rank0;    /* said by rank 0 */
  int launcher; /* said by the launcher (mpirun's "lost communication with a remote daemon") */
} ecore_claim_t;

/* How a launch ended (front_job.h's outputs). */
typedef struct ecore_end_s {
  int code;            /* the launch's exit status (rank 0's verdict, else mpirun's) */
  int user_stop;       /* the user stopped the whole job */
  int asked_stop;      /* the stop ecore asked for (ECORE_STOP) was delivered */
  int rank0_seen;      /* rank 0 connected: the job started */
  int verdict_said;    /* rank 0 said the job's status (else mpirun ended on its own) */
  int start_timed_out; /* rank 0 did not connect within the start limit */
  double stop_asked_at; /* when the stop was asked for (0: none) */
  const ecore_claim_t *claims; /* hosts named lost, and by whom */
  int nclaims;
  const char (*notice)[ECORE_NAME]; /* hosts that announced their interruption */
  int nnotice;
} ecore_end_t;

typedef struct ecore_opts_s {
  int min, max;          /* hosts */
  double cooldown;       /* a lost or noticed host is left out this long */
  double scale_up_every; /* grow at most this often (and not before the launch ran this long) */
  double min_wait;       /* below MIN: wait this long for hosts, then exit GPL_EXIT_BELOW_MIN */
  int max_restarts;      /* membership restarts allowed (-1: no limit) */
  double wall_offset;    /* wall-clock seconds minus the time given to the calls (records' time) */
} ecore_opts_t;

typedef struct ecore_cool_s {
  char name[ECORE_NAME];
  double until;
} ecore_cool_t;

typedef enum { ECORE_WAITING = 0, ECORE_RUNNING, ECORE_PROBING, ECORE_DONE } ecore_state_t;

typedef struct ecore_s {
  ecore_opts_t o;
  ecore_state_t state;
  front_host_t *seen; /* the host source, as last read */
  int nseen;          /* -1: never read successfully */
  int read_once;      /* a read was done (even a failed one) */
  char read_err[512]; /* the last read's error ("" it worked) */
  front_host_t *cur;  /* the hosts of the launch running (or last run) */
  int ncur;
  ecore_cool_t *cool;
  int ncool;
  int restarts;       /* membership restarts so far */
  int unnamed;        /* launches in a row that lost a rank nobody named */
  double last_launch;
  double wait_since;  /* ECORE_WAITING: since then (min_wait) */
  int wait_said;
  char stop_why[512]; /* ECORE_RUNNING: the stop asked for, and why ("" none) */
  char why[2048];     /* the last membership change, in words */
  double change_at;   /* ... when it was seen */
  int end_code;       /* ECORE_PROBING: the launch's status */
  front_host_t *probed; /* ... the hosts probed (the launch's, less those the launcher lost) */
  int nprobed;
  int probe_named;    /* ... the launcher named hosts lost before the probe */
  int end_asked;      /* ... the launch was stopped for a membership change */
  void *history;      /* cJSON array of the restarts (the last ECORE_HISTORY_MAX) */
  void *partition;    /* cJSON object: the partition behind the change being made (NULL none) */
  void *claims;       /* cJSON array: the claims behind it, {by, rank0, launcher, lost} (NULL none) */
} ecore_t;

/* 0, or -1 out of memory. */
int ecore_init(ecore_t *c, const ecore_opts_t *o);
void ecore_free(ecore_t *c);

/* The host source was read at now: n hosts (n < 0: the read failed with err, the list stays). */
void ecore_hosts(ecore_t *c, const front_host_t *h, int n, const char *err, double now, ecore_acts_t *a);
/* The time passes: the wait for MIN, a cool-down's end, a scale-up or a host that left the list. */
void ecore_tick(ecore_t *c, double now, ecore_acts_t *a);
/* The launch of the last ECORE_LAUNCH ended. */
void ecore_launch_ended(ecore_t *c, const ecore_end_t *end, double now, ecore_acts_t *a);
/* The answer to ECORE_PROBE: ok[i] for its hosts[i] (NULL: the probe could not run). Where only the
 * launcher named hosts lost (mpirun ended the launch before any rank's claim came), the other
 * hosts are probed, and those that fail are left out with them. */
void ecore_probe_result(ecore_t *c, const int *ok, double now, ecore_acts_t *a);

/* Which hosts of claims[] stay: the largest group of the launch's hosts that still hear each other
 * (a host's claims are believed for the hosts of its group; a tie goes to rank 0's side). The
 * hosts the launcher lost are out of every group, and their own claims are not believed (they are
 * the cut-off side). keep[i] for cur[i]. Returns 1 when the claims disagree (a partition: two
 * hosts name each other, or a host the launcher lost named others), 0 when they all hold. Used by
 * ecore_launch_ended; public for its unit test. */
int ecore_resolve(const front_host_t *cur, int ncur, const ecore_claim_t *claims, int nclaims, int *keep);

/* For a job that is not elastic: when claims disagree, "a network partition (host h1 named h2, h3
 * lost; host h2 named h1 lost): h1 cannot reach h2, h3" in out and 1; when only the launcher named
 * hosts, "h1 cut off (mpirun on h0 lost its daemon on h1); the others still answered" and 1;
 * else 0. */
int ecore_partition_note(const ecore_claim_t *claims, int nclaims, char *out, size_t len);

/* "h0:2,h1:2" (cut with ",..." where len ends): the hosts' words for mpirun --host and messages. */
void ecore_host_list(const front_host_t *h, int n, char *out, size_t len);

void ecore_acts_clear(ecore_acts_t *a);
void ecore_acts_free(ecore_acts_t *a);

#endif
