/* gpulaunch under Slurm: srun without PMIx caught before MPI_Init, true SLURM_* variables for the
 * program, signals Slurm already delivered to the whole step, and why Slurm is ending the job. */
#ifndef GPL_LAUNCHER_SLURM_H
#define GPL_LAUNCHER_SLURM_H

#include <stddef.h>

#include "launcher/job/job.h"
#include "launcher/sup/sigorigin.h"

struct uv_loop_s;

/* Inside a Slurm job (SLURM_JOB_ID is set)? */
int slurm_in_job(void);

/* Before MPI_Init (job_init's hook): under srun without PMIx (--mpi=pmi2, --mpi=none or
 * MpiDefault=none) Open MPI's MPI_Init cannot work; then SLURM_PROCID 0 prints one line saying to
 * pass --mpi=pmix and every task exits with GPL_EXIT_USAGE (64). Returns when the launch is fine. */
void slurm_check_launch(void);

/* Did this signal come from Slurm to the whole job step, so that the program, inside the step,
 * got it too? (the sender is a slurmstepd, and the site's ProctrackType follows the program:
 * everything but proctrack/pgid, where the program's own process group escapes it). */
int slurm_signal_reached_program(const sigorigin_t *from);

/* The program's SLURM_* rank variables, made true for the job gpulaunch runs (under mpirun in an
 * allocation they describe Open MPI's daemon step: every rank would read SLURM_PROCID=0):
 * SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, SLURM_NTASKS, SLURM_NPROCS, SLURM_NNODES,
 * SLURM_STEP_NUM_TASKS, SLURM_STEP_NUM_NODES, SLURM_TASKS_PER_NODE, SLURM_STEP_TASKS_PER_NODE,
 * SLURM_GTIDS. Nothing outside a Slurm job. set(arg, key, value) adds one; 0 or its error. */
typedef int (*slurm_set_fn)(void *arg, const char *key, const char *value);
int slurm_child_env(const job_t *job, slurm_set_fn set, void *arg);
/* Variables the program must not inherit: about a task the program is not (SLURM_TASK_PID is
 * gpulaunch's pid) or Slurm's PMIx plugin (SLURM_PMIX*, SLURM_PMIXP*). kv is "KEY=VALUE". */
int slurm_is_task_var(const char *kv);
/* Slurm's compressed count list: {2,2,1} -> "2(x2),1". */
void slurm_compress_counts(const int *counts, int n, char *out, size_t len);

/* Why Slurm sent the job a terminating signal, from `scontrol show job -o`. */
typedef enum slurm_end_e {
  SLURM_END_UNKNOWN = 0, /* no answer (not under Slurm, no scontrol, timed out) */
  SLURM_END_CANCELLED,   /* the job is being cancelled (scancel): not a preemption */
  SLURM_END_REQUEUED,    /* requeued: preemption with PreemptMode=REQUEUE, scontrol requeue */
  SLURM_END_PREEMPTED,   /* preemption started (PreemptTime set: GraceTime running) */
  SLURM_END_TIMELIMIT,   /* the time limit was reached */
  SLURM_END_SIGNALLED    /* the job goes on: a signal only (scancel --signal, --signal=SIG@TIME) */
} slurm_end_t;

/* Classify one `scontrol show job -o` line; restarts_before is the job's SLURM_RESTART_COUNT
 * when this run started (a larger Restarts= means it is being requeued). */
slurm_end_t slurm_end_classify(const char *line, long restarts_before);
/* "cancelled (scancel)", "requeued by Slurm", ... */
const char *slurm_end_describe(slurm_end_t end);
/* Is this end a preemption (exit 75, requeue it)? Everything but a cancel; unknown counts as
 * preempted, as a SIGTERM to gpulaunch always has. */
int slurm_end_is_preemption(slurm_end_t end);

/* Ask Slurm, in the background on loop, why the job is being signalled (`scontrol show job`,
 * bounded by timeout seconds). Nothing outside a Slurm job. One query per process at a time. */
int slurm_end_query_start(struct uv_loop_s *loop, double timeout);
/* 1 once the query has finished (or was never started), with its answer in *end; 0 while it runs. */
int slurm_end_query_done(slurm_end_t *end);
/* Forget the query (a new supervision in the same process). */
void slurm_end_query_reset(void);

#endif
