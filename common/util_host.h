/* Who this process is before MPI: short host name, launcher's rank, scheduler's job id; the
 * names of its threads.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#ifndef GPL_COMMON_UTIL_HOST_H
#define GPL_COMMON_UTIL_HOST_H

#ifdef __cplusplus
extern "C" {
#endif

/* This machine's short host name (cached). */
const char *util_hostname(void);

/* This process's rank as told by the launcher's environment before MPI is up (Open MPI, PMIx,
 * Slurm, PMI); -1 when started alone. Used to print config errors once, not once per rank. */
int util_env_rank(void);

/* The job id its scheduler or launcher gave (SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, Open MPI's
 * job id), the same on every rank, or NULL when none is set. */
const char *util_sched_job_id(void);

/* Names the calling thread (at most 15 bytes: "gpl-live"), as `top -H`, `ps -L` and
 * /proc/PID/task/TID/comm show it; the benchmarks sum a thread's CPU by its name. */
void util_thread_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif
