/* Elastic jobs' host sources: a hostfile re-read on every poll, or a discovery script that prints
 * one `host:slots` line per usable host (horovodrun's contract); bounded, never a hang. */
#ifndef GPL_LAUNCHER_FRONT_HOSTS_H
#define GPL_LAUNCHER_FRONT_HOSTS_H

#include <stddef.h>

#define FRONT_HOST_MAX 4096

typedef struct front_host_s {
  char name[64];
  int slots;
} front_host_t;

/* The slots of a host listed without a count (`host` alone; the MPI Operator's discover_hosts.sh
 * prints bare names): v, a whole number > 0 (GPULAUNCH_HOST_SLOTS); NULL or "": 1. 0, or -1 for
 * anything else (the count stays 1). */
int front_hosts_set_bare_slots(const char *v);
/* Parse a host list: lines `host`, `host:N`, `host slots=N` (Open MPI's hostfile, other words
 * such as max_slots= ignored), blank lines and # comments. A host named twice counts once (its
 * last slots). Returns the number of hosts (at most max), or -1 with a reason in err naming the
 * line ("hosts:3: slots must be a whole number > 0"). */
int front_hosts_parse(const char *text, const char *origin, front_host_t *out, int max, char *err,
                      size_t errlen);
/* Read the hosts now: from the file, or the script's standard output (run with /bin/sh -c, killed
 * after timeout_s; a non-zero exit status is an error). Same return as front_hosts_parse. */
int front_hosts_read(const char *hostfile, const char *script, double timeout_s, front_host_t *out,
                     int max, char *err, size_t errlen);

/* Under Slurm, the allocation as a discovery script (malloc'd; NULL outside an allocation, i.e.
 * without SLURM_JOB_ID): the job's nodes now (squeue, SLURM_JOB_NODELIST before it answers) less
 * those Slurm has down, drained or failing, each with SLURM_NTASKS_PER_NODE slots (else
 * SLURM_TASKS_PER_NODE's first count, else 1). */
char *front_hosts_slurm_script(void);

/* Under Slurm, a script that prints the address of each node of the allocation
 * (SLURM_JOB_NODELIST), one a line: its NodeAddr (sinfo), else its name (scontrol show hostnames),
 * for a cluster whose node names do not resolve (Slurm reaches its nodes by NodeAddr). A constant
 * string; NULL outside an allocation. */
const char *front_hosts_slurm_addr_script(void);

#endif
