/* The straggler view: every rank's step times and how late each rank reports its steps compared
 * with the median rank (the slowest rank is flagged when its lag passes a fraction of a step),
 * and the job's one straggler verdict with the stack samples' (launcher/hang/sample.h). */
#ifndef GPL_LAUNCHER_STRAGGLER_H
#define GPL_LAUNCHER_STRAGGLER_H

#include <cjson/cJSON.h>
#include <mpi.h>
#include <stdio.h>

#include "launcher/hang/progress.h"

#define STRAG_STEPS 64 /* the last steps of each rank compared */
#define STRAG_MIN_LAG_S 0.005 /* a smaller lag is never flagged, whatever the step time */

typedef struct strag_rank_s {
  int rank;
  int nsteps;           /* steps seen (of the last STRAG_STEPS) */
  double step_s;        /* this rank's median step time */
  double lag_s;         /* median of (its report time - the median rank's) over the same steps */
} strag_rank_t;

/* From every rank's steps (steps[r][0..nsteps[r]), oldest first): each rank's step time and
 * lag, the median step time, and the slowest rank (*slowest, -1: no steps in common). */
void strag_compute(prog_step_t *const *steps, const int *nsteps, int size, strag_rank_t *out,
                   double *median_step_s, int *slowest);

/* The step view's result on rank 0. */
typedef struct strag_steps_s {
  int size;                  /* ranks in ranks[] (0: no rank reported two steps) */
  const strag_rank_t *ranks;
  double median_step_s;      /* NAN: unknown */
  double fraction;           /* [job] straggler_fraction */
  int slowest;               /* the rank with the largest lag, -1: none */
  int flagged;               /* its lag passes fraction of the median step time (and 5 ms) */
} strag_steps_t;

struct sample_verdict_s;

/* Collective over comm (MPI_COMM_NULL: a job of one): rank 0 gathers every rank's last steps,
 * then gives the one verdict (strag_verdict) with the stack samples' (sampled: rank 0's, NULL
 * where sampling did not run). */
int strag_job_summary(const prog_t *p, MPI_Comm comm, char *const *hosts, double fraction,
                      const struct sample_verdict_s *sampled, double timeout_s, FILE *f, cJSON *summary);

/* Rank 0: the one straggler verdict of the job, from the stack samples (sampled, [job] straggler
 * = sample; NULL or fewer than 2 ranks judged: none) and the step view (steps; NULL or size 0:
 * none). The samples decide where they named a rank; else the step view where it flagged one;
 * else nobody is named (a synchronous job's step view only ever sees noise). The deciding
 * method's line goes to f, and the step view's too where it names the same rank; summary gets
 * "straggler": {method (sample|steps), flagged, and when flagged rank and host; the samples'
 * function, function_fraction, waiting_fraction, others_waiting_in where they decided;
 * lag_s, lag_fraction where the step view did; ranks_sampled and others_waiting_fraction where
 * sampling ran; median_step_s, threshold_fraction and every rank's steps, step_s and lag_s in
 * ranks where the step view had steps}. */
void strag_verdict(const strag_steps_t *steps, const struct sample_verdict_s *sampled, char *const *hosts,
                   FILE *f, cJSON *summary);

#endif
