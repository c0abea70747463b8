/* The modes of the gpulaunch program and what they share; each receives a launch_t (the job, the
 * config and its own arguments: launcher/job/launch.h). */
#ifndef GPL_LAUNCHER_LAUNCHER_H
#define GPL_LAUNCHER_LAUNCHER_H

#include "launcher/exitcode.h"
#include "launcher/job/launch.h"

/* Each mode returns a process exit code (launcher/exitcode.h). */
typedef int (*mode_fn)(launch_t *L);

int mode_run(launch_t *L);    /* wrap and supervise [job] command, or run [job] builtin */
int mode_check(launch_t *L);  /* validate the config and print the effective settings */
int mode_env(launch_t *L);    /* print each rank's environment without running anything */
int mode_topo(launch_t *L);   /* topology matrix and placement plan (topology/) */
int mode_bench(launch_t *L);  /* collective bandwidth benchmark (nccl-tests compatible) */
int mode_accept(launch_t *L); /* cluster acceptance checks */
int mode_diag(launch_t *L);   /* diagnostics bundle */
int mode_audit(launch_t *L);  /* audit verify FILE: the audit log's hash chain */
/* The options of the modes that take their own (launcher/cli.h); main applies the global
 * ones among them before the mode runs, the mode parses the rest. */
struct cli_spec_s;
extern const struct cli_spec_s mode_topo_cli, mode_bench_cli, mode_accept_cli, mode_diag_cli,
    mode_audit_cli;
/* For `check`: the [bench] / [accept] settings as those modes read them (a value they would
 * refuse is refused now, with where it was set). An exit code. */
int bench_check_conf(launch_t *L);
int accept_check_conf(launch_t *L);
/* Built-in jobs selected by [job] builtin (run from mode_run). */
int trainer_run(launch_t *L); /* builtin = mlp: data-parallel demo trainer on comm/ + kernels/ */
/* The audit log ([audit] log) around a run, bench or accept job, from rank 0 (audit_job.c). */
void audit_job_begin(launch_t *L, const char *mode);
void audit_job_finish(launch_t *L, int code);

#endif
