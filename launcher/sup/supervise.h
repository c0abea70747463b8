/* The supervisor: runs a rank's program under one libuv loop (pipes, signals, timers), and with
 * the other ranks' supervisors ends, restarts or finishes the job together. */
#ifndef GPL_LAUNCHER_SUPERVISE_H
#define GPL_LAUNCHER_SUPERVISE_H

#include <stddef.h>

#include "launcher/hang/sample.h"
#include "launcher/job/job.h"

struct uv_loop_s;

/* Builds the program's environment for an attempt (the restart count changes). The returned
 * array and strings are freed by the supervisor with free(). */
typedef int (*sup_env_fn)(void *arg, int attempt, char ***envp);

/* Hooks for the GPU monitor (optional): called every interval while the program runs, and for
 * each complete output line (to spot CUDA out-of-memory). */
typedef struct sup_hooks_s {
  void *arg;
  double interval;                           /* seconds between tick calls (0: none) */
  void (*tick)(void *arg);
  void (*line)(void *arg, int is_err, const char *line, size_t len);
  int (*oom_seen)(void *arg);                /* 1 when an out-of-memory line was among the
                                              * program's last lines */
  double (*peak_mem_mib)(void *arg);         /* peak GPU memory seen (-1 unknown) */
  double (*mem_total_mib)(void *arg);        /* the GPU's memory (-1 unknown) */
  void (*new_attempt)(void *arg);            /* a program's attempt starts (forget its OOM) */
  /* Called on every rank's loop once before the first program starts, so other services (the
   * comm proxy) can attach; detach when the job is over. They get attach_arg. */
  void *attach_arg;
  int (*attach)(void *arg, struct uv_loop_s *loop);
  void (*detach)(void *arg);
} sup_hooks_t;

typedef struct sup_opts_s {
  job_t *job;
  const struct seckey_s *sec;    /* the job key and TLS settings of the liveness tree and the
                                  * channel to gpulaunch-run (launcher/job/seckey.h) */
  const char *const *node_addrs; /* node leaders: each node's own addresses (net_result_t), to close
                                  * the local mpirun's connections to a lost host; NULL elsewhere */
  char *const *argv;      /* program and arguments */
  sup_env_fn make_env;    /* environment per attempt */
  void *env_arg;
  const char *workdir;    /* NULL: inherit */
  const char *prefix;     /* "host:rank" | "rank" | "none" */
  const char *log_dir;    /* NULL/"": no per-rank log file */
  const char *log_dir_origin; /* where log_dir was set ("train.conf:4"), for messages */
  int tail_lines;         /* stderr lines quoted in the root cause */
  double grace;           /* forwarded terminating signal -> SIGKILL */
  double stop_timeout;    /* another rank failed: SIGTERM -> SIGKILL */
  int preempt_signal;     /* sent to the program when the job gets SIGTERM */
  int checkpoint_signal;  /* sent to every program, which goes on, when a checkpoint is recommended */
  int restarts;           /* restarts allowed after a failure */
  int restart_on_oom;     /* ... a CUDA out-of-memory error included ([job] restart_on_oom) */
  int forward_output;     /* 1: other ranks' program output is written by rank 0, so that
                           * mpirun, which splits streams at arbitrary bytes, cannot mix lines */
  double liveness_timeout; /* a supervisor silent this long is lost and ends the job (0: off) */
  const char *master_addr; /* rank 0's address every rank reaches (the liveness connections) */
  struct prog_s *progress; /* the program's progress (launcher/hang/progress.h); NULL: none */
  double hang_timeout;     /* a rank without progress this long is a hang (0: off) */
  int hang_report_only;    /* [job] hang_action = report: report the hang, keep the job running */
  const char *hang_dir;    /* folder of the hang report (NULL: the current folder) */
  int straggler_sample;    /* [job] straggler = sample: sample the program's stacks */
  sup_hooks_t hooks;
  /* The cloud's interruption notice ([preempt]): polled by each node's first rank; NULL: off. A
   * notice stops the job with a grace that ends notice_margin before the machine goes. */
  const struct notice_opts_s *notice;
  double notice_margin;
} sup_opts_t;

typedef struct sup_result_s {
  int exit_code;        /* the job's exit code, the same on every rank */
  int attempts;         /* attempts started */
  int failed_rank;      /* rank whose program failed first (-1: none) */
  int status, signo;    /* its exit status / signal */
  int oom;              /* its program failed of a CUDA out-of-memory error ... */
  double peak_mem_mib, mem_total_mib; /* ... with this peak and total device memory (-1 unknown) */
  int preempted;        /* ended by SIGTERM to the job (preemption) */
  int interrupted;      /* ended by SIGINT */
  int lost;             /* ended because a rank's supervisor died or its host was lost
                         * (exit_code 68; MPI may not work any more) */
  int cancelled;        /* ended by Slurm's SIGTERM for a cancel (scancel): not a preemption */
  int hung;             /* ended by the hang watchdog (exit_code 77) */
  char hang_report[512];/* rank 0: the last hang report written (text; .json beside it), or "" */
  char failed_host[64];
  char root_cause[1024];/* one line, also printed by rank 0 */
  int silent_rank;      /* rank 0: the rank still running and silent at the failure that was its
                         * likely cause (-1: none), silent that long, in that function */
  double silent_s;
  char silent_func[256];
  double seconds;       /* wall time of the supervision */
  int sampled;          /* rank 0, straggler = sample: the verdict below is set */
  sample_verdict_t straggler; /* ... the rank named (or, rank -1, the shares last seen) */
} sup_result_t;

/* Run the program on every rank until the job ends; *res is filled on every rank. Returns 0 (the
 * job's outcome is in res->exit_code) or a negative code when supervision itself failed. */
int sup_run(const sup_opts_t *o, sup_result_t *res);

/* Find the program as execvp would (PATH search for names without '/'). 0, GPL_ENOENT or
 * GPL_ESYS (found but not executable); the path found goes to out. */
int sup_resolve(const char *prog, const char *path_env, char *out, size_t len);
/* Can the program start from workdir (NULL or "": the current folder)? The workdir must be a
 * folder (else GPL_ECONFIG, with errno's reason in *wd_errno); a relative path with a '/' is taken
 * from there, as the child's chdir + execvp will. Otherwise sup_resolve's result. */
int sup_locate(const char *prog, const char *path_env, const char *workdir, char *out, size_t len,
               int *wd_errno);
/* A message for sup_locate's result: "not found in PATH", "no such file", "not executable". */
const char *sup_locate_reason(const char *prog, int rc);

#endif
