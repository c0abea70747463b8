/* The straggler view: every rank's step times and how late each rank reports its steps compared
 * with the median rank; the slowest rank is printed when its lag passes a fraction of a step. */
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

/* Collective over comm (MPI_COMM_NULL: a job of one): rank 0 gathers every rank's last steps,
 * prints the slowest rank and its lag to f when the lag exceeds fraction of the median step
 * time, and adds "straggler" to summary. */
int strag_job_summary(const prog_t *p, MPI_Comm comm, char *const *hosts, double fraction,
                      double timeout_s, FILE *f, cJSON *summary);

/* Rank 0, [job] straggler = sample: the stack samples' verdict (launcher/hang/sample.h) printed
 * to f once more at the end when a rank was named, and added to summary as straggler.sample. */
struct sample_verdict_s;
void strag_sample_summary(const struct sample_verdict_s *v, char *const *hosts, FILE *f, cJSON *summary);

#endif
