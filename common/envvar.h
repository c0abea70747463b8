/* The GPULAUNCH_* environment variables: one table (name, default, help), read through envvar_get. */
#ifndef GPL_COMMON_ENVVAR_H
#define GPL_COMMON_ENVVAR_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Who a variable is for: the user, gpulaunch's own processes (set by gpulaunch or gpulaunch-run
 * for the ones they start), the wrapped program (set by gpulaunch for it: "What the wrapped
 * program gets"), or the tests (hooks that make a rare case happen on one machine). */
typedef enum envvar_kind_e { ENVVAR_USER, ENVVAR_INTERNAL, ENVVAR_PROGRAM, ENVVAR_TEST } envvar_kind_t;

/* Every GPULAUNCH_* variable gpulaunch, gpl_init, gpulaunch-run, the srun shim or the Slurm
 * templates read, in --help's and the README's order. X(ID, name, default, kind, help); default
 * is what an unset variable means ("" when nothing). `gpulaunch --help` and the README's list are
 * made from this table (scripts/gen-docs.sh).
 *
 * The templates' GPULAUNCH (the gpulaunch binary) is theirs alone (scripts/slurm/, its .sbatch files).
 *
 * Not here, and read with plain getenv where they are used: the variables of other programs,
 * facts about the environment gpulaunch runs in rather than settings of its own, which it reads
 * as it finds them: the MPI launcher's, Slurm's and the batch system's (OMPI_*, PMIX_*, PMI_*,
 * MV2_*, SLURM_*, PBS_JOBID, LSB_JOBID: who started us, which rank, step or job), PATH,
 * CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS, NCCL_SOCKET_IFNAME and the torchrun names (RANK,
 * WORLD_SIZE). Every GPULAUNCH_* variable gpulaunch sets for the program is here too (kind
 * ENVVAR_PROGRAM, or a user's variable that it passes on: GPULAUNCH_TIMEOUT, ...), named in the
 * code through its row (envvar_name, ENVVAR_LITERAL). The srun shim (launcher/srunshim/), loaded
 * into srun, links nothing of ours: it reads its row with getenv. */
#define ENVVAR_LIST(X)                                                                             \
  X(LOG, "GPULAUNCH_LOG", "warn", ENVVAR_USER, "error|warn|info|debug")                          \
  X(LOG_SUBSYS, "GPULAUNCH_LOG_SUBSYS", "all", ENVVAR_USER,                                      \
    "job,conf,topo,net,comm,kern,sup,bench,accept,mon,diag,train (^x excludes)")                 \
  X(LOG_TIME, "GPULAUNCH_LOG_TIME", "0", ENVVAR_USER,                                            \
    "1: the wall clock at the start of each log line, for profiling")                            \
  X(TIMEOUT, "GPULAUNCH_TIMEOUT", "60s", ENVVAR_USER,                                            \
    "start-up waits when the config has no [job] timeout; a lost rank while the job runs: "      \
    "[job] liveness_timeout; set by gpulaunch for wrapped programs (gpl_init's waits)")          \
  X(LIVE_FANOUT, "GPULAUNCH_LIVE_FANOUT", "32", ENVVAR_USER,                                     \
    "leaders per leader in the liveness tree, 2..1024")                                          \
  X(TREE_FANOUT, "GPULAUNCH_TREE_FANOUT", "32", ENVVAR_USER,                                     \
    "leaders per leader in the start-up exchanges' tree, 2..64")                                 \
  X(COMM_BACKEND, "GPULAUNCH_COMM_BACKEND", "auto", ENVVAR_USER,                                 \
    "auto|nccl|cpu, for gpl_init; set by gpulaunch for wrapped programs")                        \
  X(COMM_INIT_TIMEOUT, "GPULAUNCH_COMM_INIT_TIMEOUT", "60s", ENVVAR_USER,                        \
    "for gpl_init; set by gpulaunch for wrapped programs")                                       \
  X(COMM_SHM, "GPULAUNCH_COMM_SHM", "1", ENVVAR_USER, "0: no node-local shared-memory allreduce") \
  X(COMM_SHM_SLOT, "GPULAUNCH_COMM_SHM_SLOT", "256K", ENVVAR_USER,                               \
    "the shared-memory allreduce's slot per rank (bytes, K/M suffixes, 4K..1G)")                 \
  X(NCCL_LIB, "GPULAUNCH_NCCL_LIB", "libnccl.so.2", ENVVAR_USER,                                 \
    "/path/to/libnccl.so.2 (NCCL is loaded at run time)")                                        \
  X(NVML_LIB, "GPULAUNCH_NVML_LIB", "libnvidia-ml.so.1", ENVVAR_USER,                            \
    "/path/to/libnvidia-ml.so.1 (NVML is loaded at run time: GPUs, the monitor, accept)")        \
  X(MPIRUN, "GPULAUNCH_MPIRUN", "mpirun", ENVVAR_USER,                                           \
    "gpulaunch-run: the launcher it runs (srun: the same around srun)")                          \
  X(HOST_SLOTS, "GPULAUNCH_HOST_SLOTS", "1", ENVVAR_USER,                                        \
    "gpulaunch-run: slots of a host listed without a count (the MPI Operator's bare host names)") \
  X(RUN_SIGNALS, "GPULAUNCH_RUN_SIGNALS", "1", ENVVAR_USER,                                      \
    "gpulaunch-run: 0 leaves SIGTERM/SIGINT/SIGHUP to the caller")                               \
  X(RUN_LD_PRELOAD, "GPULAUNCH_RUN_LD_PRELOAD", "", ENVVAR_USER,                                 \
    "gpulaunch-run: the launcher's LD_PRELOAD only")                                             \
  X(EXCLUDE, "GPULAUNCH_EXCLUDE", "", ENVVAR_USER,                                               \
    "the mpirun Slurm template: a file of hosts to leave out (accept --exclude-out)")            \
  X(GRACE, "GPULAUNCH_GRACE", "", ENVVAR_USER,                                                   \
    "the mpirun Slurm template: seconds Open MPI waits between SIGTERM and SIGKILL when mpirun "  \
    "itself stops the ranks (odls_base_sigkill_timeout; keep it above [job] grace)")             \
  X(SCRIPTS, "GPULAUNCH_SCRIPTS", "", ENVVAR_USER,                                               \
    "the mpirun Slurm template: the folder of scripts/hostfile and scripts/slurm")               \
  X(REQUEUE, "GPULAUNCH_REQUEUE", "1", ENVVAR_USER,                                              \
    "the Slurm templates: 0 never requeues the job on exit 75")                                  \
  X(RUN, "GPULAUNCH_RUN", "", ENVVAR_USER,                                                       \
    "the srun Slurm template: gpulaunch-run (default: beside gpulaunch)")                        \
  X(SRUN_SHIM, "GPULAUNCH_SRUN_SHIM", "", ENVVAR_USER,                                           \
    "the srun Slurm template: the srun shim (default: libgpulaunch-srun.so beside gpulaunch; "   \
    "none: srun without it)")                                                                    \
  X(NODES, "GPULAUNCH_NODES", "", ENVVAR_USER,                                                   \
    "the srun Slurm template: MIN or MIN:MAX nodes, elastic (needs gpulaunch-run)")              \
  X(SRUN_LD_PRELOAD, "GPULAUNCH_SRUN_LD_PRELOAD", "", ENVVAR_INTERNAL,                           \
    "the srun template to the srun shim: srun's own LD_PRELOAD")                                 \
  X(FRONTEND, "GPULAUNCH_FRONTEND", "", ENVVAR_INTERNAL,                                         \
    "gpulaunch-run to rank 0: the addresses of its channel")                                     \
  X(FRONTEND_HOST, "GPULAUNCH_FRONTEND_HOST", "", ENVVAR_INTERNAL,                               \
    "gpulaunch-run to rank 0: its host name (rank 0 tries a loopback address only on that host)") \
  X(KEY_SOURCE, "GPULAUNCH_KEY_SOURCE", "", ENVVAR_INTERNAL,                                     \
    "gpulaunch-run to the ranks: where it took the job key from (file, munge, handed)")          \
  X(MUNGE_CREDENTIAL, "GPULAUNCH_MUNGE_CREDENTIAL", "", ENVVAR_INTERNAL,                         \
    "gpulaunch-run to the ranks: the MUNGE credential that carries the job key (only the job's " \
    "uid can have munged decode it; never on a command line)")                                   \
  X(MUNGE_SOCKET, "GPULAUNCH_MUNGE_SOCKET", "", ENVVAR_USER,                                     \
    "munged's socket for the job key's MUNGE source (default: libmunge's, "                      \
    "/run/munge/munge.socket.2); give gpulaunch-run and the ranks the same")                     \
  X(JOB_KEY, "GPULAUNCH_JOB_KEY", "", ENVVAR_INTERNAL,                                           \
    "gpulaunch-run to the ranks: the job key made for the job when there is no [security] "       \
    "key_file (a secret: redacted everywhere, never on a command line)")                          \
  X(FRONTEND_MERGED, "GPULAUNCH_FRONTEND_MERGED", "", ENVVAR_INTERNAL,                           \
    "gpulaunch-run to rank 0: 1 when its stdout and stderr are one file")                        \
  X(PROXY, "GPULAUNCH_PROXY", "", ENVVAR_PROGRAM,                                                \
    "where gpl_init reaches its rank's gpulaunch (a Unix socket)")                               \
  X(RUN_ID, "GPULAUNCH_RUN_ID", "", ENVVAR_PROGRAM,                                              \
    "the run's id, as TORCHELASTIC_RUN_ID (gpl_init: wrapped by gpulaunch); also an elastic "    \
    "gpulaunch-run to gpulaunch: the one run id of all its launches")                            \
  X(RESTART_COUNT, "GPULAUNCH_RESTART_COUNT", "", ENVVAR_PROGRAM,                                \
    "restarts before this attempt, as TORCHELASTIC_RESTART_COUNT (counted on across an "         \
    "elastic job's launches)")                                                                   \
  X(NODE, "GPULAUNCH_NODE", "", ENVVAR_PROGRAM, "the rank's node index, as GROUP_RANK (0..nodes-1)") \
  X(HOST, "GPULAUNCH_HOST", "", ENVVAR_PROGRAM, "the rank's host name, as gpulaunch names it in its lines") \
  X(CHECKPOINT_DIR, "GPULAUNCH_CHECKPOINT_DIR", "", ENVVAR_PROGRAM,                              \
    "[job] checkpoint_dir, where it is set")                                                     \
  X(HEARTBEAT_FILE, "GPULAUNCH_HEARTBEAT_FILE", "", ENVVAR_PROGRAM,                              \
    "[job] heartbeat_file with {rank} filled in, where it is set: touching it is progress")      \
  X(ELASTIC_HISTORY, "GPULAUNCH_ELASTIC_HISTORY", "", ENVVAR_INTERNAL,                           \
    "an elastic gpulaunch-run to gpulaunch: its restarts so far (JSON), for --summary and the "  \
    "audit log")                                                                                 \
  X(RESTART_BASE, "GPULAUNCH_RESTART_BASE", "0", ENVVAR_INTERNAL,                                \
    "an elastic gpulaunch-run to gpulaunch: restarts before this launch (the counts go on)")    \
  X(PORT_RANGE, "GPULAUNCH_PORT_RANGE", "", ENVVAR_USER,                                         \
    "LO-HI: every gpulaunch listener takes a port in this range (gpulaunch-run --port-range "    \
    "sets it for the ranks; wins over [net] port_range)")                                       \
  X(TEST_STALL, "GPULAUNCH_TEST_STALL", "", ENVVAR_TEST,                                          \
    "rank:seconds[:stage]: that rank arrives late at a start-up stage (init)")                   \
  X(TEST_CORRUPT, "GPULAUNCH_TEST_CORRUPT", "", ENVVAR_TEST,                                      \
    "rank: bench corrupts that rank's results, so the check must fail")                         \
  X(TEST_SHM_NODES, "GPULAUNCH_TEST_SHM_NODES", "", ENVVAR_TEST,                                  \
    "k: the shared-memory allreduce cuts each node into k pretend nodes")                       \
  X(TEST_SYSROOT, "GPULAUNCH_TEST_SYSROOT", "", ENVVAR_TEST,                                      \
    "DIR: accept's EFA check reads DIR/sys/class/infiniband and DIR's library folders")

/* A variable's name as a string literal, from its row's ID, where a literal is needed (a string
 * built at compile time): ENVVAR_LITERAL(RUN_ID) is "GPULAUNCH_RUN_ID". Every row's name is
 * GPULAUNCH_ and its ID (common_envvar checks; common_envvar_sites that each ID used is a row). */
#define ENVVAR_LITERAL(id) "GPULAUNCH_" #id

typedef enum envvar_id_e {
#define ENVVAR_ENUM_(id, name, def, kind, help) ENVVAR_##id,
  ENVVAR_LIST(ENVVAR_ENUM_)
#undef ENVVAR_ENUM_
  ENVVAR_COUNT
} envvar_id_t;

/* The variable's value, or NULL when it is not set. The first time a value is seen (and whenever
 * it changed since) it is logged once at debug level, like NCCL's parameters. The environment is
 * read at each call, not kept: gpl_init runs in programs that set these themselves, and the tests
 * and gpulaunch-run set them in their own process; the value is what getenv returns (valid until
 * the variable is set again). */
const char *envvar_get(envvar_id_t id);
/* Called with each variable's value when it is read and differs from the last one it took (it
 * returns 1 when it took it: logged). The logger sets it in log_init. */
typedef int (*envvar_note_fn)(const char *name, const char *value);
void envvar_set_note(envvar_note_fn fn);
/* The variable's name ("GPULAUNCH_LOG"). */
const char *envvar_name(envvar_id_t id);

/* --help's environment section (markdown = 0) or the README's table (markdown = 1). */
void envvar_print(FILE *f, int markdown);

#ifdef __cplusplus
}
#endif

#endif
